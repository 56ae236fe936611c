/**
 * The msgpack encoder: {@link dumps} and its byte writer. The type mapping is on index.ts.
 */
import { SerializationError } from '../../errors.js'
import { hasLoneSurrogate } from '../../internal/unicode.js'
import { EXT_DATETIME, EXT_SET, ExtData, MAX_DEPTH } from './ext.js'

const utf8 = new TextEncoder()

/** Encodes a value as oslo/tooz msgpack. Throws SerializationError naming the bad path. */
export function dumps(value: unknown): Uint8Array {
  const w = new Writer()
  w.value(value, '$', 0)
  return w.finish()
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

/**
 * oslo's datetime payload: these keys, in this order; naive (no `tz`). The fields are `d`'s UTC
 * ones (what dumps() writes), or its local wall-clock ones (tooz's file driver writes Python's
 * naive `datetime.now()`).
 */
export function datetimeFields(d: Date, clock: 'utc' | 'local' = 'utc'): Record<string, number> {
  const utc = clock === 'utc'
  return {
    day: utc ? d.getUTCDate() : d.getDate(),
    month: (utc ? d.getUTCMonth() : d.getMonth()) + 1,
    year: utc ? d.getUTCFullYear() : d.getFullYear(),
    hour: utc ? d.getUTCHours() : d.getHours(),
    minute: utc ? d.getUTCMinutes() : d.getMinutes(),
    second: utc ? d.getUTCSeconds() : d.getSeconds(),
    microsecond: (utc ? d.getUTCMilliseconds() : d.getMilliseconds()) * 1000,
  }
}
