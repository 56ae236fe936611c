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
import { dumps, ExtData, loads } from '../../codec/index.js'
import { splitMap } from '../../codec/scan.js'
import { datetimeFields } from '../../codec/encode.js'
import { EXT_DATETIME } from '../../codec/ext.js'
import { strictUtf8 } from '../../../internal/unicode.js'

const NIL = Uint8Array.of(0xc0)
const utf8 = new TextEncoder()

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
  const fields = fieldsOf(bytes).fields
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
    dumps('capabilities'),
    capabilities,
    dumps('joined_on'),
    joinedOn instanceof Date ? encodeNaiveLocal(joinedOn) : joinedOn,
    dumps('member_id'),
    dumps(utf8.encode(memberId)),
    dumps('encoded'),
    dumps(false),
  ]
  return Buffer.concat(parts)
}

/** Reads a member's `.raw` record. Throws CorruptRecordError (with `memberId` when it was readable). */
export function decodeMemberRecord(bytes: Uint8Array): MemberRecord {
  const { fields, error } = fieldsOf(bytes)
  const rawId = fields.get('member_id')
  if (rawId === undefined) {
    throw new CorruptRecordError(error ? `not a member record (${error.message})` : 'the member record has no member_id', undefined, error)
  }
  const memberId = decodeId(rawId, 'member_id')
  if (error) {
    throw new CorruptRecordError(`the record of member ${JSON.stringify(memberId)} is malformed after its member_id (${error.message})`, memberId, error)
  }
  const joinedOnRaw = fields.get('joined_on')
  return { memberId, capabilities: fields.get('capabilities') ?? NIL, joinedOn: joinedOnRaw && readNaiveLocal(joinedOnRaw), joinedOnRaw }
}

/** oslo's datetime ext with the local wall-clock fields of `d` (Python's naive `datetime.now()`). */
function encodeNaiveLocal(d: Date): Uint8Array {
  return dumps(new ExtData(EXT_DATETIME, dumps(datetimeFields(d, 'local'))))
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
      return strictUtf8.decode(v)
    } catch (err) {
      throw new CorruptRecordError(`its ${key} is not UTF-8, so rollcall cannot name it`, undefined, err)
    }
  }
  throw new CorruptRecordError(`its ${key} is neither bytes nor a string`)
}

/**
 * A top-level msgpack map as key → the raw bytes of its value. Keys may be str or bin (pre-1.36
 * files). Stops at the first malformed entry and returns what came before with the error.
 */
function fieldsOf(bytes: Uint8Array): { fields: Map<string, Uint8Array>; error: Error | undefined } {
  const fields = new Map<string, Uint8Array>()
  const { entries, error } = splitMap(bytes)
  for (const entry of entries) {
    let key: unknown
    try {
      key = loads(entry.key)
    } catch (err) {
      return { fields, error: err as Error }
    }
    const name = typeof key === 'string' ? key : key instanceof Uint8Array ? Buffer.from(key).toString('utf8') : undefined
    // A plain Uint8Array copy: a Buffer here would make the codec decode bin values as Buffers.
    if (name !== undefined) fields.set(name, new Uint8Array(entry.value))
  }
  return { fields, error }
}
