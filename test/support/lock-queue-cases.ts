/**
 * The lock-queue cases every backend whose rollcall waiters queue beside tooz's key must pass
 * (etcd, memcached; Redis, file and MySQL have theirs in their own files): waiters get a freed
 * lock in order; a holder looping on the lock hands over after at most a turn; a waiter that
 * times out or dies does not keep the lock from the others; a non-waiting acquire does not jump
 * the queue; and under churn no waiter strands. Each backend says how to open a coordinator and
 * how many waiters its raw keys show queued.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { it, type TestContext } from 'node:test'
import { connect, type Coordinator, type Lock } from '../../src/index.js'
import { lockChurn } from './lock-churn.js'
import { scriptProcess } from './script-process.js'
import { rid, waitFor } from './wait.js'

/** One backend's queue, as the cases see it. */
export interface QueueBackend {
  /** The prefix of each case's title, e.g. `etcd3`. */
  readonly name: string
  /** The URL the coordinators use (with its options). */
  readonly url: string
  /** How many waiters the raw keys show queued for lock `name`. */
  queued(t: TestContext, name: string): Promise<number>
  /** The most acquisitions in one turn. */
  readonly turnSize: number
}

/** A coordinator of `b`, stopped when the test ends. */
export async function openFor(t: TestContext, b: QueueBackend): Promise<Coordinator> {
  const c = await connect(b.url, { memberId: rid('m'), autoWatch: false })
  t.after(() => c.stop())
  return c
}

/** A lock held by one coordinator and `n` waiters of other coordinators queued behind it, in order. */
export async function queueBehind(t: TestContext, b: QueueBackend, n: number, name = rid('lock')) {
  const holder = (await openFor(t, b)).getLock(name)
  assert.equal(await holder.acquire(), true)
  const waiters: { lock: Lock; waiting: Promise<boolean> }[] = []
  for (let i = 0; i < n; i++) {
    const lock = (await openFor(t, b)).getLock(name)
    const waiting = lock.acquire({ timeoutMs: 20_000 })
    await waitFor(`waiter ${i} queued`, async () => (await b.queued(t, name)) === i + 1, 5_000)
    waiters.push({ lock, waiting })
  }
  return { name, holder, waiters }
}

/** Declares the shared cases for `b` (inside the caller's describe()). */
export function lockQueueCases(b: QueueBackend): void {
  it(`${b.name}: locks: waiters get the lock in the order they queued`, async (t) => {
    const { holder, waiters } = await queueBehind(t, b, 3)
    const order: number[] = []
    waiters.forEach((w, i) => void w.waiting.then(() => order.push(i)))
    assert.equal(await holder.release(), true)
    for (const w of waiters) {
      assert.equal(await w.waiting, true)
      assert.equal(await w.lock.release(), true)
    }
    assert.deepEqual(order, [0, 1, 2])
  })

  it(`${b.name}: locks: a holder looping acquire → release within its turn hands over after at most a turn`, async (t) => {
    // The looper takes the lock as the head waiter, so it has a turn; a second waiter queues behind it.
    const { name, holder, waiters: [looperWait] } = await queueBehind(t, b, 1)
    assert.equal(await holder.release(), true)
    assert.equal(await looperWait!.waiting, true)
    const looper = looperWait!.lock
    const waiter = (await openFor(t, b)).getLock(name)
    const waiting = waiter.acquire({ timeoutMs: 10_000 })
    await waitFor('the waiter queued', async () => (await b.queued(t, name)) === 1, 5_000)
    let loops = 0
    let refused = 0
    let stop = false
    const looping = (async () => {
      while (!stop) {
        await looper.release()
        if (await looper.acquire({ blocking: false })) loops += 1
        else refused += 1
      }
    })()
    const got = await waiting
    stop = true
    await looping
    assert.equal(got, true)
    // Each acquisition is counted at the release after it; the last may be one past the size.
    assert.ok(loops <= b.turnSize, `the looper took the lock ${loops} times while the waiter waited`)
    assert.ok(refused >= 1, 'the looper was refused once its turn was over')
    await waiter.release()
  })

  it(`${b.name}: locks: a waiter that times out leaves the queue, so a free lock is taken at once by anyone`, async (t) => {
    const { name, holder } = await queueBehind(t, b, 0)
    const waiter = (await openFor(t, b)).getLock(name)
    assert.equal(await waiter.acquire({ timeoutMs: 300 }), false)
    // acquire() answers at its deadline; leaving the queue (a write) may finish just after.
    await waitFor('the waiter gone from the queue', async () => (await b.queued(t, name)) === 0, 2_000)
    assert.equal(await holder.release(), true)
    assert.equal(await (await openFor(t, b)).getLock(name).acquire({ blocking: false }), true)
  })

  it(`${b.name}: locks: a non-waiting acquire is refused a free lock while a waiter is queued`, async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, b, 1)
    const other = (await openFor(t, b)).getLock(name)
    assert.equal(await holder.release(), true)
    assert.equal(await other.acquire({ blocking: false }), false)
    assert.equal(await w!.waiting, true)
    assert.equal(await w!.lock.release(), true)
  })

  it(`${b.name}: locks: a queued waiter whose process is killed drops out of the queue within seconds`, async (t) => {
    const { name, holder } = await queueBehind(t, b, 0)
    const { proc: doomed } = scriptProcess(
      t,
      `const c = await connect(${JSON.stringify(b.url)}, { memberId: 'doomed', autoWatch: false });
await c.getLock(${JSON.stringify(name)}).acquire({ timeoutMs: 60_000 });`,
    )
    await waitFor('the doomed process to queue', async () => (await b.queued(t, name)) === 1, 30_000)
    const waiter = (await openFor(t, b)).getLock(name)
    const waiting = waiter.acquire({ timeoutMs: 15_000 })
    await waitFor('the second waiter queued', async () => (await b.queued(t, name)) === 2, 5_000)
    doomed.kill('SIGKILL')
    await once(doomed, 'exit')
    const killedAt = performance.now()
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    const tookMs = performance.now() - killedAt
    // The dead waiter's key lapses with its short lease or TTL (2-3 s); never the lock's timeout.
    assert.ok(tookMs < 6_000, `the waiter behind the dead one got the lock ${tookMs.toFixed(0)} ms after the kill`)
    await waiter.release()
  })

  it(`${b.name}: locks: under churn (waits timing out at every step, turns ending) no waiter strands`, async (t) => {
    // Two processes, as the bench runs them (in one process the race that stranded an etcd head waiter did not show).
    const name = rid('lock')
    const { impatient, patient } = await lockChurn(t, b.url, name)
    assert.ok(impatient.acquired > 0 && patient.acquired > 0, `acquisitions: ${impatient.acquired} impatient, ${patient.acquired} patient`)
    // The patient waiter is at most a turn (100 ms at most) behind; stranded, it would wait out its 10 s.
    assert.ok(patient.longestMs < 2_000, `a waiter waited ${patient.longestMs.toFixed(0)} ms`)
    assert.equal(await b.queued(t, name), 0)
  })
}
