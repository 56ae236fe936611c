/**
 * The redis driver's options: every option tooz's redis driver accepts, with tooz's query
 * spelling and units (seconds in the URL, milliseconds in code), plus `lock_key_style`, which picks
 * the lock key layout of the tooz release the fleet runs.
 *
 * tooz passes `socket_*`, `ssl*`, `db`, `health_check_interval` and `retry_on_timeout` to redis-py;
 * here they configure ioredis to the same effect, as far as ioredis has the knob (each doc says
 * where it does not).
 */
import { Unfit } from '../../../internal/coerce.js'
import { opt, type OptionSpec, type ResolvedOptions } from '../../config/options.js'
import { followsTimeout, lockTimeoutOption, membershipTimeoutOption, timeoutOption } from '../kit/timeout-options.js'

/** Spellings of UTF-8 that Python's codec registry accepts (normalised: lower case, `-` → `_`). */
const UTF8_NAMES = new Set(['utf8', 'utf_8', 'u8', 'utf', 'cp65001'])

/** `encoding`: rollcall always writes UTF-8, so only UTF-8 spellings are accepted. */
function utf8Encoding(): OptionSpec<string, true> {
  const base = opt.string('encoding', {
    default: 'utf8',
    doc: 'How tooz encodes str ids to bytes. rollcall always uses UTF-8, so only UTF-8 spellings (utf8, utf-8, ...) are accepted: with any other encoding '
      + 'Python and Node processes would name the same group differently.',
  })
  const check = (value: string): string => {
    if (!UTF8_NAMES.has(value.trim().toLowerCase().replace(/-/g, '_'))) {
      throw new Unfit(
        `is "${value}", but rollcall stores ids as UTF-8 only; use encoding=utf8 (a tooz fleet using another encoding cannot share this backend with rollcall)`,
      )
    }
    return value
  }
  return { ...base, fromQuery: (values) => check(base.fromQuery(values)), fromCode: (value) => check(base.fromCode(value)) }
}

/** A duration in seconds where 0 means "off" (redis-py's convention for health_check_interval). */
function secondsOrOff(query: string, doc: string): OptionSpec<number, true> {
  const base = opt.seconds(query, { doc, default: 0 })
  const zero = (text: string | undefined): boolean => text !== undefined && /\d/.test(text) && Number(text) === 0
  return {
    ...base,
    shownDefault: '0 (off)',
    fromQuery: (values) => (zero(values[values.length - 1]) ? 0 : base.fromQuery(values)),
    fromCode: (value) => (value === 0 ? 0 : base.fromCode(value)),
  }
}

/** Lock key layouts, by the tooz release whose keys they match (see redis-keys.ts). */
export const LOCK_KEY_STYLES = ['v9', 'legacy', 'legacy-str'] as const

/** One of {@link LOCK_KEY_STYLES}. */
export type LockKeyStyle = (typeof LOCK_KEY_STYLES)[number]

/** Every option of the redis driver, by programmatic name. */
export const REDIS_OPTIONS = {
  timeoutMs: timeoutOption('Default for membership_timeout, lock_timeout and socket_timeout (tooz: 30).'),
  membershipTimeoutMs: membershipTimeoutOption("TTL of the member's beat key `<ns>_beats:<member>`: a member that stops heartbeating is gone after this long."),
  lockTimeoutMs: lockTimeoutOption('TTL of a lock key; the heartbeat extends held locks, so a crashed holder frees its locks after this long.'),
  namespace: opt.string('namespace', {
    default: '_tooz',
    nonEmpty: true,
    doc: 'Prefix of every key (tooz: `_tooz`). Python and Node members must use the same one to see each other.',
  }),
  encoding: utf8Encoding(),
  lockKeyStyle: opt.enum('lock_key_style', LOCK_KEY_STYLES, {
    default: 'v9',
    doc: "Lock key layout. `v9`: `_tooz_<name>_lock`, as tooz ≥ 9 writes it. `legacy`: `b'_tooz'_b'<name>'_lock`, as tooz ≤ 8 (Debian's 3.1 included) "
      + "writes it for bytes lock names. `legacy-str`: `b'_tooz'_<name>_lock`, tooz ≤ 8 with str lock names. The leader lock follows the style, except "
      + 'that `legacy-str` keeps the bytes form for it, because tooz ≤ 8 always names the leader lock with bytes. Processes using different styles do '
      + 'NOT exclude each other.',
  }),
  db: opt.integer('db', { default: 0, min: 0, doc: 'Redis database number.' }),
  socketTimeoutMs: followsTimeout('socket_timeout', 'A connection that sends nothing back for this long while a reply is awaited is closed (and reconnected).'),
  socketConnectTimeoutMs: opt.seconds('socket_connect_timeout', {
    defaultFrom: 'socketTimeoutMs',
    doc: 'Bound on connecting: start() fails with ConnectionError when the server (or every sentinel) has not answered within it.',
  }),
  socketKeepalive: opt.boolean('socket_keepalive', { default: false, doc: 'Enable TCP keep-alive probes on the connection.' }),
  retryOnTimeout: opt.boolean('retry_on_timeout', {
    default: false,
    ignored: true,
    doc: 'Accepted for tooz compatibility and ignored: a command that times out fails, and the heartbeat loop retries with backoff.',
  }),
  healthCheckIntervalMs: secondsOrOff(
    'health_check_interval',
    'When above 0, PING the server this often, so that a dead connection is noticed between heartbeats.',
  ),
  ssl: opt.boolean('ssl', { default: false, doc: 'Connect with TLS (implied by the `rediss://` scheme).' }),
  sslCertfile: opt.string('ssl_certfile', { nonEmpty: true, doc: 'Client certificate (PEM file) for TLS.' }),
  sslKeyfile: opt.string('ssl_keyfile', { nonEmpty: true, doc: 'Client private key (PEM file) for TLS.' }),
  sslCaCerts: opt.string('ssl_ca_certs', { nonEmpty: true, doc: 'CA bundle (PEM file) that signs the server certificate; default: the system CAs.' }),
  sentinel: opt.string('sentinel', { nonEmpty: true, doc: "Master name: the URL's host is then a Redis Sentinel, asked for the current master of that name." }),
  sentinelFallback: opt.list('sentinel_fallback', { default: [], doc: "More sentinels (`host:port`, `[v6]:port`), tried in order after the URL's host." }),
  sentinelUsername: opt.string('sentinel_username', { nonEmpty: true, doc: "User name for the sentinels (the URL's credentials are for the master only)." }),
  sentinelPassword: opt.string('sentinel_password', { nonEmpty: true, doc: "Password for the sentinels (the URL's credentials are for the master only)." }),
  sentinelSsl: opt.boolean('sentinel_ssl', { default: false, doc: 'Talk TLS to the sentinels too, with the ssl_* files (ssl alone covers the master only).' }),
  executor: opt.string('executor', { ignored: true, doc: 'Accepted for tooz compatibility and ignored: rollcall has no executor threads.' }),
}

/** Resolved redis options. */
export type ResolvedRedisOptions = ResolvedOptions<typeof REDIS_OPTIONS>
