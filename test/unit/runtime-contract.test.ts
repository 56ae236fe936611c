/**
 * The runtime's side of the driver contract (driver.ts), walked event path by event path with the
 * scripted driver of runtime-driver.ts: what the Coordinator does on `suspended` → `reconnected`,
 * on sessionReplaced(), with a beat's answer about the held locks, and in a blocking acquire under
 * each of the three lock wait models (calls logged by the `waits` driver). It tests the runtime's
 * rules and stands in for no backend (each backend's own tests run on its real server). A beat's
 * lost groups being rejoined is in runtime.test.ts.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it, type TestContext } from 'node:test'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import type { Coordinator, Lock, LockWaiting } from '../../src/index.js'
import { open, openWaits, type Faults } from './runtime-driver.js'

/** Long enough that no scheduled beat comes during a test: every beat counted is the runtime's answer to an event. */
const NO_SCHEDULED_BEAT_MS = 60_000

/** A coordinator holding a fresh lock, and another on the same store. */
async function heldBeside(t: TestContext): Promise<{ c: Coordinator; f: Faults; other: Coordinator; name: string; lock: Lock }> {
  const store = rid('s')
  const { c, f } = await open(t, store, NO_SCHEDULED_BEAT_MS)
  const { c: other } = await open(t, store, NO_SCHEDULED_BEAT_MS)
  const name = rid('l')
  const lock = c.getLock(name)
  assert.equal(await lock.acquire(), true)
  return { c, f, other, name, lock }
}

/**
 * heldBeside(), then an outage: the lock is lost and its release on the backend fails (the runtime keeps it, to send once the
 * backend answers), while the backend ends the old hold (a session lock's session ended). Still failing on return.
 */
async function lostWithReleaseOwed(t: TestContext): Promise<{ f: Faults; other: Coordinator; name: string; lock: Lock }> {
  const { c, f, other, name, lock } = await heldBeside(t)
  f.failBeats = true
  const lockLost = nextEvent<{ name: string }>(c, 'lockLost', (e) => e.name === name, 2_000)
  f.events!.connectionState('lost', new Error('cut off'))
  await lockLost
  assert.equal(await other.getLock(name).break(), true)
  return { f, other, name, lock }
}

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

  it('contract: the locks a beat leaves alone are refreshed while it is in flight, not after its answer', async (t) => {
    // Liveness of 2 s: a beat about every second, and a loaded machine's stalls (which lose a 300 ms liveness, and with it the lock,
    // after which beats go alone) stay far inside it.
    const { c, f } = await open(t, rid('s'), 2_000)
    const lock = c.getLock(rid('l'))
    assert.equal(await lock.acquire(), true)
    // Answers take 50 ms: a refresh sent alongside a beat is still in flight when the beat is called.
    f.answerMs = 50
    await waitFor('a beat with the lock held', () => (f.beatsBesideRefresh ?? 0) + (f.beatsAlone ?? 0) > 0, 5_000)
    const before = { beside: f.beatsBesideRefresh ?? 0, alone: f.beatsAlone ?? 0 }
    await waitFor('three more beats', () => (f.beatsBesideRefresh ?? 0) + (f.beatsAlone ?? 0) >= before.beside + before.alone + 3, 10_000)
    assert.equal((f.beatsAlone ?? 0) - before.alone, 0, 'no beat went out before its lock refresh: one round trip per beat, not two in a row')
    assert.equal(lock.acquired, true)
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

  it('contract: a lock given up on a lost connection is not taken again until its release on the backend has settled', async (t) => {
    const { f, other, name, lock } = await lostWithReleaseOwed(t)
    // Back: the kept release goes out, slowly; the application takes the lock again at once.
    let letRelease!: () => void
    f.holdReleases = new Promise((r) => (letRelease = r))
    f.failBeats = false
    f.events!.connectionState('reconnected')
    const again = lock.acquire({ blocking: false })
    await sleep(50)
    letRelease()
    f.holdReleases = undefined
    assert.equal(await again, true)
    // The old hold's release did not free the new one: nobody else gets the lock.
    assert.equal(await other.getLock(name).acquire({ blocking: false }), false, 'the lock taken again was freed under its holder')
    assert.equal(await lock.release(), true)
  })

  it('contract: a release given up on a lost connection does not go out while the same lock is being taken again', async (t) => {
    // A MariaDB partition run: the reconnect's beat sent the release still owed for a lost term while the member was being elected
    // again; it freed the new hold on the server, and the next leader was elected 217 ms before the first was told.
    const { f, other, name, lock } = await lostWithReleaseOwed(t)
    // The backend answers again, and the application takes the lock again before any beat went out: the release is still to send.
    // The backend grants it; the grant's answer is slow.
    f.failBeats = false
    let letGrant!: () => void
    f.holdAcquired = new Promise((r) => (letGrant = r))
    const again = lock.acquire({ blocking: false })
    await sleep(50)
    // The reconnect's beat goes out meanwhile, and with it the releases still to send.
    f.events!.connectionState('reconnected')
    await sleep(50)
    letGrant()
    f.holdAcquired = undefined
    assert.equal(await again, true)
    assert.equal(await other.getLock(name).acquire({ blocking: false }), false, 'the lock taken again was freed under its holder')
    assert.equal(await lock.release(), true)
  })

  it('contract: a rejoin that finds the membership still listed renews it (its lease with it), as a join would have made it', async (t) => {
    // A PostgreSQL partition run: a rejoin 0.1 s after a heal found the member's row still live, left it as it was (nothing had
    // renewed it since the loss), and the row lapsed 0.6 s later, before the next beat: every member saw it leave.
    const nextBeatMs = 1_000
    const { c, f } = await open(t, rid('s'), nextBeatMs)
    const g = rid('g')
    await c.joinGroupCreate(g, { v: 1 })
    const lost = nextEvent<{ group: string }>(c, 'membershipLost', (e) => e.group === g, nextBeatMs * 3)
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, nextBeatMs * 6)
    f.failBeats = true
    await lost
    // The backend answers again, and still lists the member (the memory backend never expires one).
    const updates = f.capabilityUpdates ?? 0
    f.failBeats = false
    await rejoined
    assert.equal((f.capabilityUpdates ?? 0) - updates, 1, 'the membership found in place was renewed')
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { v: 1 })
  })

  it('contract: with rejoin off, joining a group presumed lost that the backend still lists takes the membership back with the new capabilities', async (t) => {
    // The PostgreSQL partition run: a beat reached the server but its answer did not (drop-out), so the member presumed its row
    // lapsed while the server had just extended it; the service-group driver's join after the heal answered MemberExistsError,
    // nothing beat the row any more, and the service read down from its lapse until a report 20 s later.
    const nextBeatMs = 1_000
    const { c, f } = await open(t, rid('s'), nextBeatMs, { rejoin: false })
    const g = rid('g')
    await c.joinGroupCreate(g, { v: 1 })
    const lost = nextEvent<{ group: string }>(c, 'membershipLost', (e) => e.group === g, nextBeatMs * 3)
    f.failBeats = true
    await lost
    assert.deepEqual(c.joinedGroups, [], 'given up: rejoin is off')
    // The backend answers again, and still lists the member (the memory backend never expires one).
    f.failBeats = false
    await waitFor('reconnected', () => c.connectionState === 'reconnected', nextBeatMs * 3)
    await c.joinGroup(g, { v: 2 })
    assert.deepEqual(c.joinedGroups, [g])
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { v: 2 })
    // A member still joined (never presumed lost) is refused as tooz refuses it.
    await assert.rejects(c.joinGroup(g, { v: 3 }), { code: 'MEMBER_EXISTS' })
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { v: 2 })
  })

  it('contract: back from lost, liveness counts from the reconnect, not from the send of the beat that came back', async (t) => {
    const nextBeatMs = 1_000
    const { c, f } = await open(t, rid('s'), nextBeatMs)
    await c.joinGroupCreate(rid('g'))
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    f.failHeartbeat = true
    await waitFor('presumed lost', () => states.includes('lost'), nextBeatMs * 3)
    // The next beat goes out and is answered only near the end of its own window (a cut that healed under it).
    let answer!: (ok: boolean) => void
    f.holdBeats = new Promise((r) => (answer = r))
    const held = f.heldBeats ?? 0
    f.failHeartbeat = false
    await waitFor('a beat in flight', () => (f.heldBeats ?? 0) > held, nextBeatMs * 2)
    await sleep(nextBeatMs * 0.9)
    f.holdBeats = undefined
    // The beats of the reconnect take a round trip of a third of the window (queued behind the rejoins).
    f.answerMs = nextBeatMs / 3
    answer(true)
    await waitFor('reconnected', () => states.includes('reconnected'), 2_000)
    await sleep(nextBeatMs / 2)
    assert.deepEqual(states, ['lost', 'reconnected'])
  })

  it('contract: the wait for a kept release to settle counts against the acquire deadline', async (t) => {
    // The etcd partition run: acquires of 3 s returned after 10-17 s, waiting first for what an earlier attempt or release still had
    // in flight to a host cut off.
    const { c, f } = await open(t, rid('s'), NO_SCHEDULED_BEAT_MS)
    const name = rid('l')
    const lock = c.getLock(name)
    assert.equal(await lock.acquire(), true)
    f.failBeats = true
    const lockLost = nextEvent<{ name: string }>(c, 'lockLost', (e) => e.name === name, 2_000)
    f.events!.connectionState('lost', new Error('cut off'))
    await lockLost
    let letRelease!: () => void
    f.holdReleases = new Promise((r) => (letRelease = r))
    f.failBeats = false
    f.events!.connectionState('reconnected')
    // The release answers after 3 s at the latest (where the acquire waited for it whole, it returns then).
    const answer = setTimeout(() => letRelease(), 3_000)
    const startedAt = performance.now()
    const got = await lock.acquire({ timeoutMs: 300 })
    const tookMs = performance.now() - startedAt
    assert.ok(tookMs < 2_000, `the acquire of 300 ms took ${Math.round(tookMs)} ms`)
    assert.equal(got, false, 'not taken while the old release is in flight')
    clearTimeout(answer)
    letRelease()
    f.holdReleases = undefined
    assert.equal(await lock.acquire({ timeoutMs: 2_000 }), true)
    assert.equal(await lock.release(), true)
  })

  it('contract: a release that got no answer is sent again once the backend answers', async (t) => {
    // The etcd partition run (issue 27): a release and its lease's revoke were lost in a cut, and the key lived on with its lease (which
    // etcd renews at each change of leader) for 30 s, while every contender waited.
    const { c, f, other, name, lock } = await heldBeside(t)
    f.failBeats = true
    await assert.rejects(lock.release(), { code: 'CONNECTION_FAILED' })
    assert.equal(lock.acquired, false)
    assert.equal(await other.getLock(name).acquire({ blocking: false }), false, 'the backend still has the hold')
    f.failBeats = false
    f.events!.connectionState('suspended')
    f.events!.connectionState('reconnected')
    const taken = other.getLock(name)
    await waitFor('the lock freed on the backend', () => taken.acquire({ blocking: false }), 2_000)
    assert.equal(await taken.release(), true)
  })

  for (const answer of ['fails', 'names the group lost'] as const) {
    it(`contract: a beat sent before lost → reconnected that ${answer} after the rejoin loses nothing again`, async (t) => {
      const nextBeatMs = 1_000
      const { c, f } = await open(t, rid('s'), nextBeatMs)
      const g = rid('g')
      await c.joinGroupCreate(g)
      const states: string[] = []
      c.on('connectionStateChanged', (e) => states.push(e.state))
      const lost: string[] = []
      c.on('membershipLost', (e) => lost.push(e.group))
      let answerOld!: (ok: boolean) => void
      f.holdBeats = new Promise((r) => (answerOld = r))
      await waitFor('a beat in flight', () => (f.heldBeats ?? 0) > 0, nextBeatMs * 2)
      // The beat hangs past the liveness deadline (the member presumes itself lost); the connection comes back and the group is rejoined.
      await waitFor('presumed lost', () => states.includes('lost'), nextBeatMs * 2)
      // The outage lasts: the old beat's own window (from its send) has passed by the time it answers.
      await sleep(nextBeatMs)
      f.holdBeats = undefined
      // Beats now answer after a round trip, as a real backend's: the old beat's answer comes before the fresh beat's.
      f.answerMs = 50
      const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 2_000)
      f.events!.connectionState('reconnected')
      await rejoined
      // Now the old beat answers, from the old connection.
      if (answer === 'names the group lost') f.lostGroups.push(g)
      const beats = f.beats ?? 0
      answerOld(answer === 'names the group lost')
      await waitFor('a fresh beat', () => (f.beats ?? 0) > beats + (answer === 'fails' ? 0 : 1), 2_000)
      await sleep(100)
      assert.deepEqual(states, ['lost', 'reconnected'])
      assert.deepEqual(lost, [g], 'the membership was lost once, at the expiry')
      assert.deepEqual(c.joinedGroups, [g])
    })
  }
})

/** Resolves with how `p` settled: its value, or `rejected: <message>`. */
async function settled<T>(p: Promise<T>): Promise<T | string> {
  return p.catch((err: unknown) => `rejected: ${(err as Error).message}`)
}

/** `calls` after the first, with the notify waits' pauses (`waitForRelease`, `woken`) left out: the waiter's attempts and endWait(). */
function attemptsAfterFirst(calls: readonly string[]): string[] {
  return calls.slice(1).filter((call) => call !== 'waitForRelease' && call !== 'woken')
}

describe('unit: runtime contract: lock waits', { concurrency: 4 }, () => {
  it('contract: the three wait models are exclusive by type', () => {
    const tryAcquire = async (): Promise<boolean> => true
    const pause = async (): Promise<void> => {}
    // @ts-expect-error a queue wait carries no notify members: the runtime would never call them
    const mixed: LockWaiting = { kind: 'queue', acquireWaiting: tryAcquire, waitForRelease: pause }
    // @ts-expect-error a notify wait without its waiter's attempt
    const partial: LockWaiting = { kind: 'notify', waitForRelease: pause, endWait: pause }
    // @ts-expect-error a poll wait has nothing to call
    const polling: LockWaiting = { kind: 'poll', acquireWaiting: tryAcquire }
    assert.deepEqual([mixed.kind, partial.kind, polling.kind], ['queue', 'notify', 'poll'])
  })

  for (const kind of ['poll', 'notify', 'queue'] as const) {
    it(`contract: ${kind}: a free lock is taken by one call`, async (t) => {
      const { c, lock, name } = await openWaits(t, kind)
      assert.equal(await c.getLock(name).acquire(), true)
      assert.deepEqual(lock.calls, [kind === 'queue' ? 'acquireWaiting:exclusive' : 'tryAcquire'])
    })

    it(`contract: ${kind}: a busy lock with timeoutMs 0 gets exactly one tryAcquire()`, async (t) => {
      const { c, lock, name } = await openWaits(t, kind)
      lock.busy = true
      assert.equal(await c.getLock(name).acquire({ timeoutMs: 0 }), false)
      assert.deepEqual(lock.calls, ['tryAcquire'])
    })
  }

  for (const shared of [false, true]) {
    const plain = shared ? 'tryAcquireShared' : 'tryAcquire'
    it(`contract: poll: a busy lock is polled with ${plain}() until it is free`, async (t) => {
      const { c, lock, name } = await openWaits(t, 'poll')
      lock.busy = true
      const got = c.getLock(name).acquire({ shared })
      await waitFor('three attempts', () => lock.calls.length >= 3, 3_000)
      lock.free()
      assert.equal(await got, true)
      assert.deepEqual(new Set(lock.calls), new Set([plain]))
    })
  }

  it('contract: poll: a wait that times out made tryAcquire() calls only', async (t) => {
    const { c, lock, name } = await openWaits(t, 'poll')
    lock.busy = true
    assert.equal(await c.getLock(name).acquire({ timeoutMs: 300 }), false)
    assert.ok(lock.calls.length >= 2, `${lock.calls.length} attempts`)
    assert.deepEqual(new Set(lock.calls), new Set(['tryAcquire']))
  })

  for (const shared of [false, true]) {
    const mode = shared ? 'shared' : 'exclusive'
    const plain = shared ? 'tryAcquireShared' : 'tryAcquire'
    it(`contract: notify (${mode}): ${plain}(), then waitForRelease() and the waiter's attempts; a release wakes the pause and the next attempt takes the lock, with no endWait()`, async (t) => {
      const { c, lock, name } = await openWaits(t, 'notify')
      lock.busy = true
      const got = c.getLock(name).acquire({ shared })
      await waitFor("a pause after a waiter's attempt", () => lock.calls.includes(`tryAcquireAsWaiter:${mode}`) && lock.pausing && (lock.free(), true), 3_000)
      assert.equal(await got, true)
      assert.equal(lock.calls[0], plain)
      assert.equal(lock.calls[1], 'waitForRelease', "every waiter's attempt follows a pause")
      assert.deepEqual(lock.calls.slice(-3), ['waitForRelease', 'woken', `tryAcquireAsWaiter:${mode}`])
      for (const [i, call] of lock.calls.entries()) {
        if (call.startsWith('tryAcquireAsWaiter')) assert.match(lock.calls[i - 1]!, /^(waitForRelease|woken)$/, `call ${i} follows a pause`)
      }
      assert.deepEqual(new Set(attemptsAfterFirst(lock.calls)), new Set([`tryAcquireAsWaiter:${mode}`]), 'no plain attempt within the wait, no endWait()')
    })
  }

  it('contract: notify: a wait that times out ends with one endWait(), after which nothing is called', async (t) => {
    const { c, lock, name } = await openWaits(t, 'notify')
    lock.busy = true
    assert.equal(await c.getLock(name).acquire({ timeoutMs: 300 }), false)
    await waitFor('endWait()', () => lock.calls.includes('endWait'), 2_000)
    await sleep(100)
    assert.equal(lock.calls[0], 'tryAcquire')
    assert.equal(lock.calls.at(-1), 'endWait')
    assert.equal(lock.calls.filter((call) => call === 'endWait').length, 1)
    assert.deepEqual(new Set(attemptsAfterFirst(lock.calls).slice(0, -1)), new Set(['tryAcquireAsWaiter:exclusive']))
  })

  it('contract: notify: a wait aborted by the caller rejects with its reason and ends with one endWait()', async (t) => {
    const { c, lock, name } = await openWaits(t, 'notify')
    lock.busy = true
    const controller = new AbortController()
    const got = settled(c.getLock(name).acquire({ signal: controller.signal }))
    await waitFor('a pause', () => lock.pausing, 3_000)
    controller.abort(new Error('the caller gave up'))
    assert.equal(await got, 'rejected: the caller gave up')
    await waitFor('endWait()', () => lock.calls.includes('endWait'), 2_000)
    assert.deepEqual(lock.calls.slice(-2), ['waitForRelease', 'endWait'])
  })

  for (const shared of [false, true]) {
    const mode = shared ? 'shared' : 'exclusive'
    it(`contract: queue (${mode}): a busy lock waits in one acquireWaiting(), with no tryAcquire() and no polling`, async (t) => {
      const { c, lock, name } = await openWaits(t, 'queue')
      lock.busy = true
      const got = c.getLock(name).acquire({ shared })
      await waitFor('the queued wait', () => lock.pausing, 3_000)
      await sleep(300)
      lock.free()
      assert.equal(await got, true)
      assert.deepEqual(lock.calls, [`acquireWaiting:${mode}`])
    })
  }

  it('contract: queue: a wait that times out aborts acquireWaiting(), which withdraws', async (t) => {
    const { c, lock, name } = await openWaits(t, 'queue')
    lock.busy = true
    assert.equal(await c.getLock(name).acquire({ timeoutMs: 200 }), false)
    assert.deepEqual(lock.calls, ['acquireWaiting:exclusive', 'withdrawn'])
  })

  it('contract: queue: a wait aborted by the caller rejects with its reason after acquireWaiting() withdraws', async (t) => {
    const { c, lock, name } = await openWaits(t, 'queue')
    lock.busy = true
    const controller = new AbortController()
    const got = settled(c.getLock(name).acquire({ signal: controller.signal }))
    await waitFor('the queued wait', () => lock.pausing, 3_000)
    controller.abort(new Error('the caller gave up'))
    assert.equal(await got, 'rejected: the caller gave up')
    await waitFor('the withdrawal', () => lock.calls.includes('withdrawn'), 2_000)
    assert.deepEqual(lock.calls, ['acquireWaiting:exclusive', 'withdrawn'])
  })

  it('contract: a wait ended by stop() rejects in every model', async (t) => {
    for (const kind of ['poll', 'notify', 'queue'] as const) {
      const { c, lock, name } = await openWaits(t, kind)
      lock.busy = true
      const got = settled(c.getLock(name).acquire())
      await waitFor(`${kind}: a wait under way`, () => lock.calls.length >= 2 || lock.pausing, 3_000)
      await c.stop()
      assert.match(String(await got), /^rejected: /, kind)
      if (kind === 'notify') await waitFor('endWait()', () => lock.calls.includes('endWait'), 2_000)
      if (kind === 'queue') assert.deepEqual(lock.calls, ['acquireWaiting:exclusive', 'withdrawn'])
    }
  })
})
