/**
 * The mysql driver beyond the conformance suite: tooz's exact lock (GET_LOCK on the unprefixed
 * name, read back with IS_USED_LOCK), the 64-character limit it implies, the database the URL must
 * name, plus the cases shared with PostgreSQL (sql-cases.ts).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { tlsConfig } from '../../src/coordination/drivers/mysql/index.js'
import { connect, ConnectionError, InvalidIdError, InvalidUrlError } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { TIMING } from '../support/timing.js'
import { rid, waitFor } from '../support/wait.js'
import { sqlDriverCases } from './sql-cases.js'
import { openSql, sqlAdmin, withQuery } from './sql-support.js'

const URL = serverUrl('mysql')

describe('mysql driver', { concurrency: 4 }, () => {
  it('mysql: locks: the lock is GET_LOCK(<name>), unprefixed, on a connection kept for the next acquire', async (t) => {
    const admin = sqlAdmin(t, 'mysql', URL)
    const a = await openSql(t, URL)
    const name = rid('l')
    const holder = async (): Promise<unknown> => (await admin.query('SELECT IS_USED_LOCK($1) AS id', [name]))[0]!.id
    const lock = a.getLock(name)
    assert.equal(await holder(), null)
    await lock.acquire()
    const id = await holder()
    assert.notEqual(id, null)
    const [conn] = await admin.query('SELECT user, db FROM information_schema.processlist WHERE id = $1', [Number(id)])
    assert.equal(conn!.db, 'rollcall')
    await lock.release()
    assert.equal(await holder(), null)
    // As tooz keeps a Lock's connection, the released one stays open and serves the next acquire.
    assert.equal((await admin.query('SELECT id FROM information_schema.processlist WHERE id = $1', [Number(id)])).length, 1)
    await lock.acquire()
    assert.equal(String(await holder()), String(id), 'the same connection took it again')
    await lock.release()
    // Closed when the coordinator stops.
    await a.stop()
    await waitFor(
      'the lock connection to close',
      async () => (await admin.query('SELECT id FROM information_schema.processlist WHERE id = $1', [Number(id)])).length === 0,
      TIMING.eventMs,
    )
  })

  it('mysql: locks: a waiting acquire is woken by the server on release, and an aborted wait leaves the lock free', async (t) => {
    const a = await openSql(t, URL)
    const b = await openSql(t, URL)
    const c = await openSql(t, URL)
    const name = rid('l')
    const held = a.getLock(name)
    await held.acquire()
    const controller = new AbortController()
    const abandoned = c.getLock(name).acquire({ signal: controller.signal })
    const waiting = b.getLock(name).acquire({ timeoutMs: TIMING.eventMs })
    await new Promise((r) => setTimeout(r, 200))
    controller.abort(new Error('enough'))
    await assert.rejects(abandoned, /enough/)
    const releasedAt = Date.now()
    await held.release()
    assert.equal(await waiting, true)
    t.diagnostic(`b acquired ${Date.now() - releasedAt} ms after release`)
  })

  it('mysql: locks: fencing=false takes GET_LOCK alone: no token, no bump of the fence row, and locks still exclude', async (t) => {
    const admin = sqlAdmin(t, 'mysql', URL)
    // Tables of their own, so that the fence row is theirs alone to bump.
    const ns = `t${rid('').slice(1)}_`
    try {
      await unfenced(t, admin, ns)
    } finally {
      for (const table of ['members', 'leaders', 'fence', 'groups']) await admin.query(`DROP TABLE IF EXISTS ${ns}${table}`)
    }
  })

  async function unfenced(t: TestContext, admin: ReturnType<typeof sqlAdmin>, ns: string): Promise<void> {
    const fenced = await openSql(t, withQuery(URL, `namespace=${ns}`))
    const plain = await openSql(t, withQuery(URL, `namespace=${ns}&fencing=false`))
    const other = await openSql(t, withQuery(URL, `namespace=${ns}&fencing=false`))
    const counter = async (): Promise<bigint> => BigInt(String((await admin.query(`SELECT value FROM ${ns}fence WHERE id = 1`, []))[0]!.value))
    const name = rid('l')
    const f = fenced.getLock(name)
    assert.equal(await f.acquire(), true)
    const first = f.fencingToken
    assert.equal(typeof first, 'bigint', 'the default issues tokens')
    await f.release()
    const lock = plain.getLock(name)
    const rival = other.getLock(name)
    const before = await counter()
    for (let i = 0; i < 5; i++) {
      assert.equal(await lock.acquire(), true)
      assert.equal(lock.fencingToken, undefined, 'no token with fencing=false')
      assert.equal(await rival.acquire({ blocking: false }), false, 'the held lock excludes')
      assert.equal(await f.acquire({ blocking: false }), false, 'and excludes a fenced process too')
      await lock.release()
    }
    assert.equal(await lock.acquire(), true)
    const waited = rival.acquire({ timeoutMs: TIMING.eventMs })
    await lock.release()
    assert.equal(await waited, true, 'a waiter with fencing=false is woken by the server as before')
    assert.equal(rival.fencingToken, undefined)
    await rival.release()
    assert.equal(await counter(), before, 'unfenced acquires leave the counter row alone')
    assert.equal(await f.acquire(), true)
    assert.ok(f.fencingToken! > first!, 'tokens keep growing for fenced processes')
    await Promise.all([fenced.stop(), plain.stop(), other.stop()])
  }

  it(
    'mysql: locks: a wait given up after the server granted it unheard (a cut) leaves no orphan holding the lock: the next beat ends that session',
    {
      timeout: 60_000,
    },
    async (t) => {
      // The waiter's GET_LOCK reaches the server, which grants the free lock, and then its link goes silent for good, its close
      // included (a cut whose retransmissions have backed off): the server keeps the session, and the lock, until its TCP gives up.
      const port = new globalThis.URL(URL).port
      const proxy = await TcpProxy.start(Number(port))
      t.after(() => proxy.close())
      const waiter = await openSql(t, withQuery(URL.replace(`:${port}/`, `:${proxy.port}/`), 'timeout=2'))
      const other = await openSql(t, URL)
      const admin = sqlAdmin(t, 'mysql', URL)
      const name = rid('l')
      proxy.stallAfter('GET_LOCK')
      const abort = new AbortController()
      const waited = waiter.getLock(name).acquire({ signal: abort.signal })
      waited.catch(() => {}) // asserted below; a failure before that must not also surface as an unhandled rejection
      await waitFor('the server granting the waiter unheard', async () => (await admin.query('SELECT IS_USED_LOCK($1) AS id', [name]))[0]?.id != null, 10_000)
      abort.abort(new Error('given up'))
      await assert.rejects(waited, /given up/)
      // Without the sweep the lock stays with the silent session for as long as the proxy keeps it open.
      assert.equal(await other.getLock(name).acquire({ timeoutMs: 20_000 }), true, 'another member takes the lock once the waiter has beaten')
    },
  )

  it('mysql: validation: lock names over 64 characters, and group ids over 54 (leader_of_<group>), are refused', async (t) => {
    const a = await openSql(t, URL)
    assert.throws(() => a.getLock('l'.repeat(65)), (e: Error) => e instanceof InvalidIdError && /64/.test(e.message))
    assert.ok(a.getLock('é'.repeat(64)))
    await assert.rejects(a.createGroup('g'.repeat(55)), (e: Error) => e instanceof InvalidIdError && /54/.test(e.message))
    const g = rid('g').padEnd(54, 'x')
    assert.equal(g.length, 54)
    await a.joinGroupCreate(g)
    a.watchElectedAsLeader(g, () => {})
    await waitFor('a to lead', () => a.isLeader(g), TIMING.eventMs)
    assert.equal(await a.getLeader(g), a.memberId)
  })

  it("mysql: options: the URL must name a database (rollcall's tables live there); refused before any I/O", async () => {
    await assert.rejects(connect(URL.replace(/\/rollcall$/, '')), (e: Error) => e instanceof InvalidUrlError && /database/.test(e.message))
    await assert.rejects(connect('mysql://a@h1:3306,h2:3306/db'), InvalidUrlError)
    await assert.rejects(connect(`${URL}?ssl_verify_mode=sometimes`), /ssl_verify_mode/)
    await assert.rejects(connect(`${URL}?ssl_ca=/nonexistent/ca.pem`), /ssl_ca.*cannot be read/)
  })

  it("mysql: options: tooz's ssl_* options map to mysql2 TLS settings as pymysql reads them, and turn TLS on", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-tls-'))
    const pem = '-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n'
    writeFileSync(join(dir, 'ca.pem'), pem)
    writeFileSync(join(dir, 'notes.txt'), 'not a certificate')
    assert.equal(await tlsConfig({}), undefined, 'no ssl_* option: no TLS')
    assert.deepEqual(await tlsConfig({ sslCa: join(dir, 'ca.pem') }), { ca: [pem], rejectUnauthorized: true, verifyIdentity: true })
    assert.deepEqual(await tlsConfig({ sslCapath: dir, sslCheckHostname: false }), { ca: [pem], rejectUnauthorized: true, verifyIdentity: false })
    assert.deepEqual(await tlsConfig({ sslCa: join(dir, 'ca.pem'), sslVerifyMode: 'none' }), { ca: [pem], rejectUnauthorized: false, verifyIdentity: true })
    assert.deepEqual(
      await tlsConfig({ sslCipher: 'HIGH' }),
      { ciphers: 'HIGH', rejectUnauthorized: false, verifyIdentity: false },
      'without a CA pymysql verifies nothing',
    )
    // The shared MariaDB has no TLS: asking for it must fail the connection, not fall back to plain text.
    const err = await connect(`${URL}?timeout=5&ssl_ca=${join(dir, 'ca.pem')}`).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof ConnectionError, String(err))
    assert.match(err.message, /secure connection|SSL|TLS|certificate/i)
  })

  sqlDriverCases('mysql', URL)
})
