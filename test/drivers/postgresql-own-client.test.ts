/**
 * The postgresql driver on the application's own pg client (connect('postgresql://?...', { client })).
 *
 * A pg Pool: a smoke and lock contention on the shared server, seen from a member that connected
 * by URL; after stop() the pool is open and usable and holds no session rollcall checked out.
 *
 * A pg Client: rollcall sends nothing on it and opens sessions of its own with its settings. On
 * the shared server, connected: the same smoke and contention, the client's backend never ran a
 * statement of rollcall's, a blocking wait queues on another backend while the client answers,
 * and stop() closes rollcall's sessions and leaves the client open. Not yet connected, with TLS
 * and a password function, through a front on loopback (the shared server has neither TLS nor
 * passwords): every session rollcall opened came through TLS and asked the function, and the
 * client, never connected by rollcall, connects afterwards. Connected with a password function:
 * rollcall's sessions use the password pg resolved. Ended clients and wrong kinds are refused.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'
import { AuthenticationError, connect, ConnectionError, InvalidOptionError, InvalidUrlError, type Coordinator } from '../../src/index.js'
import { pgLockKey } from '../../src/coordination/drivers/postgresql/postgresql-lock.js'
import { pgClientSettings } from '../../src/coordination/drivers/postgresql/postgresql-own-client.js'
import { serverUrl } from '../support/backends.js'
import { PgFront } from '../support/pg-front.js'
import { rid, waitFor } from '../support/wait.js'
import { sleep } from '../../src/internal/sleep.js'
import { selfSignedCertificate } from '../support/certificate.js'
import { openPeer, smoke } from './own-client-support.js'

const URL = serverUrl('postgresql')
const SERVER = new globalThis.URL(URL)
/** The shared server's user and database, for clients that go through a front. */
const WHO = { user: decodeURIComponent(SERVER.username), database: SERVER.pathname.slice(1) }
/** What the application's own Client runs last in the contention check. */
const MARK = "SELECT 'the application''s own statement' AS mine"

function pool(t: TestContext, options: pg.PoolConfig = {}): pg.Pool {
  const p = new pg.Pool({ connectionString: URL, max: 5, ...options })
  p.on('error', () => {})
  t.after(() => p.end().catch(() => {}))
  return p
}

/** A pg Client of the test (not connected), ended when the test ends. */
function single(t: TestContext, config: pg.ClientConfig): pg.Client {
  const c = new pg.Client(config)
  c.on('error', () => {})
  t.after(() => c.end().catch(() => {}))
  return c
}

/** The backend pid of a Client, null until it connected (pg sets it; @types/pg does not declare it). */
function pidOf(c: pg.Client): number | null {
  return (c as unknown as { processID: number | null }).processID
}

/** A connected Client for looking at the server (pg_stat_activity, pg_locks). */
async function admin(t: TestContext): Promise<pg.Client> {
  const c = single(t, { connectionString: URL })
  await c.connect()
  return c
}

async function openOwn(t: TestContext, client: pg.Pool | pg.Client, query = '?membership_timeout=10'): Promise<Coordinator> {
  const c = await connect(`postgresql://${query}`, { client, memberId: rid('own') })
  t.after(() => c.stop())
  return c
}

/** The backends named `name` (application_name). */
async function backendsNamed(db: pg.Client, name: string): Promise<number[]> {
  const { rows } = await db.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid', [name])
  return rows.map((r: { pid: number }) => r.pid)
}

/**
 * Lock contention through `c`: two lock objects of one name exclude each other (advisory locks are
 * re-entrant within a session, so they must hold separate ones); the second one's blocking wait
 * queues in PostgreSQL, on a backend that is not the application's Client (`own`), which answers
 * meanwhile; a lock `peer` holds is waited for in vain.
 */
async function contention(c: Coordinator, peer: Coordinator, db: pg.Client, own?: pg.Client): Promise<void> {
  const name = rid('contended')
  const [k1, k2] = pgLockKey(name)
  const first = c.getLock(name)
  const second = c.getLock(name)
  assert.equal(await first.acquire({ blocking: false }), true)
  assert.equal(await second.acquire({ blocking: false }), false, 'a second lock object of the name took it in the same process')
  const waiting = second.acquire({ timeoutMs: 20_000 })
  const waiter = await waitFor('the wait queued in PostgreSQL', async () => {
    const { rows } = await db.query(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1::oid AND objid = $2::oid AND objsubid = 2
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [k1, k2],
    )
    return rows[0]?.pid as number | undefined
  }, 10_000)
  if (own) {
    assert.notEqual(waiter, pidOf(own), "the lock wait blocks the application's Client")
    const { rows } = await own.query(MARK)
    assert.equal(rows[0].mine, "the application's own statement")
  }
  await first.release()
  assert.equal(await waiting, true, 'the waiter was not granted the lock its sibling released')
  assert.equal(await peer.getLock(name).acquire({ blocking: false }), false)
  await second.release()
  const held = peer.getLock(name)
  assert.equal(await held.acquire({ blocking: false }), true)
  assert.equal(await c.getLock(name).acquire({ timeoutMs: 300 }), false)
  await held.release()
}

/**
 * A blocking acquire through `c` outlives the lock_timeout and statement_timeout (300 ms) that the
 * application's settings put on its sessions: it is still waiting, queued in PostgreSQL, a second
 * later, and is granted when `peer` releases.
 */
async function waitOutlivesTimeouts(c: Coordinator, peer: Coordinator, db: pg.Client): Promise<void> {
  const name = rid('untimed')
  const [k1, k2] = pgLockKey(name)
  const held = peer.getLock(name)
  assert.equal(await held.acquire({ blocking: false }), true)
  let outcome: unknown
  const waiting = c.getLock(name).acquire({ timeoutMs: 20_000 }).then((v) => (outcome = v), (e: unknown) => (outcome = e))
  await waitFor('the wait queued in PostgreSQL', async () => {
    const { rows } = await db.query(
      `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1::oid AND objid = $2::oid AND objsubid = 2
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [k1, k2],
    )
    return rows.length > 0
  }, 10_000)
  await sleep(1_000)
  assert.equal(outcome, undefined, `the wait ended early: ${String(outcome)}`)
  await held.release()
  await waiting
  assert.equal(outcome, true)
}

async function front(t: TestContext, options: Parameters<typeof PgFront.start>[1]): Promise<PgFront> {
  const f = await PgFront.start(Number(SERVER.port || 5432), options)
  t.after(() => f.close())
  return f
}

describe("postgresql: the application's own client", () => {
  it('postgresql: own client: groups, heartbeat, locks and leadership run on a pg Pool; stop() leaves it usable with every session given back', async (t) => {
    const own = pool(t)
    const db = await admin(t)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    await contention(c, peer, db)
    await c.stop()
    const { rows } = await own.query('SELECT 41 + 1 AS answer')
    assert.equal(rows[0].answer, 42)
    assert.equal(own.totalCount - own.idleCount, 0, 'a session checked out by rollcall was not given back')
    assert.equal(own.ending, false)
  })

  it("postgresql: own client: a connected pg Client lends its settings only; rollcall's sessions are its own, and stop() closes them", async (t) => {
    const app = rid('app')
    const own = single(t, { connectionString: URL, application_name: app })
    await own.connect()
    const ownPid = pidOf(own)
    assert.equal(typeof ownPid, 'number')
    const db = await admin(t)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    await contention(c, peer, db, own)
    const named = await backendsNamed(db, app)
    assert.ok(named.includes(ownPid!) && named.length >= 2, `backends named like the client: ${named.join(', ')}`)
    const { rows: last } = await db.query('SELECT query FROM pg_stat_activity WHERE pid = $1', [ownPid])
    assert.equal(last[0].query, MARK, "the application's Client ran a statement it did not send")
    await c.stop()
    assert.equal(pidOf(own), ownPid)
    assert.equal((await own.query('SELECT 41 + 1 AS answer')).rows[0].answer, 42)
    assert.equal((own as unknown as { _ending: boolean })._ending, false)
    await waitFor("rollcall's sessions closed", async () => {
      const left = await backendsNamed(db, app)
      return left.length === 1 && left[0] === ownPid
    }, 10_000)
  })

  it('postgresql: own client: a pg Client not yet connected, with TLS and a password function (a front on loopback), is never connected by rollcall', async (t) => {
    const { key, cert } = selfSignedCertificate(t)
    const f = await front(t, { tls: { key, cert }, password: 'sesame' })
    const app = rid('app')
    let asked = 0
    const settings: pg.ClientConfig = {
      host: '127.0.0.1',
      port: f.port,
      ...WHO,
      ssl: { ca: cert },
      application_name: app,
      options: '-c search_path=public',
      password: async () => {
        asked++
        return 'sesame'
      },
    }
    const own = single(t, settings)
    const db = await admin(t)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    await contention(c, peer, db)
    assert.equal(pidOf(own), null, 'rollcall connected the Client')
    const opened = f.sessions.length
    assert.ok(opened >= 2, `${opened} sessions came through the front`)
    assert.deepEqual(f.sessions.filter((s) => !s.tls), [], 'a session of rollcall came without TLS')
    for (const s of f.sessions) {
      assert.equal(s.params.application_name, app)
      assert.equal(s.params.options, '-c search_path=public')
      assert.equal(s.params.user, WHO.user)
    }
    assert.equal(asked, opened, 'each session rollcall opened should have asked the password function')
    await c.stop()
    // The Client is the application's to connect, with its own settings.
    await own.connect()
    assert.equal((await own.query('SELECT 41 + 1 AS answer')).rows[0].answer, 42)
    assert.equal(asked, opened + 1)
    assert.equal(f.sessions.length, opened + 1)

    // The settings mattered: without the CA, or with a wrong password, rollcall cannot connect.
    const untrusting = single(t, { ...settings, ssl: {} })
    const err = await connect('postgresql://?timeout=5', { client: untrusting }).then(() => undefined, (e: unknown) => e as Error)
    assert.ok(err instanceof ConnectionError, String(err))
    assert.match(err.message, /certificate/)
    const wrong = single(t, { ...settings, password: () => 'open-sesame-not' })
    const refused = await connect('postgresql://?timeout=5', { client: wrong }).then(() => undefined, (e: unknown) => e as Error)
    assert.ok(refused instanceof AuthenticationError, String(refused))
    assert.match(String((refused.cause as Error).message), /password authentication failed \(pg front\)/)
    assert.doesNotMatch(refused.message, /open-sesame-not/)
    assert.equal(f.refused, 1)
  })

  it('postgresql: own client: a pg Client connected with a password function gives rollcall the password pg resolved', async (t) => {
    const f = await front(t, { password: 'sesame' })
    let asked = 0
    const own = single(t, {
      host: '127.0.0.1',
      port: f.port,
      ...WHO,
      password: () => {
        asked++
        return 'sesame'
      },
    })
    await own.connect()
    assert.equal(asked, 1)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    const g = rid('g')
    await c.joinGroupCreate(g)
    assert.deepEqual(await peer.getMembers(g), [c.memberId])
    assert.equal(await c.getLock(rid('lock')).acquire({ blocking: false }), true)
    assert.ok(f.sessions.length >= 3, `${f.sessions.length} sessions came through the front`)
    assert.equal(asked, 1, 'pg keeps the resolved password once connected; the function is not asked again')
    await c.stop()
    assert.equal((await own.query('SELECT 41 + 1 AS answer')).rows[0].answer, 42)
  })

  it("postgresql: own client: the settings read off a pg Client are its connection's, not its statements'", () => {
    const ssl = { ca: 'CA', key: 'KEY', rejectUnauthorized: true }
    const password = (): string => 'from a function'
    const own = new pg.Client({
      host: '/var/run/postgresql',
      port: 5433,
      user: 'app',
      database: 'appdb',
      password,
      ssl,
      options: '-c search_path=coordination',
      application_name: 'billing',
      keepAlive: false,
      connectionTimeoutMillis: 1_500,
      statement_timeout: 1_000,
      lock_timeout: 1_000,
      query_timeout: 1_000,
      idle_in_transaction_session_timeout: 1_000,
      types: { getTypeParser: () => (v: string) => v },
      ...{ binary: true },
    })
    const settings = pgClientSettings(own, 7_000) as pg.ClientConfig & Record<string, unknown>
    assert.equal(settings.host, '/var/run/postgresql')
    assert.equal(settings.port, 5433)
    assert.equal(settings.user, 'app')
    assert.equal(settings.database, 'appdb')
    assert.equal(settings.password, password, 'the password function, not a password it gave once')
    assert.equal(settings.ssl, ssl, "the client's own ssl object (pg hides its key from a copy)")
    assert.equal(settings.options, '-c search_path=coordination')
    assert.equal(settings.application_name, 'billing')
    assert.equal(settings.keepAlive, false)
    assert.equal(settings.connectionTimeoutMillis, 1_500)
    for (const key of ['statement_timeout', 'lock_timeout', 'query_timeout', 'idle_in_transaction_session_timeout', 'binary', 'types']) {
      assert.equal(settings[key], undefined, `${key} was carried over`)
    }
    // A session made from them connects as the client would.
    const derived = new pg.Client(settings) as unknown as { connectionParameters: Record<string, unknown> }
    const original = (own as unknown as { connectionParameters: Record<string, unknown> }).connectionParameters
    for (const key of ['host', 'port', 'user', 'database', 'password', 'ssl', 'options', 'application_name', 'keepalives']) {
      assert.equal(derived.connectionParameters[key], original[key], key)
    }
    const plain = pgClientSettings(new pg.Client({ host: '127.0.0.1', user: 'app' }), 7_000)
    assert.equal(plain.connectionTimeoutMillis, 7_000, "rollcall's timeout when the client has none")
    assert.equal(plain.keepAlive, true)
    assert.equal((plain as Record<string, unknown>).fallback_application_name, 'rollcall')
  })

  it("postgresql: own client: lock_timeout and statement_timeout of the application's settings do not cut a blocking lock wait short", async (t) => {
    const db = await admin(t)
    const peer = await openPeer(t, URL)
    const own = pool(t, { lock_timeout: 300, statement_timeout: 300 })
    const onPool = await openOwn(t, own)
    await waitOutlivesTimeouts(onPool, peer, db)
    await onPool.stop()
    assert.equal(own.totalCount - own.idleCount, 0)
    const bounded = single(t, { connectionString: URL, options: '-c lock_timeout=300 -c statement_timeout=300' })
    const onClient = await openOwn(t, bounded)
    await waitOutlivesTimeouts(onClient, peer, db)
  })

  it('postgresql: own client: an ended client, a client of the wrong kind, URL connection parts and connection options are refused before any I/O', async (t) => {
    const redis = new Redis({ lazyConnect: true })
    t.after(() => redis.disconnect())
    const endedConnected = single(t, { connectionString: URL })
    await endedConnected.connect()
    await endedConnected.end()
    const endedUnconnected = single(t, { connectionString: URL })
    await endedUnconnected.end()
    const cases: [unknown, RegExp][] = [
      [endedConnected, /must be a pg Pool or Client: it is ended \(client\.end\(\) was called\)/],
      [endedUnconnected, /it is ended \(client\.end\(\) was called\)/],
      [redis, /must be a pg Pool or Client: got an? \w+; pass new pg\.Pool\(\.\.\.\) or new pg\.Client\(\.\.\.\)/],
      [{}, /pass new pg\.Pool/],
    ]
    for (const [value, message] of cases) {
      const err = await connect('postgresql://', { client: value as pg.Pool }).then(() => undefined, (e: unknown) => e)
      assert.ok(err instanceof InvalidOptionError, `${String(err)} for ${message}`)
      assert.match(err.message, message)
    }
    const own = pool(t)
    await assert.rejects(connect('postgresql://postgres@127.0.0.1/rollcall', { client: own }), InvalidUrlError)
    await assert.rejects(connect('postgresql://?host=/tmp', { client: own }), /Option host \(in the URL\) configures the postgresql connection/)
    assert.equal(own.totalCount, 0, 'a refused connect() used the pool')
    const unconnected = single(t, { connectionString: URL })
    await assert.rejects(connect('postgresql://127.0.0.1', { client: unconnected }), InvalidUrlError)
    await assert.rejects(connect('postgresql://', { client: unconnected, dbname: 'other' }), /Option dbname configures the postgresql connection/)
    assert.equal(pidOf(unconnected), null)
  })
})
