/**
 * Shared (reader) locks beyond tooz's own cases (cases/tooz/api-locks.ts): waiting in either
 * mode, break() of a shared hold, and fencing tokens, on every driver with `sharedLocks`.
 */
import assert from 'node:assert/strict'
import { LockLostError } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid } from '../../support/wait.js'
import type { Harness } from '../harness.js'

export function sharedLockCases(h: Harness): void {
  h.gated('sharedLocks', 'shared locks: a blocked reader gets the lock once the writer releases', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const writer = a.getLock(name)
    assert.equal(await writer.acquire(), true)
    const reader = b.getLock(name)
    const waiting = reader.acquire({ shared: true, timeoutMs: TIMING.eventMs })
    setTimeout(() => void writer.release(), 200)
    assert.equal(await waiting, true)
    assert.equal(reader.shared, true)
    assert.equal(await reader.isStillOwner(), true)
    assert.equal(await reader.release(), true)
  })

  h.gated('sharedLocks', 'shared locks: a blocked writer waits until every reader has released', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const c = await h.open(t)
    const name = rid('l')
    const r1 = a.getLock(name)
    const r2 = b.getLock(name)
    assert.equal(await r1.acquire({ shared: true }), true)
    assert.equal(await r2.acquire({ shared: true }), true)
    const writer = c.getLock(name)
    let got = false
    const waiting = writer.acquire({ timeoutMs: TIMING.eventMs }).then((v) => (got = v))
    await r1.release()
    await new Promise((r) => setTimeout(r, TIMING.shortWaitMs))
    assert.equal(got, false, 'one reader still holds the lock')
    await r2.release()
    assert.equal(await waiting, true)
    assert.equal(await writer.isStillOwner(), true)
    assert.equal(await writer.release(), true)
  })

  h.gated('sharedLocks', 'shared locks: a timed shared wait behind a writer resolves false', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    assert.equal(await a.getLock(name).acquire(), true)
    assert.equal(await b.getLock(name).acquire({ shared: true, timeoutMs: TIMING.shortWaitMs }), false)
  })

  h.gated('sharedLocks', 'shared locks: break() frees a shared hold; the reader learns it lost the lock', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const name = rid('l')
    const reader = a.getLock(name)
    assert.equal(await reader.acquire({ shared: true }), true)
    const lost = nextEvent<{ name: string }>(a, 'lockLost', (e) => e.name === name, TIMING.eventMs)
    assert.equal(await b.getLock(name).break(), true)
    assert.equal(await reader.heartbeat(), false)
    await lost
    assert.equal(reader.acquired, false)
    assert.ok(reader.signal.reason instanceof LockLostError)
    const writer = b.getLock(name)
    assert.equal(await writer.acquire({ blocking: false }), true)
    assert.equal(await reader.release(), false, 'a broken reader must not free the new holder')
    assert.equal(await writer.isStillOwner(), true)
  })

  h.gated('sharedLocks', 'shared locks: readers and writers of four coordinators contending at random never overlap a writer', async (t) => {
    const name = rid('l')
    const coordinators = await Promise.all([0, 1, 2, 3].map(() => h.open(t)))
    // Counted after acquire() resolves and before release() is called: a hold is counted only
    // while it surely exists, so an overlap seen here is an overlap that happened.
    let readers = 0
    let writers = 0
    let readersTogether = 0
    const violations: string[] = []
    await Promise.all(coordinators.map(async (c) => {
      for (let i = 0; i < 12; i++) {
        const shared = Math.random() < 0.6
        const lock = c.getLock(name)
        assert.equal(await lock.acquire({ shared, timeoutMs: TIMING.eventMs }), true)
        if (writers > 0 || (!shared && readers > 0)) violations.push(`${shared ? 'reader' : 'writer'} entered beside ${writers} writers and ${readers} readers`)
        if (shared) readers++
        else writers++
        readersTogether = Math.max(readersTogether, readers)
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 10))
        if (shared) readers--
        else writers--
        assert.equal(await lock.release(), true)
      }
    }))
    t.diagnostic(`at most ${readersTogether} readers held together`)
    assert.deepEqual(violations, [])
  })

  h.gated(
    ['sharedLocks', 'fencing'],
    'shared locks: a shared hold has no fencing token; the next exclusive one has a larger token than the last',
    async (t) => {
      const a = await h.open(t)
      const b = await h.open(t)
      const name = rid('l')
      const first = a.getLock(name)
      await first.acquire()
      const before = first.fencingToken!
      await first.release()
      const reader = b.getLock(name)
      await reader.acquire({ shared: true })
      assert.equal(reader.fencingToken, undefined)
      await reader.release()
      const after = a.getLock(name)
      await after.acquire()
      assert.ok(after.fencingToken! > before, `${after.fencingToken} > ${before}`)
    },
  )
}
