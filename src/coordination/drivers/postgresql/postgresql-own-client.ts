/**
 * The application's own pg client (`connect('postgresql://?namespace=app', { client })`): what
 * rollcall accepts, and what it derives from a pg `Client`.
 *
 * A pg `Pool` is used as it is (index.ts): statements through `pool.query()`, a session checked out
 * for each held or waiting lock and for LISTEN.
 *
 * A pg `Client` is one connection, and rollcall sends nothing on it: it reads the client's
 * connection settings and opens its own sessions with them (a one-connection pool for membership
 * and heartbeats, one session per held or waiting lock, the LISTEN connection), which stop()
 * closes, exactly as when the settings come from a URL. Running rollcall's statements on the
 * application's one connection would interleave them with the application's: a heartbeat sent
 * while the application is inside BEGIN ... ROLLBACK would be rolled back with it, a statement of
 * rollcall's failing there (a join of a member that exists) would abort the application's
 * transaction, the application's SET would apply to rollcall, heartbeats would queue behind its
 * long statements, and pg 8 deprecates queueing a query on a busy Client (pg 9 removes it). A lock
 * wait cannot block on that connection either; with sessions of its own, locks keep their meaning
 * (two lock objects of one name in one process exclude each other: they hold separate sessions).
 *
 * Carried over from the Client: host (a Unix socket directory included), port, user, database,
 * password (a function too: called for each session rollcall opens), ssl (the same object, so a
 * key, ca and checkServerIdentity apply), sslnegotiation, options (startup `-c` settings such as
 * search_path), client_encoding, application_name (rollcall's sessions are named `rollcall` only
 * when the client names none), keepAlive and its delay, connectionTimeoutMillis (rollcall's
 * timeout when the client has none), enableChannelBinding and scramMaxIterations.
 *
 * Hazards, from what a Client keeps: pg replaces a password function by the password it resolved
 * once the Client has connected, so a Client handed over connected gives rollcall that password
 * (an expiring token then fails rollcall's later sessions: hand the Client over before connecting
 * it, or pass a Pool, which keeps the function); a Client made with a custom `stream` (a cloud
 * connector's socket) cannot be reproduced, as pg keeps only the stream it made: pass a Pool.
 * Not carried over, as they concern the application's statements: types, binary, pipeline,
 * statement_timeout, lock_timeout, idle_in_transaction_session_timeout and query_timeout (a
 * blocking lock wait is a statement that waits by design; rollcall bounds its own). A
 * `-c lock_timeout` or `-c statement_timeout` in `options` is turned off on lock sessions, as on
 * those checked out of a Pool (index.ts).
 */
import { kindOf } from '../kit/client-kind.js'

type PgConfig = ConstructorParameters<(typeof import('pg'))['default']['Client']>[0] & object

/** The fields of pg's ConnectionParameters that rollcall reads (a Client's `connectionParameters`). */
interface PgConnectionParameters {
  readonly host?: string
  readonly port?: number
  readonly user?: string
  readonly database?: string
  readonly password?: unknown
  readonly ssl?: unknown
  readonly sslnegotiation?: 'postgres' | 'direct'
  readonly options?: string
  readonly client_encoding?: string
  readonly application_name?: string
  readonly fallback_application_name?: string
  readonly keepalives?: number
  readonly keepalives_idle?: number
}

/** What rollcall reads off a pg Client. */
interface PgClientLike {
  readonly connectionParameters: PgConnectionParameters
  readonly enableChannelBinding?: unknown
  readonly scramMaxIterations?: unknown
  readonly _connectionTimeoutMillis?: unknown
  readonly _ending?: unknown
}

/** True for a pg Client (or a PoolClient, or pg-native's Client): it carries its connection settings. */
export function isPgClient(value: unknown): boolean {
  const c = value as Record<string, unknown> | null
  return c !== null && typeof c === 'object' && typeof c.connectionParameters === 'object' && c.connectionParameters !== null
    && typeof c.query === 'function'
}

/** Why `value` cannot serve as the postgresql driver's client (a pg Pool or Client), or undefined when it can. */
export function pgClientProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return `got ${value === null ? 'null' : typeof value}; pass new pg.Pool(...) or new pg.Client(...)`
  const c = value as Record<string, unknown>
  if (isPgClient(value)) {
    // A Client ended by the application is one it is done with; rollcall would not use it, but
    // taking its settings then is more likely a mistake than a wish.
    if (c._ending === true) return 'it is ended (client.end() was called); pass a client that is not ended'
    return undefined
  }
  if (typeof c.connect !== 'function' || typeof c.query !== 'function' || typeof c.totalCount !== 'number' || typeof c.options !== 'object') {
    return `got ${kindOf(value)}; pass new pg.Pool(...) or new pg.Client(...)`
  }
  if (c.ending === true || c.ended === true) return 'it is ended (pool.end() was called); pass an open pool'
  return undefined
}

/**
 * The settings of rollcall's own sessions, read off the application's pg Client when connect()
 * is called (a password function is kept only if the Client has not replaced it yet).
 * `timeoutMs` bounds connecting when the Client sets no connectionTimeoutMillis.
 */
export function pgClientSettings(client: unknown, timeoutMs: number): PgConfig {
  const c = client as PgClientLike
  const p = c.connectionParameters
  const connectMs = typeof c._connectionTimeoutMillis === 'number' && c._connectionTimeoutMillis > 0 ? c._connectionTimeoutMillis : timeoutMs
  const password = p.password === null ? undefined : p.password
  const config: PgConfig & Record<string, unknown> = {
    host: p.host,
    port: p.port,
    user: p.user,
    database: p.database,
    password: password as PgConfig['password'],
    // The Client's own object: pg hides its key from enumeration, so a copy would lose it.
    ssl: p.ssl as PgConfig['ssl'],
    options: p.options,
    client_encoding: p.client_encoding || undefined,
    application_name: p.application_name,
    fallback_application_name: p.fallback_application_name ?? 'rollcall',
    connectionTimeoutMillis: connectMs,
    keepAlive: p.keepalives !== 0,
  }
  if (p.sslnegotiation !== undefined) config.sslnegotiation = p.sslnegotiation
  if (typeof p.keepalives_idle === 'number' && p.keepalives_idle > 0) config.keepAliveInitialDelayMillis = p.keepalives_idle * 1000
  if (typeof c.enableChannelBinding === 'boolean') config.enableChannelBinding = c.enableChannelBinding
  if (typeof c.scramMaxIterations === 'number') config.scramMaxIterations = c.scramMaxIterations
  return config
}

/** Where a Client's settings lead, for messages (never its credentials). */
export function pgClientWhere(client: unknown): { host: string | undefined; port: number; database: string | undefined } {
  const p = (client as PgClientLike).connectionParameters
  return { host: p.host, port: p.port ?? 5432, database: p.database }
}
