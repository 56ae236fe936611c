/**
 * The two records tooz's file driver keeps on disk, byte for byte as Python tooz 3.1 writes them
 * (`tooz/drivers/file.py`, encoded with oslo msgpack):
 *
 * - a group's `.metadata`: `{'group_id': bin, 'encoded': bool}`;
 * - a member's `<sha1>.raw`: `{'capabilities': <any>, 'joined_on': datetime, 'member_id': bin,
 *   'encoded': bool}`, in that key order. `joined_on` is Python's `datetime.now()`: a naive
 *   datetime in the writer's *local* time, as oslo's ext 1.
 *
 * Capabilities cross the driver boundary as encoded msgpack, so a member record is split into the
 * raw bytes of each value rather than decoded whole: the capabilities go out exactly as written,
 * and a record whose capabilities cannot be decoded still yields its member id.
 *
 * Files written before tooz 1.36 (by Python 2) are still read, as tooz reads them: map keys may be
 * bytes, ids may be str, and `encoded` may be missing.
 */
import { createHash } from 'node:crypto'
import { SerializationError } from '../../../errors.js'
import { dumps, ExtData, loads } from '../../codec.js'

const EXT_DATETIME = 1
const MAX_DEPTH = 100
const NIL = Uint8Array.of(0xc0)
const utf8 = new TextEncoder()
const utf8Strict = new TextDecoder('utf-8', { fatal: true })

/** `sha1(utf8(id)).hexdigest()`: the file-system-safe name tooz gives a group or member id. */
export function safeName(id: string): string {
  return createHash('sha1').update(id, 'utf8').digest('hex')
}

/** A member's `.raw` record, as read. */
export interface MemberRecord {
  readonly memberId: string
  /** The capabilities value's own msgpack bytes (nil when the record has none). */
  readonly capabilities: Uint8Array
  /** `joined_on`, read as local time; undefined when absent or not a datetime. */
  readonly joinedOn: Date | undefined
  /** The encoded `joined_on` value, kept unchanged when the record is rewritten. */
  readonly joinedOnRaw: Uint8Array | undefined
}

/** A record that cannot be read; `memberId` is set when the id itself was readable. */
export class CorruptRecordError extends SerializationError {
  constructor(message: string, readonly memberId?: string, cause?: unknown) {
    super(message, cause === undefined ? {} : { cause })
  }
}

/** A group's `.metadata`. rollcall ids are written as bytes (`encoded: False`), tooz's documented id type. */
export function encodeGroupMetadata(groupId: string): Uint8Array {
  return dumps({ group_id: utf8.encode(groupId), encoded: false })
}

/** The group id a `.metadata` names. Throws CorruptRecordError. */
export function decodeGroupMetadata(bytes: Uint8Array): string {
  const fields = splitMap(bytes).fields
  const raw = fields.get('group_id')
  if (raw === undefined) throw new CorruptRecordError('the group metadata has no group_id')
  return decodeId(raw, 'group_id')
}

/**
 * A member's `.raw` record. `joinedOn` is a Date (written as its local time, as Python's naive
 * `datetime.now()`) or the raw encoded value of an earlier record's `joined_on`.
 */
export function encodeMemberRecord(memberId: string, capabilities: Uint8Array, joinedOn: Date | Uint8Array): Uint8Array {
  const parts = [
    Uint8Array.of(0x84),
    dumps('capabilities'), capabilities,
    dumps('joined_on'), joinedOn instanceof Date ? encodeNaiveLocal(joinedOn) : joinedOn,
    dumps('member_id'), dumps(utf8.encode(memberId)),
    dumps('encoded'), dumps(false),
  ]
  return Buffer.concat(parts)
}

/** Reads a member's `.raw` record. Throws CorruptRecordError (with `memberId` when it was readable). */
export function decodeMemberRecord(bytes: Uint8Array): MemberRecord {
  const { fields, error } = splitMap(bytes)
  const rawId = fields.get('member_id')
  if (rawId === undefined) {
    throw new CorruptRecordError(error ? `not a member record (${error.message})` : 'the member record has no member_id', undefined, error)
  }
  const memberId = decodeId(rawId, 'member_id')
  if (error) throw new CorruptRecordError(`the record of member ${JSON.stringify(memberId)} is malformed after its member_id (${error.message})`, memberId, error)
  const joinedOnRaw = fields.get('joined_on')
  return { memberId, capabilities: fields.get('capabilities') ?? NIL, joinedOn: joinedOnRaw && readNaiveLocal(joinedOnRaw), joinedOnRaw }
}

/** oslo's datetime ext with the local wall-clock fields of `d` (Python's naive `datetime.now()`). */
function encodeNaiveLocal(d: Date): Uint8Array {
  const fields = {
    day: d.getDate(), month: d.getMonth() + 1, year: d.getFullYear(),
    hour: d.getHours(), minute: d.getMinutes(), second: d.getSeconds(), microsecond: d.getMilliseconds() * 1000,
  }
  return dumps(new ExtData(EXT_DATETIME, dumps(fields)))
}

/** The codec reads a naive datetime as UTC; tooz's file driver means local time. */
function readNaiveLocal(raw: Uint8Array): Date | undefined {
  let d: unknown
  try {
    d = loads(raw)
  } catch {
    return undefined
  }
  if (!(d instanceof Date)) return undefined
  const local = new Date(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds())
  return Number.isNaN(local.getTime()) ? undefined : local
}

/** An id stored as bin (UTF-8, tooz ≥ 1.36) or as str (older Python 3 writers). */
function decodeId(raw: Uint8Array, key: string): string {
  let v: unknown
  try {
    v = loads(raw)
  } catch (err) {
    throw new CorruptRecordError(`its ${key} is not valid msgpack`, undefined, err)
  }
  if (typeof v === 'string') return v
  if (v instanceof Uint8Array) {
    try {
      return utf8Strict.decode(v)
    } catch (err) {
      throw new CorruptRecordError(`its ${key} is not UTF-8, so rollcall cannot name it`, undefined, err)
    }
  }
  throw new CorruptRecordError(`its ${key} is neither bytes nor a string`)
}

/**
 * Splits a top-level msgpack map into key → the raw bytes of its value. Keys may be str or bin
 * (pre-1.36 files). Stops at the first malformed entry and returns what came before with the error.
 */
function splitMap(bytes: Uint8Array): { fields: Map<string, Uint8Array>; error: Error | undefined } {
  const fields = new Map<string, Uint8Array>()
  try {
    const t = bytes[0]
    let n: number
    let pos: number
    if (t !== undefined && t >= 0x80 && t <= 0x8f) [n, pos] = [t & 0x0f, 1]
    else if (t === 0xde) [n, pos] = [readUint(bytes, 1, 2), 3]
    else if (t === 0xdf) [n, pos] = [readUint(bytes, 1, 4), 5]
    else throw new SerializationError(bytes.length === 0 ? 'the file is empty' : 'it is not a msgpack map')
    for (let i = 0; i < n; i++) {
      const keyEnd = skip(bytes, pos, 0)
      const key = loads(bytes.subarray(pos, keyEnd))
      const valueEnd = skip(bytes, keyEnd, 0)
      const name = typeof key === 'string' ? key : key instanceof Uint8Array ? Buffer.from(key).toString('utf8') : undefined
      // A plain Uint8Array copy: a Buffer here would make the codec decode bin values as Buffers.
      if (name !== undefined) fields.set(name, new Uint8Array(bytes.subarray(keyEnd, valueEnd)))
      pos = valueEnd
    }
    if (pos !== bytes.length) throw new SerializationError(`${bytes.length - pos} bytes left over after the map`)
    return { fields, error: undefined }
  } catch (err) {
    return { fields, error: err as Error }
  }
}

function readUint(b: Uint8Array, pos: number, width: 1 | 2 | 4): number {
  if (pos + width > b.length) throw new SerializationError(`truncated at byte ${pos}`)
  let v = 0
  for (let i = 0; i < width; i++) v = v * 256 + b[pos + i]!
  return v
}

/** The end offset of the msgpack value starting at `pos` (structure only; contents are not checked). */
function skip(b: Uint8Array, pos: number, depth: number): number {
  if (depth > MAX_DEPTH) throw new SerializationError(`nested deeper than ${MAX_DEPTH} levels`)
  if (pos >= b.length) throw new SerializationError(`truncated at byte ${pos}`)
  const t = b[pos]!
  const after = (end: number): number => {
    if (end > b.length) throw new SerializationError(`truncated at byte ${b.length}`)
    return end
  }
  const items = (count: number, start: number): number => {
    let p = start
    for (let i = 0; i < count; i++) p = skip(b, p, depth + 1)
    return p
  }
  if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) return pos + 1
  if (t >= 0xa0 && t <= 0xbf) return after(pos + 1 + (t & 0x1f))
  if (t >= 0x90 && t <= 0x9f) return items(t & 0x0f, pos + 1)
  if (t >= 0x80 && t <= 0x8f) return items(2 * (t & 0x0f), pos + 1)
  switch (t) {
    case 0xc4: case 0xd9: return after(pos + 2 + readUint(b, pos + 1, 1))
    case 0xc5: case 0xda: return after(pos + 3 + readUint(b, pos + 1, 2))
    case 0xc6: case 0xdb: return after(pos + 5 + readUint(b, pos + 1, 4))
    case 0xc7: return after(pos + 3 + readUint(b, pos + 1, 1))
    case 0xc8: return after(pos + 4 + readUint(b, pos + 1, 2))
    case 0xc9: return after(pos + 6 + readUint(b, pos + 1, 4))
    case 0xcc: case 0xd0: return after(pos + 2)
    case 0xcd: case 0xd1: return after(pos + 3)
    case 0xca: case 0xce: case 0xd2: return after(pos + 5)
    case 0xcb: case 0xcf: case 0xd3: return after(pos + 9)
    case 0xd4: return after(pos + 3)
    case 0xd5: return after(pos + 4)
    case 0xd6: return after(pos + 6)
    case 0xd7: return after(pos + 10)
    case 0xd8: return after(pos + 18)
    case 0xdc: return items(readUint(b, pos + 1, 2), pos + 3)
    case 0xdd: return items(readUint(b, pos + 1, 4), pos + 5)
    case 0xde: return items(2 * readUint(b, pos + 1, 2), pos + 3)
    case 0xdf: return items(2 * readUint(b, pos + 1, 4), pos + 5)
    default: throw new SerializationError(`byte 0x${t.toString(16)} at ${pos} starts no msgpack value`)
  }
}
