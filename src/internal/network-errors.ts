/**
 * How a failure of the network or of a SQL server's connection is recognised, once for the
 * coordination drivers and the service catalog alike.
 * @internal
 */

/** Node and undici error codes of a network-level failure, after which a retry may work. */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'ERR_SOCKET_CLOSED',
])

/** True when `err` carries one of {@link NETWORK_ERROR_CODES}. */
export function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code
  return typeof code === 'string' && NETWORK_ERROR_CODES.has(code)
}

const PG_CONNECTION_STATES = new Set(['57P01', '57P02', '57P03', '53300'])
const PG_CONNECTION_MESSAGES = new RegExp(
  'Connection terminated|connection timeout|timeout exceeded when trying to connect|Client was closed|Cannot use a pool after calling end|'
    + 'Client has encountered a connection error',
  'i',
)

/** True when a `pg` error means the connection (not the statement) failed: SQLSTATE class 08, shutdown, too many clients, or the network. */
export function isPgConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code === 'string' && (code.startsWith('08') || PG_CONNECTION_STATES.has(code))) return true
  return isNetworkError(err) || (err instanceof Error && PG_CONNECTION_MESSAGES.test(err.message))
}

/** Node's TLS failure codes: OpenSSL's certificate verification codes, ERR_TLS_*, ERR_SSL_*. */
const TLS_CODES = /CERT|SELF_SIGNED|^UNABLE_TO_|^ERR_TLS_|^ERR_SSL_|ALTNAME/
/** pg's words for a server that refuses TLS or answers the SSLRequest wrongly. */
const PG_TLS_MESSAGES = /server does not support SSL connections|error establishing an SSL connection/

/**
 * True when a `pg` connection failed in its TLS handshake (an untrusted or mismatched certificate,
 * a protocol error) or because the server refuses TLS: the connection settings are at fault, not
 * the network, and retrying will not help.
 */
export function isPgTlsFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code === 'string' && TLS_CODES.test(code)) return true
  return err instanceof Error && PG_TLS_MESSAGES.test(err.message)
}

const MYSQL_CONNECTION_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
])

/** True when a `mysql2` error means the connection (not the statement) failed. */
export function isMysqlConnectionFailure(err: unknown): boolean {
  const e = err as { code?: unknown; fatal?: unknown; message?: unknown } | undefined
  if (e?.fatal === true || (typeof e?.code === 'string' && MYSQL_CONNECTION_CODES.has(e.code))) return true
  return isNetworkError(err) || (typeof e?.message === 'string' && /Pool is closed|closed state/.test(e.message))
}
