/**
 * The Coordinator's own logic under faults no real server produces on demand: heartbeats that
 * fail, client-side expiry, memberships dropped behind the member's back, lost connections.
 * The scripted driver of runtime-driver.ts injects the faults (it stands in for no backend; the
 * conformance and fault suites run the real ones).
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect } from '../../src/index.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import { faults, open, type Faults } from './runtime-driver.js'

describe('unit: runtime', { concurrency: 4 }, () => {
  it('runtime: heartbeats keep going and report health', async (t) => {
    const { c } = await open(t, rid('s'), 400)
    const first = c.health.lastHeartbeatAt!.getTime()
    await waitFor('a second beat', () => c.health.lastHeartbeatAt!.getTime() > first, 5_000, 10)
    assert.equal(c.health.heartbeatIntervalMs, 400)
    assert.equal(c.health.consecutiveFailures, 0)
  })

  it('runtime: failed beats raise heartbeatFailed; past the deadline the connection is lost, locks and leadership end', async (t) => {
    const store = rid('s')
    const { c, f } = await open(t, store, 400)
    const g = rid('g')
    await c.joinGroupCreate(g, { v: 1 })
    const lock = c.getLock(rid('l'))
    await lock.acquire()
    c.watchElectedAsLeader(g, () => {})
    await waitFor('leadership', () => c.isLeader(g), 2_000)
    const failed = nextEvent<{ reason: string; consecutiveFailures: number }>(c, 'heartbeatFailed', () => true, 2_000)
    const lost = nextEvent<{ state: string }>(c, 'connectionStateChanged', (e) => e.state === 'lost', 3_000)
    const lockLost = nextEvent(c, 'lockLost', () => true, 3_000)
    const leadershipLost = nextEvent(c, 'leadershipLost', () => true, 3_000)
    const membershipLost = nextEvent<{ group: string }>(c, 'membershipLost', (e) => e.group === g, 3_000)
    f.failBeats = true
    const first = await failed
    assert.equal(first.reason, 'error')
    assert.ok(first.consecutiveFailures >= 1)
    await lost
    await lockLost
    await leadershipLost
    await membershipLost
    assert.equal(lock.acquired, false)
    assert.ok(lock.signal.aborted)
    assert.equal(c.isLeader(g), false)
    const back = nextEvent<{ state: string }>(c, 'connectionStateChanged', (e) => e.state === 'reconnected', 3_000)
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 3_000)
    f.failBeats = false
    await back
    await rejoined
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { v: 1 })
    await waitFor('leadership again', () => c.isLeader(g), 3_000)
  })

  it('runtime: a membership the heartbeat reports lost is rejoined with the last capabilities', async (t) => {
    const store = rid('s')
    const { c, f } = await open(t, store, 300)
    const { c: other } = await open(t, store)
    const g = rid('g')
    await c.joinGroupCreate(g, { v: 1 })
    await c.updateCapabilities(g, { v: 2 })
    await c.leaveGroup(g).then(() => c.joinGroup(g, { v: 2 }))
    // Simulate the backend dropping the member: remove it as another client would see it gone.
    const lost = nextEvent<{ group: string; reason: string }>(c, 'membershipLost', (e) => e.group === g, 3_000)
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 3_000)
    f.lostGroups.push(g)
    assert.match((await lost).reason, /no longer lists/)
    await rejoined
    assert.deepEqual(await other.getMemberCapabilities(g, c.memberId), { v: 2 })
    assert.deepEqual(c.joinedGroups, [g])
  })

  it('runtime: a rejoin that hangs does not hold up the beats: the member stays connected meanwhile', async (t) => {
    // Seen in the etcd partition runs (issue 27, seed 2702): a rejoin's txn sent to a server that
    // was cut off hung for its request timeout, the beat waited for it and sent no keepalive, so the
    // liveness deadline passed on a member whose lease etcd still kept.
    const { c, f } = await open(t, rid('s'), 400)
    const g = rid('g')
    await c.joinGroupCreate(g)
    let unhold!: () => void
    f.holdJoins = new Promise((r) => (unhold = r))
    t.after(() => unhold())
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    const lost = nextEvent<{ group: string }>(c, 'membershipLost', (e) => e.group === g, 3_000)
    f.lostGroups.push(g)
    await lost
    const beats = f.beats ?? 0
    // Five liveness windows with the rejoin hanging: the beats go on, and nothing is lost.
    await new Promise((r) => setTimeout(r, 2_000))
    assert.ok((f.beats ?? 0) >= beats + 3, `beats went on while the rejoin hung (${(f.beats ?? 0) - beats} beats)`)
    assert.deepEqual(states, [], 'the connection stayed up while the rejoin hung')
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 3_000)
    unhold()
    await rejoined
    assert.deepEqual(c.joinedGroups, [g])
  })

  it('runtime: while the connection is lost no rejoin runs: a membership still in place then is not reported rejoined until a beat answers', async (t) => {
    // Seen in the etcd partition runs (issue 27, seed 2702): a member whose lease deadline passed
    // on its side of a cut rejoined at once, the rejoin finding its key still there on the lease
    // it had presumed lapsed; `rejoined` was told, then the lease lapsed 0.3 s later.
    const { c, f } = await open(t, rid('s'), 400)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const events: string[] = []
    c.on('connectionStateChanged', (e) => events.push(e.state))
    c.on('rejoined', () => events.push('rejoined'))
    const lost = nextEvent<{ state: string }>(c, 'connectionStateChanged', (e) => e.state === 'lost', 3_000)
    // The beats fail; every other call (the rejoin's join among them) still works, and the member is still listed.
    f.failHeartbeat = true
    await lost
    await new Promise((r) => setTimeout(r, 1_000))
    assert.deepEqual(events, ['lost'], 'nothing rejoined while the connection was lost')
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 3_000)
    f.failHeartbeat = false
    await rejoined
    assert.deepEqual(events, ['lost', 'reconnected', 'rejoined'])
  })

  it('runtime: with rejoin off, a lost membership is forgotten', async (t) => {
    const memberId = rid('m')
    const f: Faults = { failBeats: false, lostGroups: [], nextBeatMs: 300 }
    faults.set(memberId, f)
    const c = await connect(`faulty://${rid('s')}?rejoin=false`, { memberId })
    t.after(() => c.stop())
    const g = rid('g')
    await c.joinGroupCreate(g)
    const lost = nextEvent(c, 'membershipLost', () => true, 3_000)
    f.lostGroups.push(g)
    await lost
    assert.deepEqual(c.joinedGroups, [])
  })

  it('runtime: a driver reporting lost then reconnected gets memberships back and locks ended', async (t) => {
    const store = rid('s')
    const { c, f } = await open(t, store, 10_000)
    const g = rid('g')
    await c.joinGroupCreate(g, 'caps')
    const lock = c.getLock(rid('l'))
    await lock.acquire()
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    const lockLost = nextEvent<{ reason: string }>(c, 'lockLost', () => true, 2_000)
    f.events!.connectionState('suspended')
    f.events!.connectionState('lost', new Error('session expired'))
    assert.match((await lockLost).reason, /session expired/)
    // The memory backend still lists the member: rejoin treats "already there" as success.
    const rejoined = nextEvent(c, 'rejoined', () => true, 2_000)
    f.events!.connectionState('reconnected')
    await rejoined
    assert.deepEqual(states, ['suspended', 'lost', 'reconnected'])
  })

  it('runtime: a leader whose connection is lost campaigns again without starving the event loop while its old lock is released', async (t) => {
    const memberId = rid('m')
    const counts = { waits: 0 }
    const f: Faults = { failBeats: false, lostGroups: [], nextBeatMs: 10_000, sqlLikeLeader: counts }
    faults.set(memberId, f)
    const c = await connect(`faulty://${rid('s')}`, { memberId, watchIntervalMs: 50 })
    t.after(() => c.stop())
    const g = rid('g')
    await c.joinGroupCreate(g)
    c.watchElectedAsLeader(g, () => {})
    await waitFor('leadership', () => c.isLeader(g), 2_000)
    const leadershipLost = nextEvent(c, 'leadershipLost', () => true, 2_000)
    f.events!.connectionState('lost', new Error('session expired'))
    await leadershipLost
    const before = counts.waits
    f.events!.connectionState('reconnected')
    await waitFor('leadership again', () => c.isLeader(g), 3_000)
    // One refused attempt per watcher tick while the 20 ms release runs, then the wait that wins.
    assert.ok(counts.waits - before < 10, `acquireWaiting() was called ${counts.waits - before} times to lead again`)
  })

  it('runtime: the release of a lost leader lock is not repeated on the lock taken again meanwhile', async (t) => {
    const memberId = rid('m')
    const f: Faults = { failBeats: false, lostGroups: [], nextBeatMs: 10_000, sqlLikeLeader: { waits: 0 }, lateReleaseAnswerMs: 300 }
    faults.set(memberId, f)
    const c = await connect(`faulty://${rid('s')}`, { memberId, watchIntervalMs: 20 })
    t.after(() => c.stop())
    const g = rid('g')
    await c.joinGroupCreate(g)
    c.watchElectedAsLeader(g, () => {})
    await waitFor('leadership', () => c.isLeader(g), 2_000)
    f.events!.connectionState('lost', new Error('session expired'))
    // The old term's lock is let go after 20 ms, but that release answers only 300 ms later; the
    // campaign takes the lock again meanwhile, and a reconnect asks for the abandoned locks' release.
    await waitFor('the lock taken again, not yet reported', () => f.leader!.claiming, 2_000, 1)
    f.events!.connectionState('reconnected')
    await waitFor('leadership again', () => c.isLeader(g), 3_000)
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(c.isLeader(g), true)
    assert.equal(f.leader!.held, true, 'the member leads, but its leader lock was released under it')
  })

  it('runtime: stop() clears every timer: the process can exit with coordinators that were stopped', async () => {
    const { execFile } = await import('node:child_process')
    const { promisify } = await import('node:util')
    // Judged inside the child, from the end of its module loading: tsx compiling src/ took 2 s here alone and over 10 s beside the
    // unit group on the loaded 2-core machine, and a bound on the whole child's life failed on that. What stop() leaves is read
    // from the event loop itself (a ref'd timer, socket or request: anything but the stdio pipes), whatever its length; the
    // unref'd guard fires only if something still keeps the process alive, and ends it with what that is.
    const script = `
      import { connect } from ${JSON.stringify(new URL('../../src/index.ts', import.meta.url).pathname)}
      setTimeout(() => {
        console.log('still running 10 s after its modules loaded: ' + JSON.stringify(process.getActiveResourcesInfo()))
        process.exit(1)
      }, 10_000).unref()
      const a = await connect('memory://x', { memberId: 'a' })
      await a.joinGroupCreate('g'); a.watchElectedAsLeader('g', () => {}); await a.watchGroup('g')
      const l = a.getLock('l'); await l.acquire()
      await a.stop()
      const left = process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap')
      console.log('stopped; left: ' + JSON.stringify(left))
      if (left.length > 0) process.exit(1)
    `
    // Not execFileSync: it would stop the event loop of the tests running beside this one for seconds.
    const out = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })
      .then((r) => r.stdout, (err: { stdout?: string; stderr?: string; message: string }) => `${err.stdout ?? ''}${err.stderr ?? err.message}`)
    assert.equal(out.trim(), 'stopped; left: []')
  })
})
