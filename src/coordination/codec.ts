/**
 * msgpack exactly as tooz writes it (`oslo_serialization.msgpackutils`, `use_bin_type=True`),
 * so that a value written by Python reads back here unchanged and the reverse, byte for byte.
 *
 * Type mapping (JS ⇄ Python):
 * - `string` ⇄ `str` (msgpack str); `Uint8Array` ⇄ `bytes` (msgpack bin);
 * - `number` ⇄ `int` when a safe integer (smallest encoding, as Python's msgpack picks it), else
 *   `float` (float64; `-0` and integers past 2^53 included, since JS holds them as floats);
 *   `bigint` ⇄ `int` of any 64-bit size (a Python int outside ±2^53 decodes as `bigint`);
 * - plain object ⇄ `dict` with str keys; a `dict` with any non-str key decodes to a `Map`, and a
 *   `Map` encodes with its keys as they are (this is how tooz's memcached driver keys by bytes);
 * - `Set` ⇄ `set` (oslo ext 4; `frozenset`, ext 5, decodes to a `Set` too);
 * - `Date` ⇄ naive `datetime` in UTC (oslo ext 1; a `date`, ext 7, decodes to midnight UTC);
 * - a `uuid.UUID` (ext 0) decodes to its canonical string; unknown ext codes decode to
 *   {@link ExtData} and re-encode unchanged.
 * - `undefined` object properties are left out (as JSON does); `undefined` elsewhere is nil.
 */
import { SerializationError } from '../errors.js'
import { hasLoneSurrogate } from '../internal/unicode.js'

/** An msgpack extension value rollcall does not interpret; it round-trips unchanged. */
export class ExtData {
  constructor(readonly type: number, readonly data: Uint8Array) {}
}

const MAX_DEPTH = 100
const utf8 = new TextEncoder()
const utf8Strict = new TextDecoder('utf-8', { fatal: true })
const EXT_UUID = 0
const EXT_DATETIME = 1
const EXT_SET = 4
const EXT_FROZENSET = 5
const EXT_DATE = 7

/** Encodes a value as oslo/tooz msgpack. Throws SerializationError naming the bad path. */
export function dumps(value: unknown): Uint8Array {
  const w = new Writer()
  w.value(value, '$', 0)
  return w.finish()
}

/** Decodes oslo/tooz msgpack. Throws SerializationError on malformed or truncated input. */
export function loads(bytes: Uint8Array): unknown {
  const r = new Reader(bytes)
  const value = r.value(0)
  if (r.pos !== bytes.length) {
    throw new SerializationError(`Not valid msgpack: ${bytes.length - r.pos} bytes left over after the value`)
  }
  return value
}

class Writer {
  #buf = new Uint8Array(256)
  #view = new DataView(this.#buf.buffer)
  #len = 0

  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len)
  }

  #ensure(n: number): void {
    if (this.#len + n <= this.#buf.length) return
    let size = this.#buf.length * 2
    while (size < this.#len + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.#buf.subarray(0, this.#len))
    this.#buf = next
    this.#view = new DataView(next.buffer)
  }

  #u8(b: number): void {
    this.#ensure(1)
    this.#buf[this.#len++] = b
  }

  #head(tag: number, width: 1 | 2 | 4 | 8, n: number | bigint): void {
    this.#ensure(1 + width)
    this.#buf[this.#len++] = tag
    if (width === 1) this.#view.setUint8(this.#len, Number(n))
    else if (width === 2) this.#view.setUint16(this.#len, Number(n))
    else if (width === 4) this.#view.setUint32(this.#len, Number(n))
    else this.#view.setBigUint64(this.#len, BigInt.asUintN(64, BigInt(n)))
    this.#len += width
  }

  #bytes(b: Uint8Array): void {
    this.#ensure(b.length)
    this.#buf.set(b, this.#len)
    this.#len += b.length
  }

  #sized(n: number, fix: number | undefined, fixMax: number, t8: number | undefined, t16: number, t32: number): void {
    if (fix !== undefined && n <= fixMax) this.#u8(fix | n)
    else if (t8 !== undefined && n < 0x100) this.#head(t8, 1, n)
    else if (n < 0x10000) this.#head(t16, 2, n)
    else this.#head(t32, 4, n)
  }

  value(v: unknown, path: string, depth: number): void {
    if (depth > MAX_DEPTH) throw new SerializationError(`Cannot encode ${path}: nested deeper than ${MAX_DEPTH} levels`)
    if (v === null || v === undefined) return this.#u8(0xc0)
    switch (typeof v) {
      case 'boolean':
        return this.#u8(v ? 0xc3 : 0xc2)
      case 'number':
        return Number.isSafeInteger(v) && !Object.is(v, -0) ? this.#int(BigInt(v), path) : this.#float(v)
      case 'bigint':
        return this.#int(v, path)
      case 'string': {
        // TextEncoder would put U+FFFD in place of a lone surrogate: refuse it, as Python's msgpack does.
        if (hasLoneSurrogate(v)) throw new SerializationError(`Cannot encode ${path}: the string has a lone UTF-16 surrogate, which has no UTF-8 form`)
        const b = utf8.encode(v)
        this.#sized(b.length, 0xa0, 31, 0xd9, 0xda, 0xdb)
        return this.#bytes(b)
      }
      case 'object':
        return this.#object(v, path, depth)
      default:
        throw new SerializationError(
          `Cannot encode ${path}: a ${typeof v} has no msgpack form; use strings, numbers, booleans, null, arrays, plain objects, Uint8Array, Set or Date`,
        )
    }
  }

  #int(n: bigint, path: string): void {
    if (n >= 0n) {
      if (n < 0x80n) this.#u8(Number(n))
      else if (n < 0x100n) this.#head(0xcc, 1, n)
      else if (n < 0x10000n) this.#head(0xcd, 2, n)
      else if (n < 0x100000000n) this.#head(0xce, 4, n)
      else if (n < 0x10000000000000000n) this.#head(0xcf, 8, n)
      else throw new SerializationError(`Cannot encode ${path}: ${n} does not fit in 64 bits`)
    } else if (n >= -32n) this.#u8(Number(n) & 0xff)
    else if (n >= -0x80n) this.#head(0xd0, 1, n & 0xffn)
    else if (n >= -0x8000n) this.#head(0xd1, 2, n & 0xffffn)
    else if (n >= -0x80000000n) this.#head(0xd2, 4, n & 0xffffffffn)
    else if (n >= -0x8000000000000000n) this.#head(0xd3, 8, n)
    else throw new SerializationError(`Cannot encode ${path}: ${n} does not fit in 64 bits`)
  }

  #float(n: number): void {
    this.#ensure(9)
    this.#buf[this.#len++] = 0xcb
    this.#view.setFloat64(this.#len, n)
    this.#len += 8
  }

  #ext(type: number, data: Uint8Array): void {
    const n = data.length
    const fixed = { 1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8 }[n]
    if (fixed !== undefined) this.#u8(fixed)
    else this.#sized(n, undefined, 0, 0xc7, 0xc8, 0xc9)
    this.#u8(type & 0xff)
    this.#bytes(data)
  }

  #object(v: object, path: string, depth: number): void {
    if (v instanceof Uint8Array) {
      this.#sized(v.length, undefined, 0, 0xc4, 0xc5, 0xc6)
      return this.#bytes(v)
    }
    if (Array.isArray(v)) {
      this.#sized(v.length, 0x90, 15, undefined, 0xdc, 0xdd)
      v.forEach((item, i) => this.value(item, `${path}[${i}]`, depth + 1))
      return
    }
    if (v instanceof Map) {
      this.#sized(v.size, 0x80, 15, undefined, 0xde, 0xdf)
      for (const [k, item] of v) {
        this.value(k, `${path} key`, depth + 1)
        this.value(item, `${path}[${String(k)}]`, depth + 1)
      }
      return
    }
    if (v instanceof Set) return this.#ext(EXT_SET, dumps([...v]))
    if (v instanceof Date) {
      if (Number.isNaN(v.getTime())) throw new SerializationError(`Cannot encode ${path}: invalid Date`)
      return this.#ext(EXT_DATETIME, dumps(datetimeFields(v)))
    }
    if (v instanceof ExtData) return this.#ext(v.type, v.data)
    const proto = Object.getPrototypeOf(v)
    if (proto !== Object.prototype && proto !== null) {
      throw new SerializationError(`Cannot encode ${path}: instances of ${proto?.constructor?.name ?? 'this class'} have no msgpack form; pass a plain object`)
    }
    const entries = Object.entries(v).filter(([, item]) => item !== undefined)
    this.#sized(entries.length, 0x80, 15, undefined, 0xde, 0xdf)
    for (const [k, item] of entries) {
      this.value(k, path, depth + 1)
      this.value(item, `${path}.${k}`, depth + 1)
    }
  }
}

/** oslo's datetime payload: these keys, in this order; naive (no `tz`). */
function datetimeFields(d: Date): Record<string, number> {
  return {
    day: d.getUTCDate(),
    month: d.getUTCMonth() + 1,
    year: d.getUTCFullYear(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    microsecond: d.getUTCMilliseconds() * 1000,
  }
}

class Reader {
  pos = 0
  readonly #view: DataView

  constructor(readonly bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  #need(n: number): void {
    if (this.pos + n > this.bytes.length) {
      throw new SerializationError(`Not valid msgpack: truncated at byte ${this.pos} of ${this.bytes.length}`)
    }
  }

  #uint(width: 1 | 2 | 4): number {
    this.#need(width)
    const v = width === 1 ? this.#view.getUint8(this.pos) : width === 2 ? this.#view.getUint16(this.pos) : this.#view.getUint32(this.pos)
    this.pos += width
    return v
  }

  #take(n: number): Uint8Array {
    this.#need(n)
    // A copy, as a plain Uint8Array: Buffer's slice() would return a view aliasing the input.
    const out = new Uint8Array(this.bytes.subarray(this.pos, this.pos + n))
    this.pos += n
    return out
  }

  #str(n: number): string {
    this.#need(n)
    const start = this.pos
    const end = start + n
    this.pos = end
    const b = this.bytes
    // Short ASCII strings (map keys, most values) by hand: cheaper than a TextDecoder call.
    if (n <= 32) {
      let out = ''
      for (let i = start; i < end; i++) {
        const c = b[i]!
        if (c >= 0x80) return this.#utf8(start, end)
        out += String.fromCharCode(c)
      }
      return out
    }
    return this.#utf8(start, end)
  }

  #utf8(start: number, end: number): string {
    try {
      return utf8Strict.decode(this.bytes.subarray(start, end))
    } catch {
      throw new SerializationError(`Not valid msgpack: a str at byte ${start} is not UTF-8`)
    }
  }

  value(depth: number): unknown {
    if (depth > MAX_DEPTH) throw new SerializationError(`Not accepted: msgpack nested deeper than ${MAX_DEPTH} levels`)
    const t = this.#uint(1)
    if (t <= 0x7f) return t
    if (t >= 0xe0) return t - 0x100
    if (t >= 0xa0 && t <= 0xbf) return this.#str(t & 0x1f)
    if (t >= 0x90 && t <= 0x9f) return this.#array(t & 0x0f, depth)
    if (t >= 0x80 && t <= 0x8f) return this.#map(t & 0x0f, depth)
    switch (t) {
      case 0xc0:
        return null
      case 0xc2:
        return false
      case 0xc3:
        return true
      case 0xc4:
        return this.#take(this.#uint(1))
      case 0xc5:
        return this.#take(this.#uint(2))
      case 0xc6:
        return this.#take(this.#uint(4))
      case 0xc7:
        return this.#ext(this.#uint(1))
      case 0xc8:
        return this.#ext(this.#uint(2))
      case 0xc9:
        return this.#ext(this.#uint(4))
      case 0xca: {
        this.#need(4)
        const v = this.#view.getFloat32(this.pos)
        this.pos += 4
        return v
      }
      case 0xcb: {
        this.#need(8)
        const v = this.#view.getFloat64(this.pos)
        this.pos += 8
        return v
      }
      case 0xcc:
        return this.#uint(1)
      case 0xcd:
        return this.#uint(2)
      case 0xce:
        return this.#uint(4)
      case 0xcf: {
        this.#need(8)
        const v = this.#view.getBigUint64(this.pos)
        this.pos += 8
        return narrow(v)
      }
      case 0xd0: {
        this.#need(1)
        const v = this.#view.getInt8(this.pos)
        this.pos += 1
        return v
      }
      case 0xd1: {
        this.#need(2)
        const v = this.#view.getInt16(this.pos)
        this.pos += 2
        return v
      }
      case 0xd2: {
        this.#need(4)
        const v = this.#view.getInt32(this.pos)
        this.pos += 4
        return v
      }
      case 0xd3: {
        this.#need(8)
        const v = this.#view.getBigInt64(this.pos)
        this.pos += 8
        return narrow(v)
      }
      case 0xd4:
        return this.#ext(1)
      case 0xd5:
        return this.#ext(2)
      case 0xd6:
        return this.#ext(4)
      case 0xd7:
        return this.#ext(8)
      case 0xd8:
        return this.#ext(16)
      case 0xd9:
        return this.#str(this.#uint(1))
      case 0xda:
        return this.#str(this.#uint(2))
      case 0xdb:
        return this.#str(this.#uint(4))
      case 0xdc:
        return this.#array(this.#uint(2), depth)
      case 0xdd:
        return this.#array(this.#uint(4), depth)
      case 0xde:
        return this.#map(this.#uint(2), depth)
      case 0xdf:
        return this.#map(this.#uint(4), depth)
      default:
        throw new SerializationError(`Not valid msgpack: byte 0x${t.toString(16)} at ${this.pos - 1} starts no value`)
    }
  }

  #array(n: number, depth: number): unknown[] {
    // Every element takes at least one byte: refuse counts the input cannot hold before allocating.
    this.#need(n)
    const out = new Array<unknown>(n)
    for (let i = 0; i < n; i++) out[i] = this.value(depth + 1)
    return out
  }

  #map(n: number, depth: number): Record<string, unknown> | Map<unknown, unknown> {
    this.#need(2 * n)
    const entries: [unknown, unknown][] = []
    let allStrings = true
    for (let i = 0; i < n; i++) {
      const k = this.value(depth + 1)
      if (typeof k !== 'string') allStrings = false
      entries.push([k, this.value(depth + 1)])
    }
    if (!allStrings) return new Map(entries)
    const obj: Record<string, unknown> = {}
    for (const [k, v] of entries) {
      // A key named "__proto__" must be data, not a prototype change.
      if (k === '__proto__') Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true })
      else obj[k as string] = v
    }
    return obj
  }

  #ext(n: number): unknown {
    this.#need(1)
    const type = this.#view.getInt8(this.pos)
    this.pos += 1
    const data = this.#take(n)
    switch (type) {
      case EXT_UUID: {
        const hex = new TextDecoder().decode(data)
        if (!/^[0-9a-f]{32}$/i.test(hex)) throw new SerializationError('Not valid oslo msgpack: a UUID (ext 0) that is not 32 hex digits')
        return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`.toLowerCase()
      }
      case EXT_DATETIME:
      case EXT_DATE:
        return toDate(loads(data))
      case EXT_SET:
      case EXT_FROZENSET: {
        const items = loads(data)
        if (!Array.isArray(items)) throw new SerializationError('Not valid oslo msgpack: a set (ext 4/5) whose payload is not an array')
        return new Set(items)
      }
      default:
        return new ExtData(type, data)
    }
  }
}

function narrow(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v
}

function toDate(payload: unknown): Date {
  // oslo.serialization <= 2.4.1 under Python 2 wrote the keys as bytes.
  const f = (payload instanceof Map
    ? Object.fromEntries([...payload].map(([k, v]) => [k instanceof Uint8Array ? new TextDecoder().decode(k) : String(k), v]))
    : payload) as Record<string, unknown> | null
  const num = (k: string, dflt: number): number => (typeof f?.[k] === 'number' ? (f[k] as number) : dflt)
  if (!f || typeof f !== 'object' || typeof f.year !== 'number') {
    throw new SerializationError('Not valid oslo msgpack: a datetime (ext 1/7) without year, month and day')
  }
  const d = new Date(
    Date.UTC(
      num('year', 1970),
      num('month', 1) - 1,
      num('day', 1),
      num('hour', 0),
      num('minute', 0),
      num('second', 0),
      Math.floor(num('microsecond', 0) / 1000),
    ),
  )
  if (f.year < 100) d.setUTCFullYear(f.year)
  return d
}
