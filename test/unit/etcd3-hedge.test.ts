/**
 * The etcd3 driver's hedged requests (src/coordination/drivers/etcd3/etcd3-hedge.ts) with scripted
 * endpoints: which endpoint each copy goes to and when, which answer counts, what is thrown, and
 * that the copies left behind are aborted. The real-cluster behaviour is in
 * test/fault/etcd-hung-keepalive.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { hedged } from '../../src/coordination/drivers/etcd3/etcd3-hedge.js'

/** An endpoint's behaviour: answer after ms, fail after ms, or never answer. */
type Script = { answer: string; afterMs: number } | { fail: string; afterMs: number; final?: boolean } | 'hang'

class Failure extends Error {
  constructor(message: string, readonly final: boolean) {
    super(message)
  }
}

/** Runs hedged() over scripted endpoints; records each copy (endpoint, ms after the start) and whether it was aborted. */
async function run(scripts: Script[], plan: { first?: number; everyMs: number; withinMs: number }) {
  const startedAt = performance.now()
  const copies: { endpoint: number; atMs: number; aborted: boolean }[] = []
  // hedged() unrefs its timers (a real copy's socket keeps the process up): a scripted hang keeps nothing up.
  const keepUp = setInterval(() => {}, 1_000)
  const outcome = await hedged(
    { endpoints: scripts.length, first: plan.first ?? 0, everyMs: plan.everyMs, withinMs: plan.withinMs },
    (endpoint, signal) => {
      const copy = { endpoint, atMs: performance.now() - startedAt, aborted: false }
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
  ).then((r) => ({ ok: r }), (err: Error) => ({ err: err.message })).finally(() => clearInterval(keepUp))
  return { outcome, copies, ms: performance.now() - startedAt }
}

describe('unit: etcd3 hedged requests', () => {
  it('an answer in time is the only copy', async () => {
    const r = await run([{ answer: 'a', afterMs: 5 }, 'hang'], { everyMs: 200, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { ok: { value: 'a', endpoint: 0 } })
    assert.equal(r.copies.length, 1)
  })

  it('a stuck endpoint: the next copy goes to the next endpoint after everyMs, answers, and the stuck one is aborted', async () => {
    const r = await run(['hang', { answer: 'b', afterMs: 5 }, 'hang'], { everyMs: 100, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { ok: { value: 'b', endpoint: 1 } })
    assert.deepEqual(r.copies.map((c) => c.endpoint), [0, 1])
    assert.ok(r.copies[1]!.atMs >= 95, `the second copy went ${r.copies[1]!.atMs} ms after the first`)
    assert.equal(r.copies[0]!.aborted, true)
  })

  it('copies go round the endpoints, from the first one given, back to it after the last', async () => {
    const r = await run(['hang', 'hang', 'hang'], { first: 1, everyMs: 50, withinMs: 330 })
    assert.deepEqual(r.outcome, { err: 'timed out' })
    assert.deepEqual(r.copies.map((c) => c.endpoint).slice(0, 5), [1, 2, 0, 1, 2])
    assert.ok(r.copies.every((c) => c.aborted), 'every copy still out at the bound is aborted')
  })

  it('a refused copy sends the next at once; all endpoints refusing rejects with the last failure', async () => {
    const r = await run([{ fail: 'refused 0', afterMs: 1 }, { fail: 'refused 1', afterMs: 1 }], { everyMs: 1_000, withinMs: 5_000 })
    assert.deepEqual(r.outcome, { err: 'refused 1' })
    assert.deepEqual(r.copies.map((c) => c.endpoint), [0, 1])
    assert.ok(r.ms < 500, `rejected after ${r.ms} ms`)
  })

  it('a refused copy while another hangs: the next endpoint at once, which answers', async () => {
    const r = await run(['hang', { fail: 'refused', afterMs: 1 }, { answer: 'c', afterMs: 1 }], { everyMs: 100, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { ok: { value: 'c', endpoint: 2 } })
    assert.ok(r.copies[2]!.atMs < 150, `the third copy went at ${r.copies[2]!.atMs} ms`)
  })

  it('a failure that is an answer (not worth another try) is thrown at once', async () => {
    const r = await run([{ fail: 'lease not found', afterMs: 1, final: true }, { answer: 'b', afterMs: 1 }], { everyMs: 100, withinMs: 2_000 })
    assert.deepEqual(r.outcome, { err: 'lease not found' })
    assert.equal(r.copies.length, 1)
  })

  it('at the bound, the last failure is thrown rather than a bare timeout', async () => {
    const r = await run([{ fail: 'no leader', afterMs: 1 }, 'hang'], { everyMs: 1_000, withinMs: 200 })
    assert.deepEqual(r.outcome, { err: 'no leader' })
  })
})
