/**
 * etcd lock queue and turns (src/coordination/drivers/etcd3/etcd3-lock-queue.ts): the cases every
 * queue passes (test/support/lock-queue-cases.ts), and etcd's own: waiters queue under
 * `/rollcall/locks/<base64url name>/q/` on a 2 s lease; a turn starts in the txn that takes the
 * lock and ends when its holder stops taking the lock back, or (abandoned) after TURN_STALE_MS; a
 * waiter whose key is deleted queues again. Keys are read raw from the gateway.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TURN_STALE_MS } from '../../src/coordination/drivers/etcd3/etcd3-lock-queue.js'
import { serverUrl } from '../support/backends.js'
import { lockQueueCases, queueBehind, type QueueBackend } from '../support/lock-queue-cases.js'
import { waitFor } from '../support/wait.js'

const URL = serverUrl('etcd3')
const HTTP = URL.replace(/^etcd3\+/, '')

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

const BACKEND: QueueBackend = {
  name: 'etcd3',
  url: `${URL}?timeout=10`,
  queued: async (_t, name) => (await queued(name)).length,
  turnSize: 128, // a loose bound: etcd's turns are shorter (docs/drivers.md)
}

describe('etcd3 lock queue and turns', { concurrency: 3 }, () => {
  lockQueueCases(BACKEND)

  it('etcd3: locks: a waiter queues one key on a 2 s lease; taking the lock it leaves the queue and starts a turn on its lock lease', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, BACKEND, 1)
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

  it('etcd3: locks: a waiter whose queue key is deleted behind its back queues again and gets the lock', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, BACKEND, 1)
    const [key] = await queued(name)
    await raw('kv/deleterange', { key: b64(key!.key) })
    await waitFor('the waiter to queue again', async () => (await queued(name)).length === 1, 5_000)
    assert.equal(await holder.release(), true)
    assert.equal(await w!.waiting, true)
    await w!.lock.release()
  })

  it('etcd3: locks: a turn abandoned by its holder is overridden by the head waiter after TURN_STALE_MS, not lock_timeout', async (t) => {
    const { name, holder, waiters: [w] } = await queueBehind(t, BACKEND, 1)
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
})
