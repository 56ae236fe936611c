/**
 * From a tooz redis URL and its options to an ioredis configuration, and from ioredis errors to
 * rollcall errors. Pure functions (apart from reading TLS files), so that the mapping, Sentinel's
 * especially, can be tested without a server.
 *
 * URL forms (tooz.md §2):
 * - `redis://[user:pass@]host[:port][?opts]`, `rediss://...` (TLS); `redis://:6379` means localhost;
 * - `redis:///path/to.sock[?opts]`: a Unix socket (no host, so the path is the socket);
 * - `redis://SENTINEL[:PORT]?sentinel=<master>&sentinel_fallback=h:p&...`: ask the sentinels for
 *   the master. As in tooz, the sentinels see only the socket options, the `sentinel_username` /
 *   `sentinel_password` credentials, and TLS only with `sentinel_ssl`; the URL's credentials,
 *   `db` and `ssl` are for the master.
 */
import type { RedisOptions as IoRedisOptions } from 'ioredis'
import { BackendError, ConnectionError, InvalidOptionError, InvalidUrlError, type RollcallError } from '../../../errors.js'
import type { TranslateContext } from '../../driver.js'
import { parseHostPort, type BackendUrl, type HostPort } from '../../config/url.js'
import type { ResolvedRedisOptions } from './redis-options.js'
import { warnIgnoredPath } from '../kit/ignored-path.js'
import { readTlsFiles, type TlsFiles } from '../kit/tls-files.js'

/** Port of a redis URL that names none. */
export const REDIS_PORT = 6379
/** Port of a sentinel (URL host or sentinel_fallback entry) that names none. */
export const SENTINEL_PORT = 26379

/** Where the driver connects, decided from the URL before any I/O. */
export type RedisTarget =
  | { kind: 'tcp'; host: string; port: number; tls: boolean }
  | { kind: 'socket'; path: string }
  | { kind: 'sentinel'; sentinels: HostPort[]; master: string; tls: boolean }

/** How ioredis reconnects; the driver swaps policies once start() has succeeded. */
export type RetryPolicy = (attempt: number) => number | null

/**
 * Checks the URL's shape and returns the target. Throws InvalidUrlError/InvalidOptionError.
 * `warn` is told, once, about a URL part that is accepted but ignored (as tooz ignores it).
 */
export function redisTarget(url: BackendUrl, o: ResolvedRedisOptions, warn: (message: string) => void = () => {}): RedisTarget {
  if (url.hosts.length > 1) {
    throw new InvalidUrlError(
      `${url.redacted} names ${url.hosts.length} hosts; a redis URL names one server (or one sentinel, with more in sentinel_fallback=host:port)`,
    )
  }
  const tls = url.scheme === 'rediss' || o.ssl
  const first = url.hosts[0]
  if (first === undefined) {
    if (url.path === '' || url.path === '/') {
      throw new InvalidUrlError(`${url.redacted} names neither a host nor a socket path; write redis://host:6379 or redis:///path/to/redis.sock`)
    }
    if (o.sentinel !== undefined) throw new InvalidUrlError(`${url.redacted}: sentinel= needs the sentinel's host:port, not a socket path`)
    return { kind: 'socket', path: url.path }
  }
  if (url.path !== '' && url.path !== '/') {
    // tooz ignores the path of a host URL (it always uses ?db=N), and so does this driver, so that
    // a tooz URL such as redis://host:6379/f00 works unchanged. A number there is refused: it
    // reads as redis-py's database index, and ignoring it would put data in database 0 unasked.
    if (/^\/\d+\/?$/.test(url.path)) {
      throw new InvalidUrlError(
        `${url.redacted} has the path "${url.path}", which reads as a database number, but tooz ignores URL paths (and would use database ${o.db}); `
          + `select the database with ?db=N instead`,
      )
    }
    warnIgnoredPath(url, warn, `the database is chosen with ?db=N (now ${o.db})`)
  }
  const host = first.host === '' ? 'localhost' : first.host
  if (o.sentinel === undefined) return { kind: 'tcp', host, port: first.port ?? REDIS_PORT, tls }
  const fallbacks = o.sentinelFallback.map((text) => {
    try {
      const hp = parseHostPort(text.trim())
      if (hp.host === '') throw new InvalidUrlError('no host')
      return hp
    } catch {
      throw new InvalidOptionError(`Option "sentinel_fallback" value "${text}" is not host:port (write [v6addr]:port for IPv6)`)
    }
  })
  const sentinels = [{ host, port: first.port }, ...fallbacks].map((s) => ({ host: s.host, port: s.port ?? SENTINEL_PORT }))
  return { kind: 'sentinel', sentinels, master: o.sentinel, tls }
}

/** Reads the ssl_* files named by the options; InvalidOptionError naming the option when one cannot be read. */
export function readTlsMaterial(o: ResolvedRedisOptions): TlsFiles {
  return readTlsFiles('redis', { ca: ['ssl_ca_certs', o.sslCaCerts], cert: ['ssl_certfile', o.sslCertfile], key: ['ssl_keyfile', o.sslKeyfile] })
}

/**
 * The ioredis options for a target. Connection behaviour chosen here, and why:
 * - `lazyConnect`: start() connects itself, within a deadline, instead of ioredis retrying forever;
 * - `maxRetriesPerRequest: 0`, `autoResendUnfulfilledCommands: false`: a command in flight when
 *   the connection breaks fails (ConnectionError) instead of being sent twice (a lock INCR or a
 *   join must not run twice behind the caller's back); commands issued while reconnecting wait for
 *   the next attempt only;
 * - `disconnectTimeout: 0`: a connection the driver closes (a deposed master, stop()) is destroyed
 *   without waiting for the server to acknowledge the close;
 * - RESP2 and no CLIENT SETINFO, so that old servers (tooz needs ≥ 2.6) work too.
 */
export function ioredisOptions(
  url: BackendUrl,
  target: RedisTarget,
  o: ResolvedRedisOptions,
  tls: TlsFiles,
  retry: { redis: RetryPolicy; sentinel: RetryPolicy },
  memberId: string,
): IoRedisOptions {
  const common: IoRedisOptions = {
    lazyConnect: true,
    // CLIENT SETNAME, so that an operator can tell members apart in CLIENT LIST (no spaces allowed).
    connectionName: `rollcall:${memberId.replace(/[^!-~]/g, '_')}`.slice(0, 128),
    db: o.db,
    connectTimeout: o.socketConnectTimeoutMs,
    socketTimeout: o.socketTimeoutMs,
    commandTimeout: o.socketTimeoutMs,
    // ioredis enables keep-alive unless keepAlive is a non-number; null is how to say "off".
    keepAlive: (o.socketKeepalive ? 30_000 : null) as unknown as number | undefined,
    protocol: 2,
    disableClientInfo: true,
    enableReadyCheck: true,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    retryStrategy: (attempt) => retry.redis(attempt),
    // Not ioredis's 2 s wait for the server's FIN: a deposed master may be silent (cut off), which held every move to the new
    // master 2 s (issue 27).
    disconnectTimeout: 0,
  }
  if (url.username !== undefined) common.username = url.username
  if (url.password !== undefined) common.password = url.password
  const tlsOptions = { ...tls }
  switch (target.kind) {
    case 'socket':
      return { ...common, path: target.path }
    case 'tcp':
      return { ...common, host: target.host, port: target.port, ...(target.tls ? { tls: tlsOptions } : {}) }
    case 'sentinel': {
      const out: IoRedisOptions = {
        ...common,
        sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
        name: target.master,
        role: 'master',
        sentinelCommandTimeout: o.socketTimeoutMs,
        sentinelRetryStrategy: (attempt) => retry.sentinel(attempt),
        enableTLSForSentinelMode: target.tls,
      }
      if (target.tls) out.tls = tlsOptions
      if (o.sentinelSsl) out.sentinelTLS = tlsOptions
      if (o.sentinelUsername !== undefined) out.sentinelUsername = o.sentinelUsername
      if (o.sentinelPassword !== undefined) out.sentinelPassword = o.sentinelPassword
      return out
    }
  }
}

/**
 * The ioredis options of a connection to one sentinel, for the driver's own SENTINEL MASTER
 * questions (redis-fencing.ts): the same credentials, TLS and timeouts as ioredis's own sentinel
 * connections, no reconnecting and no queueing (a sentinel that does not answer is skipped).
 */
export function sentinelClientOptions(sentinel: HostPort, o: ResolvedRedisOptions, tls: TlsFiles): IoRedisOptions {
  const out: IoRedisOptions = {
    host: sentinel.host,
    port: sentinel.port ?? SENTINEL_PORT,
    lazyConnect: true,
    connectTimeout: o.socketConnectTimeoutMs,
    commandTimeout: o.socketTimeoutMs,
    protocol: 2,
    disableClientInfo: true,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  }
  if (o.sentinelSsl) out.tls = { ...tls }
  if (o.sentinelUsername !== undefined) out.username = o.sentinelUsername
  if (o.sentinelPassword !== undefined) out.password = o.sentinelPassword
  return out
}

/** How a target is named in messages (never with credentials). */
export function describeTarget(target: RedisTarget): string {
  const hp = (h: { host: string; port: number | undefined }): string => `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`
  switch (target.kind) {
    case 'socket':
      return `the Unix socket ${target.path}`
    case 'tcp':
      return hp(target)
    case 'sentinel':
      return `master "${target.master}" via the sentinels ${target.sentinels.map(hp).join(', ')}`
  }
}

/**
 * ioredis's connection-level messages (which name its own options, such as maxRetriesPerRequest,
 * that rollcall sets and the user cannot), each with what it means in rollcall's words.
 */
const CONNECTION_MESSAGES: ReadonlyArray<readonly [prefix: string, meaning: string]> = [
  ['Connection is closed', 'the connection is closed'],
  ["Stream isn't writeable", 'the connection broke before the request was sent'],
  ['Command timed out', 'no answer within socket_timeout'],
  ['Socket timeout', 'no answer within socket_timeout'],
  ['All sentinels are unreachable', 'none of the sentinels answered'],
  ['Failed to refresh slots cache', "the cluster's slot map could not be read"],
]

/** ioredis's MaxRetriesPerRequestError: a request made while the connection was down (rollcall gives each no retry). */
const DOWN = 'the connection is down and reconnecting has not succeeded yet'

/**
 * Maps an ioredis error to a rollcall error whose message says what happened (the ioredis error
 * is its `cause`); undefined leaves it to the generic wrapper.
 */
export function translateRedisError(err: unknown, context: TranslateContext): RollcallError | undefined {
  if (!(err instanceof Error)) return undefined
  const message = err.message
  if (err.name === 'ReplyError') {
    if (/^(NOAUTH|WRONGPASS|NOPERM)\b/.test(message)) {
      return new ConnectionError(`Redis refused this client: ${message}`, { cause: err, retryable: false })
    }
    // A replica after a failover, a server still loading its data set, a master that lost its quorum.
    if (/^(READONLY|LOADING|MASTERDOWN|BUSY|TRYAGAIN)\b/.test(message)) {
      return new ConnectionError(`Redis cannot serve this request right now: ${message}`, { cause: err })
    }
    return new BackendError(`Redis answered with an error: ${message}`, { cause: err })
  }
  const meaning = err.name === 'MaxRetriesPerRequestError' ? DOWN : CONNECTION_MESSAGES.find(([prefix]) => message.startsWith(prefix))?.[1]
  if (meaning) return new ConnectionError(`Cannot ${context.operation}: Redis at ${context.redactedUrl} is unreachable (${meaning})`, { cause: err })
  return undefined
}
