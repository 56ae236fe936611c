/**
 * The HTTP plumbing of the status server, kept apart from the routes: errors as JSON with a
 * status derived from the rollcall error code (never from the message), size-limited JSON
 * bodies, bearer-token checks in constant time, and the security headers every response gets.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { mayHoldCredentials } from '../internal/redact.js'
import { RollcallError, redactUrl, type ErrorCode } from '../index.js'

/** Largest request body accepted (413 above it). */
export const MAX_BODY_BYTES = 64 * 1024

/** HTTP status for each rollcall error code; codes not listed are 500. */
const STATUS_BY_CODE: Partial<Record<ErrorCode, number>> = {
  SERVICE_NOT_FOUND: 404,
  GROUP_NOT_FOUND: 404,
  MEMBER_NOT_JOINED: 404,
  WATCH_CALLBACK_NOT_FOUND: 404,
  INVALID_ID: 400,
  INVALID_ARGUMENT: 400,
  INVALID_OPTION: 400,
  INVALID_URL: 400,
  INVALID_CONFIG: 400,
  SERIALIZATION: 400,
  GROUP_EXISTS: 409,
  MEMBER_EXISTS: 409,
  GROUP_NOT_EMPTY: 409,
  LOCK_ACQUIRE_FAILED: 409,
  INVALID_STATE: 409,
  NOT_SUPPORTED: 501,
  METRICS_UNAVAILABLE: 501,
  CAPABILITY_MISMATCH: 501,
  CONNECTION_FAILED: 503,
  AUTH_FAILED: 503,
  SERVICEGROUP_UNAVAILABLE: 503,
  DRIVER_UNAVAILABLE: 503,
  COORDINATOR_STOPPED: 503,
  OPERATION_TIMEOUT: 504,
}

/** The HTTP status for a rollcall error code. */
export function statusForCode(code: string): number {
  return STATUS_BY_CODE[code as ErrorCode] ?? 500
}

/**
 * An error that belongs to HTTP itself (unknown route, oversized body, missing token), with the
 * code the JSON body carries. Errors from rollcall keep their own code.
 */
export class HttpError extends Error {
  constructor(readonly status: number, readonly code: string, message: string, readonly headers: Record<string, string> = {}) {
    super(message)
    this.name = 'HttpError'
  }
}

/** Headers every response carries: nothing is fetched from elsewhere, nothing is framed or sniffed. */
export function baseHeaders(): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
  }
}

/** Sends `value` as JSON. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value)
  res.writeHead(status, { ...baseHeaders(), 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers })
  res.end(body)
}

/** Sends any thrown value as `{ "error": { "code", "message" } }`, its message free of credentials. */
export function sendError(res: ServerResponse, err: unknown): void {
  let status = 500
  let code = 'INTERNAL'
  let message = 'Internal error; the server log has details'
  let headers: Record<string, string> = {}
  if (err instanceof HttpError) {
    ;({ status, code, message, headers } = err)
  } else if (err instanceof RollcallError) {
    status = statusForCode(err.code)
    code = err.code
    message = err.message
  }
  if (res.headersSent) {
    res.destroy()
    return
  }
  sendJson(res, status, { error: { code, message: redactUrl(message) } }, headers)
}

/** Bodies up to this size are read to the end (and dropped) before a 413, so the client sees the answer. */
const DRAIN_LIMIT_BYTES = 1024 * 1024

/**
 * Reads a request body as JSON: 413 above {@link MAX_BODY_BYTES}, 415 for a declared non-JSON
 * type, 400 when it is empty or does not parse. An oversized body is read to its end and dropped
 * (up to 1 MiB; beyond, the connection is closed after the answer), never kept.
 */
export function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type']
  if (type !== undefined && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(type)) {
    req.resume()
    return Promise.reject(
      new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', `The body must be JSON (Content-Type: application/json), not ${type.slice(0, 100)}`, {
        connection: 'close',
      }),
    )
  }
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > DRAIN_LIMIT_BYTES) return Promise.reject(tooLarge())
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > DRAIN_LIMIT_BYTES) {
        req.pause()
        reject(tooLarge())
      } else if (size <= MAX_BODY_BYTES) {
        chunks.push(chunk)
      }
    })
    req.once('error', reject)
    req.once('end', () => {
      if (size > MAX_BODY_BYTES) return reject(tooLarge())
      const text = Buffer.concat(chunks).toString('utf8')
      if (text.trim() === '') return reject(new HttpError(400, 'INVALID_JSON', 'The request body is empty; send a JSON object'))
      try {
        resolve(JSON.parse(text))
      } catch (err) {
        reject(new HttpError(400, 'INVALID_JSON', `The request body is not valid JSON: ${(err as Error).message}`))
      }
    })
  })
}

function tooLarge(): HttpError {
  return new HttpError(413, 'PAYLOAD_TOO_LARGE', `The request body is larger than ${MAX_BODY_BYTES / 1024} KiB`, { connection: 'close' })
}

/** Equal strings, compared in time that depends on neither their content nor their length. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

/**
 * Checks that a write may proceed: 403 when the server has no token (read-only), 401 when the
 * request carries no `Authorization: Bearer` token or the wrong one.
 */
export function authorizeWrite(req: IncomingMessage, token: string | undefined): void {
  if (token === undefined) {
    throw new HttpError(
      403,
      'READ_ONLY',
      'This server is read-only: writes need a token; set [api] token in the configuration file or ROLLCALL_API_TOKEN, restart rollcall serve, and send '
        + 'Authorization: Bearer <token>',
    )
  }
  const header = req.headers.authorization
  const m = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
  const challenge = { 'www-authenticate': 'Bearer realm="rollcall"' }
  if (!m) {
    throw new HttpError(401, 'UNAUTHORIZED', 'This request changes something: send Authorization: Bearer <token> (the [api] token of the server)', challenge)
  }
  if (!tokensEqual(m[1]!, token)) throw new HttpError(401, 'UNAUTHORIZED', 'The bearer token is wrong', challenge)
}

/** `text` with credentials in URLs replaced by `***`; text that cannot hold one (no `@`, no `=`) is returned unscanned. */
function publicString(text: string): string {
  return mayHoldCredentials(text) ? redactUrl(text) : text
}

/**
 * Strings in `value` (recursively) with credentials in URLs replaced by `***`; bytes, Maps and
 * bigints made JSON-friendly. Only strings that may hold a credential are scanned, so a member
 * with a megabyte of capabilities costs a few milliseconds per refresh, not the server's CPU.
 */
export function toPublicJson(value: unknown, depth = 0): unknown {
  if (depth > 32) return null
  if (typeof value === 'string') return publicString(value)
  if (typeof value === 'bigint') return value.toString()
  if (value === null || typeof value !== 'object') return value
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') }
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Error) return { error: { code: (value as { code?: string }).code ?? 'ERROR', message: redactUrl(value.message) } }
  if (Array.isArray(value) || value instanceof Set) return [...value].map((v) => toPublicJson(v, depth + 1))
  const entries = value instanceof Map ? [...value] : Object.entries(value)
  return Object.fromEntries(
    entries.map(([k, v]) => [publicString(k instanceof Uint8Array ? Buffer.from(k).toString() : String(k)), toPublicJson(v, depth + 1)]),
  )
}
