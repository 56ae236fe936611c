/**
 * postgresql:// — locks exactly as tooz's pgsql driver takes them, plus groups, membership with
 * expiry, leader election and pushed join/leave notifications on a few small tables.
 *
 * URL: `postgresql://[USER[:PASSWORD]@]HOST[:PORT][/DBNAME][?dbname=&host=&port=&timeout=&membership_timeout=&namespace=]`
 * (tooz's form; `host`, `port` and `dbname` in the query override the URL, and a `host` that is a
 * path names a Unix socket directory). Without a database name, PostgreSQL's default applies: a
 * database named like the user.
 *
 * Locks: `pg_advisory_lock(k1, k2)`, k1 and k2 being the first two bytes of md5(name), each held
 * on a session of its own (postgresql-lock.ts), so a Python tooz process and this driver exclude
 * each other on the same lock name in the same database. Waiting happens in PostgreSQL's lock
 * queue. Fencing tokens come from the sequence `<namespace>fence`, in the statement that takes
 * the lock. A released session is kept a few seconds for the next acquire (sql-sessions.ts
 * LockSessions).
 *
 * Connections per coordinator: one for membership and heartbeats (the pool), one per held or
 * waiting lock (plus up to two unused ones, closed after 10 s), and the LISTEN connection while
 * some group is watched.
 *
 * The application's own client (`connect('postgresql://?...', { client })`,
 * postgresql-own-client.ts): on a pg Pool those connections are checked out of it; a pg Client
 * only lends its settings, and the connections are rollcall's own as with a URL.
 *
 * Groups (tooz has none on PostgreSQL): tables `<namespace>groups`, `<namespace>members`,
 * `<namespace>leaders` (postgresql-schema.ts), created at start if missing. Liveness is
 * `expires_at > now()` by the server's clock, pushed forward by each heartbeat; every change
 * NOTIFYs channel `<namespace>changes`, so watchers see joins and leaves at once. Expiry is not
 * pushed, so watched groups are still polled.
 *
 * Consistency and hazards (16-bit lock keys, per-database locks, connections, break()) are
 * declared in defineDriver below, from which docs/drivers.md is made.
 */
import { ConnectionError, DriverUnavailableError, InvalidOptionError, InvalidUrlError } from '../../../errors.js'
import { defineDriver, type DriverEvents } from '../../driver.js'
import type { Logger } from '../../logger.js'
import { opt } from '../../config/options.js'
import { sqlCommonOptions } from '../sql/sql-options.js'
import { formatHosts, type BackendUrl } from '../../config/url.js'
import { endPgClient, PgLock, pgLockStatements, pgOrphanOps, type PgClient, type PgLockHost, type PgLockStatements } from './postgresql-lock.js'
import { PgNotifier } from './postgresql-notify.js'
import type { SessionLock, SqlDialect, SqlFailure, SqlResult } from '../sql/sql-dialect.js'
import { SqlDriver, sqlIdProblem } from '../sql/sql-driver.js'
import { utf8Ids } from '../kit/ids.js'
import { withinStopGrace } from '../../../internal/deadline.js'
import { connectionsHazard, diesOnErrorOrEnd, LockSessions, onPooledSession, OrphanSessions, poolConnectMs, probeServer } from '../sql/sql-sessions.js'
import { prepareTables, sqlConnectionError, type SqlServerFailures } from '../sql/sql-server-failures.js'
import { namespaceProblem, sqlNames, type SqlNames, type SqlStatements, type StatementName } from '../sql/sql-schema.js'
import { postgresqlRefreshSql, postgresqlSchema, postgresqlStatements, postgresqlTablesExistSql } from './postgresql-schema.js'
import { isPgConnectionFailure, isPgTlsFailure } from '../../../internal/network-errors.js'
import { isPgClient, pgClientProblem, pgClientSettings, pgClientWhere } from './postgresql-own-client.js'

type Pg = (typeof import('pg'))['default']
type PgPool = InstanceType<Pg['Pool']>
type PoolClient = import('pg').PoolClient
type PgConfig = ConstructorParameters<Pg['Client']>[0] & object

/**
 * Connections of the shared pool, which runs every membership statement and the heartbeat (locks
 * and LISTEN have their own). One: statements queue on it, and a coordinator's footprint on the
 * server's max_connections stays one connection plus one per held or waiting lock.
 */
const POOL_SIZE = 1
/** The pool's connection closes after this long unused (longer when the heartbeat is slower). */
const POOL_IDLE_MS = 10_000
/** Server-side bounds an application may set on its sessions, turned off on a lock session. */
const UNBOUNDED_WAITS = [['lock_timeout', '0'], ['statement_timeout', '0']] as const
/** Keepalive probes the server sends a silent lock session's client, once its idle time has passed. */
const DEAD_PEER_PROBES = 4

/**
 * The settings of a lock session, applied in one statement when it opens (settings this server
 * does not have are skipped: tcp_user_timeout is PostgreSQL 12+).
 *
 * The server frees an advisory lock when the session ends, and ends a session when it sees the
 * connection close. A client that vanishes silently (its host cut off by a partition, or dead: no
 * FIN, no RST) is seen only by TCP, with the kernel's defaults: keepalive after two hours, and
 * about fifteen minutes of retransmissions for an answer never acknowledged (the grant of a wait
 * sent to a waiter cut off meanwhile). Its lock would stay taken that long, although its own
 * coordinator gave it up (lockLost) one membership_timeout after its last heartbeat. The lock
 * session therefore asks the server to probe a silent client after membership_timeout and give up
 * after DEAD_PEER_PROBES unanswered probes (membership_timeout / 4 apart), and to give up on an
 * answer unacknowledged for 2 × membership_timeout: the lock is free again about
 * 2 × membership_timeout after the client last spoke, a membership_timeout after its coordinator
 * let go (never before: a healthy but idle holder's kernel answers every probe, and so does a
 * paused one's).
 */
function lockSessionSettings(membershipTimeoutMs: number, applicationSettings: boolean): { text: string; values: string[] } {
  const idleS = Math.max(1, Math.ceil(membershipTimeoutMs / 1000))
  const settings: (readonly [string, string])[] = [
    ['tcp_keepalives_idle', String(idleS)],
    ['tcp_keepalives_interval', String(Math.max(1, Math.ceil(idleS / DEAD_PEER_PROBES)))],
    ['tcp_keepalives_count', String(DEAD_PEER_PROBES)],
    ['tcp_user_timeout', String(2 * membershipTimeoutMs)],
    ...(applicationSettings ? UNBOUNDED_WAITS : []),
  ]
  const rows = settings.map((_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(', ')
  return {
    text: `SELECT count(set_config(s.name, v.value, false)) AS n FROM (VALUES ${rows}) AS v(name, value) JOIN pg_settings s ON s.name = v.name`,
    values: settings.flat(),
  }
}

/** How a PostgreSQL or network error reads for the shared code. */
function pgFailure(err: unknown): SqlFailure | undefined {
  const code = (err as { code?: unknown } | undefined)?.code
  if (code === '23505') return 'duplicate'
  if (code === '23503') return 'foreignKey'
  if (isPgConnectionFailure(err)) return 'connection'
  return undefined
}

/**
 * Authentication failures (28xxx), a missing database (3D000) and TLS failures (an untrusted
 * certificate, a server without TLS): the connection cannot work with these settings.
 */
function isAccessError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code
  return (typeof code === 'string' && (code.startsWith('28') || code === '3D000')) || isPgTlsFailure(err)
}

/** How PostgreSQL's connection failures read, for the start error and translateError. */
const PG_FAILURES: SqlServerFailures = { product: 'PostgreSQL', isConnectionFailure: isPgConnectionFailure, isAccessError }

/** The dialect: pool, statements, lock sessions and the LISTEN connection. */
class PgDialect implements SqlDialect, PgLockHost {
  readonly lockSql: PgLockStatements
  readonly notifier: PgNotifier
  readonly sessions: LockSessions<PgClient>
  readonly #config: PgConfig
  readonly #where: string
  /** The request timeout: also how long a lock's release waits for its answer (PgLockHost). */
  readonly timeoutMs: number
  readonly orphans = new OrphanSessions(pgOrphanOps((text, values) => this.query(text, values)))
  readonly #poolIdleMs: number
  /** poolConnectMs(). */
  readonly #poolConnectMs: number
  /** lockSessionSettings(), once. */
  readonly #lockSessionSql: { text: string; values: string[] }
  /** How long a lock session may be silent before its client probes the server (probeServer()). */
  readonly #probeIdleMs: number
  readonly #names: SqlNames
  readonly #statements: SqlStatements
  readonly #clients = new Set<PgClient>()
  /** Statements under way on the pool. */
  readonly #pending = new Set<Promise<unknown>>()
  #lib: Pg | undefined
  #pool: PgPool | undefined
  /** The application's pool (connect(url, { client })): never ended here; lock and LISTEN sessions are checked out of it. */
  readonly #appPool: PgPool | undefined
  /** The sessions' settings are the application's (a pg Pool or Client), not made from a URL. */
  readonly #applicationSettings: boolean
  #closed = false

  constructor(
    config: PgConfig,
    where: string,
    timeoutMs: number,
    membershipTimeoutMs: number,
    names: SqlNames,
    log: Logger,
    own: { pool?: PgPool | undefined; applicationSettings: boolean },
  ) {
    this.#config = config
    this.#appPool = own.pool
    this.#applicationSettings = own.applicationSettings
    this.#where = where
    this.timeoutMs = timeoutMs
    // A heartbeat comes every half membership timeout: it keeps the one connection rather than reopening it.
    this.#poolIdleMs = Math.max(POOL_IDLE_MS, membershipTimeoutMs)
    this.#poolConnectMs = poolConnectMs(timeoutMs, membershipTimeoutMs)
    this.#lockSessionSql = lockSessionSettings(membershipTimeoutMs, own.applicationSettings)
    this.#probeIdleMs = membershipTimeoutMs
    this.#names = names
    this.#statements = postgresqlStatements(names)
    this.lockSql = pgLockStatements(names.fence)
    this.notifier = new PgNotifier(() => this.connect(), names.channel, log)
    this.sessions = new LockSessions<PgClient>({
      open: () => this.#lockSession(),
      end: (client) => endPgClient(client),
      onDeath: diesOnErrorOrEnd('PostgreSQL'),
    })
  }

  async open(): Promise<void> {
    if (this.#appPool) {
      this.#pool = this.#appPool
      await this.#prepareTables(this.#appPool)
      return
    }
    try {
      this.#lib = (await import('pg')).default
    } catch (err) {
      throw new DriverUnavailableError('postgresql', 'pg', { cause: err })
    }
    // The pool's own connectionTimeoutMillis also bounds a wait for its session: its sessions get a shorter one of their own.
    const config = { ...this.#config, connectionTimeoutMillis: this.#poolConnectMs }
    const Client = class extends this.#lib.Client {
      constructor() {
        super(config)
      }
    }
    const pool = new this.#lib.Pool({ ...this.#config, Client, max: POOL_SIZE, idleTimeoutMillis: this.#poolIdleMs, allowExitOnIdle: true })
    // An idle pooled connection failed: the next query opens a new one (and reports the outage).
    pool.on('error', () => undefined)
    this.#pool = pool
    await this.#prepareTables(pool)
  }

  async close(): Promise<void> {
    this.#closed = true
    await this.notifier.close()
    await this.sessions.close()
    await Promise.all([...this.#clients].map((c) => endPgClient(c)))
    // Statements still under way on the pool (the pg_cancel_backend of a wait abandoned just
    // before stop()) end before stop() does: the application's pool keeps none of rollcall's.
    await withinStopGrace(Promise.allSettled(this.#pending))
    // The application's pool stays open: it is the application's to end.
    if (this.#pool !== this.#appPool) await withinStopGrace(this.#pool?.end() ?? Promise.resolve())
  }

  async run(statement: StatementName, params: readonly unknown[]): Promise<SqlResult> {
    const r = await this.#onPool(this.#statements[statement], [...params])
    return { rows: r.rows as Record<string, unknown>[], affected: r.rowCount ?? r.rows.length }
  }

  async refreshMembers(member: string, groups: readonly string[], ttlMs: number): Promise<string[]> {
    const r = await this.#onPool(postgresqlRefreshSql(this.#names), [member, [...groups], ttlMs])
    return r.rows.map((row) => (row as { group_id: string }).group_id)
  }

  classify(err: unknown): SqlFailure | undefined {
    return pgFailure(err)
  }

  /** Ends the lock sessions given up during a cut that the server still keeps with a lock (OrphanSessions). */
  afterBeat(): Promise<void> {
    return this.orphans.sweep()
  }

  sessionLock(name: string, onLost: (reason: string) => void): SessionLock {
    return new PgLock(this, name, onLost)
  }

  /**
   * A lock session, with lockSessionSettings(): the server lets go of a vanished client's locks a
   * membership_timeout after its coordinator did. Its client probes the server after a
   * membership_timeout of silence (probeServer()), so that a wait whose session the server ended
   * during a cut fails instead of lasting for ever. On the application's settings (a pg Pool's, or
   * the `options` of a pg Client) the session may carry lock_timeout or statement_timeout, which
   * would end a blocking lock wait before its own timeout: they are turned off on it. The session
   * is rollcall's alone: one checked out of a pool is closed at its end, never lent out again.
   */
  async #lockSession(): Promise<PgClient> {
    const session = await this.connect()
    probeServer(session, this.#probeIdleMs)
    try {
      await session.query(this.#lockSessionSql.text, this.#lockSessionSql.values)
    } catch (err) {
      await endPgClient(session)
      throw err
    }
    return session
  }

  /** A dedicated client (a lock session, or LISTEN), ended by close() if still open then. */
  async connect(): Promise<PgClient> {
    if (this.#appPool && !this.#closed) return this.#checkOut(this.#appPool)
    if (!this.#lib || this.#closed) throw new ConnectionError('The PostgreSQL driver is not started')
    const client = new this.#lib.Client(this.#config)
    const session = client as unknown as PgClient
    // Errors are reported through the queries that fail; an idle client must not crash the process.
    client.on('error', () => undefined)
    this.#clients.add(session)
    client.on('end', () => this.#clients.delete(session))
    try {
      await client.connect()
    } catch (err) {
      this.#clients.delete(session)
      throw err
    }
    return session
  }

  /**
   * A session checked out of the application's pool and held: advisory locks and LISTEN belong to
   * a session. Its end gives it back with release(true), so that the pool closes it rather than
   * lending out a session that may still hold a lock or listen.
   */
  async #checkOut(pool: PgPool): Promise<PgClient> {
    const lent = await pool.connect()
    if (this.#closed) {
      // stop() came while the pool was connecting: nothing may stay checked out after it.
      lent.release(true)
      throw new ConnectionError('The PostgreSQL driver is not started')
    }
    const onError = (): void => undefined
    // Errors are reported through the queries that fail; an idle session must not crash the process.
    lent.on('error', onError)
    let released = false
    const session: PgClient = {
      query: (text, values) => lent.query(text, values) as never,
      end: async () => {
        if (released) return
        released = true
        this.#clients.delete(session)
        lent.release(true)
      },
      on: ((event: string, listener: (...args: any[]) => void) => lent.on(event as 'error', listener)) as PgClient['on'],
      get processID() {
        return (lent as unknown as { processID: number | null }).processID
      },
      // Its socket, for probeServer() and endPgClient() (sessionSocket()).
      get connection() {
        return (lent as unknown as { connection: unknown }).connection
      },
    }
    this.#clients.add(session)
    return session
  }

  async query(text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[] }> {
    return this.#onPool(text, values)
  }

  /** Runs a statement on the pool, known to close() until it has ended. */
  async #onPool(text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }> {
    if (!this.#pool || this.#closed) throw new ConnectionError('The PostgreSQL driver is not started')
    const pending = this.#pooled(this.#pool, text, values)
    this.#pending.add(pending)
    try {
      return await pending
    } finally {
      this.#pending.delete(pending)
    }
  }

  /** A statement on a session of `pool`, which is dropped if the statement goes unanswered within the timeout (onPooledSession()). */
  #pooled(pool: PgPool, text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }> {
    // A checked-out client's failure is the query's to report (the pool listens only while it is idle).
    const ignore = (): void => {}
    return onPooledSession<PoolClient, { rows: Record<string, unknown>[]; rowCount: number | null }>(
      (handOver) => void pool.connect(handOver),
      (client) => {
        client.on('error', ignore)
        return client.query(text, values)
      },
      (client, unanswered) => {
        // Released with an error, the pool closes the session instead of lending it out again (it may still fail meanwhile).
        if (unanswered) client.release(new Error('a statement went unanswered within the timeout'))
        else {
          client.removeListener('error', ignore)
          client.release()
        }
      },
      this.timeoutMs,
    )
  }

  /** Creates the tables unless they exist, under a transaction-scoped advisory lock (race-safe). */
  async #createTables(pool: PgPool): Promise<void> {
    const exist = await pool.query(postgresqlTablesExistSql(this.#names))
    if (exist.rows[0]?.ok === true) return
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      // The one-bigint form (objsubid 1) cannot collide with tooz's two-int4 lock keys (objsubid 2).
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.#names.groups}:schema`])
      for (const ddl of postgresqlSchema(this.#names)) await client.query(ddl)
      await client.query('COMMIT')
      client.release()
    } catch (err) {
      client.release(err as Error)
      throw err
    }
  }

  #prepareTables(pool: PgPool): Promise<void> {
    return prepareTables(() => this.#createTables(pool), PG_FAILURES, this.#where, this.timeoutMs)
  }
}

/** The SQL driver plus LISTEN/NOTIFY watches. */
class PgDriver extends SqlDriver {
  readonly #pg: PgDialect

  constructor(dialect: PgDialect, memberId: string, membershipTimeoutMs: number, events: DriverEvents) {
    super(dialect, { memberId, membershipTimeoutMs, events })
    this.#pg = dialect
  }

  /** Pushes joins, leaves, updates and deletions of `group`; expiry is found by polling. */
  watchGroup(group: string, onChange: () => void): Promise<() => Promise<void>> {
    return this.#pg.notifier.subscribe(group, onChange)
  }
}

/** node-postgres settings from the URL and tooz's host/port/dbname overrides. */
function clientConfig(
  url: BackendUrl,
  o: { host?: string; port?: number; dbname?: string; timeoutMs: number },
): { config: PgConfig; where: string; pool?: PgPool } {
  if (url.hosts.length > 1) throw new InvalidUrlError(`${url.redacted} names several hosts; the postgresql driver connects to one`)
  const host = o.host || url.hosts[0]?.host || undefined
  const port = o.port ?? url.hosts[0]?.port ?? 5432
  const database = o.dbname || url.path.replace(/^\/+/, '') || undefined
  const config: PgConfig = {
    host,
    port,
    database,
    user: url.username,
    password: url.password,
    connectionTimeoutMillis: o.timeoutMs,
    keepAlive: true,
    application_name: 'rollcall',
  }
  return { config, where: pgWhere(host, port, database) }
}

/** Where the sessions go, for messages: host and port (or socket) and database, never credentials. */
function pgWhere(host: string | undefined, port: number, database: string | undefined): string {
  const at = host?.startsWith('/') ? `socket ${host}/.s.PGSQL.${port}` : formatHosts([{ host: host ?? 'localhost', port }])
  return `${at} (database ${database ?? '(the user name)'})`
}

/**
 * The settings of the sessions for `client`: none for a pg Pool (sessions come from it), those of
 * a pg Client for the sessions rollcall opens itself (postgresql-own-client.ts).
 */
function ownClientConfig(client: unknown, timeoutMs: number): { config: PgConfig; where: string; pool?: PgPool } {
  if (!isPgClient(client)) return { config: {} as PgConfig, where: "the application's pg Pool", pool: client as PgPool }
  const { host, port, database } = pgClientWhere(client)
  return { config: pgClientSettings(client, timeoutMs), where: `${pgWhere(host, port, database)}, as the application's pg Client connects` }
}

export default defineDriver({
  name: 'postgresql',
  summary:
    'PostgreSQL: tooz-compatible advisory locks, plus groups, membership with expiry, leader election and pushed join/leave notifications on small tables.',
  urlForms: [
    'postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME',
    'postgresql://USER@/DBNAME?host=/var/run/postgresql',
    'postgresql://USER@HOST/DBNAME?membership_timeout=10&namespace=myapp_',
  ],
  consistency:
    'Statements are atomic on the server. Members live while expires_at > now() by the server clock (membership_timeout after their last heartbeat); '
    + 'joins, leaves and updates are NOTIFYed at once, expiry is found by polling. A lock lasts exactly as long as its session.',
  hazards: [
    "Lock keys are tooz's 16 bits of md5(name): only 65,536 distinct locks, so unrelated names (leader locks included) can falsely contend.",
    'Advisory locks are per database: Python tooz and rollcall must connect to the same database to exclude each other.',
    connectionsHazard(', plus 1 (LISTEN) while a group is watched'),
    'break() terminates the holding backend (PostgreSQL 14 or later), which needs the right to signal it.',
    'A holder (or a waiter granted the lock) cut off from the server keeps the lock there until the server sees its session end: the lock is '
    + 'unavailable meanwhile, never held twice (its coordinator reports lockLost one membership_timeout after its last heartbeat). Lock sessions ask '
    + 'the server to probe a silent client (tcp_keepalives_*, tcp_user_timeout), so a client that never comes back frees its locks about '
    + '2 × membership_timeout after it last spoke, instead of after the kernel defaults (over two hours); over a Unix socket the server cannot probe. '
    + 'Lock sessions also probe the server after a membership_timeout of silence (TCP keepalive): a waiter whose connection the server dropped '
    + 'during a cut learns it within about a second of the heal and waits again, instead of waiting for ever on a dead connection.',
    'A lock session given up with a statement unanswered (a release past the timeout, an attempt that failed, its session silent as after a cut) is '
    + "closed, but the server would learn it only when the close gets there, and its probes are answered by the client's kernel once the cut heals; "
    + "so after the next heartbeat the server answers, the coordinator ends that session with pg_terminate_backend (the role's own right) if it "
    + 'still holds the lock (a PostgreSQL partition run: a release sent 0.8 s into a 7.1 s cut, and nobody was granted the lock in the 7.7 s after '
    + 'the heal). Such a release rejects with ConnectionError.',
  ],
  clientPackage: 'pg',
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberInfo',
    'memberExpiry',
    'expiryWake',
    'leaderElection',
    'getLeader',
    'locks',
    'sharedLocks',
    'lockWaitQueue',
    'fencing',
    'acrossProcesses',
    'acrossHosts',
  ],
  options: {
    ...sqlCommonOptions('PostgreSQL', 'table, sequence and NOTIFY channel'),
    host: opt.string('host', { doc: 'tooz: overrides the URL host; a path names a Unix socket directory.' }),
    port: opt.integer('port', { min: 1, max: 65535, doc: 'tooz: overrides the URL port (default 5432).' }),
    dbname: opt.string('dbname', { doc: 'tooz: overrides the database named in the URL path.' }),
  },
  validateId: utf8Ids(sqlIdProblem),
  translateError: (err) => sqlConnectionError(err, PG_FAILURES),
  client: {
    expects: 'a pg Pool or Client',
    doc: 'A pg Pool: rollcall runs membership statements and heartbeats one at a time on a session checked out of the pool (pool.connect()), '
      + 'given back at once, or with an error (the pool closes it) when the statement went unanswered within the timeout; it also checks a session '
      + 'out of the pool for each held or waiting lock and for LISTEN while a group is watched, holding it as long as PostgreSQL ties the lock '
      + 'to it (advisory locks are per session); it gives each back with release(true), so that the pool closes it rather than lend out a '
      + 'session that may hold a lock. Size max for it: 1 + held or waiting locks + 1 while watching, and a cancelled wait needs one more for '
      + "pg_cancel_backend. Lock sessions get lock_timeout and statement_timeout 0 (they would cut a blocking wait short); the pool's "
      + 'query_timeout, enforced by pg itself, bounds a lock wait too: leave it unset. rollcall never ends the pool. A pg Client (one connection, connected or not): rollcall sends nothing on it; it opens '
      + "sessions of its own with the client's settings (host, port, user, database, password or password function, ssl, options, "
      + 'application_name, keepAlive, connectionTimeoutMillis), as many as from a URL, and closes them at stop(); it never connects or ends the '
      + 'client. A password function survives only until the Client connects (pg then keeps the resolved password), and a custom stream '
      + 'cannot be reproduced: for either, pass a Pool. An ended Client is refused.',
    check: pgClientProblem,
    connectionOptions: ['host', 'port', 'dbname'],
  },
  create({ url, options, memberId, events, log, client }) {
    const problem = namespaceProblem(options.namespace)
    if (problem) throw new InvalidOptionError(`Option namespace "${options.namespace}" for the postgresql driver is not usable: ${problem}`)
    const { config, where, pool } = client === undefined ? clientConfig(url, options) : ownClientConfig(client, options.timeoutMs)
    const dialect = new PgDialect(config, where, options.timeoutMs, options.membershipTimeoutMs, sqlNames(options.namespace), log, {
      pool,
      applicationSettings: client !== undefined,
    })
    return new PgDriver(dialect, memberId, options.membershipTimeoutMs, events)
  },
})
