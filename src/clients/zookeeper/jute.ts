/**
 * Jute, ZooKeeper's wire encoding (zookeeper-jute, BinaryOutputArchive / BinaryInputArchive):
 * big-endian ints (4 bytes) and longs (8), booleans as one byte, buffers and strings as an int
 * length (-1 for null) followed by the bytes, vectors as an int count followed by the items.
 *
 * A reader never reads past its frame: a field that does not fit, or a length that is negative
 * or larger than what is left, throws ZkFrameError, so a truncated or hostile frame is a typed
 * error, never an out-of-range read or a huge allocation.
 */
import { ZkFrameError } from './zookeeper-errors.js'

/** Grows a buffer as fields are appended; `finish()` returns the bytes written. */
export class JuteWriter {
  #buf: Buffer
  #at = 0

  constructor(sizeHint = 256) {
    this.#buf = Buffer.allocUnsafe(sizeHint)
  }

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + n))
    this.#buf.copy(next, 0, 0, this.#at)
    this.#buf = next
  }

  int(v: number): this {
    this.#room(4)
    this.#at = this.#buf.writeInt32BE(v, this.#at)
    return this
  }

  long(v: bigint): this {
    this.#room(8)
    this.#at = this.#buf.writeBigInt64BE(v, this.#at)
    return this
  }

  bool(v: boolean): this {
    this.#room(1)
    this.#at = this.#buf.writeUInt8(v ? 1 : 0, this.#at)
    return this
  }

  /** A length-prefixed buffer; undefined is jute's null (-1). */
  buffer(v: Uint8Array | undefined): this {
    if (v === undefined) return this.int(-1)
    this.int(v.byteLength)
    this.#room(v.byteLength)
    this.#buf.set(v, this.#at)
    this.#at += v.byteLength
    return this
  }

  /** A length-prefixed UTF-8 string. */
  string(v: string): this {
    const n = Buffer.byteLength(v, 'utf8')
    this.int(n)
    this.#room(n)
    this.#at += this.#buf.write(v, this.#at, 'utf8')
    return this
  }

  stringVector(v: readonly string[]): this {
    this.int(v.length)
    for (const s of v) this.string(s)
    return this
  }

  /** The bytes written so far. */
  finish(): Buffer {
    return this.#buf.subarray(0, this.#at)
  }
}

/** Reads fields from one frame, refusing to read past it. */
export class JuteReader {
  readonly #buf: Buffer
  #at: number

  constructor(buf: Buffer, at = 0) {
    this.#buf = buf
    this.#at = at
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.#buf.length - this.#at
  }

  #need(n: number, what: string): void {
    if (n > this.remaining) throw new ZkFrameError(`a ZooKeeper frame ended inside ${what} (${n} bytes needed at offset ${this.#at}, ${this.remaining} left)`)
  }

  int(what = 'an int'): number {
    this.#need(4, what)
    const v = this.#buf.readInt32BE(this.#at)
    this.#at += 4
    return v
  }

  long(what = 'a long'): bigint {
    this.#need(8, what)
    const v = this.#buf.readBigInt64BE(this.#at)
    this.#at += 8
    return v
  }

  bool(what = 'a boolean'): boolean {
    this.#need(1, what)
    return this.#buf[this.#at++] !== 0
  }

  /** A length-prefixed buffer (a copy-free view into the frame); null becomes empty. */
  buffer(what = 'a buffer'): Buffer {
    const n = this.int(`the length of ${what}`)
    if (n === -1) return Buffer.alloc(0)
    if (n < -1) throw new ZkFrameError(`a ZooKeeper frame gives ${what} a negative length (${n})`)
    this.#need(n, what)
    const v = this.#buf.subarray(this.#at, this.#at + n)
    this.#at += n
    return v
  }

  /** Steps over `n` bytes (a field nobody reads). */
  skip(n: number, what = 'a field'): void {
    this.#need(n, what)
    this.#at += n
  }

  string(what = 'a string'): string {
    return this.buffer(what).toString('utf8')
  }

  stringVector(what = 'a list of strings'): string[] {
    const n = this.int(`the length of ${what}`)
    if (n === -1) return []
    // Each string takes at least its 4-byte length: a count larger than that is a lie.
    if (n < -1 || n * 4 > this.remaining) throw new ZkFrameError(`a ZooKeeper frame gives ${what} an impossible length (${n})`)
    const out: string[] = new Array<string>(n)
    for (let i = 0; i < n; i++) out[i] = this.string(what)
    return out
  }
}
