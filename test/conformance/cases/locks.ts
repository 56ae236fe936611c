/** Locks: tooz's semantics (non-re-entrant, release false when not held, break_) and what it lacks. */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { InvalidArgumentError, LockAcquireFailedError, LockLostError } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid } from '../../support/wait.js'
import type { Harness } from '../harness.js'

export function lockCases(h: Harness): void {
  h.gated('locks', 'locks: acquire, not re-entrant, release once', async (t) => {
    const a = await h.open(t)
    const lock = a.getLock(rid('l'))
    assert.equal(await lock.release(), false)
    assert.equal(await lock.acquire(), true)
    assert.ok(lock.acquired)
    assert.equal(await lock.acquire({ blocking: false }), false, 'not re-entrant')
    assert.equal(await lock.isStillOwner(), true)
    assert.equal(await lock.heartbeat(), true)
    assert.equal(await lock.release(), true)
    assert.equal(await lock.release(), false)
    assert.equal(await lock.isStillOwner(), false)
  })

  h.gated('locks', "locks: the driver contract: a lock waits in the backend's queue exactly when the driver declares lockWaitQueue", async (t) => {
    const a = await h.open(t)
    const { kind } = a.getLock(rid('l')).driverLock.waiting
    assert.equal(kind === 'queue', h.caps.has('lockWaitQueue'), `a ${kind} wait, with lockWaitQueue ${h.caps.has('lockWaitQueue') ? '' : 'not '}declared`)
  })

  h.gated('locks', 'locks: the driver contract: tryAcquire() by the object that holds answers false and keeps the hold', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const lock = a.getLock(name)
    const driverLock = lock.driverLock
    // Two attempts at once on a free lock (an election round and a wake-up overlapping): one takes it.
    const first = await Promise.all([driverLock.tryAcquire(), driverLock.tryAcquire()])
    assert.deepEqual(first.toSorted(), [false, true], `answers ${first.join(', ')}`)
    assert.equal(await driverLock.tryAcquire(), false, 'a second take by the holder')
    assert.equal(await driverLock.isStillOwner(), true, 'still held after the refused take')
    assert.equal(await b.getLock(name).acquire({ blocking: false }), false, 'still excludes others')
    assert.equal(await driverLock.release(), true, 'one release ends the hold')
    assert.equal(await driverLock.release(), false)
    assert.equal(await b.getLock(name).acquire({ blocking: false }), true)
  })

  h.gated('locks', 'locks: two lock objects of one name exclude each other, in one coordinator and across two', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const l1 = a.getLock(name)
    assert.equal(await l1.acquire(), true)
    assert.equal(await a.getLock(name).acquire({ blocking: false }), false)
    assert.equal(await b.getLock(name).acquire({ blocking: false }), false)
    await l1.release()
    const l2 = b.getLock(name)
    assert.equal(await l2.acquire({ blocking: false }), true)
    await l2.release()
  })

  h.gated('locks', 'locks: a timed wait resolves false within its bound', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    await a.getLock(name).acquire()
    const started = Date.now()
    assert.equal(await b.getLock(name).acquire({ timeoutMs: TIMING.shortWaitMs }), false)
    const took = Date.now() - started
    assert.ok(took >= TIMING.shortWaitMs - 20 && took < TIMING.shortWaitMs + 3_000, `took ${took} ms`)
  })

  h.gated('locks', 'locks: timeoutMs 0 takes a free lock (10 of 10) and answers false at once on a busy one', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const taken: boolean[] = []
    for (let i = 0; i < 10; i++) {
      const lock = a.getLock(name)
      taken.push(await lock.acquire({ timeoutMs: 0 }))
      await lock.release()
    }
    assert.deepEqual(taken, Array(10).fill(true), `${taken.filter(Boolean).length} of 10 taken`)
    const held = a.getLock(name)
    assert.equal(await held.acquire(), true)
    const started = performance.now()
    assert.equal(await b.getLock(name).acquire({ timeoutMs: 0 }), false)
    const took = performance.now() - started
    assert.ok(took < 3_000, `took ${Math.round(took)} ms`)
    assert.equal(await held.isStillOwner(), true)
  })

  h.gated('locks', 'locks: blocking: false with timeoutMs is an InvalidArgumentError naming both, and takes nothing', async (t) => {
    const a = await h.open(t)
    const name = rid('l')
    const lock = a.getLock(name)
    const contradiction = (err: unknown): boolean =>
      err instanceof InvalidArgumentError && /blocking: false/.test(err.message) && /timeoutMs: 100/.test(err.message)
    await assert.rejects(lock.acquire({ timeoutMs: 100, blocking: false }), contradiction)
    await assert.rejects(a.acquireLock(name, { timeoutMs: 100, blocking: false }), contradiction)
    assert.equal(lock.acquired, false)
    assert.equal(await a.getLock(name).acquire({ blocking: false }), true, 'the lock is still free')
  })

  h.gated('locks', 'locks: a wait whose 1 ms deadline passes before its first statement (on a coordinator with no session yet) resolves false', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    await a.getLock(name).acquire()
    // b has no server session to reuse: it opens one, which takes longer than the deadline, so the wait must notice an
    // abort that happened before it could listen for one.
    let timer: NodeJS.Timeout | undefined
    const stuck = new Promise<'still waiting'>((r) => (timer = setTimeout(() => r('still waiting'), TIMING.shortWaitMs + 3_000)))
    try {
      assert.equal(await Promise.race([b.getLock(name).acquire({ timeoutMs: 1 }), stuck]), false)
    } finally {
      clearTimeout(timer)
    }
  })

  h.gated('locks', 'locks: a timed wait ends within 50 ms of its timeout, beyond what the event loop adds (median of three)', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    await a.getLock(name).acquire()
    const took: number[] = []
    const excess: number[] = []
    for (let i = 0; i < 3; i++) {
      // A plain timer of the same length, started together, measures how late this loaded host runs timers.
      const started = performance.now()
      const timer = new Promise<number>((r) => setTimeout(() => r(performance.now() - started), TIMING.shortWaitMs))
      assert.equal(await b.getLock(name).acquire({ timeoutMs: TIMING.shortWaitMs }), false)
      const ms = performance.now() - started
      took.push(ms)
      excess.push(ms - Math.max(TIMING.shortWaitMs, await timer))
    }
    t.diagnostic(
      `timed waits of ${TIMING.shortWaitMs} ms took ${took.map((ms) => ms.toFixed(0)).join(', ')} ms; beyond a plain timer: ${
        excess.map((ms) => ms.toFixed(0)).join(', ')
      } ms`,
    )
    assert.ok(took.every((ms) => ms >= TIMING.shortWaitMs - 2), `a wait ended early: ${took.join(', ')}`)
    const median = [...excess].sort((x, y) => x - y)[1]!
    assert.ok(median < 50, `the waits ended ${excess.map((ms) => ms.toFixed(0)).join(', ')} ms after a plain ${TIMING.shortWaitMs} ms timer`)
  })

  h.gated('locks', 'locks: a pending timed acquire keeps its process alive until it settles (exit 0, never 13)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import',
      'tsx',
      'test/support/timed-acquire-process.ts',
      h.config.url,
      rid('l'),
      String(TIMING.shortWaitMs),
    ], { timeout: 30_000 })
    assert.equal(stdout.trim(), 'false')
  })

  h.gated('locks', 'locks: a blocked acquire gets the lock once it is released', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const held = a.getLock(name)
    await held.acquire()
    const waiting = b.getLock(name).acquire({ timeoutMs: TIMING.eventMs })
    setTimeout(() => void held.release(), 200)
    assert.equal(await waiting, true)
  })

  h.gated('locks', 'locks: an AbortSignal cancels a wait with its reason', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    await a.getLock(name).acquire()
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('changed my mind')), 100)
    await assert.rejects(b.getLock(name).acquire({ signal: controller.signal }), /changed my mind/)
  })

  h.gated('locks', 'locks: withLock and acquireLock release afterwards; a busy lock fails with LockAcquireFailedError', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const result = await a.withLock(name, async (signal) => {
      assert.equal(signal.aborted, false)
      await assert.rejects(b.acquireLock(name, { blocking: false }), LockAcquireFailedError)
      return 42
    })
    assert.equal(result, 42)
    {
      await using held = await b.acquireLock(name, { blocking: false })
      assert.ok(held.acquired)
    }
    assert.equal(await a.getLock(name).acquire({ blocking: false }), true)
  })

  h.gated('locks', 'locks: break() frees the lock; the holder learns it lost the lock', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const held = a.getLock(name)
    await held.acquire()
    // Listen first: a driver told by its backend at once may report the loss before break() resolves.
    const lost = nextEvent<{ name: string }>(a, 'lockLost', (e) => e.name === name, TIMING.eventMs)
    assert.equal(await b.getLock(name).break(), true)
    assert.equal(await held.heartbeat(), false)
    await lost
    assert.equal(held.acquired, false)
    assert.ok(held.signal.aborted)
    assert.ok(held.signal.reason instanceof LockLostError)
    const other = b.getLock(name)
    assert.equal(await other.acquire({ blocking: false }), true)
    assert.equal(await held.release(), false, 'a broken holder must not free the new holder')
    assert.equal(await other.isStillOwner(), true)
  })

  h.gated(['locks', 'fencing'], 'locks: fencing tokens grow with every new holder', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const tokens: bigint[] = []
    for (const c of [a, b, a]) {
      const lock = c.getLock(name)
      await lock.acquire()
      assert.equal(typeof lock.fencingToken, 'bigint')
      tokens.push(lock.fencingToken!)
      await lock.release()
    }
    assert.ok(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!, `tokens ${tokens.join(' < ')}`)
  }, async (t) => {
    const a = await h.open(t)
    const lock = a.getLock(rid('l'))
    await lock.acquire()
    assert.equal(lock.fencingToken, undefined)
  })

  h.gated(['locks', 'acrossHosts'], 'locks: a lock taken by another member during an outage is reported lost within one beat of reconnecting', async (t) => {
    const { coordinator: a, proxy } = await h.openProxied(t)
    const b = await h.open(t, { fast: true })
    const name = rid('l')
    const held = a.getLock(name)
    assert.equal(await held.acquire(), true)
    const lost = nextEvent<{ name: string }>(a, 'lockLost', (e) => e.name === name, TIMING.expirySeconds * 1000 + 2 * TIMING.expirySlackMs)
    proxy.cut()
    const taken = b.getLock(name)
    assert.equal(
      await taken.acquire({ timeoutMs: TIMING.expirySeconds * 1000 + TIMING.expirySlackMs }),
      true,
      'the other member takes the lock once the cut-off hold lapses',
    )
    proxy.restore()
    // Within one beat of the link coming back, if the client had not already given the lock up.
    const reconnected = Date.now()
    await lost
    assert.ok(Date.now() - reconnected < TIMING.eventMs, 'reported lost within one beat of reconnecting')
    assert.equal(held.acquired, false)
    assert.equal(await held.release(), false, 'the lapsed hold cannot free the new holder')
    assert.equal(await taken.isStillOwner(), true)
  })
}
