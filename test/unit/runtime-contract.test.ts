/**
 * The runtime's side of the driver contract (driver.ts), walked event path by event path with the
 * scripted driver of runtime-driver.ts: what the Coordinator does on `suspended` → `reconnected`,
 * on sessionReplaced(), and with a beat's answer about the held locks. It tests the runtime's
 * rules and stands in for no backend (each backend's own tests run on its real server). A beat's
 * lost groups being rejoined is in runtime.test.ts.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import { open } from './runtime-driver.js'

/** Long enough that no scheduled beat comes during a test: every beat counted is the runtime's answer to an event. */
const NO_SCHEDULED_BEAT_MS = 60_000

describe('unit: runtime contract', { concurrency: 4 }, () => {
  it('contract: each suspended → reconnected costs one beat and one refresh of each held lock the beat left alone', async (t) => {
    const { c, f } = await open(t, rid('s'), NO_SCHEDULED_BEAT_MS)
    const lock = c.getLock(rid('l'))
    assert.equal(await lock.acquire(), true)
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    for (let round = 1; round <= 3; round++) {
      const beats = f.beats ?? 0
      const refreshes = f.refreshes ?? 0
      f.events!.connectionState('suspended')
      f.events!.connectionState('reconnected')
      await waitFor(`the beat of reconnect ${round}`, () => (f.beats ?? 0) > beats && (f.refreshes ?? 0) > refreshes, 2_000)
      // Anything more would have come by now: every call here is local.
      await sleep(100)
      assert.equal((f.beats ?? 0) - beats, 1, `beats for reconnect ${round}`)
      assert.equal((f.refreshes ?? 0) - refreshes, 1, `refreshes for reconnect ${round}`)
    }
    assert.deepEqual(states, ['suspended', 'reconnected', 'suspended', 'reconnected', 'suspended', 'reconnected'])
    assert.equal(lock.acquired, true, 'nothing was lost in a suspension')
  })

  it('contract: a beat that refreshed the locks itself gets no refresh; one that left them alone gets one per lock', async (t) => {
    const { c, f } = await open(t, rid('s'), 200)
    const locks = [c.getLock(rid('l')), c.getLock(rid('l'))]
    for (const l of locks) assert.equal(await l.acquire(), true)
    f.beatLocks = () => ({ refreshed: true, lost: [] })
    const quiet = { beats: f.beats ?? 0, refreshes: f.refreshes ?? 0 }
    await waitFor('three beats', () => (f.beats ?? 0) >= quiet.beats + 3, 3_000)
    assert.equal(f.refreshes ?? 0, quiet.refreshes, '{ refreshed: true }: the runtime sends no refresh')
    f.beatLocks = undefined
    const alone = { beats: f.beats ?? 0, refreshes: f.refreshes ?? 0 }
    await waitFor('three beats', () => (f.beats ?? 0) >= alone.beats + 3, 3_000)
    const beats = (f.beats ?? 0) - alone.beats
    const refreshes = (f.refreshes ?? 0) - alone.refreshes
    // A refresh may still be on its way for the last beat counted.
    assert.ok(refreshes >= 2 * (beats - 1) && refreshes <= 2 * beats, `${refreshes} refreshes for ${beats} beats of two locks`)
    for (const l of locks) assert.equal(l.acquired, true)
  })

  it('contract: a beat that names a held lock lost ends that lock alone', async (t) => {
    const { c, f } = await open(t, rid('s'), 200)
    const kept = c.getLock(rid('l'))
    const gone = c.getLock(rid('l'))
    assert.equal(await kept.acquire(), true)
    assert.equal(await gone.acquire(), true)
    const lockLost = nextEvent<{ name: string; reason: string }>(c, 'lockLost', () => true, 3_000)
    f.beatLocks = (held) => ({ refreshed: true, lost: [...held].filter((l) => l === gone.driverLock) })
    const lost = await lockLost
    assert.equal(lost.name, gone.name)
    assert.equal(gone.acquired, false)
    assert.ok(gone.signal.aborted)
    assert.equal(kept.acquired, true)
  })

  for (const before of ['connected', 'suspended', 'lost'] as const) {
    it(`contract: sessionReplaced() from ${before}: locks and leadership end, memberships are lost and restored, then reconnected`, async (t) => {
      const { c, f } = await open(t, rid('s'), NO_SCHEDULED_BEAT_MS)
      const g = rid('g')
      await c.joinGroupCreate(g, { v: 1 })
      const lock = c.getLock(rid('l'))
      assert.equal(await lock.acquire(), true)
      c.watchElectedAsLeader(g, () => {})
      await waitFor('leadership', () => c.isLeader(g), 2_000)
      const states: string[] = []
      c.on('connectionStateChanged', (e) => states.push(e.state))
      const lockLost = nextEvent<{ reason: string }>(c, 'lockLost', () => true, 2_000)
      const leadershipLost = nextEvent<{ group: string }>(c, 'leadershipLost', (e) => e.group === g, 2_000)
      const membershipLost = nextEvent<{ group: string }>(c, 'membershipLost', (e) => e.group === g, 2_000)
      const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 2_000)
      if (before === 'suspended') f.events!.connectionState('suspended')
      if (before === 'lost') f.events!.connectionState('lost', new Error('the session expired'))
      const beats = f.beats ?? 0
      f.events!.sessionReplaced('a new session replaced the old one')
      const reason = before === 'lost' ? /the session expired/ : /a new session replaced the old one/
      assert.match((await lockLost).reason, reason)
      await leadershipLost
      await membershipLost
      await rejoined
      assert.equal(lock.acquired, false)
      assert.equal(c.connectionState, 'reconnected')
      assert.deepEqual(states, before === 'connected' ? ['lost', 'reconnected'] : [before, ...(before === 'suspended' ? ['lost'] : []), 'reconnected'])
      await waitFor('the beat after the new session', () => (f.beats ?? 0) > beats, 2_000)
      assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { v: 1 })
      await waitFor('leadership again', () => c.isLeader(g), 3_000)
      assert.equal(await lock.acquire(), true, 'the lock can be taken again')
    })
  }

  it('contract: after sessionReplaced() the liveness deadline counts from the new session, not the old one', async (t) => {
    const nextBeatMs = 2_000
    const { c, f } = await open(t, rid('s'), nextBeatMs)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    // Just after a good beat, beats start failing: the old session's deadline is nextBeatMs from that beat.
    const beats = f.beats ?? 0
    await waitFor('a beat', () => (f.beats ?? 0) > beats, nextBeatMs)
    f.failHeartbeat = true
    const oldDeadline = Date.now() + nextBeatMs
    f.events!.connectionState('lost', new Error('the session expired'))
    await sleep(nextBeatMs * 0.75)
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 2_000)
    f.events!.sessionReplaced('a new session')
    const newDeadline = Date.now() + nextBeatMs
    await rejoined
    // Past the old deadline, before the new one: beats still fail, yet nothing is lost a second time.
    await sleep(oldDeadline + (newDeadline - oldDeadline) / 2 - Date.now())
    assert.deepEqual(states, ['lost', 'reconnected'])
    assert.deepEqual(c.joinedGroups, [g])
    // The new session's own deadline does apply.
    await waitFor('the new session presumed lost', () => states.length === 3, nextBeatMs * 2)
    assert.deepEqual(states, ['lost', 'reconnected', 'lost'])
  })
})
