/**
 * The postgresql driver beyond the conformance suite: tooz's exact advisory lock key (read back
 * from pg_locks) and its 16-bit hazard, cancelled waits that leave no waiter behind, NOTIFY-pushed
 * joins and leaves, plus the cases shared with MySQL (sql-cases.ts).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { pgLockKey } from '../../src/coordination/drivers/postgresql/postgresql-lock.js'
import { InvalidUrlError, connect, type MemberEvent } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { TIMING } from '../support/timing.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import { sqlDriverCases } from './sql-cases.js'
import { openSql, sqlAdmin } from './sql-support.js'

const URL = serverUrl('postgresql')

/** tooz: `md5(name).digest()[0:2]`, bound by psycopg2 as two small ints. */
function toozKey(name: string): [number, number] {
  const d = createHash('md5').update(Buffer.from(name, 'utf8')).digest()
  return [d[0]!, d[1]!]
}

/** Two different names with the same key (found by brute force: about 300 names on average). */
function collidingNames(prefix: string): [string, string] {
  const seen = new Map<string, string>()
  for (let i = 0;; i++) {
    const name = `${prefix}-${i}`
    const key = toozKey(name).join(',')
    const other = seen.get(key)
    if (other !== undefined) return [other, name]
    seen.set(key, name)
  }
}

describe('postgresql driver', { concurrency: 4 }, () => {
  it("postgresql: locks: the key is tooz's, the first two md5 bytes as (classid, objid), on a session kept for the next acquire", async (t) => {
    assert.deepEqual(pgLockKey('abc'), [0x90, 0x01], 'md5("abc") = 900150983cd2...')
    assert.deepEqual(pgLockKey('замок'), toozKey('замок'))
    const admin = sqlAdmin(t, 'postgresql', URL)
    const a = await openSql(t, URL)
    const name = rid('l')
    const [k1, k2] = toozKey(name)
    const holders = (): Promise<Record<string, unknown>[]> =>
      admin.query(
        `SELECT l.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::oid AND l.objid = $2::oid AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [k1, k2],
      )
    const lock = a.getLock(name)
    await lock.acquire()
    const rows = await holders()
    assert.equal(rows.length, 1)
    assert.equal(rows[0]!.application_name, 'rollcall')
    await lock.release()
    assert.deepEqual(await holders(), [])
    // Unlike tooz, the released session stays open, holding no lock, and serves the next acquire.
    const pid = rows[0]!.pid
    assert.deepEqual(await admin.query('SELECT pid FROM pg_stat_activity WHERE pid = $1', [pid]), [{ pid }])
    assert.deepEqual(await admin.query(`SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory'`, [pid]), [])
    await lock.acquire()
    assert.deepEqual((await holders()).map((r) => r.pid), [pid], 'the same session took it again')
    await lock.release()
    // Closed when the coordinator stops.
    await a.stop()
    assert.deepEqual(await admin.query('SELECT pid FROM pg_stat_activity WHERE pid = $1', [pid]), [])
  })

  it('postgresql: locks: two names whose md5 share their first two bytes falsely contend (65,536 keys, as in tooz)', async (t) => {
    const [first, second] = collidingNames(rid('l'))
    assert.notEqual(first, second)
    const a = await openSql(t, URL)
    const held = a.getLock(first)
    assert.equal(await held.acquire({ blocking: false }), true)
    assert.equal(await a.getLock(second).acquire({ blocking: false }), false, `${first} and ${second} share a key`)
    await held.release()
    assert.equal(await a.getLock(second).acquire({ blocking: false }), true)
  })

  it("postgresql: locks: an aborted wait withdraws from the server's queue (pg_cancel_backend)", async (t) => {
    const admin = sqlAdmin(t, 'postgresql', URL)
    const a = await openSql(t, URL)
    const b = await openSql(t, URL)
    const name = rid('l')
    const [k1, k2] = toozKey(name)
    const waiters = async (): Promise<number> =>
      (await admin.query(
        `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
      AND classid = $1::oid AND objid = $2::oid AND objsubid = 2`,
        [k1, k2],
      )).length
    await a.getLock(name).acquire()
    const controller = new AbortController()
    const waiting = b.getLock(name).acquire({ signal: controller.signal })
    await waitFor('b to queue on the server', async () => (await waiters()) === 1, TIMING.eventMs)
    const abortedAt = Date.now()
    controller.abort(new Error('enough'))
    await assert.rejects(waiting, /enough/)
    t.diagnostic(`acquire() rejected ${Date.now() - abortedAt} ms after abort`)
    await waitFor('the server queue to empty', async () => (await waiters()) === 0, TIMING.eventMs)
  })

  it('postgresql: watchers: joins and leaves are NOTIFYed and arrive long before the next poll', async (t) => {
    const a = await openSql(t, URL, { watchIntervalMs: 60_000 })
    const b = await openSql(t, URL)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.watchGroup(g)
    const joined = nextEvent<MemberEvent>(a, 'memberJoined', (e) => e.group === g, 2_000)
    let started = Date.now()
    await b.joinGroup(g)
    assert.deepEqual(await joined, { group: g, member: b.memberId })
    t.diagnostic(`memberJoined ${Date.now() - started} ms after join (poll interval 60 s)`)
    const left = nextEvent<MemberEvent>(a, 'memberLeft', (e) => e.group === g, 2_000)
    started = Date.now()
    await b.leaveGroup(g)
    assert.deepEqual(await left, { group: g, member: b.memberId })
    t.diagnostic(`memberLeft ${Date.now() - started} ms after leave`)
  })

  it('postgresql: connections: the LISTEN connection is open only while a group is watched', async (t) => {
    const { port } = new globalThis.URL(URL.replace(/^postgresql:/, 'http:'))
    const proxy = await TcpProxy.start(Number(port))
    t.after(() => proxy.close())
    const a = await openSql(t, URL.replace(`:${port}/`, `:${proxy.port}/`))
    const g = rid('g')
    await a.joinGroupCreate(g)
    assert.equal(proxy.connections, 1)
    const unwatch = await a.watchGroup(g)
    assert.equal(proxy.connections, 2, 'LISTEN')
    await unwatch()
    await waitFor('the LISTEN connection to close', () => proxy.connections === 1, TIMING.eventMs)
  })

  it("postgresql: options: tooz's host, port and dbname query options override the URL", async (t) => {
    const { hostname, port } = new globalThis.URL(URL.replace(/^postgresql:/, 'http:'))
    const c = await openSql(t, `postgresql://postgres@nowhere.invalid:1/postgres?host=${hostname}&port=${port}&dbname=rollcall`)
    const g = rid('g')
    await c.createGroup(g)
    const admin = sqlAdmin(t, 'postgresql', URL)
    assert.equal((await admin.query('SELECT group_id FROM rollcall_groups WHERE group_id = $1', [g])).length, 1, 'written to the rollcall database')
    await assert.rejects(connect('postgresql://a@h1:5432,h2:5432/db'), InvalidUrlError)
  })

  sqlDriverCases('postgresql', URL)
})
