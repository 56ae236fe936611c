/** Leadership as a value (campaign(), withLeadership()), watchElectedAsLeader()'s unsubscribe, and withLock()'s held lock. */
import assert from 'node:assert/strict'
import { CoordinatorStoppedError, InvalidStateError, LeadershipLostError, NotSupportedError } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

/** Long enough for several election rounds on polling backends. */
const ROUNDS_MS = 3 * TIMING.watchIntervalMs

export function leadershipCases(h: Harness): void {
  h.gated('leaderElection', 'leadership: withLeadership runs fn only while leading, then stands down', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const held = await a.campaign(g)
    assert.ok(a.isLeader(g) && held.active)
    let ran = false
    const lost = nextEvent<{ group: string; reason: string }>(b, 'leadershipLost', (e) => e.group === g, 2 * TIMING.eventMs)
    const result = b.withLeadership(g, async (signal) => {
      ran = true
      assert.ok(b.isLeader(g), 'fn runs while b leads')
      assert.ok(!a.isLeader(g))
      assert.equal(signal.aborted, false)
      return 42
    })
    await new Promise((r) => setTimeout(r, ROUNDS_MS))
    assert.equal(ran, false, 'fn must not run while a leads')
    await held.resign()
    assert.ok(!a.isLeader(g) && !held.active)
    assert.ok(held.signal.reason instanceof LeadershipLostError)
    assert.equal(await result, 42)
    assert.deepEqual(await lost, { group: g, reason: 'resigned' })
    assert.ok(!b.isLeader(g), 'b stood down after fn')
  }, async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.campaign(rid('g')), NotSupportedError)
    await assert.rejects(a.withLeadership(rid('g'), () => 1), NotSupportedError)
  })

  h.gated('leaderElection', "leadership: fn's error rejects withLeadership, which stands down anyway", async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const boom = new Error('boom')
    let inside: AbortSignal | undefined
    await assert.rejects(
      a.withLeadership(g, (signal) => {
        inside = signal
        throw boom
      }),
      (err) => err === boom,
    )
    assert.ok(!a.isLeader(g))
    assert.ok(inside?.aborted, "fn's signal aborts when the term ends")
    // The lock is free: another member is elected.
    assert.equal(await b.withLeadership(g, () => b.isLeader(g)), true)
  })

  h.gated('leaderElection', 'leadership: the signal aborts on stop(), on standDownGroupLeader(), and once', async (t) => {
    const a = await h.open(t)
    const g1 = rid('g')
    const g2 = rid('g')
    const first = await a.campaign(g1)
    const second = await a.campaign(g2)
    let aborts = 0
    first.signal.addEventListener('abort', () => aborts++)
    const lost = nextEvent<{ group: string; reason: string }>(a, 'leadershipLost', (e) => e.group === g1, TIMING.eventMs)
    assert.equal(await a.standDownGroupLeader(g1), true)
    assert.ok(first.signal.aborted)
    assert.match((first.signal.reason as LeadershipLostError).message, /stood down/)
    assert.equal((await lost).reason, 'stood down')
    // The campaign is over: the member does not run again for it.
    await new Promise((r) => setTimeout(r, ROUNDS_MS))
    assert.ok(!a.isLeader(g1))
    await first.resign()
    assert.equal(aborts, 1)
    const g3 = rid('g')
    const inFn = a.withLeadership(g3, (signal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason))))
    await waitFor('the third term', () => a.isLeader(g3), TIMING.eventMs)
    assert.equal(second.active, true)
    await a.stop()
    assert.ok(second.signal.reason instanceof LeadershipLostError)
    assert.match((second.signal.reason as Error).message, /coordinator stopped/)
    assert.ok((await inFn) instanceof LeadershipLostError, "withLeadership's fn sees stop() on its signal")
  })

  h.gated(['leaderElection', 'acrossHosts'], 'leadership: the signal aborts, once, where leadershipLost says a lost session ended the term', async (t) => {
    const { coordinator: a, proxy } = await h.openProxied(t)
    const b = await h.open(t, { fast: true })
    const g = rid('g')
    const held = await a.campaign(g)
    let aborts = 0
    held.signal.addEventListener('abort', () => aborts++)
    let abortedAtEvent: boolean | undefined
    const lost = nextEvent<{ group: string; reason: string }>(a, 'leadershipLost', (e) => {
      abortedAtEvent ??= e.group === g ? held.signal.aborted : undefined
      return e.group === g
    }, TIMING.expirySeconds * 1000 + 2 * TIMING.expirySlackMs)
    proxy.cut()
    const next = await b.campaign(g, { signal: AbortSignal.timeout(TIMING.expirySeconds * 1000 + 2 * TIMING.expirySlackMs) })
    proxy.restore()
    await lost
    assert.equal(abortedAtEvent, true, 'the signal has aborted when leadershipLost fires')
    assert.ok(held.signal.reason instanceof LeadershipLostError)
    assert.ok(!held.active && next.active)
    if (held.term !== undefined) assert.ok(next.term! > held.term, `the new leader's term ${next.term} fences the old ${held.term}`)
    await held.resign()
    assert.equal(aborts, 1)
    assert.ok(b.isLeader(g), "the deposed leader's resign() leaves the new term alone")
  })

  h.gated('leaderElection', 'leadership: a campaign cancelled before it leads never leads; one campaign per group per coordinator', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const held = await a.campaign(g)
    await assert.rejects(a.campaign(g), InvalidStateError)
    const cancel = new AbortController()
    const pending = b.campaign(g, { signal: cancel.signal })
    await new Promise((r) => setTimeout(r, ROUNDS_MS))
    cancel.abort(new Error('no longer wanted'))
    await assert.rejects(pending, /no longer wanted/)
    await held.resign()
    await new Promise((r) => setTimeout(r, ROUNDS_MS))
    assert.ok(!b.isLeader(g), 'the cancelled candidate does not run any more')
    // Resigned: a may campaign again.
    const again = await a.campaign(g)
    assert.ok(again.active)
    await assert.rejects(b.campaign(g, { signal: AbortSignal.abort(new Error('at once')) }), /at once/)
  })

  h.gated('leaderElection', 'leadership: stop() rejects a campaign still waiting; with autoWatch off, runWatchers() elects it', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const held = await a.campaign(g)
    const waiting = assert.rejects(b.campaign(g), CoordinatorStoppedError)
    await new Promise((r) => setTimeout(r, ROUNDS_MS))
    await b.stop()
    await waiting
    await held.resign()
    const m = await h.open(t, { autoWatch: false })
    let elected = false
    const manual = m.campaign(g).then((l) => (elected = true) && l)
    await new Promise((r) => setTimeout(r, ROUNDS_MS))
    assert.equal(elected, false, 'nothing runs between two runWatchers() calls')
    await m.runWatchers()
    assert.equal(elected, true, 'elected once runWatchers() resolves')
    assert.ok((await manual).active && m.isLeader(g))
  })

  h.gated(['leaderElection', 'fencing'], 'leadership: the term grows with every new leader', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const terms: bigint[] = []
    for (const c of [a, b, a]) {
      terms.push(
        await c.withLeadership(g, (_signal, term) => {
          assert.equal(typeof term, 'bigint')
          return term!
        }),
      )
    }
    assert.ok(terms[0]! < terms[1]! && terms[1]! < terms[2]!, `terms grow: ${terms.join(', ')}`)
  }, async (t) => {
    const a = await h.open(t)
    if (!a.capabilities.has('leaderElection')) return
    const held = await a.campaign(rid('g'))
    assert.equal(held.term, undefined)
  })

  h.gated('leaderElection', "leadership: watchElectedAsLeader's unsubscribe stops its callback", async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    let first = 0
    let second = 0
    const unsubscribe = a.watchElectedAsLeader(g, () => first++)
    a.watchElectedAsLeader(g, () => second++)
    await waitFor('both callbacks', () => first === 1 && second === 1, TIMING.eventMs)
    await unsubscribe()
    await unsubscribe()
    assert.ok(a.isLeader(g), 'another callback keeps the candidacy')
    assert.equal(await a.standDownGroupLeader(g), true)
    await waitFor('the next term', () => second === 2, TIMING.eventMs)
    assert.equal(first, 1, 'the unsubscribed callback is not called again')
  })

  h.gated(['locks', 'fencing'], "locks: withLock's fn gets the held lock, with that hold's fencing token", async (t) => {
    const a = await h.open(t)
    const name = rid('lock')
    const seen = await a.withLock(name, (signal, lock) => {
      assert.equal(signal, lock.signal)
      assert.ok(lock.acquired)
      assert.equal(typeof lock.fencingToken, 'bigint')
      return lock.fencingToken!
    })
    const next = a.getLock(name)
    assert.ok(await next.acquire({ timeoutMs: TIMING.eventMs }))
    assert.ok(next.fencingToken! > seen, 'the next holder fences the token fn saw')
    await next.release()
  }, async (t) => {
    const a = await h.open(t)
    if (!a.capabilities.has('locks')) return
    assert.equal(await a.withLock(rid('lock'), (_signal, lock) => lock.acquired && lock.fencingToken), undefined)
  })
}
