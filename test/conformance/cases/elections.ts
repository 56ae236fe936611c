/** Leader election: tooz's cases, plus fail-over and the events tooz lacks. */
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { NotSupportedError, type LeaderEvent } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

export function electionCases(h: Harness): void {
  h.gated('leaderElection', 'elections: a lone candidate is elected, once', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const elected: LeaderEvent[] = []
    const event = nextEvent<LeaderEvent>(a, 'leaderElected', (e) => e.group === g, TIMING.eventMs)
    a.watchElectedAsLeader(g, (e) => elected.push(e))
    assert.deepEqual(await event, { group: g, member: a.memberId })
    await waitFor('the callback', () => elected.length === 1, TIMING.eventMs)
    await a.runWatchers()
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs))
    assert.equal(elected.length, 1)
    assert.ok(a.isLeader(g))
  }, async (t) => {
    const a = await h.open(t)
    assert.throws(() => a.watchElectedAsLeader(rid('g'), () => {}), NotSupportedError)
    await assert.rejects(a.standDownGroupLeader(rid('g')), NotSupportedError)
  })

  h.gated(['leaderElection', 'getLeader'], 'elections: getLeader is null before, then names the leader', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    assert.equal(await b.getLeader(g), null)
    a.watchElectedAsLeader(g, () => {})
    await waitFor('a to lead', () => a.isLeader(g), TIMING.eventMs)
    assert.equal(await b.getLeader(g), a.memberId)
  }, async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.getLeader(rid('g')), NotSupportedError)
  })

  h.gated('leaderElection', 'elections: two candidates, one leader; stand-down hands over', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    a.watchElectedAsLeader(g, () => {})
    await waitFor('a to lead', () => a.isLeader(g), TIMING.eventMs)
    b.watchElectedAsLeader(g, () => {})
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs))
    assert.ok(!b.isLeader(g), 'b must not lead while a does')
    const lost = nextEvent<{ group: string }>(a, 'leadershipLost', (e) => e.group === g, TIMING.eventMs)
    // Held off for a while, so that b (not a again) wins the next round on polling backends too.
    assert.equal(await a.standDownGroupLeader(g, { holdOffMs: TIMING.eventMs }), true)
    await lost
    await waitFor('b to lead', () => b.isLeader(g), TIMING.eventMs)
    assert.ok(!a.isLeader(g))
    assert.equal(await a.standDownGroupLeader(g), false)
  })

  h.gated('leaderElection', 'elections: when the leader stops, another candidate takes over', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    a.watchElectedAsLeader(g, () => {})
    await waitFor('a to lead', () => a.isLeader(g), TIMING.eventMs)
    const elected = nextEvent<LeaderEvent>(b, 'leaderElected', (e) => e.group === g, TIMING.eventMs)
    b.watchElectedAsLeader(g, () => {})
    await a.stop()
    assert.deepEqual(await elected, { group: g, member: b.memberId })
  })

  // The leader is SIGKILLed: its lock goes when the backend frees it (its lease lapses, its session
  // or descriptor is closed). The survivor's ticks are a minute apart, so only the wake the driver
  // declares (the lock's own queue, or a retry when the lock may be free) elects it this soon.
  const afterKill = async (t: TestContext): Promise<void> => {
    const g = rid('g')
    const b = await h.open(t, { fast: true, watchIntervalMs: 60_000 })
    await b.joinGroupCreate(g)
    const leader = await h.spawnMember(t, g, rid('dead'), { fast: true, lead: true })
    const elected = nextEvent<LeaderEvent>(b, 'leaderElected', (e) => e.group === g, TIMING.expirySeconds * 1000 + TIMING.expirySlackMs)
    b.watchElectedAsLeader(g, () => {})
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs))
    assert.ok(!b.isLeader(g), 'b must not lead while the other process does')
    leader.kill('SIGKILL')
    assert.deepEqual(await elected, { group: g, member: b.memberId })
  }
  h.gated(
    ['leaderElection', 'acrossProcesses', 'electionWake'],
    'elections: a killed leader is replaced when its lock may be free, not at the next tick',
    afterKill,
  )
  h.gated(['leaderElection', 'acrossProcesses', 'lockWaitQueue'], 'elections: a killed leader is replaced as its lock leaves the queue', afterKill)
}
