/**
 * The memcached text protocol, classic and meta (memcached ≥ 1.6.10), as memcached-client.ts
 * speaks it: key rules, expiry conversion, and incremental parsers for every reply it reads.
 * A parser gets the bytes received so far and returns undefined until its whole reply is there;
 * what it has fully read stays consumed, so a large multi-get is parsed once, chunk by chunk.
 */

/** One stored item as a get/gets/mg returned it. */
export interface MemcachedItem {
  value: Buffer
  flags: number
  /** Present for gets and for mg with the `c` flag. */
  cas: bigint | undefined
}

/** What a storage command answered: STORED, NOT_STORED, EXISTS (CAS mismatch) or NOT_FOUND. */
export type StoreResult = 'stored' | 'notStored' | 'exists' | 'notFound'

/** A meta command's reply: its two-letter code (HD, VA, EN, NS, EX, NF), returned flags and value. */
export interface MetaReply {
  code: string
  /** Returned flags by letter, e.g. `c` → the CAS value as text. */
  flags: Map<string, string>
  value: Buffer | undefined
}

/** What `stats` tells about the server: `pid` and the boot time (`time - uptime`, seconds) tell a restarted server from a reconnect. */
export interface ServerStats {
  version: string
  pid: number | undefined
  bootedAt: number | undefined
}

/** memcached answered ERROR, CLIENT_ERROR or SERVER_ERROR. */
export class MemcachedServerError extends Error {
  constructor(readonly kind: 'ERROR' | 'CLIENT_ERROR' | 'SERVER_ERROR', detail: string, readonly command: string) {
    super(`memcached answered ${kind}${detail ? ` ${detail}` : ''} to ${command}`)
    this.name = 'MemcachedServerError'
  }
}

/** A key memcached cannot hold: longer than 250 bytes, or with a space or control character. */
export class MemcachedKeyError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'MemcachedKeyError'
  }
}

/** memcached's limit on key length, in bytes. */
export const MAX_KEY_BYTES = 250
/** Relative expiry times above this are read by memcached as absolute Unix times. */
const MAX_RELATIVE_EXPTIME = 60 * 60 * 24 * 30
export const CRLF = Buffer.from('\r\n')

/** Returns why `key` cannot be a memcached key, or undefined when it can. */
export function keyProblem(key: string): string | undefined {
  const bytes = Buffer.byteLength(key)
  if (bytes === 0) return 'it is empty'
  if (bytes > MAX_KEY_BYTES) return `it is ${bytes} bytes long, over memcached's limit of ${MAX_KEY_BYTES}`
  // The text protocol splits on spaces and ends lines at \r\n; memcached refuses control characters.
  if (/[\x00-\x20\x7f]/.test(key)) return 'it contains a space or a control character'
  return undefined
}

/** An expiry in whole seconds as memcached reads it (0 = never; above 30 days, an absolute time). */
export function exptime(seconds: number): number {
  const s = Math.max(0, Math.ceil(seconds))
  return s > MAX_RELATIVE_EXPTIME ? Math.floor(Date.now() / 1000) + s : s
}

/** Reply bytes received so far, consumed from the front. */
export class ReplyReader {
  buf: Buffer = Buffer.alloc(0)
  pos = 0
  /** Chunks received while a data block is still incomplete, joined once it is all there. */
  #parts: Buffer[] = []
  #partBytes = 0
  /** Offset in `buf` that the incomplete data block ends at; 0 when nothing is awaited. */
  #want = 0

  /**
   * Adds received bytes; false while a data block known to be incomplete is still short (parsing
   * would only fail again). A large value arriving in many chunks is so copied once, not once per chunk.
   */
  push(chunk: Buffer): boolean {
    if (this.#want > 0 && this.buf.length + this.#partBytes + chunk.length < this.#want) {
      this.#parts.push(chunk)
      this.#partBytes += chunk.length
      return false
    }
    const rest = this.buf.subarray(this.pos)
    this.buf = rest.length === 0 && this.#parts.length === 0 ? chunk : Buffer.concat([rest, ...this.#parts, chunk])
    this.pos = 0
    this.#parts = []
    this.#partBytes = 0
    this.#want = 0
    return true
  }

  /** The next line without its \r\n, or undefined when it has not fully arrived. */
  line(): string | undefined {
    const end = this.buf.indexOf(CRLF, this.pos)
    if (end < 0) return undefined
    const text = this.buf.toString('utf8', this.pos, end)
    this.pos = end + 2
    return text
  }

  /** Passes over `n` data bytes and their trailing \r\n; false when not all there yet. */
  skip(n: number): boolean {
    if (this.buf.length - this.pos < n + 2) {
      this.#want = this.pos + n + 2
      return false
    }
    if (this.buf[this.pos + n] !== 0x0d || this.buf[this.pos + n + 1] !== 0x0a) throw new Error('a data block does not end with \\r\\n')
    this.pos += n + 2
    return true
  }

  /** `n` data bytes and their trailing \r\n, or undefined when not all there yet. */
  data(n: number): Buffer | undefined {
    if (this.buf.length - this.pos < n + 2) {
      this.#want = this.pos + n + 2
      return undefined
    }
    const end = this.pos + n
    if (this.buf[end] !== 0x0d || this.buf[end + 1] !== 0x0a) throw new Error('a data block does not end with \\r\\n')
    // A value that fills most of the buffer (a group) is handed out as a view: a copy would double
    // it for nothing. Small values are copied, so that they do not keep a whole chunk alive.
    const out = 2 * n >= this.buf.length ? this.buf.subarray(this.pos, end) : Buffer.from(this.buf.subarray(this.pos, end))
    this.pos = end + 2
    return out
  }
}

/** Parses one reply; returns undefined until all of it has arrived (then rewinds nothing it kept). */
export type Parser<T> = (r: ReplyReader) => { value: T } | undefined

/** The reply to `get`/`gets`: VALUE blocks up to END, by key. */
export function parseValues(command: string): Parser<Map<string, MemcachedItem>> {
  const items = new Map<string, MemcachedItem>()
  return (r) => {
    for (;;) {
      const start = r.pos
      const line = r.line()
      if (line === undefined) return undefined
      if (line === 'END') return { value: items }
      const [word, key, flags, bytes, cas] = line.split(' ')
      if (word !== 'VALUE' || key === undefined || bytes === undefined) throw unexpected(line, command)
      const value = r.data(Number(bytes))
      if (value === undefined) {
        r.pos = start
        return undefined
      }
      items.set(key, { value, flags: Number(flags), cas: cas === undefined ? undefined : BigInt(cas) })
    }
  }
}

/**
 * The reply to `get` when only presence matters: the keys that have a value. The values are
 * skipped where they lie, never copied out (a group read asks for thousands of member keys).
 */
export function parseKeys(command: string): Parser<Set<string>> {
  const keys = new Set<string>()
  return (r) => {
    for (;;) {
      const start = r.pos
      const line = r.line()
      if (line === undefined) return undefined
      if (line === 'END') return { value: keys }
      const [word, key, , bytes] = line.split(' ')
      if (word !== 'VALUE' || key === undefined || bytes === undefined) throw unexpected(line, command)
      if (!r.skip(Number(bytes))) {
        r.pos = start
        return undefined
      }
      keys.add(key)
    }
  }
}

/**
 * The replies to `mg <key> t` for each of `keys` in turn, ended by `mn`'s `MN`: the remaining TTL
 * (seconds; -1 for none) of every key that exists (`HD t<n>`); absent keys (`EN`) are left out.
 */
export function parseTtls(keys: readonly string[]): Parser<Map<string, number>> {
  const ttls = new Map<string, number>()
  let next = 0
  return (r) => {
    for (;;) {
      const line = r.line()
      if (line === undefined) return undefined
      if (line === 'MN') {
        if (next !== keys.length) throw unexpected(line, 'mg')
        return { value: ttls }
      }
      const key = keys[next++]
      if (key === undefined) throw unexpected(line, 'mg')
      if (line === 'EN') continue
      const [code, ...tokens] = line.split(' ')
      const t = tokens.find((f) => f.startsWith('t'))
      if (code !== 'HD' || t === undefined || !/^t-?\d+$/.test(t)) throw unexpected(line, 'mg')
      ttls.set(key, Number(t.slice(1)))
    }
  }
}

const META_CODES = new Set(['HD', 'VA', 'EN', 'NS', 'EX', 'NF'])

/** The reply to a meta command: its code, returned flags and (for VA) the value. */
export function parseMeta(command: string): Parser<MetaReply> {
  return (r) => {
    const start = r.pos
    const line = r.line()
    if (line === undefined) return undefined
    const [code = '', ...tokens] = line.split(' ')
    if (!META_CODES.has(code)) throw unexpected(line, command)
    let data: Buffer | undefined
    if (code === 'VA') {
      data = r.data(Number(tokens.shift()))
      if (data === undefined) {
        r.pos = start
        return undefined
      }
    }
    return { value: { code, flags: new Map(tokens.map((t) => [t.slice(0, 1), t.slice(1)])), value: data } }
  }
}

/** The reply to `version`. */
export const parseVersion: Parser<string> = (r) => {
  const line = r.line()
  if (line === undefined) return undefined
  if (!line.startsWith('VERSION ')) throw unexpected(line, 'version')
  return { value: line.slice(8) }
}

/** Throws MemcachedKeyError when `key` cannot be a memcached key. */
export function checkKey(key: string): void {
  const problem = keyProblem(key)
  if (problem) throw new MemcachedKeyError(`${JSON.stringify(key)} cannot be a memcached key: ${problem}`)
}

/** An ERROR / CLIENT_ERROR / SERVER_ERROR line as an error, or a protocol error for anything else. */
export function unexpected(line: string, command: string): Error {
  for (const kind of ['ERROR', 'CLIENT_ERROR', 'SERVER_ERROR'] as const) {
    if (line === kind || line.startsWith(`${kind} `)) return new MemcachedServerError(kind, line.slice(kind.length + 1), command)
  }
  return new MemcachedServerError('CLIENT_ERROR', `(unexpected reply ${JSON.stringify(line.slice(0, 80))})`, command)
}

/** A one-line reply mapped through a table of expected words. */
export function simple<T>(command: string, table: Record<string, T>): Parser<T> {
  return (r) => {
    const line = r.line()
    if (line === undefined) return undefined
    if (!Object.hasOwn(table, line)) throw unexpected(line, command)
    return { value: table[line]! }
  }
}

/** `stats` → version, pid and boot time. */
export const parseStats: Parser<ServerStats> = (r) => {
  const start = r.pos
  const stats = new Map<string, string>()
  for (;;) {
    const line = r.line()
    if (line === undefined) {
      r.pos = start
      return undefined
    }
    if (line === 'END') break
    const [word, name, value] = line.split(' ')
    if (word !== 'STAT' || name === undefined) throw unexpected(line, 'stats')
    stats.set(name, value ?? '')
  }
  const num = (k: string): number | undefined => (stats.has(k) && Number.isFinite(Number(stats.get(k))) ? Number(stats.get(k)) : undefined)
  const time = num('time')
  const uptime = num('uptime')
  return {
    value: { version: stats.get('version') ?? 'unknown', pid: num('pid'), bootedAt: time !== undefined && uptime !== undefined ? time - uptime : undefined },
  }
}
