/**
 * The zookeeper driver's group watches on ZooKeeper 3.6+ (the shared server is 3.8): one
 * persistent watch per subscription, so a membership change costs the watcher one getChildren and
 * nothing to re-arm (counted on the wire by a proxy), with the same events as before; a change made
 * while the watcher's connection is cut is still reported after the reconnect (the server does not
 * report what a restored persistent watch missed: the Coordinator's re-read on `reconnected` does);
 * unsubscribing removes the watch.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, dumps, type Coordinator } from '../../src/index.js'
import { OP } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { TcpProxy } from '../support/proxy.js'
import { ZkFrameCounter } from '../support/zk-frame-counter.js'
import { TIMING } from '../support/timing.js'
import { rid, waitFor } from '../support/wait.js'
import { rawZk, sharedHostPort } from './zookeeper-support.js'

/** A coordinator on 127.0.0.1:`port` that never polls: whatever it sees was pushed. */
async function watcherOn(t: TestContext, port: number): Promise<Coordinator> {
  const c = await connect(`zookeeper://127.0.0.1:${port}?timeout=10`, { memberId: rid('w'), watchIntervalMs: 600_000 })
  t.after(() => c.stop())
  return c
}

describe('zookeeper driver: group watches', () => {
  it('a membership change costs the watcher one getChildren, nothing re-armed; every join and leave is seen', async (t) => {
    const counter = await ZkFrameCounter.start(sharedHostPort().port)
    t.after(() => counter.close())
    const watcher = await watcherOn(t, counter.port)
    const raw = await rawZk(t)
    const g = rid('g')
    await raw.create(`/tooz/${g}`)
    t.after(async () => {
      for (const m of await raw.children(`/tooz/${g}`).catch(() => [])) await raw.remove(`/tooz/${g}/${m}`).catch(() => {})
      await raw.remove(`/tooz/${g}`).catch(() => {})
    })
    const seen: string[] = []
    watcher.on('memberJoined', (e) => e.group === g && void seen.push(`+${e.member}`))
    watcher.on('memberLeft', (e) => e.group === g && void seen.push(`-${e.member}`))
    const stop = await watcher.watchGroup(g)
    const start = new Map(counter.requests)
    const changes = 10
    const expected: string[] = []
    for (let i = 0; i < changes / 2; i++) {
      await raw.conn.create(`/tooz/${g}/m${i}`, dumps({ i }), 'EPHEMERAL')
      expected.push(`+m${i}`)
      await waitFor(`the join of m${i}`, () => seen.length === expected.length, TIMING.eventMs)
    }
    for (let i = 0; i < changes / 2; i++) {
      await raw.remove(`/tooz/${g}/m${i}`)
      expected.push(`-m${i}`)
      await waitFor(`the leave of m${i}`, () => seen.length === expected.length, TIMING.eventMs)
    }
    assert.deepEqual(seen, expected)
    const spent = (op: number): number => counter.count(op) - (start.get(op) ?? 0)
    assert.equal(spent(OP.getChildren2), changes, 'one getChildren per change')
    assert.equal(spent(OP.addWatch) + spent(OP.exists), 0, 'nothing re-armed')
    await stop()
    assert.equal(counter.count(OP.removeWatches), 1, 'unsubscribing removes the watch')
  })

  it('a join while the connection is cut is reported after the reconnect within the session', async (t) => {
    const proxy = await TcpProxy.start(sharedHostPort().port)
    t.after(() => proxy.close())
    const watcher = await watcherOn(t, proxy.port)
    const states: string[] = []
    watcher.on('connectionStateChanged', (e) => void states.push(e.state))
    const raw = await rawZk(t)
    const g = rid('g')
    await raw.create(`/tooz/${g}`)
    t.after(async () => {
      await raw.remove(`/tooz/${g}/late`).catch(() => {})
      await raw.remove(`/tooz/${g}`).catch(() => {})
    })
    const joined: string[] = []
    watcher.on('memberJoined', (e) => e.group === g && void joined.push(e.member))
    await watcher.watchGroup(g)
    proxy.cut()
    await waitFor('the cut seen', () => states.includes('suspended'), TIMING.eventMs)
    await raw.conn.create(`/tooz/${g}/late`, dumps({}), 'EPHEMERAL')
    proxy.restore()
    await waitFor('the reconnect', () => states.includes('reconnected'), TIMING.eventMs * 2)
    assert.ok(!states.includes('lost'), 'the same session')
    await waitFor('the join made during the cut', () => joined.includes('late'), TIMING.eventMs)
    assert.deepEqual(joined, ['late'])
  })
})
