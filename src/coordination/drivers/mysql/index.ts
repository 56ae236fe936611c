/**
 * mysql:// — MySQL or MariaDB: locks exactly as tooz's mysql driver takes them, plus groups,
 * membership with expiry and leader election on a few small tables.
 *
 * URL: `mysql://USER[:PASSWORD]@HOST[:PORT]/DBNAME[?options]`, options `unix_socket`, `ssl_ca`,
 * `ssl_capath`, `ssl_cert`, `ssl_key`, `ssl_cipher`, `ssl_verify_mode`, `ssl_check_hostname`,
 * `timeout`, `membership_timeout` and `namespace`
 * (tooz's form and options; port 3306 by default). Unlike tooz's lock-only driver, rollcall needs
 * the database in the path: its tables live there.
 *
 * Locks: `GET_LOCK(name, timeout)` / `RELEASE_LOCK(name)`, the name unprefixed, each held on a
 * session of its own (mysql-lock.ts), so a Python tooz process and this driver exclude each
 * other on the same name on the same server (GET_LOCK names are server-wide, whatever the
 * database). Fencing tokens come from a counter row bumped with LAST_INSERT_ID(expr), in the
 * same round trip as GET_LOCK. A released session is kept a few seconds for the next acquire
 * (sql-sessions.ts LockSessions), as tooz keeps one per Lock object.
 *
 * Connections per coordinator: one for membership and heartbeats (the pool), plus one per held
 * or waiting lock (and up to two unused ones, closed after 10 s).
 *
 * Groups (tooz has none on MySQL): tables `<namespace>groups`, `<namespace>members`,
 * `<namespace>leaders`, `<namespace>fence` (mysql-schema.ts), created at start if missing. Liveness
 * is `expires_at > UTC_TIMESTAMP(6)` by the server's clock, pushed forward by each heartbeat.
 * MySQL has no change notifications: watchers poll.
 *
 * Consistency and hazards (name limits, case, waiters' order, connections, break()) are declared
 * in defineDriver below, from which docs/drivers.md is made.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { ConnectionError, DriverUnavailableError, InvalidOptionError, InvalidUrlError } from '../../../errors.js'
import { defineDriver } from '../../driver.js'
import type { MysqlOptions } from '../../config/driver-options.js'
import { opt } from '../../config/options.js'
import { sqlCommonOptions } from '../sql/sql-options.js'
import { formatHosts } from '../../config/url.js'
import { MYSQL_LOCK_SQL_UNFENCED, MysqlLock, mysqlLockSql, mysqlOrphanOps, type MysqlConnection, type MysqlLockHost } from './mysql-lock.js'
import type { SessionLock, SqlDialect, SqlFailure, SqlResult } from '../sql/sql-dialect.js'
import { SqlDriver, sqlIdProblem } from '../sql/sql-driver.js'
import { utf8Ids } from '../kit/ids.js'
import { withDeadline, withinStopGrace } from '../../../internal/deadline.js'
import { connectionsHazard, diesOnErrorOrEnd, LockSessions, onPooledSession, OrphanSessions, poolConnectMs, probeServer } from '../sql/sql-sessions.js'
import { prepareTables, sqlConnectionError, type SqlServerFailures } from '../sql/sql-server-failures.js'
import { namespaceProblem, sqlNames, toPositional, type SqlNames, type StatementName } from '../sql/sql-schema.js'
import { mysqlRefreshSql, mysqlSchema, mysqlStatements, mysqlTablesExistSql } from './mysql-schema.js'
import { isMysqlConnectionFailure } from '../../../internal/network-errors.js'
import { MAX_TLS_FILE_BYTES, readTlsFile } from '../kit/tls-files.js'
import { FileRefused, readRegularFile } from '../../../internal/regular-file.js'
import { shorten } from '../../../internal/shown-text.js'
import { kindOf } from '../kit/client-kind.js'

type Mysql = typeof import('mysql2/promise')
type MysqlPool = ReturnType<Mysql['createPool']>
type CorePoolConnection = import('mysql2').PoolConnection
type QueryValues = import('mysql2').QueryValues
type MysqlConfig = Parameters<Mysql['createConnection']>[0] & object
type SslConfig = Exclude<MysqlConfig['ssl'], string | undefined>

/** MySQL's limit on GET_LOCK names, in characters. */
export const MAX_LOCK_NAME_CHARS = 64
/**
 * Connections of the shared pool, which runs every membership statement and the heartbeat (each
 * lock has its own session). One: statements queue on it, and a coordinator's footprint on the
 * server's max_connections stays one connection plus one per held or waiting lock. mysql2 closes
 * idle pool connections only beyond maxIdle, so this one stays open while the coordinator runs.
 */
const POOL_SIZE = 1
const ACCESS_CODES = new Set(['ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_BAD_DB_ERROR', 'ER_NOT_SUPPORTED_AUTH_MODE'])

/** How a MySQL or network error reads for the shared code. */
function mysqlFailure(err: unknown): SqlFailure | undefined {
  const e = err as { errno?: unknown } | undefined
  if (e?.errno === 1062) return 'duplicate'
  if (e?.errno === 1451 || e?.errno === 1452 || e?.errno === 1216 || e?.errno === 1217) return 'foreignKey'
  if (isMysqlConnectionFailure(err)) return 'connection'
  return undefined
}

function isAccessError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code
  return typeof code === 'string' && ACCESS_CODES.has(code)
}

/** How MySQL's connection failures read, for the start error and translateError. */
const MYSQL_FAILURES: SqlServerFailures = { product: 'MySQL', isConnectionFailure: isMysqlConnectionFailure, isAccessError }

/** A binary parameter as mysql2 escapes it (Buffer); everything else unchanged. */
function param(v: unknown): unknown {
  return v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v
}

/** tooz's TLS options (as the driver declares them), read from their files at start (pymysql's rules for the defaults). */
export type MysqlTlsOptions = Pick<MysqlOptions, 'sslCa' | 'sslCapath' | 'sslCert' | 'sslKey' | 'sslCipher' | 'sslVerifyMode' | 'sslCheckHostname'>

/** pymysql's spellings of ssl_verify_mode; `optional` verifies nothing more than `none` does in Node. */
const VERIFY_MODES: Record<string, boolean> = {
  none: false,
  '0': false,
  false: false,
  no: false,
  optional: false,
  required: true,
  '1': true,
  true: true,
  yes: true,
}

/** mysql2's `ssl` settings for tooz's ssl_* options; undefined (no TLS) when none is set. @internal */
export async function tlsConfig(o: MysqlTlsOptions): Promise<SslConfig | undefined> {
  if (Object.values(o).every((v) => v === undefined || v === '')) return undefined
  const ca: string[] = []
  if (o.sslCa) ca.push(readTlsFile('mysql', 'ssl_ca', o.sslCa)!.toString('utf8'))
  if (o.sslCapath) {
    const names = await readdir(o.sslCapath).catch((err: Error) => {
      throw new InvalidOptionError(
        `Option ssl_capath of the mysql driver names "${shorten(o.sslCapath!)}", which cannot be listed: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
      )
    })
    for (const name of names.sort()) {
      // As pymysql's capath: what is not a readable PEM file (a FIFO, a device, a huge file) is skipped.
      const text = readOrEmpty(join(o.sslCapath, name))
      if (text.includes('-----BEGIN CERTIFICATE-----')) ca.push(text)
    }
  }
  // pymysql: with a CA, verify the certificate and the host name unless told otherwise; without, neither.
  const verify = o.sslVerifyMode ? VERIFY_MODES[o.sslVerifyMode.toLowerCase()] ?? false : ca.length > 0
  return {
    ...(ca.length ? { ca } : {}),
    ...(o.sslCert ? { cert: readTlsFile('mysql', 'ssl_cert', o.sslCert)!.toString('utf8') } : {}),
    ...(o.sslKey ? { key: readTlsFile('mysql', 'ssl_key', o.sslKey)!.toString('utf8') } : {}),
    ...(o.sslCipher ? { ciphers: o.sslCipher } : {}),
    rejectUnauthorized: verify,
    verifyIdentity: ca.length > 0 && (o.sslCheckHostname ?? true),
  }
}

/** The text of a file of ssl_capath, or '' when it is not a regular file of at most MAX_TLS_FILE_BYTES or cannot be read. */
function readOrEmpty(path: string): string {
  try {
    return readRegularFile(path, MAX_TLS_FILE_BYTES).toString('utf8')
  } catch (err) {
    if (err instanceof FileRefused) return ''
    throw err
  }
}

type QueryOptions = Exclude<Parameters<MysqlPool['query']>[0], string>

/**
 * A statement on the application's pool, with the read settings rollcall's own pool has, which
 * mysql2 takes per query: BIGINT as strings (fencing tokens, lock session ids), no named
 * placeholders, rows as objects, and DATETIME read as UTC whatever the pool's timezone,
 * dateStrings or typeCast (a typeCast given per query replaces the pool's).
 */
function appPoolQuery(sql: string): QueryOptions {
  return {
    sql,
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z',
    namedPlaceholders: false,
    rowsAsArray: false,
    typeCast: (field, next) => {
      if (field.type !== 'DATETIME') return next()
      const text = field.string()
      return text === null ? null : new Date(`${text.replace(' ', 'T')}Z`)
    },
  }
}

/** mysql2's CLIENT_MULTI_STATEMENTS flag. */
const MULTI_STATEMENTS_FLAG = 0x10000

/** Why `value` cannot serve as the mysql driver's client, or undefined when it can. */
function mysqlClientProblem(value: unknown): string | undefined {
  const fix = "pass createPool({ ..., multipleStatements: true }) of 'mysql2/promise'"
  if (value === null || typeof value !== 'object') return `got ${value === null ? 'null' : typeof value}; ${fix}`
  const c = value as Record<string, any>
  if (typeof c.getConnection === 'function' && typeof c.promise === 'function' && typeof c.config?.connectionConfig === 'object') {
    return "got a callback pool of 'mysql2'; pass its pool.promise() (or a pool of 'mysql2/promise')"
  }
  if (typeof c.getConnection !== 'function' && typeof (c.connection ?? c).config === 'object' && typeof c.query === 'function') {
    return `got a mysql2 connection (one connection); ${fix}: rollcall holds a connection of its own for each held or waiting lock (GET_LOCK `
      + 'locks are per session), which it checks out of the pool'
  }
  const config = c.pool?.config
  if (typeof c.getConnection !== 'function' || typeof c.query !== 'function' || typeof config?.connectionConfig !== 'object') {
    return `got ${kindOf(value)}; ${fix}`
  }
  if (c.pool._closed === true) return 'it is ended (pool.end() was called); pass an open pool'
  const conn = config.connectionConfig as { clientFlags?: unknown; multipleStatements?: unknown; database?: unknown }
  const multiple = typeof conn.clientFlags === 'number' ? (conn.clientFlags & MULTI_STATEMENTS_FLAG) !== 0 : conn.multipleStatements === true
  if (!multiple) {
    return 'its connections do not allow multiple statements, which rollcall sends in one round trip (a join, a lock acquire with its fencing '
      + 'token): create the pool with multipleStatements: true (every value rollcall sends is still a bound parameter)'
  }
  if (typeof conn.database !== 'string' || conn.database === '') {
    return 'it names no database, and rollcall keeps its tables in one: create the pool with database: "..."'
  }
  if (config.connectionLimit === 1) {
    return 'its connectionLimit is 1, but a held lock keeps a connection of its own: allow at least 1 + the locks held or waited for at once'
  }
  return undefined
}

/** A statement rewritten for mysql2: positional text, parameter order, and whether it is several statements. */
interface Prepared {
  readonly text: string
  readonly order: number[]
  readonly multiple: boolean
}

/** The dialect: pool, statements and lock sessions. */
class MysqlDialect implements SqlDialect, MysqlLockHost {
  readonly lockSql: string
  readonly fencing: boolean
  readonly sessions: LockSessions<MysqlConnection>
  readonly orphans = new OrphanSessions(mysqlOrphanOps((sql, values) => this.query(sql, values)))
  readonly #config: MysqlConfig
  readonly #tls: MysqlTlsOptions
  readonly #where: string
  /** The request timeout: also how long a lock's release waits for its answer (MysqlLockHost). */
  readonly timeoutMs: number
  /** How long a lock session may be silent before its client probes the server (probeServer()): membership_timeout. */
  readonly #probeIdleMs: number
  /** poolConnectMs(). */
  readonly #poolConnectMs: number
  readonly #names: SqlNames
  readonly #statements: Record<StatementName, Prepared>
  #lib: Mysql | undefined
  #pool: MysqlPool | undefined
  /** The application's pool (connect(url, { client })): never ended here; lock sessions are checked out of it and destroyed. */
  readonly #appPool: MysqlPool | undefined
  #closed = false

  constructor(
    config: MysqlConfig,
    tls: MysqlTlsOptions,
    where: string,
    timeouts: { timeoutMs: number; membershipTimeoutMs: number },
    names: SqlNames,
    fencing: boolean,
    appPool?: MysqlPool,
  ) {
    this.#config = config
    this.#appPool = appPool
    this.#tls = tls
    this.#where = where
    this.timeoutMs = timeouts.timeoutMs
    this.#poolConnectMs = poolConnectMs(timeouts.timeoutMs, timeouts.membershipTimeoutMs)
    this.#probeIdleMs = timeouts.membershipTimeoutMs
    this.#names = names
    const statements = mysqlStatements(names)
    this.#statements = Object.fromEntries(Object.entries(statements).map(([k, sql]) => [k, { ...toPositional(sql), multiple: sql.includes(';') }])) as Record<
      StatementName,
      Prepared
    >
    this.fencing = fencing
    this.lockSql = fencing ? mysqlLockSql(names.fence) : MYSQL_LOCK_SQL_UNFENCED
    this.sessions = new LockSessions<MysqlConnection>({
      open: () => this.#connect(),
      end: (conn) => this.#endSession(conn),
      onDeath: diesOnErrorOrEnd('MySQL'),
    })
  }

  async open(): Promise<void> {
    if (this.#appPool) {
      this.#pool = this.#appPool
      await this.#prepareTables()
      return
    }
    try {
      this.#lib = await import('mysql2/promise')
    } catch (err) {
      throw new DriverUnavailableError('mysql', 'mysql2', { cause: err })
    }
    const ssl = await tlsConfig(this.#tls)
    if (ssl) this.#config.ssl = ssl
    this.#pool = this.#lib.createPool({ ...this.#config, connectTimeout: this.#poolConnectMs, connectionLimit: POOL_SIZE, maxIdle: POOL_SIZE })
    await this.#prepareTables()
  }

  async close(): Promise<void> {
    this.#closed = true
    await this.sessions.close()
    // The application's pool stays open: it is the application's to end.
    if (this.#pool !== this.#appPool) await withinStopGrace(this.#pool?.end() ?? Promise.resolve())
  }

  async run(statement: StatementName, params: readonly unknown[]): Promise<SqlResult> {
    const { text, order, multiple } = this.#statements[statement]
    const [answer] = await this.#pooled(this.#sql(text), order.map((i) => param(params[i])))
    // Several statements answer one result each: the last one is the statement's outcome.
    const result: unknown = multiple ? (answer as unknown[]).at(-1) : answer
    if (Array.isArray(result)) return { rows: result as Record<string, unknown>[], affected: result.length }
    return { rows: [], affected: (result as { affectedRows: number }).affectedRows }
  }

  async refreshMembers(member: string, groups: readonly string[], ttlMs: number): Promise<string[]> {
    const sql = mysqlRefreshSql(this.#names)
    const [header] = await this.#pooled(this.#sql(sql.update), [ttlMs, member, [...groups]])
    if ((header as { affectedRows: number }).affectedRows === groups.length) return [...groups]
    const [rows] = await this.#pooled(this.#sql(sql.live), [member, [...groups]])
    return (rows as { group_id: Buffer }[]).map((r) => r.group_id.toString('utf8'))
  }

  classify(err: unknown): SqlFailure | undefined {
    return mysqlFailure(err)
  }

  /** Ends the lock sessions given up during a cut that the server still keeps with a lock (OrphanSessions). */
  afterBeat(): Promise<void> {
    return this.orphans.sweep()
  }

  sessionLock(name: string, onLost: (reason: string) => void): SessionLock {
    return new MysqlLock(this, name, onLost)
  }

  /**
   * A new lock session; closed by close() (through LockSessions) if still open then. Its client
   * probes the server after a membership_timeout of silence (probeServer()): a GET_LOCK round whose
   * answer the server gave up retransmitting during a long cut fails instead of lasting for ever.
   */
  async #connect(): Promise<MysqlConnection> {
    if (this.#appPool && !this.#closed) return this.#checkOut(this.#appPool)
    if (!this.#lib || this.#closed) throw new ConnectionError('The mysql driver is not started')
    const conn = (await this.#lib.createConnection(this.#config)) as unknown as MysqlConnection
    // Errors are reported through the queries that fail; an idle connection must not crash the process.
    conn.on('error', () => undefined)
    if (this.#closed) {
      conn.destroy()
      throw new ConnectionError('The mysql driver stopped while a lock session was opening')
    }
    probeServer(conn, this.#probeIdleMs)
    return conn
  }

  /**
   * A lock session checked out of the application's pool, held while it holds or waits for a
   * lock. Its end destroys it (the pool forgets it): released, the pool would lend out a session
   * that may still hold a GET_LOCK lock. Its statements carry rollcall's read settings.
   */
  async #checkOut(pool: MysqlPool): Promise<MysqlConnection> {
    const lent = await pool.getConnection()
    // Errors are reported through the queries that fail; an idle session must not crash the process.
    lent.on('error', () => undefined)
    if (this.#closed) {
      lent.destroy()
      throw new ConnectionError('The mysql driver stopped while a lock session was opening')
    }
    const session: MysqlConnection = {
      query: (sql, values) => lent.query(appPoolQuery(sql), values as never) as never,
      end: async () => lent.destroy(),
      destroy: () => lent.destroy(),
      on: ((event: string, listener: (...args: any[]) => void) => lent.on(event as 'error', listener)) as MysqlConnection['on'],
      get threadId() {
        return lent.threadId
      },
    }
    probeServer(lent, this.#probeIdleMs)
    return session
  }

  /** A statement as sent: on the application's pool, with rollcall's read settings attached (appPoolQuery). */
  #sql(text: string): QueryOptions {
    return this.#appPool ? appPoolQuery(text) : { sql: text }
  }

  async query(sql: string, values: unknown[]): Promise<Record<string, unknown>[]> {
    const [rows] = await this.#pooled(this.#sql(sql), values)
    return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
  }

  async #endSession(conn: MysqlConnection): Promise<void> {
    const ended = await withDeadline(conn.end().then(() => true, () => false), 1_000).catch(() => false)
    if (!ended) conn.destroy()
  }

  /** `sql` on a session of the shared pool, which is dropped if it goes unanswered within the timeout (onPooledSession()): [rows or header, fields]. */
  #pooled(sql: QueryOptions, values: QueryValues): Promise<[unknown, unknown]> {
    // The core pool under the promise one: its callback form writes the statement where the pool's own query() does.
    const core = this.#requirePool().pool
    return onPooledSession<CorePoolConnection, [unknown, unknown]>(
      (handOver) => core.getConnection(handOver),
      (conn) => new Promise((resolve, reject) => conn.query(sql, values, (err, result, fields) => err ? reject(err) : resolve([result, fields]))),
      (conn, unanswered) => unanswered ? conn.destroy() : conn.release(),
      this.timeoutMs,
    )
  }

  #requirePool(): MysqlPool {
    if (!this.#pool || this.#closed) throw new ConnectionError('The mysql driver is not started')
    return this.#pool
  }

  /** CREATE TABLE IF NOT EXISTS is atomic in InnoDB (metadata locks), so racing starts are safe. */
  async #createTables(): Promise<void> {
    const [rows] = await this.#requirePool().query(this.#sql(mysqlTablesExistSql(this.#names)))
    if (Number((rows as { ok: unknown }[])[0]?.ok) === 1) return
    for (const ddl of mysqlSchema(this.#names)) await this.#requirePool().query(this.#sql(ddl))
  }

  #prepareTables(): Promise<void> {
    return prepareTables(() => this.#createTables(), MYSQL_FAILURES, this.#where, this.timeoutMs)
  }
}

export default defineDriver({
  name: 'mysql',
  summary: 'MySQL or MariaDB: tooz-compatible GET_LOCK locks, plus groups, membership with expiry and leader election on small tables.',
  urlForms: [
    'mysql://USER:PASSWORD@HOST[:PORT]/DBNAME',
    'mysql://USER@localhost/DBNAME?unix_socket=/run/mysqld/mysqld.sock',
    'mysql://USER@HOST/DBNAME?ssl_ca=/etc/ssl/ca.pem',
  ],
  consistency:
    'Statements are atomic on the server (InnoDB). Members live while expires_at > UTC_TIMESTAMP(6) by the server clock (membership_timeout after their '
    + 'last heartbeat); watchers poll. A lock lasts exactly as long as its session.',
  hazards: [
    'Lock names are at most 64 characters, so group ids (whose leader lock is leader_of_<group>) at most 54.',
    'Lock names may compare case-insensitively (MySQL 5.7+; MariaDB 10.11 compared them exactly here): do not rely on names differing only in case.',
    'Contended rollcall acquires wait in turns: they queue in the server on a second GET_LOCK name, `rollcall.turn.<sha1 hex of the lock name>`, '
    + 'and only its holder waits for the lock itself; that holder may re-take the lock for up to 32 acquisitions in 100 ms while the others wait, '
    + 'then the next in line gets it. Waits re-enter GET_LOCK every half second, so a waiter whose round ends goes to the back of the line. Python '
    + 'tooz processes ignore the turn lock and may take a free lock ahead of rollcall waiters (they never overlap a holder).',
    connectionsHazard(),
    'break() KILLs the holding connection, which needs the right to.',
    'A holder (or a waiter granted the lock) cut off from the server keeps its GET_LOCK there until the server sees its connection end: the lock is '
    + 'unavailable meanwhile, never held twice (its coordinator reports lockLost one membership_timeout after its last heartbeat). After a heal the '
    + 'server frees it within seconds (0-6.3 s after the heal in the partition runs, docs/reliability.md); a client that never comes back holds it '
    + "until the server's TCP keepalive gives up (by default after the kernel's 2 hours) or wait_timeout (8 hours). Bound it on the server with "
    + 'tcp_keepalive_time, tcp_keepalive_interval and tcp_keepalive_probes (MariaDB 10.3.3+): unlike PostgreSQL these cannot be set per session, '
    + 'and a session wait_timeout would also free the lock of a live holder that is paused. Lock sessions probe the server after a '
    + 'membership_timeout of silence (TCP keepalive): a waiter whose connection the server dropped during a long cut (its answer unacknowledged '
    + 'past tcp_retries2, about 15 minutes by default) learns it at the heal and waits again, instead of waiting for ever on a dead connection.',
    "A lock session given up with a statement unanswered (a release past the timeout, a wait abandoned, its session silent as after a cut) is closed, but the server would learn it only when the close gets there (after a cut, when TCP retransmits next, as long after as the cut lasted), so after the next heartbeat the server answers the coordinator ends that session with KILL CONNECTION (the user's own right) if it still holds the lock or its turn lock (MariaDB partition runs: a release sent into a cut freed the lock 27 s later, 20 s after its holder was connected again; a candidate's waiting round granted the leader lock unheard during a cut left the group without a leader for the rest of the run). Such a release rejects with ConnectionError.",
    'A lock given up when the connection was lost is released on the server once it answers, and the same Lock object takes the lock again only after that release has settled: the release of the old hold goes to whatever session holds the lock when it arrives, and before this rule it freed a hold taken again just after a reconnect without its holder being told (one of 60 partition schedules, a flapping server: the next holder was granted the lock 436 ms before the first was told; fencing held).',
  ],
  clientPackage: 'mysql2',
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberInfo',
    'memberExpiry',
    'expiryWake',
    'leaderElection',
    'getLeader',
    'locks',
    'lockWaitQueue',
    'fencing',
    'acrossProcesses',
    'acrossHosts',
  ],
  options: {
    ...sqlCommonOptions('MySQL', 'table'),
    unixSocket: opt.string('unix_socket', { doc: 'tooz: connect through this Unix socket instead of TCP.' }),
    sslCa: opt.string('ssl_ca', { doc: 'tooz: CA certificate file; turns TLS on and, by default, certificate and host name checks.' }),
    sslCapath: opt.string('ssl_capath', { doc: 'tooz: directory whose PEM files are trusted CA certificates.' }),
    sslCert: opt.string('ssl_cert', { doc: 'tooz: client certificate file.' }),
    sslKey: opt.string('ssl_key', { doc: 'tooz: client key file.' }),
    sslCipher: opt.string('ssl_cipher', { doc: 'tooz: allowed TLS ciphers (OpenSSL list).' }),
    sslVerifyMode: opt.string('ssl_verify_mode', {
      doc: 'tooz/pymysql: none, optional (treated as none) or required; default required with a CA, none without.',
    }),
    sslCheckHostname: opt.boolean('ssl_check_hostname', { doc: "tooz: check the server certificate's host name (default true when a CA is given)." }),
    fencing: opt.boolean('fencing', {
      default: true,
      doc: "Issue a fencing token with every lock (an InnoDB counter row bumped in the acquire's round trip: one redo-log flush per acquire, and acquirers "
        + 'of every lock queue on that row). false: GET_LOCK alone, as tooz; acquires are cheaper and fencingToken is undefined, so a resource cannot '
        + 'refuse a stale holder (one that lost its session but still runs).',
    }),
  },
  validateId: utf8Ids((kind, id) => sqlIdProblem(kind, id, MAX_LOCK_NAME_CHARS)),
  translateError: (err) => sqlConnectionError(err, MYSQL_FAILURES),
  client: {
    expects: "a mysql2 promise pool (createPool of 'mysql2/promise') with multipleStatements: true and a database",
    doc: 'rollcall runs membership statements and heartbeats one at a time on a connection checked out of the pool (pool.getConnection()), '
      + 'released at once, or destroyed when the statement went unanswered within the timeout; it also checks a connection out of the pool '
      + 'for each held or waiting lock, holding it as long as the server ties the lock to it (GET_LOCK locks are per session); it destroys each '
      + 'afterwards rather than release it, so that the pool never lends out a session that may hold a lock. The pool must allow multiple '
      + 'statements (multipleStatements: true: a join and a fenced acquire are two statements in one round trip) and name the database that holds '
      + "rollcall's tables; connect() refuses it otherwise, naming the setting. Its timezone, dateStrings, typeCast and big-number settings may be "
      + "anything: rollcall's statements carry their own (BIGINT as strings, DATETIME as UTC). Size connectionLimit for it: 1 + held or waiting "
      + 'locks (a limit of 1 is refused). A single connection or a callback pool (pass pool.promise()) is refused. rollcall never ends the pool.',
    check: mysqlClientProblem,
    connectionOptions: ['unixSocket', 'sslCa', 'sslCapath', 'sslCert', 'sslKey', 'sslCipher', 'sslVerifyMode', 'sslCheckHostname'],
  },
  create({ url, options, memberId, events, client }) {
    const problem = namespaceProblem(options.namespace)
    if (problem) throw new InvalidOptionError(`Option namespace "${options.namespace}" for the mysql driver is not usable: ${problem}`)
    if (client !== undefined) {
      const database = ((client as MysqlPool).pool.config as { connectionConfig: { database?: string } }).connectionConfig.database
      const dialect = new MysqlDialect(
        {},
        {},
        `the application's mysql2 pool (database ${database})`,
        options,
        sqlNames(options.namespace),
        options.fencing,
        client as MysqlPool,
      )
      return new SqlDriver(dialect, { memberId, membershipTimeoutMs: options.membershipTimeoutMs, events })
    }
    if (options.sslVerifyMode && !(options.sslVerifyMode.toLowerCase() in VERIFY_MODES)) {
      throw new InvalidOptionError(`Option ssl_verify_mode of the mysql driver must be none, optional or required, not "${options.sslVerifyMode}"`)
    }
    if (url.hosts.length > 1) throw new InvalidUrlError(`${url.redacted} names several hosts; the mysql driver connects to one`)
    const database = url.path.replace(/^\/+/, '')
    if (!database) {
      throw new InvalidUrlError(
        `${url.redacted} names no database; rollcall keeps its tables in one: write it in the path, e.g. mysql://root@127.0.0.1:3306/rollcall`,
      )
    }
    const host = url.hosts[0]?.host || 'localhost'
    const port = url.hosts[0]?.port ?? 3306
    const config: MysqlConfig = {
      host,
      port,
      user: url.username,
      password: url.password,
      database,
      ...(options.unixSocket ? { socketPath: options.unixSocket } : {}),
      connectTimeout: options.timeoutMs,
      enableKeepAlive: true,
      // A join and a lock acquire are two statements each, sent in one round trip. Every value is
      // still a bound parameter (escaped by mysql2), and table names are checked identifiers.
      multipleStatements: true,
      // DATETIME columns hold UTC (UTC_TIMESTAMP); read them as such. Fencing counters are BIGINT.
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
    }
    const where = `${options.unixSocket ? `socket ${options.unixSocket}` : formatHosts([{ host, port }])} (database ${database})`
    const tls: MysqlTlsOptions = {
      sslCa: options.sslCa,
      sslCapath: options.sslCapath,
      sslCert: options.sslCert,
      sslKey: options.sslKey,
      sslCipher: options.sslCipher,
      sslVerifyMode: options.sslVerifyMode,
      sslCheckHostname: options.sslCheckHostname,
    }
    const dialect = new MysqlDialect(config, tls, where, options, sqlNames(options.namespace), options.fencing)
    return new SqlDriver(dialect, { memberId, membershipTimeoutMs: options.membershipTimeoutMs, events })
  },
})
