/**
 * The memcached text protocol, classic and meta (memcached ≥ 1.6.10), as memcached-client.ts
 * speaks it: key rules, expiry conversion, and incremental parsers for every reply it reads.
 * A parser gets the bytes received so far and returns undefined until its whole reply is there;
 * what it has fully read stays consumed, so a large multi-get is parsed once, chunk by chunk.
 *
 * Replies are read strictly, as from a server that may be faulty or hostile: numbers are digits
 * only and within range, a value is at most MAX_VALUE_BYTES, a line at most MAX_LINE_BYTES, a
 * multi-get names only keys asked for; anything else throws MemcachedProtocolError.
 */
import { MemcachedKeyError, MemcachedProtocolError, MemcachedServerError } from './memcached-errors.js'

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

/**
 * Largest value accepted from a server, in bytes: as the ZooKeeper client's largest frame. A
 * group is one value (tooz's layout); memcached's own item limit is 1 MiB unless raised with -I.
 * A larger announced size ends the connection before anything is buffered for it.
 */
export const MAX_VALUE_BYTES = 16 * 1024 * 1024
/** Longest reply line accepted, in bytes (a VALUE line with a 250-byte key is under 320). */
export const MAX_LINE_BYTES = 8 * 1024
/** Most `STAT` lines accepted in a stats reply (memcached 1.6 sends under 100). */
const MAX_STAT_LINES = 1_000
const UINT32_MAX = 0xffff_ffffn
const UINT64_MAX = 0xffff_ffff_ffff_ffffn

/**
 * Reply bytes received so far, consumed from the front: a buffer that grows by doubling (or to
 * the size of an announced data block), so that bytes are copied a bounded number of times
 * however they are cut into chunks. Bytes once stored are never overwritten (a grown buffer is a
 * new one), so data() may hand out views.
 */
export class ReplyReader {
  buf: Buffer = Buffer.alloc(0)
  pos = 0
  /** End of the received bytes in `buf` (beyond it: room not written yet). */
  #end = 0
  /** Offset in `buf` that an incomplete data block ends at; 0 when nothing is awaited. */
  #want = 0
  /** Where the last line() that found no \r\n started, and where its search can resume. */
  #lineAt = -1
  #scanned = 0

  /** Bytes received and not consumed. */
  get unread(): number {
    return this.#end - this.pos
  }

  /**
   * Adds received bytes; false while a data block known to be incomplete is still short (parsing
   * would only fail again).
   */
  push(chunk: Buffer): boolean {
    const unread = this.#end - this.pos
    if (unread === 0 && this.#want === 0) {
      this.buf = chunk
      this.pos = 0
      this.#end = chunk.length
      this.#lineAt = -1
      return true
    }
    if (this.#end + chunk.length > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(unread + chunk.length, this.#want - this.pos, 2 * unread))
      this.buf.copy(next, 0, this.pos, this.#end)
      if (this.#want > 0) this.#want -= this.pos
      if (this.#lineAt >= 0) {
        this.#lineAt -= this.pos
        this.#scanned -= this.pos
      }
      this.buf = next
      this.#end = unread
      this.pos = 0
    }
    chunk.copy(this.buf, this.#end)
    this.#end += chunk.length
    if (this.#want > this.#end) return false
    this.#want = 0
    return true
  }

  /** The next line without its \r\n, or undefined when it has not fully arrived; a line over MAX_LINE_BYTES throws. */
  line(command: string): string | undefined {
    const from = this.#lineAt === this.pos ? this.#scanned : this.pos
    const end = this.buf.subarray(0, this.#end).indexOf(CRLF, from)
    if (end < 0 || end - this.pos > MAX_LINE_BYTES) {
      if (this.#end - this.pos > MAX_LINE_BYTES) {
        throw new MemcachedProtocolError(`a line of over ${MAX_LINE_BYTES} bytes (${preview(this.buf.subarray(this.pos, this.pos + 40))}…)`, command)
      }
      // The next search starts where this one ended (less the \r a chunk may have split from its \n).
      this.#lineAt = this.pos
      this.#scanned = Math.max(this.pos, this.#end - 1)
      return undefined
    }
    const text = this.buf.toString('utf8', this.pos, end)
    this.pos = end + 2
    return text
  }

  /** Passes over `n` data bytes and their trailing \r\n; false when not all there yet. */
  skip(n: number, command: string): boolean {
    if (!this.#complete(n, command)) return false
    this.pos += n + 2
    return true
  }

  /** `n` data bytes and their trailing \r\n, or undefined when not all there yet. */
  data(n: number, command: string): Buffer | undefined {
    if (!this.#complete(n, command)) return undefined
    const end = this.pos + n
    // A value that fills most of the buffer (a group) is handed out as a view: a copy would double
    // it for nothing. Small values are copied, so that they do not keep a whole chunk alive.
    const out = 2 * n >= this.buf.length ? this.buf.subarray(this.pos, end) : Buffer.from(this.buf.subarray(this.pos, end))
    this.pos = end + 2
    return out
  }

  /** True when `n` data bytes and their \r\n are all there (which then must be \r\n); else notes how many bytes are awaited. */
  #complete(n: number, command: string): boolean {
    if (!Number.isSafeInteger(n) || n < 0 || n > MAX_VALUE_BYTES) throw new MemcachedProtocolError(`a data block of ${n} bytes`, command)
    if (this.#end - this.pos < n + 2) {
      this.#want = this.pos + n + 2
      return false
    }
    if (this.buf[this.pos + n] !== 0x0d || this.buf[this.pos + n + 1] !== 0x0a) {
      throw new MemcachedProtocolError(`a data block of ${n} bytes not followed by \\r\\n`, command)
    }
    return true
  }
}

/** Up to 40 bytes as text for a message, control characters escaped. */
export function preview(bytes: Uint8Array): string {
  return JSON.stringify(Buffer.from(bytes.subarray(0, 40)).toString('latin1'))
}

/** Parses one reply; returns undefined until all of it has arrived (then rewinds nothing it kept). */
export type Parser<T> = (r: ReplyReader) => { value: T } | undefined

/**
 * `text` as an unsigned decimal integer of at most `max`: digits only (no sign, space, exponent
 * or hex, unlike Number()), or a MemcachedProtocolError naming `what` and the line.
 */
function decimal(text: string | undefined, max: bigint, what: string, line: string, command: string): bigint {
  const n = text !== undefined && /^\d{1,20}$/.test(text) ? BigInt(text) : undefined
  if (n === undefined || n > max) {
    throw new MemcachedProtocolError(`${what} ${JSON.stringify(text ?? '')} (digits up to ${max} expected) in ${lineText(line)}`, command)
  }
  return n
}

/** A reply line for a message, shortened. */
function lineText(line: string): string {
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line)
}

/** A VALUE line: `VALUE <key> <flags> <bytes>`, then ` <cas>` for gets; the key must be one asked for. */
function valueHead(
  line: string,
  command: string,
  asked: ReadonlySet<string>,
  withCas: boolean,
): { key: string; flags: number; bytes: number; cas: bigint | undefined } {
  const tokens = line.split(' ')
  if (tokens[0] !== 'VALUE') throw unexpected(line, command)
  if (tokens.length !== (withCas ? 5 : 4)) {
    throw new MemcachedProtocolError(`a VALUE line of ${tokens.length} fields (${withCas ? 5 : 4} expected): ${lineText(line)}`, command)
  }
  const key = tokens[1]!
  if (!asked.has(key)) throw new MemcachedProtocolError(`a value for key ${JSON.stringify(key.slice(0, 80))}, which was not asked for`, command)
  return {
    key,
    flags: Number(decimal(tokens[2], UINT32_MAX, 'flags', line, command)),
    bytes: Number(decimal(tokens[3], BigInt(MAX_VALUE_BYTES), 'a value size', line, command)),
    cas: withCas ? decimal(tokens[4], UINT64_MAX, 'a CAS value', line, command) : undefined,
  }
}

/** The reply to `get`/`gets` naming `keys`: VALUE blocks up to END, by key; at most one block per key asked for. */
export function parseValues(command: 'get' | 'gets', keys: readonly string[]): Parser<Map<string, MemcachedItem>> {
  const asked = new Set(keys)
  const items = new Map<string, MemcachedItem>()
  let blocks = 0
  return (r) => {
    for (;;) {
      const start = r.pos
      const line = r.line(command)
      if (line === undefined) return undefined
      if (line === 'END') return { value: items }
      const head = valueHead(line, command, asked, command === 'gets')
      const value = r.data(head.bytes, command)
      if (value === undefined) {
        r.pos = start
        return undefined
      }
      if (++blocks > keys.length) throw new MemcachedProtocolError(`more values than the ${keys.length} keys asked for`, command)
      items.set(head.key, { value, flags: head.flags, cas: head.cas })
    }
  }
}

/**
 * The reply to `get` naming `keys` when only presence matters: the keys that have a value. The
 * values are skipped where they lie, never copied out (a group read asks for thousands of member keys).
 */
export function parseKeys(keys: readonly string[]): Parser<Set<string>> {
  const asked = new Set(keys)
  const present = new Set<string>()
  let blocks = 0
  return (r) => {
    for (;;) {
      const start = r.pos
      const line = r.line('get')
      if (line === undefined) return undefined
      if (line === 'END') return { value: present }
      const head = valueHead(line, 'get', asked, false)
      if (!r.skip(head.bytes, 'get')) {
        r.pos = start
        return undefined
      }
      if (++blocks > keys.length) throw new MemcachedProtocolError(`more values than the ${keys.length} keys asked for`, 'get')
      present.add(head.key)
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
      const line = r.line('mg')
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
      if (code !== 'HD' || t === undefined || !/^t(-1|\d{1,10})$/.test(t)) throw unexpected(line, 'mg')
      ttls.set(key, Number(t.slice(1)))
    }
  }
}

const META_CODES = new Set(['HD', 'VA', 'EN', 'NS', 'EX', 'NF'])
/** Returned meta flags whose values are numbers, with their largest value. */
const META_NUMBERS: Record<string, { max: bigint; what: string }> = {
  c: { max: UINT64_MAX, what: 'a CAS value' },
  f: { max: UINT32_MAX, what: 'flags' },
  s: { max: BigInt(MAX_VALUE_BYTES), what: 'a value size' },
}

/** The reply to a meta command: its code, returned flags and (for VA) the value. */
export function parseMeta(command: string): Parser<MetaReply> {
  return (r) => {
    const start = r.pos
    const line = r.line(command)
    if (line === undefined) return undefined
    const [code = '', ...tokens] = line.split(' ')
    if (!META_CODES.has(code)) throw unexpected(line, command)
    const size = code === 'VA' ? Number(decimal(tokens.shift(), BigInt(MAX_VALUE_BYTES), 'a value size', line, command)) : undefined
    const flags = new Map<string, string>()
    for (const token of tokens) {
      const letter = token.slice(0, 1)
      if (!/^[A-Za-z]$/.test(letter)) throw new MemcachedProtocolError(`a returned flag ${JSON.stringify(token.slice(0, 40))} in ${lineText(line)}`, command)
      const value = token.slice(1)
      const number = META_NUMBERS[letter]
      if (number) decimal(value, number.max, number.what, line, command)
      if (letter === 't' && value !== '-1') decimal(value, UINT32_MAX, 'a TTL', line, command)
      flags.set(letter, value)
    }
    let data: Buffer | undefined
    if (size !== undefined) {
      data = r.data(size, command)
      if (data === undefined) {
        r.pos = start
        return undefined
      }
    }
    return { value: { code, flags, value: data } }
  }
}

/** The reply to `version`. */
export const parseVersion: Parser<string> = (r) => {
  const line = r.line('version')
  if (line === undefined) return undefined
  if (!line.startsWith('VERSION ')) throw unexpected(line, 'version')
  return { value: line.slice(8) }
}

/** Throws MemcachedKeyError when `key` cannot be a memcached key. */
export function checkKey(key: string): void {
  const problem = keyProblem(key)
  if (problem) throw new MemcachedKeyError(`${JSON.stringify(key)} cannot be a memcached key: ${problem}`)
}

/** An ERROR / CLIENT_ERROR / SERVER_ERROR line as the server's error, or a protocol error for anything else. */
export function unexpected(line: string, command: string): Error {
  for (const kind of ['ERROR', 'CLIENT_ERROR', 'SERVER_ERROR'] as const) {
    if (line === kind || line.startsWith(`${kind} `)) return new MemcachedServerError(kind, line.slice(kind.length + 1), command)
  }
  return new MemcachedProtocolError(`an unexpected reply ${lineText(line)}`, command)
}

/** A one-line reply mapped through a table of expected words. */
export function simple<T>(command: string, table: Record<string, T>): Parser<T> {
  return (r) => {
    const line = r.line(command)
    if (line === undefined) return undefined
    if (!Object.hasOwn(table, line)) throw unexpected(line, command)
    return { value: table[line]! }
  }
}

/** A parser of one `stats` reply → version, pid and boot time. */
export function parseStats(): Parser<ServerStats> {
  const stats = new Map<string, string>()
  let lines = 0
  return (r) => {
    for (;;) {
      const line = r.line('stats')
      if (line === undefined) return undefined
      if (line === 'END') break
      const [word, name, value] = line.split(' ')
      if (word !== 'STAT' || name === undefined) throw unexpected(line, 'stats')
      stats.set(name, value ?? '')
      if (++lines > MAX_STAT_LINES) throw new MemcachedProtocolError(`over ${MAX_STAT_LINES} STAT lines`, 'stats')
    }
    const num = (k: string): number | undefined => (stats.has(k) && Number.isFinite(Number(stats.get(k))) ? Number(stats.get(k)) : undefined)
    const time = num('time')
    const uptime = num('uptime')
    return {
      value: { version: stats.get('version') ?? 'unknown', pid: num('pid'), bootedAt: time !== undefined && uptime !== undefined ? time - uptime : undefined },
    }
  }
}
