/**
 * The etcd3 driver's hedged requests (src/coordination/drivers/etcd3/etcd3-hedge.ts) with scripted
 * endpoints: which endpoint each copy goes to and when, which answer counts, what is thrown, and
 * that the copies left behind are aborted. The real-cluster behaviour is in
 * test/fault/etcd-hung-keepalive.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { hedged } from '../../src/coordination/drivers/etcd3/etcd3-hedge.js'

/** An endpoint's behaviour: answer after ms, fail after ms, or never answer. */
type Script = { answer: string; afterMs: number } | { fail: string; afterMs: number; final?: boolean } | 'hang'

class Failure extends Error {
  constructor(message: string, readonly final: boolean) {
    super(message)
  }
}

/** Settles what a tick started: the copies' promise chains (setImmediate is not mocked). */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * Runs hedged() over scripted endpoints on mocked timers, ticked a millisecond at a time until it
 * settles; records each copy (endpoint, ms after the start) and whether it was aborted. The times
 * are hedged()'s own schedule: on real timers a loaded machine's late timer moved every later copy
 * (a third copy sent at once after a refusal went at 209 ms instead of 101).
 */
async function run(t: TestContext, scripts: Script[], plan: { first?: number; everyMs: number; withinMs: number }) {
  t.mock.timers.enable({ apis: ['setTimeout'] })
  let nowMs = 0
  const copies: { endpoint: number; atMs: number; aborted: boolean }[] = []
  let outcome: { ok: { value: string; endpoint: number } } | { err: string } | undefined
  void hedged(
    { endpoints: scripts.length, first: plan.first ?? 0, everyMs: plan.everyMs, withinMs: plan.withinMs },
    (endpoint, signal) => {
      const copy = { endpoint, atMs: nowMs, aborted: false }
      copies.push(copy)
      const script = scripts[endpoint]!
      return new Promise<string>((resolve, reject) => {
        signal.addEventListener('abort', () => {
          copy.aborted = true
          reject(new Failure('aborted', false))
        })
        if (script === 'hang') return
        setTimeout(() => ('answer' in script ? resolve(script.answer) : reject(new Failure(script.fail, script.final ?? false))), script.afterMs)
      })
    },
    (err) => !(err instanceof Failure && err.final),
    () => new Error('timed out'),
  ).then((r) => (outcome = { ok: r }), (err: Error) => (outcome = { err: err.message }))
  await flush()
  while (outcome === undefined) {
    assert.ok(nowMs <= plan.withinMs, `hedged() had not settled ${nowMs} ms after the start, past its bound of ${plan.withinMs} ms`)
    nowMs += 1
    t.mock.timers.tick(1)
    await flush()
  }
  return { outcome, copies, ms: nowMs }
}

describe('unit: etcd3 hedged requests', () => {
  it('an answer in time is the only copy', async (t) => {
    const r = await run(t, [{ answer: 'a', afterMs: 5 }, 'hang'], { everyMs: 200, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { ok: { value: 'a', endpoint: 0 } })
    assert.equal(r.copies.length, 1)
  })

  it('a stuck endpoint: the next copy goes to the next endpoint after everyMs, answers, and the stuck one is aborted', async (t) => {
    const r = await run(t, ['hang', { answer: 'b', afterMs: 5 }, 'hang'], { everyMs: 100, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { ok: { value: 'b', endpoint: 1 } })
    assert.deepEqual(r.copies.map((c) => [c.endpoint, c.atMs]), [[0, 0], [1, 100]], 'the second copy goes everyMs after the first')
    assert.equal(r.ms, 105)
    assert.equal(r.copies[0]!.aborted, true)
  })

  it('copies go round the endpoints, from the first one given, back to it after the last', async (t) => {
    const r = await run(t, ['hang', 'hang', 'hang'], { first: 1, everyMs: 50, withinMs: 330 })
    assert.deepEqual(r.outcome, { err: 'timed out' })
    assert.deepEqual(r.copies.map((c) => c.endpoint), [1, 2, 0, 1, 2, 0, 1])
    assert.deepEqual(r.copies.map((c) => c.atMs), [0, 50, 100, 150, 200, 250, 300], 'a copy every everyMs')
    assert.equal(r.ms, 330, 'rejected at the bound')
    assert.ok(r.copies.every((c) => c.aborted), 'every copy still out at the bound is aborted')
  })

  it('a refused copy sends the next at once; all endpoints refusing rejects with the last failure', async (t) => {
    const r = await run(t, [{ fail: 'refused 0', afterMs: 1 }, { fail: 'refused 1', afterMs: 1 }], { everyMs: 1_000, withinMs: 5_000 })
    assert.deepEqual(r.outcome, { err: 'refused 1' })
    assert.deepEqual(r.copies.map((c) => [c.endpoint, c.atMs]), [[0, 0], [1, 1]], 'the second copy as the first is refused, not everyMs later')
    assert.equal(r.ms, 2, 'rejected as the last endpoint refuses')
  })

  it('a refused copy while another hangs: the next endpoint at once, which answers', async (t) => {
    const r = await run(t, ['hang', { fail: 'refused', afterMs: 1 }, { answer: 'c', afterMs: 1 }], { everyMs: 100, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { ok: { value: 'c', endpoint: 2 } })
    assert.deepEqual(r.copies.map((c) => [c.endpoint, c.atMs]), [[0, 0], [1, 100], [2, 101]], 'the third copy as the second is refused, not everyMs later')
  })

  it('a failure that is an answer (not worth another try) is thrown at once', async (t) => {
    const r = await run(t, [{ fail: 'lease not found', afterMs: 1, final: true }, { answer: 'b', afterMs: 1 }], { everyMs: 100, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { err: 'lease not found' })
    assert.equal(r.copies.length, 1)
  })

  it('at the bound, the last failure is thrown rather than a bare timeout', async (t) => {
    const r = await run(t, [{ fail: 'no leader', afterMs: 1 }, 'hang'], { everyMs: 1_000, withinMs: 200 })
    assert.deepEqual(r.outcome, { err: 'no leader' })
  })
})
