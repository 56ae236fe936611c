/**
 * The errors of the memcached client: the server's own error replies (MemcachedServerError), keys
 * it cannot hold (MemcachedKeyError), a connection that failed, broke or closed
 * (MemcachedConnectionError), a reply that did not come in time (MemcachedTimeoutError), and a
 * reply that does not parse or that no request asked for (MemcachedProtocolError, a connection
 * error: the connection is dropped and the next request opens another).
 */

/** The root of the client's errors: each is named after its class. */
export class MemcachedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
  }
}

/** memcached answered ERROR, CLIENT_ERROR or SERVER_ERROR. */
export class MemcachedServerError extends MemcachedError {
  constructor(readonly kind: 'ERROR' | 'CLIENT_ERROR' | 'SERVER_ERROR', detail: string, readonly command: string) {
    super(`memcached answered ${kind}${detail ? ` ${detail}` : ''} to ${command}`)
  }
}

/** A key memcached cannot hold: longer than 250 bytes, or with a space or control character. */
export class MemcachedKeyError extends MemcachedError {}

/** No connection could be made, it broke while a reply was awaited, or the client was closed. */
export class MemcachedConnectionError extends MemcachedError {}

/** A reply did not come within requestTimeoutMs (the connection is then closed). */
export class MemcachedTimeoutError extends MemcachedError {}

/**
 * The server sent bytes that are not the reply asked for: a line or number that does not parse,
 * a value over the size limit, a key nobody asked for, or bytes with no request pending. Replies
 * are matched to requests by position, so the connection is dropped.
 */
export class MemcachedProtocolError extends MemcachedConnectionError {
  constructor(problem: string, command: string | undefined) {
    super(`memcached sent ${problem}${command ? ` in reply to ${command}` : ''}; the connection is dropped`)
  }
}
