/** The heartbeat loop's schedule, on mocked timers: half the interval, backoff, never later than the lapse. */
import assert from 'node:assert/strict'
import { describe, it, mock } from 'node:test'
import { HeartbeatLoop } from '../../src/coordination/heartbeat.js'
import { ConnectionError, type RollcallError } from '../../src/index.js'

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve()
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
})
