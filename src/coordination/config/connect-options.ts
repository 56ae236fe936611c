/**
 * The options of connect(), typed per URL scheme: the scheme of a literal URL picks its driver's
 * option set, so a misspelt or mistyped option (`membershipTimeotMs`) is a compile error as well
 * as an InvalidOptionError at run time. A URL typed `string` accepts the options of any built-in
 * driver (the run-time check still names the driver's own set); a scheme rollcall does not ship
 * (a driver from registerDriver) accepts any option.
 */
import type { Capability } from '../capabilities.js'
import type { DriverDefinition } from '../driver.js'
import type { BuiltinDriverOptions } from './driver-options.js'
import type { Logger } from '../logger.js'
import type { OptionSpec, OptionSpecs } from './options.js'
import type { BUILTIN_LOADERS, BuiltinScheme } from './registry.js'
import type { RedisOwnClient } from '../drivers/redis/redis-own-client.js'

/** What connect() takes besides driver options. */
export interface BaseConnectOptions {
  /** This member's id (tooz member_id). Default: `<hostname>-<pid>-<6 hex>`, unique per process. */
  memberId?: string
  /** Capabilities the driver must have; connect() fails with CapabilityMismatchError otherwise. */
  require?: readonly Capability[]
  /** Run the heartbeat loop (default true). Off, call heartbeat() yourself, as tooz without start_heart. */
  heartbeat?: boolean
  /** Deliver watcher events and run elections by themselves (default true). Off, call runWatchers(). */
  autoWatch?: boolean
  /** Where rollcall logs (default: nowhere). */
  logger?: Logger
  /** Aborts connect(): it stops what it started and rejects with the signal's reason. */
  signal?: AbortSignal
  /** How often watchers re-read groups the backend does not push (URL: watch_interval, seconds). */
  watchIntervalMs?: number
  /** Rejoin a group this member was dropped from (URL: rejoin; default true). */
  rejoin?: boolean
}

export type { BuiltinScheme } from './registry.js'

/** The programmatic options (camelCase, durations in ms) of a spec set, all optional. */
export type CodeOptions<S extends OptionSpecs> = { [K in keyof S]?: S[K] extends OptionSpec<infer T> ? T : never }

type SpecsOf<K extends BuiltinScheme> = Awaited<ReturnType<(typeof BUILTIN_LOADERS)[K]>>['default'] extends DriverDefinition<infer S> ? S : never

/** The driver options of one built-in scheme (`DriverOptions<'redis'>` is `RedisOptions`). */
export type DriverOptions<K extends BuiltinScheme> = BuiltinDriverOptions[K]

// The named interfaces are generated from the drivers' declarations (npm run docs); this fails to
// compile, naming the scheme, when one of them and its driver's declarations disagree (a field
// missing, extra or of another type), e.g. after an option was added without regenerating.
type Agree<A, B> = [Required<A>] extends [Required<B>] ? ([Required<B>] extends [Required<A>] ? true : false) : false
type Disagreeing = { [K in BuiltinScheme]: Agree<BuiltinDriverOptions[K], CodeOptions<SpecsOf<K>>> extends true ? never : K }[BuiltinScheme]
type NoneDisagree<T extends never> = T
type OptionInterfacesAgree = NoneDisagree<Disagreeing>

/**
 * The application's own clients that connect() takes, by URL scheme (see docs/api.md, "Bring your
 * own client"). A scheme not listed takes none: `client` on a `zookeeper://` URL is a type error.
 */
export interface OwnClients {
  redis: RedisOwnClient
  postgresql: PgOwnPool | PgOwnClient
  mysql: MysqlOwnPool
}

/** What connect() takes as a MySQL client: a mysql2 promise pool (`createPool` of 'mysql2/promise'), typed by its shape. */
export interface MysqlOwnPool {
  /** Checks a connection out of the pool. */
  getConnection(): Promise<unknown>
  /** Runs one statement on a connection of the pool. */
  query(sql: any, values?: any): Promise<unknown>
  /** The underlying callback pool, whose config rollcall checks. */
  readonly pool: object
}

/** What connect() takes as a PostgreSQL client: a pg `Pool` (typed by its shape, so that rollcall's types do not need pg installed). */
export interface PgOwnPool {
  /** Checks a session out of the pool. */
  connect(): Promise<unknown>
  /** Runs one statement on a session of the pool. */
  query(text: string, values?: unknown[]): Promise<unknown>
  /** How many connections the pool holds. */
  readonly totalCount: number
}

/**
 * What connect() takes as a PostgreSQL client besides a pool: a pg `Client`, connected or not
 * (typed by its shape). rollcall sends nothing on it: it opens sessions of its own with the
 * client's connection settings and closes them at stop().
 */
export interface PgOwnClient {
  /** The server's host (or Unix socket directory), as the client resolved it. */
  readonly host: string
  /** The server's port. */
  readonly port: number
  connect(): Promise<unknown>
  query(text: string, values?: unknown[]): Promise<unknown>
  end(): Promise<void>
}

/**
 * `{ client?: ... }` for a scheme whose driver takes the application's own client, `{}` for the
 * others. rollcall never closes or reconfigures that client; what more it needs (a Redis
 * subscriber connection, SQL lock sessions, sessions with a pg Client's settings) it derives from it and closes at stop().
 */
export type ClientOption<K extends string> = K extends keyof OwnClients ? {
    /** The application's own client, used instead of one opened from the URL; it stays open after stop(). */
    client?: OwnClients[K]
  }
  : {}

/** The options of connect() for any built-in driver: a typo is an error, any driver's option is accepted. */
export type ConnectOptions = BaseConnectOptions & { [K in BuiltinScheme]: DriverOptions<K> & ClientOption<K> }[BuiltinScheme]

/** The scheme of a URL type, lowercased (`'redis'` for `'redis://127.0.0.1'`); never when it has no `scheme://`. */
export type SchemeOf<U extends string> = U extends `${infer S}://${string}` ? Lowercase<S> : never

/** The options of connect(url) for this URL: its driver's options when the scheme is known. */
export type ConnectOptionsFor<U extends string> = string extends U ? ConnectOptions
  : [SchemeOf<U>] extends [never] ? ConnectOptions
  : SchemeOf<U> extends BuiltinScheme ? BaseConnectOptions & DriverOptions<SchemeOf<U>> & ClientOption<SchemeOf<U>>
  : BaseConnectOptions & { [option: string]: unknown }
