/**
 * etcd lock queue and turns (src/coordination/drivers/etcd3/etcd3-lock-queue.ts): waiters queue
 * under `/rollcall/locks/<base64url name>/q/` on a short lease and get the lock in order; a holder
 * looping on the lock cannot starve them; a turn ends at its size or time, when its holder stops
 * taking the lock back, or (abandoned) after TURN_STALE_MS; a waiter that gives up, dies or loses
 * its key does not keep the lock from the others. Keys are read raw from the gateway.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { describe, it, type TestContext } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { TURN_STALE_MS } from '../../src/coordination/drivers/etcd3/etcd3-lock-queue.js'
import { TURN_SIZE_ETCD } from '../../src/coordination/drivers/etcd3/etcd3-lock.js'
import { serverUrl } from '../support/backends.js'
import { scriptProcess } from '../support/script-process.js'
import { rid, waitFor } from '../support/wait.js'

const URL = serverUrl('etcd3')
const HTTP = URL.replace(/^etcd3\+/, '')

async function open(t: TestContext, memberId = rid('m')): Promise<Coordinator> {
  const c = await connect(`${URL}?timeout=10`, { memberId, autoWatch: false })
  t.after(() => c.stop())
  return c
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const b64 = (b: Buffer | string): string => Buffer.from(b).toString('base64')

async function raw(path: string, body: unknown): Promise<any> {
  return (await fetch(`${HTTP}/v3/${path}`, { method: 'POST', body: JSON.stringify(body) })).json()
}

interface RawKv {
  key: string
  value: Buffer
  lease: string
  createRevision: bigint
}

/** The keys under `prefix`, oldest first. */
async function rawPrefix(prefix: string): Promise<RawKv[]> {
  const end = Buffer.from(prefix)
  end[end.length - 1]! += 1
  const r = await raw('kv/range', { key: b64(prefix), range_end: b64(end) })
  return ((r.kvs ?? []) as any[]).map((kv) => ({
    key: Buffer.from(kv.key, 'base64').toString(),
    value: Buffer.from(kv.value ?? '', 'base64'),
    lease: kv.lease ?? '0',
    createRevision: BigInt(kv.create_revision),
  })).sort((x, y) => (x.createRevision < y.createRevision ? -1 : 1))
}

/** The rollcall keys of lock `name`, as the layout names them. */
function layout(name: string) {
  const prefix = `/rollcall/locks/${Buffer.from(name).toString('base64url')}/`
  return { queue: `${prefix}q/`, turn: `${prefix}turn`, lock: `/tooz/locks${name}` }
}

const queued = async (name: string): Promise<RawKv[]> => rawPrefix(layout(name).queue)
const rawGet = async (key: string): Promise<RawKv | undefined> => (await rawPrefix(key)).find((kv) => kv.key === key)

/** A lock held by one coordinator and `n` waiters of other coordinators queued behind it, in order. */
async function queueBehind(t: TestContext, n: number, name = rid('lock')) {
  const holder = (await open(t)).getLock(name)
  assert.equal(await holder.acquire(), true)
  const waiters = []
  for (let i = 0; i < n; i++) {
    const lock = (await open(t)).getLock(name)
    const waiting = lock.acquire({ timeoutMs: 20_000 })
    await waitFor(`waiter ${i} queued`, async () => (await queued(name)).length === i + 1, 5_000)
    waiters.push({ lock, waiting })
  }
  return { name, holder, waiters }
}

describe('etcd3 lock queue and turns', { concurrency: 3 }, () => {
  it('etcd3: locks: a waiter queues one key on a 2 s lease; taking the lock it leaves the queue and starts a turn on its lock lease', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, 1)
    const [key] = await queued(name)
    assert.match(key!.key, /^\/rollcall\/locks\/[A-Za-z0-9_-]+\/q\/[0-9a-f]{16}$/)
    assert.equal(key!.value.length, 0)
    const lease = await raw('kv/lease/timetolive', { ID: key!.lease })
    assert.equal(Number(lease.grantedTTL), 2)
    assert.equal(await rawGet(layout(name).turn), undefined, 'a holder that took the lock with nobody queued has no turn')
    assert.equal(await holder.release(), true)
    assert.equal(await w!.waiting, true)
    assert.deepEqual(await queued(name), [])
    const [lock, turn] = [await rawGet(layout(name).lock), await rawGet(layout(name).turn)]
    assert.ok(lock && turn, 'the lock and the turn keys exist')
    assert.ok(turn.value.equals(lock.value), "the turn names the holder's lock object")
    assert.equal(turn.lease, lock.lease)
    assert.equal(turn.createRevision, lock.createRevision, 'taken in one txn')
    assert.equal(await w!.lock.release(), true)
    // Released within its turn and not taken back: the turn ends.
    await waitFor('the turn to end', async () => (await rawGet(layout(name).turn)) === undefined, 2_000)
  })

  it('etcd3: locks: waiters get the lock in the order they queued', async (t) => {
    const { holder, waiters } = await queueBehind(t, 3)
    const order: number[] = []
    waiters.forEach((w, i) => void w.waiting.then(() => order.push(i)))
    assert.equal(await holder.release(), true)
    for (const w of waiters) {
      assert.equal(await w.waiting, true)
      await sleep(20)
      assert.equal(await w.lock.release(), true)
    }
    assert.deepEqual(order, [0, 1, 2])
  })

  it('etcd3: locks: a holder looping acquire → release within its turn hands over after at most a turn', async (t) => {
    // The looper takes the lock as the head waiter, so it has a turn; a second waiter queues behind it.
    const { name, holder, waiters: [looperWait] } = await queueBehind(t, 1)
    assert.equal(await holder.release(), true)
    assert.equal(await looperWait!.waiting, true)
    const looper = looperWait!.lock
    const waiter = (await open(t)).getLock(name)
    const waiting = waiter.acquire({ timeoutMs: 10_000 })
    await waitFor('the waiter queued', async () => (await queued(name)).length === 1, 5_000)
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
    assert.ok(loops <= TURN_SIZE_ETCD, `the looper took the lock ${loops} times while the waiter waited`)
    assert.ok(refused >= 1, 'the looper was refused once its turn was over')
    await waiter.release()
  })

  it('etcd3: locks: a waiter that times out leaves the queue, so a free lock is taken at once by anyone', async (t) => {
    const { name, holder } = await queueBehind(t, 0)
    const waiter = (await open(t)).getLock(name)
    assert.equal(await waiter.acquire({ timeoutMs: 300 }), false)
    assert.deepEqual(await queued(name), [])
    assert.equal(await holder.release(), true)
    assert.equal(await (await open(t)).getLock(name).acquire({ blocking: false }), true)
  })

  it('etcd3: locks: a queued waiter whose process is killed leaves the queue when its lease lapses', async (t) => {
    const { name, holder } = await queueBehind(t, 0)
    const { proc: doomed } = scriptProcess(
      t,
      `const c = await connect(${JSON.stringify(`${URL}?timeout=10`)}, { memberId: 'doomed', autoWatch: false });
await c.getLock(${JSON.stringify(name)}).acquire({ timeoutMs: 60_000 });`,
    )
    await waitFor('the doomed process to queue', async () => (await queued(name)).length === 1, 30_000)
    const waiter = (await open(t)).getLock(name)
    const waiting = waiter.acquire({ timeoutMs: 15_000 })
    await waitFor('the second waiter queued', async () => (await queued(name)).length === 2, 5_000)
    doomed.kill('SIGKILL')
    await once(doomed, 'exit')
    const killedAt = performance.now()
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    const tookMs = performance.now() - killedAt
    // The dead waiter's key lapses with its 2 s lease (etcd checks expiries every 500 ms); never lock_timeout (30 s).
    assert.ok(tookMs < 6_000, `the waiter behind the dead one got the lock ${tookMs.toFixed(0)} ms after the kill`)
    await waiter.release()
  })

  it('etcd3: locks: a waiter whose queue key is deleted behind its back queues again and gets the lock', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, 1)
    const [key] = await queued(name)
    await raw('kv/deleterange', { key: b64(key!.key) })
    await waitFor('the waiter to queue again', async () => (await queued(name)).length === 1, 5_000)
    assert.equal(await holder.release(), true)
    assert.equal(await w!.waiting, true)
    await w!.lock.release()
  })

  it('etcd3: locks: a turn abandoned by its holder is overridden by the head waiter after TURN_STALE_MS, not lock_timeout', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, 1)
    // A turn of a holder that died between a release and its next acquisition: the key stays on its lease (here 60 s).
    const lease = await raw('lease/grant', { TTL: 60, ID: 0 })
    t.after(() => raw('kv/lease/revoke', { ID: lease.ID }))
    await raw('kv/put', { key: b64(layout(name).turn), value: b64('dead holder'), lease: lease.ID })
    const releasedAt = performance.now()
    assert.equal(await holder.release(), true)
    assert.equal(await w!.waiting, true)
    const tookMs = performance.now() - releasedAt
    assert.ok(tookMs >= TURN_STALE_MS * 0.8, `the waiter ignored a fresh turn: it took the lock ${tookMs.toFixed(0)} ms after the release`)
    assert.ok(tookMs < TURN_STALE_MS + 4_000, `the waiter took the lock ${tookMs.toFixed(0)} ms after the release`)
    assert.ok((await rawGet(layout(name).turn))?.value.equals((await rawGet(layout(name).lock))!.value), 'the waiter started its own turn')
    await w!.lock.release()
  })

  it('etcd3: locks: a non-waiting acquire is refused a free lock while a waiter is queued, and taken once the queue is empty', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, 1)
    const other = (await open(t)).getLock(name)
    assert.equal(await holder.release(), true)
    assert.equal(await other.acquire({ blocking: false }), false)
    assert.equal(await w!.waiting, true)
    assert.equal(await w!.lock.release(), true)
    await waitFor('the turn to end', async () => (await rawGet(layout(name).turn)) === undefined, 2_000)
    assert.equal(await other.acquire({ blocking: false }), true)
  })

  it('etcd3: locks: under churn (waits timing out at every step, turns ending, the waiter lease reused past its TTL) no waiter strands', async (t) => {
    // Two processes, as the bench runs them (in one process the race that stranded a head waiter did not show).
    const name = rid('lock')
    const loop = (timeoutMs: string): string =>
      `const c = await connect(${JSON.stringify(`${URL}?timeout=10`)}, { autoWatch: false });
const lock = c.getLock(${JSON.stringify(name)});
const endAt = performance.now() + 5_000;
let acquired = 0, longestMs = 0;
while (performance.now() < endAt) {
  const askedAt = performance.now();
  const got = await lock.acquire({ timeoutMs: ${timeoutMs} });
  longestMs = Math.max(longestMs, performance.now() - askedAt);
  if (!got) continue;
  acquired += 1;
  await lock.release();
}
await c.stop();
console.log(JSON.stringify({ acquired, longestMs }));`
    // Timeouts of 1-60 ms end waits at every step: during the first attempt, queued, as the head, during the turn's end.
    const runs = [scriptProcess(t, loop('1 + Math.random() * 60')), scriptProcess(t, loop('10_000'))]
    const [impatient, patient] = await Promise.all(runs.map(async ({ proc, out }) => {
      const [code] = await once(proc, 'exit')
      assert.equal(code, 0, 'a looping process failed')
      return JSON.parse(out()) as { acquired: number; longestMs: number }
    }))
    assert.ok(impatient!.acquired > 0 && patient!.acquired > 0, `acquisitions: ${impatient!.acquired} impatient, ${patient!.acquired} patient`)
    // The patient waiter is at most a turn (100 ms at most) behind; stranded, it would wait out its 10 s.
    assert.ok(patient!.longestMs < 2_000, `a waiter waited ${patient!.longestMs.toFixed(0)} ms`)
    assert.deepEqual(await queued(name), [])
  })
})
