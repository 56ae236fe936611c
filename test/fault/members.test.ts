/**
 * Member faults, on every backend whose members live in other processes and expire: a member
 * process SIGKILLed, and one SIGSTOPped past its liveness window then resumed. Another member
 * (the observer, watching the group) must see it leave, then see it back with its capabilities:
 * the killed one restarted under the same id, the paused one by itself, without exiting, and
 * knowing it had been out. Servers are the shared ones: only members are harmed here.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TIMING } from '../support/timing.js'
import { rid } from '../support/wait.js'
import { declares, faultBackends, type FaultBackend } from './support/backends.js'
import { has, open, orderProblems, recordMembers, repeat, show, spawnMember, states, until, type Ev, testTimeout } from './support/harness.js'
import { FAULT_FULL, ResultsWriter } from './support/results.js'

const writer = new ResultsWriter(import.meta.url)
const backends = await faultBackends()
/** Generous: liveness is 2 s, but a loaded 2-core machine is slow to notice. */
const SEEN_MS = TIMING.expirySeconds * 1000 + 25_000

const first = (events: Ev[], what: string, after: number): Ev | undefined => events.find((e) => e.what === what && e.at >= after)

async function capsOf(observer: Awaited<ReturnType<typeof open>>, group: string, member: string): Promise<unknown> {
  return (await observer.getMembersWithCapabilities(group)).get(member)
}

function applicable(b: FaultBackend): string | undefined {
  if (!declares(b, ['groups', 'acrossProcesses'])) return `unsupported by ${b.name}: ${!b.caps.has('groups') ? 'groups' : 'acrossProcesses'}`
  if (!declares(b, [], ['memberExpiry', 'sessionExpiry'])) return `unsupported by ${b.name}: memberExpiry or sessionExpiry`
  return undefined
}

describe('fault: members', { concurrency: FAULT_FULL ? 7 : 3 }, () => {
  for (const b of backends) {
    const skip = applicable(b)
    it(`${b.name}: fault: a member SIGKILLed is seen leaving; restarted under its id, it is seen back with its capabilities`, {
      skip,
      timeout: testTimeout(120_000),
    }, async (t) => {
      await repeat(t, {
        writer,
        scenario: 'member.kill',
        backend: b.name,
        runTimeoutMs: 120_000,
        title: 'A member process is SIGKILLed; the others see it leave; restarted under the same id, it is seen back with its capabilities.',
        measure: 'SIGKILL → seen leaving',
      }, async (scope, n) => {
        const g = rid('g')
        const id = rid('victim')
        const caps = { run: n, role: 'victim', tags: ['a', 'b'], weight: 1.5 }
        const observer = await open(scope, b.config.fastUrl)
        const seen = recordMembers(observer)
        await observer.joinGroupCreate(g, { role: 'observer' })
        await observer.watchGroup(g)
        const m = await spawnMember(scope, { url: b.config.fastUrl, memberId: id, group: g, capabilities: caps })
        await until('the observer to list the member', async () => (await observer.getMembers(g)).includes(id), SEEN_MS)
        const killedAt = Date.now()
        m.signal('SIGKILL')
        const left = await until('the observer to see the member leave', () => first(seen.left, `${g}/${id}`, killedAt), SEEN_MS)
        const again = await spawnMember(scope, { url: b.config.fastUrl, memberId: id, group: g, capabilities: caps })
        await until('the observer to see the member back', () => first(seen.joined, `${g}/${id}`, left.at), SEEN_MS)
        assert.deepEqual(await capsOf(observer, g, id), caps)
        assert.equal(again.exited(), undefined)
        return { ms: left.at - killedAt }
      })
    })

    it(`${b.name}: fault: a member SIGSTOPped past its liveness is seen leaving; resumed, it notices and is seen back with its capabilities`, {
      skip,
      timeout: testTimeout(120_000),
    }, async (t) => {
      await repeat(t, {
        writer,
        scenario: 'member.pause',
        backend: b.name,
        runTimeoutMs: 120_000,
        title: 'A member process is SIGSTOPped until the others see it leave, then SIGCONTed: it must not exit, must report membershipLost then rejoined, and '
          + 'be seen back with its capabilities.',
        measure: 'SIGCONT → seen back',
      }, async (scope, n) => {
        const g = rid('g')
        const id = rid('sleeper')
        const caps = { run: n, role: 'sleeper', nested: { ok: true } }
        const observer = await open(scope, b.config.fastUrl)
        const seen = recordMembers(observer)
        await observer.joinGroupCreate(g, { role: 'observer' })
        await observer.watchGroup(g)
        const m = await spawnMember(scope, { url: b.config.fastUrl, memberId: id, group: g, capabilities: caps })
        await until('the observer to list the member', async () => (await observer.getMembers(g)).includes(id), SEEN_MS)
        const stoppedAt = Date.now()
        m.signal('SIGSTOP')
        const left = await until('the observer to see the paused member leave', () => first(seen.left, `${g}/${id}`, stoppedAt), SEEN_MS)
        const resumedAt = Date.now()
        m.signal('SIGCONT')
        const back = await until('the observer to see the member back', () => first(seen.joined, `${g}/${id}`, left.at), SEEN_MS)
        assert.deepEqual(await capsOf(observer, g, id), caps)
        // The member itself must learn that it was out (every backend here expires members).
        await until('the member to report membershipLost, then rejoined', () => has(m.events, `rejoined:${g}`), SEEN_MS)
        // A member that reported its connection lost says `reconnected` at its next good beat, which
        // may come after the rejoin: the order is checked once its state has settled.
        await until("the member's connection state to settle", () => !['suspended', 'lost'].includes(states(m.events).at(-1) ?? ''), SEEN_MS)
        assert.equal(m.exited(), undefined, 'the member process is still running')
        assert.deepEqual(orderProblems(m.events, 'the paused member', g), [], show(m.events))
        const status = await m.status()
        assert.deepEqual(status.joined, [g])
        assert.ok((status.members as string[]).includes(id), `the member lists itself: ${JSON.stringify(status)}`)
        return { ms: back.at - resumedAt }
      })
    })
  }
})
