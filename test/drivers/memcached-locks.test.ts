/**
 * memcached lock queue and turns (src/coordination/drivers/memcached/memcached-lock-queue.ts): the
 * cases every queue passes (test/support/lock-queue-cases.ts), and memcached's own: a turn whose
 * holder died holds the head back until its key lapses. Queue keys are read raw, named as the
 * layout names them.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it, type TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { MemcachedClient } from '../../src/clients/memcached/memcached-client.js'
import { lockQueueCases, queueBehind, type QueueBackend } from '../support/lock-queue-cases.js'
import { connect } from '../../src/index.js'
import { rid } from '../support/wait.js'
import { RecordingProxy, sharedMemcached } from './memcached-support.js'

const { host, port, url: URL } = sharedMemcached()

const clients = new WeakMap<TestContext, MemcachedClient>()

/** A raw client of the test's own, closed when it ends. */
function raw(t: TestContext): MemcachedClient {
  let c = clients.get(t)
  if (c === undefined) {
    const made = new MemcachedClient({ hosts: [{ host, port }], connectTimeoutMs: 2_000, requestTimeoutMs: 2_000 })
    t.after(() => made.close())
    clients.set(t, made)
    c = made
  }
  return c
}

/** The queue keys of lock `name`: `__ROLLCALL_LQ_<sha1 of the lock key>_` + n, low, turn, w<ticket>. */
const queueKey = (name: string, suffix: string): string => `__ROLLCALL_LQ_${createHash('sha1').update(`__TOOZ_LOCK_${name}`).digest('hex')}_${suffix}`

/** How many waiter keys are present, for the tickets from `low` to the counter. */
async function queued(t: TestContext, name: string): Promise<number> {
  const mc = raw(t)
  const values = await mc.get([queueKey(name, 'n'), queueKey(name, 'low')])
  const n = values.get(queueKey(name, 'n'))
  if (n === undefined) return 0
  const low = Number(values.get(queueKey(name, 'low'))?.value.toString() ?? 0)
  const tickets = Array.from({ length: Math.max(0, Number(n.value.toString()) - low + 1) }, (_, i) => low + i)
  return (await mc.present(tickets.map((tk) => queueKey(name, `w${tk}`)))).size
}

const BACKEND: QueueBackend = { name: 'memcached', url: `${URL}?timeout=10`, queued, turnSize: 128 } // memcached's turns (docs/drivers.md)

describe('memcached lock queue and turns', { concurrency: 3 }, () => {
  lockQueueCases(BACKEND)

  it('memcached: locks: a turn whose holder died is over when its key lapses', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, BACKEND, 1)
    // The turn key of a holder that died between a release and its next acquisition: with 3 s it lives at least 1 s (the clock may skip 2).
    await raw(t).meta('ms', queueKey(name, 'turn'), ['T3'], Buffer.alloc(0))
    // The head waiter may be between a look that found no turn and its attempt: let that cycle end (its attempt fails, the
    // holder still holds) so that its next look sees the turn, as a waiter behind a holder that died would, before the release.
    await sleep(250)
    const releasedAt = performance.now()
    assert.equal(await holder.release(), true)
    assert.equal(await w!.waiting, true)
    const tookMs = performance.now() - releasedAt
    assert.ok(tookMs >= 500, `the waiter ignored the turn: it took the lock ${tookMs.toFixed(0)} ms after the release`)
    assert.ok(tookMs < 6_000, `the waiter took the lock ${tookMs.toFixed(0)} ms after the release`)
    await w!.lock.release()
  })
  it('memcached: locks: the head waiter behind a long hold tries less and less often, and still gets the lock soon after the release', async (t) => {
    const { name, holder } = await queueBehind(t, BACKEND, 0)
    const proxy = await RecordingProxy.start(t, { host, port })
    const c = await connect(`${proxy.url}?timeout=10`, { memberId: rid('m'), autoWatch: false })
    t.after(() => c.stop())
    const waiter = c.getLock(name)
    const { result: tookMs, commands } = await proxy.record(async () => {
      const waiting = waiter.acquire({ timeoutMs: 20_000 })
      await new Promise((r) => setTimeout(r, 3_000))
      const releasedAt = performance.now()
      assert.equal(await holder.release(), true)
      assert.equal(await waiting, true)
      return performance.now() - releasedAt
    })
    // Every 2 ms for 3 s would be 1,500 tries; growing by 5 % of the wait, about 110.
    const tries = commands.filter((l) => l.startsWith('ms __TOOZ_LOCK_')).length
    assert.ok(tries < 400, `the waiter tried ${tries} times in 3 s`)
    // After 3 s it looks every 100 ms at most.
    assert.ok(tookMs < 1_000, `the waiter took the lock ${tookMs.toFixed(0)} ms after the release`)
    await waiter.release()
  })
})
