/** The heartbeat loop's schedule, on mocked timers: half the interval, backoff, never later than the lapse. */
import assert from 'node:assert/strict'
import { describe, it, mock } from 'node:test'
import type { DriverLock } from '../../src/coordination/driver.js'
import { HeartbeatLoop, settleLapses } from '../../src/coordination/runtime/heartbeat.js'
import { HeldLocks } from '../../src/coordination/runtime/held-locks.js'
import { ConnectionError, type RollcallError } from '../../src/index.js'

/** Settles what the ticked timers started: promise chains, and the expiry judged after the turn's I/O (setImmediate is not mocked). */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve()
  await new Promise((resolve) => setImmediate(resolve))
}

describe('unit: heartbeat', () => {
  it('heartbeat: beats after half the returned interval (less up to 10% jitter), then follows a new interval', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] })
    t.after(() => mock.timers.reset())
    let beats = 0
    let next = 1000
    const loop = new HeartbeatLoop({ beat: async () => (beats++, next), onFailure: () => {}, onSuccess: () => {} })
    loop.start(1000)
    mock.timers.tick(449)
    await flush()
    assert.equal(beats, 0, 'not before 450 ms (500 less 10%)')
    mock.timers.tick(51)
    await flush()
    assert.equal(beats, 1, 'by 500 ms')
    next = 200
    mock.timers.tick(500)
    await flush()
    assert.equal(beats, 2)
    mock.timers.tick(100)
    await flush()
    assert.equal(beats, 3, 'the new 200 ms interval gives a beat every 100 ms')
    loop.stop()
    mock.timers.tick(10_000)
    await flush()
    assert.equal(beats, 3, 'nothing after stop()')
  })

  it('heartbeat: failures are reported and retried with backoff, capped at a quarter of the interval', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] })
    t.after(() => mock.timers.reset())
    const failures: number[] = []
    let fail = true
    let beats = 0
    const loop = new HeartbeatLoop({
      beat: async () => {
        beats++
        if (fail) throw new ConnectionError('down')
        return 4000
      },
      onFailure: (_e: RollcallError, n: number) => failures.push(n),
      onSuccess: () => {},
    })
    loop.start(4000)
    mock.timers.tick(2000)
    await flush()
    assert.deepEqual(failures, [1])
    mock.timers.tick(200)
    await flush()
    assert.deepEqual(failures, [1, 2], 'first retry after 200 ms')
    mock.timers.tick(400)
    await flush()
    assert.deepEqual(failures, [1, 2, 3], 'then 400 ms')
    mock.timers.tick(800)
    await flush()
    mock.timers.tick(1000)
    await flush()
    assert.deepEqual(failures, [1, 2, 3, 4, 5], 'capped at 1000 ms, a quarter of 4000')
    fail = false
    mock.timers.tick(1000)
    await flush()
    assert.equal(beats, 6)
    loop.stop()
  })
})

describe('unit: heartbeat slow answers', () => {
  it('heartbeat: the next beat is sent half an interval after the last one was sent, however long its answer took', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    const sentAt: number[] = []
    let late = 0
    // Each answer takes 2.6 s of a 10 s interval. Timed from the answers, beats would be sent 7.6 s apart, and each would
    // answer 0.2 s past the deadline of the one before: late, though no beat failed.
    const loop = new HeartbeatLoop({
      beat: () => (sentAt.push(Date.now()), new Promise<number>((r) => setTimeout(() => r(10_000), 2_600))),
      onFailure: () => {},
      onSuccess: (lateByMs) => (late += lateByMs > 0 ? 1 : 0),
    })
    loop.start(10_000, Date.now())
    for (let i = 0; i < 40; i++) {
      mock.timers.tick(500)
      await flush()
    }
    loop.stop()
    const gaps = sentAt.slice(1).map((at, i) => at - sentAt[i]!)
    assert.ok(gaps.length >= 3, `beats sent at ${sentAt.join(', ')}`)
    for (const gap of gaps) assert.ok(gap >= 4_500 && gap <= 5_000, `beats sent ${gaps.join(', ')} ms apart`)
    assert.equal(late, 0)
  })
})

describe('unit: heartbeat expiry', () => {
  it('heartbeat: a beat that hangs past the deadline expires the liveness at the deadline, counted from when the last good beat was sent', async (t) => {
    mock.timers.enable({ apis: ['setTimeout'] })
    t.after(() => mock.timers.reset())
    let expired = 0
    let hang = false
    const loop = new HeartbeatLoop({
      beat: () => (hang ? new Promise<number>(() => {}) : Promise.resolve(1000)),
      onFailure: () => {},
      onSuccess: () => {},
      onExpired: () => expired++,
    })
    loop.start(1000, Date.now())
    mock.timers.tick(500)
    await flush()
    hang = true
    mock.timers.tick(499)
    await flush()
    assert.equal(expired, 0)
    mock.timers.tick(600)
    await flush()
    assert.equal(expired, 1, 'expired about 1000 ms after the last good beat was sent, though no beat failed')
    loop.stop()
  })

  /** A loop whose beat sent 450 to 500 ms in is answered 499 ms later: before the 1000 ms deadline. */
  const answeredInTime = (deadline?: () => number) => {
    const seen = { expired: 0, late: [] as number[], beats: 0 }
    const loop = new HeartbeatLoop({
      beat: () => (seen.beats++, new Promise<number>((r) => setTimeout(() => r(1000), 499))),
      onFailure: () => {},
      onSuccess: (lateByMs) => void seen.late.push(lateByMs),
      onExpired: () => seen.expired++,
      ...(deadline ? { deadline } : {}),
    })
    loop.start(1000, Date.now())
    return { loop, seen }
  }

  /** A loop whose beat, sent 450 to 500 ms in, never answers: its deadline stays at 1000 ms. */
  const hanging = () => {
    const seen = { expired: 0 }
    const loop = new HeartbeatLoop({
      beat: () => new Promise<number>(() => {}),
      onFailure: () => {},
      onSuccess: () => {},
      onExpired: () => seen.expired++,
    })
    loop.start(1000, Date.now())
    return { loop, seen }
  }

  it('heartbeat: where a session keeps liveness (deadline hook), a beat answered just before the deadline, read in the same turn as the deadline fires (a stalled loop), is not an expiry', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    const sessionUntil = Date.now() + 1000
    const { loop, seen } = answeredInTime(() => sessionUntil)
    mock.timers.tick(500)
    await flush()
    assert.equal(seen.beats, 1)
    // A stall: the answer and the deadline timer are due in one turn.
    mock.timers.tick(600)
    await flush()
    assert.equal(seen.expired, 0, 'the answer that came in time was read before the lapse was judged')
    assert.equal(seen.late.length, 1, 'the beat succeeded')
    loop.stop()
  })

  it('heartbeat: a lease (no deadline hook) whose timer runs on time lapses in the timer itself, before anything read after it', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    const { loop, seen } = hanging()
    mock.timers.tick(500)
    await flush()
    // Judged a turn later, a rival's grant read in that turn's I/O (another coordinator of the process) came before the
    // holder was told (Redis fault suite, a holder cut off at a proxy).
    mock.timers.tick(500)
    assert.equal(seen.expired, 1, 'lapsed within the timers phase')
    loop.stop()
  })

  it('heartbeat: a lease whose timer a stall held up, with its beat answered in time, reads the answer before judging: no lapse', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    const { loop, seen } = answeredInTime()
    mock.timers.tick(500)
    await flush()
    // A stall: the answer and the deadline timer are due in one turn, the timer 100 ms late.
    mock.timers.tick(600)
    assert.equal(seen.expired, 0, 'not judged in the held-up timer')
    await flush()
    assert.equal(seen.expired, 0, 'the answer that came in time was read before the lapse was judged')
    assert.equal(seen.late.length, 1, 'the beat succeeded')
    assert.ok(seen.late[0]! > 0, `reported late: ${seen.late[0]} ms`)
    loop.stop()
  })

  it('heartbeat: a lapse not judged yet after a stall (its timer held up, or not run) is told at once by settleLapses(), before a grant', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    for (const stall of ['the timer ran late', 'the timer has not run'] as const) {
      const { loop, seen } = hanging()
      mock.timers.tick(500)
      await flush()
      if (stall === 'the timer ran late') mock.timers.tick(600)
      else mock.timers.setTime(Date.now() + 600)
      assert.equal(seen.expired, 0, `${stall}: not judged yet`)
      settleLapses()
      assert.equal(seen.expired, 1, `${stall}: judged by settleLapses()`)
      mock.timers.tick(1000)
      await flush()
      assert.equal(seen.expired, 1, `${stall}: told once`)
      loop.stop()
    }
  })

  it('heartbeat: a grant recorded in this process (HeldLocks.track) tells a lapse due by then first', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    const { loop, seen } = hanging()
    mock.timers.tick(500)
    await flush()
    mock.timers.setTime(Date.now() + 600)
    const rival = { name: 'l', driverLock: {} as DriverLock, lost: () => {} }
    new HeldLocks().track(rival)
    assert.equal(seen.expired, 1, 'the lapse was told before the grant was recorded')
    loop.stop()
  })

  it('heartbeat: a session answered since the last good beat (deadline hook) moves the deadline: failed beats are not past it, nor is the expiry', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] })
    t.after(() => mock.timers.reset())
    // Every beat after the first fails (each cut in flight), while the session is answered (pings, reconnects) until 3000 ms:
    // its deadline stays 1000 ms past its last answer.
    let answeredAt = Date.now()
    let expiredAt: number | undefined
    const pastDeadline: boolean[] = []
    let beats = 0
    const loop = new HeartbeatLoop({
      beat: () => (++beats === 1 ? Promise.resolve(1000) : Promise.reject(new ConnectionError('connection loss'))),
      onFailure: (_e, _n, past) => void pastDeadline.push(past),
      onSuccess: () => {},
      onExpired: () => (expiredAt ??= Date.now()),
      deadline: () => answeredAt + 1000,
    })
    const start = Date.now()
    loop.start(1000, start)
    for (let i = 0; i < 60; i++) {
      mock.timers.tick(100)
      if (Date.now() - start <= 3000) answeredAt = Date.now()
      await flush()
    }
    loop.stop()
    assert.ok(pastDeadline.length >= 5, `beats failed and were retried (${pastDeadline.length})`)
    assert.ok(pastDeadline.slice(0, 5).every((p) => !p), `no failure while the session was answered is past the deadline: ${pastDeadline.join(', ')}`)
    assert.equal(expiredAt === undefined ? undefined : expiredAt - start, 4000, "expired at the session's last deadline, not 1000 ms after the last good beat")
  })
})
