/**
 * The partition nemesis (test/partition/support/nemesis.ts) against a scripted target: the
 * records it writes bracket what it does to the hosts. Its real runs need root (test/partition/).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { HistoryWriter } from '../fault/support/partition-history.js'
import { runSchedule, type Fault, type NemesisTarget } from '../partition/support/nemesis.js'
import type { Hosts } from '../partition/support/hosts.js'
import type { Cluster } from '../support/cluster.js'

describe('unit: partition nemesis', () => {
  it('nemesis: a cut and a heal are each recorded before the nemesis begins to apply them', async () => {
    // A heal takes effect host by host over up to several hundred ms; a record written after it would put what came back meanwhile
    // inside the cut (etcd seed 470402175: a client seen back 422 ms before its heal was recorded).
    const steps: string[] = []
    const applying = (what: string) => async (): Promise<void> => {
      steps.push(`${what} begins`)
      await new Promise((r) => setTimeout(r, 20))
    }
    const hosts = { cut: applying('cut'), drop: applying('cut'), heal: applying('heal'), hostAt: () => undefined, host: () => ({ address: '' }) }
    const target: NemesisTarget = {
      hosts: hosts as unknown as Hosts,
      cluster: { leader: () => Promise.resolve(undefined), nodes: [] } as unknown as Cluster,
      servers: ['n1', 'n2', 'n3'],
      clients: ['c1', 'c2', 'c3'],
      history: { write: (r: { what: string }) => void steps.push(`${r.what} recorded`) } as unknown as HistoryWriter,
    }
    const fault = (kind: Fault['kind'], rounds: [number, number][] = []): Fault => ({ kind, gapMs: 1, durationMs: 10, node: 1, clients: [], rounds })
    await runSchedule({ seed: 1, faults: [fault('isolate'), fault('drop-in'), fault('flap', [[10, 10], [10, 10]])] }, target)
    const pairs = Array.from({ length: steps.length / 2 }, (_, i) => `${steps[2 * i]} → ${steps[2 * i + 1]}`)
    assert.deepEqual(pairs, Array.from({ length: 4 }, () => ['cut recorded → cut begins', 'heal recorded → heal begins']).flat())
  })

  it('nemesis: a cut names as served the side with more than half of the servers, however many clients are on either side', async () => {
    // Redis full form: n1 cut off with c1-c3 (4 hosts of 6) from n2, n3, whose sentinels failed the master over; counted by hosts, the
    // clients, which reached no master, were the majority and their lapse a false down.
    const cuts: { sides: string[][]; majority?: number }[] = []
    const target = (servers: string[]): NemesisTarget => ({
      hosts: { cut: async () => {}, drop: async () => {}, heal: async () => {}, hostAt: () => undefined } as unknown as Hosts,
      cluster: { leader: () => Promise.resolve(undefined), nodes: [] } as unknown as Cluster,
      servers,
      clients: ['c1', 'c2', 'c3'],
      history: { write: (r: { what: string; sides: string[][]; majority?: number }) => void (r.what === 'cut' && cuts.push(r)) } as unknown as HistoryWriter,
    })
    const split = (node: number, clients: number[]): Fault => ({ kind: 'split', gapMs: 1, durationMs: 1, node, clients, rounds: [] })
    await runSchedule({ seed: 1, faults: [split(0, [0, 1, 2]), split(1, [0, 1]), split(2, [])] }, target(['n1', 'n2', 'n3']))
    await runSchedule({ seed: 2, faults: [split(0, [0, 1])] }, target(['n1']))
    const served = cuts.map((c) => c.sides[c.majority!]?.join(' '))
    assert.deepEqual(served, ['n2 n3', 'n1 n3 c3', 'n1 n2 c1 c2 c3', 'n1 c1 c2'])
  })
})
