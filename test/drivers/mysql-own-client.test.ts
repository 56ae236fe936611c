/**
 * The mysql driver on the application's own mysql2 promise pool (connect('mysql://?...', { client })):
 * a smoke on the shared server, seen from a member that connected by URL, on a pool whose read
 * settings differ from rollcall's own (local timezone, dateStrings, no big-number strings); after
 * stop() the pool is open and usable and holds no connection rollcall checked out. A pool without
 * multipleStatements and clients of the wrong kind are refused before any I/O.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import mysql from 'mysql2/promise'
import mysqlCallback from 'mysql2'
import pg from 'pg'
import { connect, InvalidOptionError, InvalidUrlError, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { rid } from '../support/wait.js'
import { openPeer, smoke } from './own-client-support.js'

const URL = serverUrl('mysql')

function pool(t: TestContext, options: mysql.PoolOptions = {}): mysql.Pool {
  const p = mysql.createPool({ uri: URL, connectionLimit: 5, multipleStatements: true, ...options })
  t.after(() => p.end().catch(() => {}))
  return p
}

/** Connections the pool has lent out and not had back. */
function lentOut(p: mysql.Pool): number {
  const core = p.pool as unknown as { _allConnections: { length: number }; _freeConnections: { length: number } }
  return core._allConnections.length - core._freeConnections.length
}

async function openOwn(t: TestContext, client: mysql.Pool): Promise<Coordinator> {
  const c = await connect('mysql://?membership_timeout=10', { client, memberId: rid('own') })
  t.after(() => c.stop())
  return c
}

describe("mysql: the application's own client", () => {
  it('mysql: own client: groups, heartbeat, locks and leadership run on a mysql2 pool; stop() leaves it usable with every connection given back', async (t) => {
    // Read settings unlike rollcall's own pool: rollcall's statements carry theirs.
    const own = pool(t, { timezone: 'local', dateStrings: true, supportBigNumbers: false, bigNumberStrings: false })
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const info = await peer.getMemberInfo(g, c.memberId)
    assert.ok(info.createdAt instanceof Date && Math.abs(info.createdAt.getTime() - Date.now()) < 60_000, `createdAt ${String(info.createdAt)}`)
    const seen = await c.getMemberInfo(g, c.memberId)
    assert.equal(seen.createdAt.getTime(), info.createdAt.getTime(), 'the own pool read created_at otherwise than rollcall’s own pool')
    await c.stop()
    const [rows] = await own.query('SELECT 41 + 1 AS answer')
    assert.equal(Number((rows as { answer: unknown }[])[0]!.answer), 42)
    assert.equal(lentOut(own), 0, 'a connection checked out by rollcall was not given back')
  })

  it('mysql: own client: a waiter is granted when the peer releases; stop() while holding destroys the session, which frees the lock for the peer', async (t) => {
    const own = pool(t)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    const name = rid('lock')
    const peerLock = peer.getLock(name)
    assert.equal(await peerLock.acquire({ blocking: false }), true)
    const waiting = c.getLock(name).acquire({ timeoutMs: 10_000 })
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(lentOut(own), 1, 'a waiting lock holds one connection of the pool')
    await peerLock.release()
    assert.equal(await waiting, true, 'the waiter on the own pool was not granted the released lock')
    await c.stop()
    assert.equal(lentOut(own), 0, 'a connection checked out by rollcall was not given back')
    // The destroyed session held the lock: the server freed it with the session.
    const startedMs = Date.now()
    assert.equal(await peerLock.acquire({ timeoutMs: 5_000 }), true, 'the lock held at stop() stayed taken')
    assert.ok(Date.now() - startedMs < 5_000)
    await peerLock.release()
  })

  it('mysql: own client: a pool without multipleStatements, a client of the wrong kind, URL connection parts and connection options are refused before any I/O', async (t) => {
    const single = mysqlCallback.createConnection({ uri: URL, multipleStatements: true })
    single.on('error', () => {})
    t.after(() => single.destroy())
    const callbackPool = mysqlCallback.createPool({ uri: URL, multipleStatements: true })
    t.after(() => callbackPool.end())
    const pgPool = new pg.Pool({ max: 1 })
    t.after(() => pgPool.end().catch(() => {}))
    const plain = pool(t, { multipleStatements: false })
    const cases: [unknown, RegExp][] = [
      [plain, /multiple statements.*create the pool with multipleStatements: true/],
      [pool(t, { database: undefined, uri: URL.replace(/\/rollcall$/, '') }), /names no database.*database: /],
      [pool(t, { connectionLimit: 1 }), /connectionLimit is 1/],
      [single, /got a mysql2 connection \(one connection\)/],
      [callbackPool, /callback pool of 'mysql2'; pass its pool\.promise\(\)/],
      [pgPool, /must be a mysql2 promise pool.*got an? \w+; pass createPool/],
      [{}, /pass createPool/],
    ]
    for (const [value, message] of cases) {
      const err = await connect('mysql://', { client: value as mysql.Pool }).then(() => undefined, (e: unknown) => e)
      assert.ok(err instanceof InvalidOptionError, `${String(err)} for ${message}`)
      assert.match(err.message, message)
    }
    const own = pool(t)
    await assert.rejects(connect('mysql://root@127.0.0.1/rollcall', { client: own }), InvalidUrlError)
    await assert.rejects(connect('mysql://?ssl_ca=/tmp/ca.pem', { client: own }), /Option ssl_ca \(in the URL\) configures the mysql connection/)
    assert.equal(lentOut(own) + lentOut(plain), 0, 'a refused connect() used the pool')
    assert.equal((own.pool as unknown as { _allConnections: { length: number } })._allConnections.length, 0, 'a refused connect() opened a connection')
  })
})
