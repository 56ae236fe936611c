/**
 * Driver tests that read the same on PostgreSQL and MySQL: the tables (created once, however many
 * start at once), expiry by the server's clock, recovery from a row deleted behind the member's
 * back, corrupt capabilities, the statements a join, a read and a lock cycle cost, the
 * connections a coordinator holds, locks freed by a killed process, leader rows that outlive their
 * lock, validation before I/O, and connection failures. Each backend's file calls sqlDriverCases().
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import {
  connect,
  ConnectionError,
  InvalidIdError,
  InvalidOptionError,
  MemberExistsError,
  SerializationError,
  type RollcallError,
} from '../../src/index.js'
import { pgLockKey } from '../../src/coordination/drivers/postgresql/postgresql-lock.js'
import { MAX_IDLE_LOCK_SESSIONS } from '../../src/coordination/drivers/sql/sql-sessions.js'
import { TcpProxy } from '../support/proxy.js'
import { TIMING } from '../support/timing.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import type { ConnectionState } from '../../src/coordination/driver.js'
import {
  closedPort,
  openSql,
  recordStatements,
  silentServer,
  spawnLockHolder,
  sqlAdmin,
  withQuery,
  type SentStatement,
  type SqlBackend,
} from './sql-support.js'

const MEMBERS = 'rollcall_members'
const LEADERS = 'rollcall_leaders'

/** Registers the shared cases for one backend. */
export function sqlDriverCases(backend: SqlBackend, url: string): void {
  const fast = withQuery(url, `timeout=${TIMING.expirySeconds}`)
  const title = (s: string): string => `${backend}: ${s}`
  const hostPort = url.replace(/^[a-z]+:\/\/[^@]*@([^/]+).*$/, '$1')

  it(title('schema: drivers starting at once create the tables once; starting again is a no-op'), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const ns = `t${rid('').slice(1)}_`
    const many = await Promise.all(Array.from({ length: 4 }, () => connect(withQuery(url, `namespace=${ns}`))))
    try {
      for (const table of ['groups', 'members', 'leaders']) assert.ok(await admin.tableExists(`${ns}${table}`), `${ns}${table}`)
      const again = await connect(withQuery(url, `namespace=${ns}`))
      many.push(again)
      const g = rid('g')
      await many[0]!.joinGroupCreate(g)
      await again.joinGroup(g)
      assert.deepEqual(await many[3]!.getMembers(g), [many[0]!.memberId, again.memberId].sort())
      assert.equal(String((await admin.query(`SELECT COUNT(*) AS n FROM ${ns}members`))[0]!.n), '2')
    } finally {
      await Promise.all(many.map((c) => c.stop()))
      for (const table of ['members', 'leaders', 'fence', 'groups']) {
        await admin.query(`DROP ${backend === 'postgresql' && table === 'fence' ? 'SEQUENCE' : 'TABLE'} IF EXISTS ${ns}${table}`)
      }
    }
  })

  it(title("expiry: a member that stops beating drops out after membership_timeout, by the server's clock"), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const silent = await openSql(t, withQuery(url, 'membership_timeout=2'), { heartbeat: false })
    const reader = await openSql(t, url)
    const g = rid('g')
    await silent.joinGroupCreate(g)
    const [row] = await admin.query(`SELECT created_at, updated_at, expires_at FROM ${MEMBERS} WHERE group_id = $1 AND member_id = $2`, [g, silent.memberId])
    // Both times come from one server-side statement: exactly the timeout apart, whatever the client clock says.
    assert.equal((row!.expires_at as Date).getTime() - (row!.created_at as Date).getTime(), 2_000)
    assert.deepEqual(await reader.getMembers(g), [silent.memberId])
    const joinedAt = Date.now()
    await waitFor('the silent member to drop out', async () => (await reader.getMembers(g)).length === 0, 2_000 + TIMING.expirySlackMs, 100)
    t.diagnostic(`dropped out ${Date.now() - joinedAt} ms after joining (membership_timeout 2 s)`)
    // The reader collected the expired row on the way.
    assert.deepEqual(await admin.query(`SELECT member_id FROM ${MEMBERS} WHERE group_id = $1`, [g]), [])
  })

  it(title("membership: a row deleted behind the member's back is reported lost, then rejoined with its capabilities"), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const a = await openSql(t, fast)
    const g = rid('g')
    await a.joinGroupCreate(g, { v: 1 })
    const lost = nextEvent<{ group: string }>(a, 'membershipLost', (e) => e.group === g, TIMING.eventMs)
    const rejoined = nextEvent<{ group: string }>(a, 'rejoined', (e) => e.group === g, TIMING.eventMs)
    await admin.query(`DELETE FROM ${MEMBERS} WHERE group_id = $1 AND member_id = $2`, [g, a.memberId])
    await lost
    await rejoined
    assert.deepEqual(await a.getMemberCapabilities(g, a.memberId), { v: 1 })
    assert.equal((await admin.query(`SELECT member_id FROM ${MEMBERS} WHERE group_id = $1`, [g])).length, 1)
  })

  it(title('capabilities: a corrupt value written by someone else is isolated to that member'), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const a = await openSql(t, url)
    const b = await openSql(t, url)
    const g = rid('g')
    await a.joinGroupCreate(g, { ok: true })
    await b.joinGroup(g, { ok: true })
    // 0xc1 is never used in msgpack.
    await admin.query(`UPDATE ${MEMBERS} SET capabilities = $1 WHERE group_id = $2 AND member_id = $3`, [Buffer.from([0xc1]), g, b.memberId])
    const warning = nextEvent<RollcallError>(a, 'warning', (e) => e instanceof SerializationError, TIMING.eventMs)
    const all = await a.getMembersWithCapabilities(g)
    assert.deepEqual(all.get(a.memberId), { ok: true })
    assert.ok(all.get(b.memberId) instanceof SerializationError)
    await warning
    await assert.rejects(a.getMemberCapabilities(g, b.memberId), SerializationError)
    assert.deepEqual(await a.getMembers(g), [a.memberId, b.memberId].sort())
  })

  it(title('membership: a join is one statement, also when it takes over a lapsed row of its own; getMembers reads ids only'), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const a = await openSql(t, url, { heartbeat: false })
    const g = rid('g')
    await a.createGroup(g)
    const sent = recordStatements(t, backend)
    /** The statements naming the group that `op` sends. */
    const statements = async (op: () => Promise<unknown>): Promise<SentStatement[]> => {
      const before = sent.length
      await op()
      return sent.slice(before).filter((s) => s.values.includes(g))
    }
    assert.equal((await statements(() => a.joinGroup(g, { v: 1 }))).length, 1, 'a join')
    // A second coordinator with the same member id: the live row is in the way.
    const twin = await openSql(t, url, { memberId: a.memberId, heartbeat: false })
    assert.equal((await statements(() => assert.rejects(twin.joinGroup(g, { v: 2 }), MemberExistsError))).length, 1, 'a refused join')
    const lapsed = backend === 'postgresql' ? `now() - interval '1 second'` : 'TIMESTAMPADD(SECOND, -1, UTC_TIMESTAMP(6))'
    await admin.query(`UPDATE ${MEMBERS} SET expires_at = ${lapsed} WHERE group_id = $1`, [g])
    assert.equal((await statements(() => twin.joinGroup(g, { v: 2 }))).length, 1, 'a join over a lapsed row')
    assert.deepEqual(await twin.getMemberCapabilities(g, a.memberId), { v: 2 })
    const reads = await statements(async () => assert.deepEqual(await a.getMembers(g), [a.memberId]))
    assert.equal(reads.length, 1)
    assert.doesNotMatch(reads[0]!.text, /capabilities/, 'getMembers reads no capabilities')
  })

  it(title('locks: an acquire is one statement that also takes the fencing token, and the released session serves the next acquire'), async (t) => {
    const a = await openSql(t, url, { heartbeat: false })
    const name = rid('l')
    const key = pgLockKey(name)
    const sent = recordStatements(t, backend)
    const lock = a.getLock(name)
    const tokens: bigint[] = []
    for (let i = 0; i < 4; i++) {
      // The non-blocking form and the one that waits in the server's queue, in turn.
      assert.equal(await lock.acquire(i % 2 === 0 ? { blocking: false } : {}), true)
      tokens.push(lock.fencingToken!)
      assert.equal(await lock.release(), true)
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `fencing tokens grow: ${tokens.join(', ')}`)
    const named = sent.filter((s) =>
      backend === 'mysql' ? s.values.includes(name) : /advisory/.test(s.text) && s.values[0] === key[0] && s.values[1] === key[1]
    )
    const sessions = new Set(named.map((s) => s.session))
    assert.equal(sessions.size, 1, 'every cycle on one session')
    // PostgreSQL opens a lock session with one statement of settings (postgresql/index.ts lockSessionSettings), once per session.
    const opening = sent.filter((s) => sessions.has(s.session) && /set_config/.test(s.text))
    assert.equal(opening.length, backend === 'postgresql' ? 1 : 0, 'session settings, once')
    const onSession = sent.filter((s) => sessions.has(s.session) && !opening.includes(s))
    assert.equal(onSession.length, 8, `two statements per cycle:\n${onSession.map((s) => s.text).join('\n')}`)
  })

  it(title('connections: one per coordinator, plus one per held lock and a few unused lock sessions; none after stop'), async (t) => {
    const proxy = await TcpProxy.start(Number(hostPort.split(':')[1]))
    t.after(() => proxy.close())
    const a = await connect(url.replace(hostPort, `127.0.0.1:${proxy.port}`), { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs })
    t.after(() => a.stop())
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.getMembersWithCapabilities(g)
    assert.equal(proxy.connections, 1, 'membership and heartbeats share one connection')
    const locks = Array.from({ length: MAX_IDLE_LOCK_SESSIONS + 2 }, () => a.getLock(rid('l')))
    for (const lock of locks) assert.equal(await lock.acquire({ blocking: false }), true)
    assert.equal(proxy.connections, 1 + locks.length, 'one session per held lock')
    for (const lock of locks) await lock.release()
    await waitFor('the unused lock sessions beyond the kept ones to close', () => proxy.connections === 1 + MAX_IDLE_LOCK_SESSIONS, TIMING.eventMs)
    assert.equal(await locks[0]!.acquire({ blocking: false }), true)
    assert.equal(proxy.connections, 1 + MAX_IDLE_LOCK_SESSIONS, 'a kept session took the lock')
    await a.stop()
    await waitFor('every connection to close', () => proxy.connections === 0, TIMING.eventMs)
  })

  it(title('locks: a lock is freed when its holder process is SIGKILLed (its session ends)'), async (t) => {
    const a = await openSql(t, url)
    const name = rid('l')
    const child = await spawnLockHolder(t, url, name)
    const lock = a.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), false, 'the child holds it')
    const killedAt = Date.now()
    child.kill('SIGKILL')
    assert.equal(await lock.acquire({ timeoutMs: 10_000 }), true)
    t.diagnostic(`acquired ${Date.now() - killedAt} ms after SIGKILL of the holder`)
  })

  it(
    title(
      'locks: a release lost on a silent session (a cut) rejects with ConnectionError; once the server answers, that session is ended and the lock is free',
    ),
    { timeout: 60_000 },
    async (t) => {
      // The lock session goes silent for good at its release, its close included, as a link lost in a cut whose retransmissions have
      // backed off: the server keeps the session, and the lock, until its TCP gives up. The shared pool still answers.
      const proxy = await TcpProxy.start(Number(hostPort.split(':')[1]))
      t.after(() => proxy.close())
      const a = await openSql(t, withQuery(url.replace(hostPort, `127.0.0.1:${proxy.port}`), 'timeout=2'))
      const b = await openSql(t, url)
      const name = rid('l')
      const lock = a.getLock(name)
      assert.equal(await lock.acquire(), true)
      proxy.stallOn(backend === 'mysql' ? 'RELEASE_LOCK' : 'pg_advisory_unlock')
      await assert.rejects(
        lock.release(),
        (err: unknown) => err instanceof ConnectionError && err.message.includes(`lock ${JSON.stringify(name)} got no answer`),
      )
      assert.equal(lock.acquired, false, 'released as far as the holder knows')
      // The coordinator sends the release again at its next beat (a second of membership_timeout 2 s): the session is ended.
      assert.equal(await b.getLock(name).acquire({ timeoutMs: 20_000 }), true, 'another member takes the lock')
    },
  )

  it(title('locks: a release still under way when stop() ends its session resolves: the end of the session frees the lock'), async (t) => {
    const a = await openSql(t, url)
    const b = await openSql(t, url)
    const name = rid('l')
    const lock = a.getLock(name)
    assert.equal(await lock.acquire(), true)
    const released = lock.release()
    await a.stop()
    await released
    assert.equal(await b.getLock(name).acquire({ blocking: false }), true)
  })

  it(title('locks: a lock whose session is ended from outside is reported lost at once'), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const a = await openSql(t, url)
    const g = rid('g')
    await a.joinGroupCreate(g)
    a.watchElectedAsLeader(g, () => {})
    await waitFor('a to lead', () => a.isLeader(g), TIMING.eventMs)
    const [row] = await admin.query(`SELECT session_id FROM ${LEADERS} WHERE group_id = $1`, [g])
    const lost = nextEvent<{ group: string; reason: string }>(a, 'leadershipLost', (e) => e.group === g, TIMING.eventMs)
    const killedAt = Date.now()
    await admin.killSession(Number(row!.session_id))
    const { reason } = await lost
    t.diagnostic(`leadershipLost ${Date.now() - killedAt} ms after the session was ended: ${reason}`)
    // Still a candidate: it campaigns again and wins on a new session.
    await waitFor('a to lead again', () => a.isLeader(g), TIMING.eventMs)
    const [again] = await admin.query(`SELECT session_id FROM ${LEADERS} WHERE group_id = $1`, [g])
    assert.notEqual(String(again!.session_id), String(row!.session_id))
  })

  it(title('elections: getLeader ignores a leaders row whose session does not hold the leader lock'), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const a = await openSql(t, url)
    const g = rid('g')
    await a.joinGroupCreate(g)
    // A live session that does not hold the lock: the admin's own.
    const [self] = await admin.query(backend === 'postgresql' ? 'SELECT pg_backend_pid() AS id' : 'SELECT CONNECTION_ID() AS id')
    const now = backend === 'postgresql' ? 'now()' : 'UTC_TIMESTAMP(6)'
    await admin.query(`INSERT INTO ${LEADERS} (group_id, member_id, session_id, elected_at) VALUES ($1, 'ghost', $2, ${now})`, [g, Number(self!.id)])
    assert.equal(await a.getLeader(g), null)
    a.watchElectedAsLeader(g, () => {})
    await waitFor('a to lead', () => a.isLeader(g), TIMING.eventMs)
    assert.equal(await a.getLeader(g), a.memberId)
  })

  it(title('validation: bad ids and unknown options are refused before any I/O'), async (t) => {
    const admin = sqlAdmin(t, backend, url)
    const unreachable = url.replace(hostPort, `127.0.0.1:${await closedPort()}`)
    await assert.rejects(
      connect(withQuery(unreachable, 'bogus=1')),
      (e: Error) => e instanceof InvalidOptionError && /bogus/.test(e.message) && /namespace/.test(e.message),
    )
    await assert.rejects(connect(withQuery(unreachable, 'namespace=bad-name')), InvalidOptionError)
    await assert.rejects(connect(withQuery(unreachable, 'membership_timeout=0')), InvalidOptionError)
    await assert.rejects(connect(unreachable, { memberId: 'nul\0member' }), InvalidIdError)
    await assert.rejects(connect(unreachable, { memberId: 'm'.repeat(256) }), InvalidIdError)
    const a = await openSql(t, url)
    const long = `g${'é'.repeat(128)}`
    for (const bad of ['a\0b', long, 'lone \ud800 surrogate']) {
      await assert.rejects(a.createGroup(bad), InvalidIdError)
      await assert.rejects(a.joinGroupCreate(bad), InvalidIdError)
    }
    assert.throws(() => a.getLock('nul\0lock'), InvalidIdError)
    assert.deepEqual(await admin.query(`SELECT group_id FROM rollcall_groups WHERE group_id = $1`, [long]), [])
  })

  it(title('connection: an unreachable server fails start() in time with ConnectionError naming the host, never the password'), async (t) => {
    const withPassword = (port: number): string => url.replace(/^([a-z]+:\/\/)([^@:]*)(?::[^@]*)?@[^/]+/, `$1$2:s3cret-pw@127.0.0.1:${port}`)
    const refused = await closedPort()
    const err = await connect(withPassword(refused)).then(() => undefined, (e: unknown) => e)
    assert.ok(err instanceof ConnectionError, String(err))
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${refused}`))
    assert.doesNotMatch(`${err.message} ${err.stack} ${String((err.cause as Error)?.message)}`, /s3cret-pw/)
    const silent = await silentServer(t)
    const started = Date.now()
    const slow = await connect(withQuery(withPassword(silent), 'timeout=1')).then(() => undefined, (e: unknown) => e)
    const took = Date.now() - started
    assert.ok(slow instanceof ConnectionError, String(slow))
    assert.match(slow.message, new RegExp(`127\\.0\\.0\\.1:${silent}`))
    assert.doesNotMatch(slow.message, /s3cret-pw/)
    assert.ok(took >= 900 && took < 1_000 + 3_000, `failed after ${took} ms with timeout=1`)
  })

  it(title("connection: a silent link is reported suspended by the heartbeat's own deadline, before the membership lapses"), async (t) => {
    // membership_timeout 6 s: a beat every ~3 s, each given 1.5 s to answer, so a beat that meets
    // the silence says so within about 4.8 s, while the membership would be called lost at 6 s.
    const proxy = await TcpProxy.start(Number(hostPort.split(':')[1]))
    t.after(() => proxy.close())
    const a = await openSql(t, withQuery(url.replace(hostPort, `127.0.0.1:${proxy.port}`), 'membership_timeout=6'))
    const g = rid('g')
    await a.joinGroupCreate(g)
    const states: ConnectionState[] = []
    a.on('connectionStateChanged', ({ state }) => states.push(state))
    const pausedAt = Date.now()
    proxy.pause()
    await waitFor('suspended', () => states.length > 0, 10_000)
    const suspendedMs = Date.now() - pausedAt
    proxy.resume()
    await waitFor('reconnected', () => states.at(-1) === 'reconnected', TIMING.eventMs)
    t.diagnostic(`suspended ${suspendedMs} ms after the link went silent; states: ${states.join(' → ')}`)
    assert.equal(states[0], 'suspended', `states: ${states.join(', ')}`)
    assert.deepEqual(await a.getMembers(g), [a.memberId])
  })

  it(
    title('connection: after a cut in which the statement in flight and every new session went unanswered, the coordinator is back soon after the heal'),
    async (t) => {
      // The shared pool holds one session: silent for good (a statement sent into a cut waits after the heal for TCP's backed-off
      // retransmission), it held every later statement, heartbeats included (a PostgreSQL partition run: connected again 6.5 s
      // after a heal). Its replacement, opened during the cut, must not wait out the connect timeout either (timeout=12 here).
      const proxy = await TcpProxy.start(Number(hostPort.split(':')[1]))
      t.after(() => proxy.close())
      const a = await openSql(t, withQuery(url.replace(hostPort, `127.0.0.1:${proxy.port}`), 'timeout=12&membership_timeout=3'))
      const g = rid('g')
      await a.joinGroupCreate(g)
      const states: ConnectionState[] = []
      a.on('connectionStateChanged', ({ state }) => states.push(state))
      proxy.stallUntil()
      await waitFor('lost', () => states.includes('lost'), TIMING.eventMs)
      // Just past the statement's own timeout (12 s from its send, about 1-2 s before the lapse): its session has been given up, and
      // new ones are being tried.
      await new Promise((resolve) => setTimeout(resolve, 11_000))
      const healedAt = Date.now()
      proxy.unstall()
      await waitFor('reconnected after the heal', () => states.at(-1) === 'reconnected', 15_000)
      const backMs = Date.now() - healedAt
      t.diagnostic(`reconnected ${backMs} ms after the heal; states: ${states.join(' → ')}`)
      // A new session connects within 1 s (a quarter of membership_timeout, at least 1 s) and the heartbeat retries within 0.75 s:
      // bounded by the connect timeout instead, the attempt under way at the heal would have lasted about 10 s more.
      assert.ok(backMs < 5_000, `reconnected ${backMs} ms after the heal`)
      assert.deepEqual(await a.getMembers(g), [a.memberId])
    },
  )

  it(title('connection: a cut link is reported suspended then reconnected; a lock on a cut session is reported lost'), async (t) => {
    const port = Number(hostPort.split(':')[1])
    const proxy = await TcpProxy.start(port)
    t.after(() => proxy.close())
    const a = await openSql(t, withQuery(url.replace(hostPort, `127.0.0.1:${proxy.port}`), 'timeout=4'))
    const g = rid('g')
    await a.joinGroupCreate(g)
    const lock = a.getLock(rid('l'))
    await lock.acquire()
    const states: ConnectionState[] = []
    a.on('connectionStateChanged', ({ state }) => states.push(state))
    const lockLost = nextEvent<{ name: string }>(a, 'lockLost', (e) => e.name === lock.name, TIMING.eventMs)
    proxy.cut()
    await lockLost
    assert.equal(lock.acquired, false)
    await waitFor('suspended', () => states.includes('suspended'), TIMING.eventMs)
    proxy.restore()
    await waitFor('reconnected', () => states.includes('reconnected'), TIMING.eventMs)
    assert.deepEqual(states.slice(0, 2), ['suspended', 'reconnected'])
    assert.deepEqual(await a.getMembers(g), [a.memberId])
    assert.equal(await lock.acquire({ blocking: false }), true, 'the cut session freed the lock on the server')
  })
}
