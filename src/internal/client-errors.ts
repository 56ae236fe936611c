/**
 * Recognising, across client libraries, the failures that deserve their own error: credentials
 * refused by the server, and a server that answered in another protocol (a Redis URL pointed at
 * memcached's port). They are found by code where the library gives one, in the error or any of
 * its causes; the library's own wording never reaches the message.
 */

function* chain(err: unknown): Generator<Record<string, unknown>> {
  const seen = new Set<unknown>()
  let e = err
  while (e !== null && typeof e === 'object' && !seen.has(e)) {
    seen.add(e)
    yield e as Record<string, unknown>
    e = (e as { cause?: unknown }).cause
  }
}

/** PostgreSQL SQLSTATE class 28 (invalid authorization), MySQL's access-denied errors. */
const AUTH_CODES = new Set(['28P01', '28000', 'ER_ACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR'])
/** MySQL's numbers of the same (1045, 1044, 1698). */
const AUTH_ERRNOS = new Set([1044, 1045, 1698])
/** Redis (WRONGPASS, NOAUTH), etcd ("authentication failed"), ZooKeeper (AUTH_FAILED). */
const AUTH_TEXT = /^(WRONGPASS|NOAUTH)\b|invalid username-password pair|\bauthentication failed\b|^AUTH_FAILED\b/i

/** True when the server refused the credentials. */
export function isAuthFailure(err: unknown): boolean {
  for (const e of chain(err)) {
    if (typeof e.code === 'string' && AUTH_CODES.has(e.code)) return true
    if (typeof e.errno === 'number' && AUTH_ERRNOS.has(e.errno)) return true
    if (e.name === 'AUTH_FAILED' || e.code === -115) return true
    if (typeof e.message === 'string' && AUTH_TEXT.test(e.message)) return true
  }
  return false
}

/** True when the server answered in a protocol the client could not parse (ioredis's ParserError). */
export function isProtocolMismatch(err: unknown): boolean {
  for (const e of chain(err)) {
    if (e.name === 'ParserError' || (typeof e.message === 'string' && /^Unknown RESP type|Protocol error, got/.test(e.message))) return true
  }
  return false
}
