/**
 * The msgpack decoder: {@link loads} and its byte reader. The type mapping is on index.ts.
 */
import { SerializationError } from '../../errors.js'
import { EXT_DATE, EXT_DATETIME, EXT_FROZENSET, EXT_SET, EXT_UUID, ExtData, MAX_DEPTH } from './ext.js'
import { strictUtf8 } from '../../internal/unicode.js'

/** Decodes oslo/tooz msgpack. Throws SerializationError on malformed or truncated input. */
export function loads(bytes: Uint8Array): unknown {
  const r = new Reader(bytes)
  const value = r.value(0)
  if (r.pos !== bytes.length) {
    throw new SerializationError(`Not valid msgpack: ${bytes.length - r.pos} bytes left over after the value`)
  }
  return value
}

/** DataView readers of msgpack's fixed-width numbers, by type (module-level: a decode allocates no closure). */
const READ = {
  float32: (view: DataView, at: number): number => view.getFloat32(at),
  float64: (view: DataView, at: number): number => view.getFloat64(at),
  uint64: (view: DataView, at: number): bigint => view.getBigUint64(at),
  int8: (view: DataView, at: number): number => view.getInt8(at),
  int16: (view: DataView, at: number): number => view.getInt16(at),
  int32: (view: DataView, at: number): number => view.getInt32(at),
  int64: (view: DataView, at: number): bigint => view.getBigInt64(at),
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

  /** A big-endian number of `width` bytes, read with `read`. */
  #fixed<T>(width: number, read: (view: DataView, at: number) => T): T {
    this.#need(width)
    const v = read(this.#view, this.pos)
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
      return strictUtf8.decode(this.bytes.subarray(start, end))
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
      case 0xca:
        return this.#fixed(4, READ.float32)
      case 0xcb:
        return this.#fixed(8, READ.float64)
      case 0xcc:
        return this.#uint(1)
      case 0xcd:
        return this.#uint(2)
      case 0xce:
        return this.#uint(4)
      case 0xcf:
        return narrow(this.#fixed(8, READ.uint64))
      case 0xd0:
        return this.#fixed(1, READ.int8)
      case 0xd1:
        return this.#fixed(2, READ.int16)
      case 0xd2:
        return this.#fixed(4, READ.int32)
      case 0xd3:
        return narrow(this.#fixed(8, READ.int64))
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
