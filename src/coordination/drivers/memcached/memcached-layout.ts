/**
 * The memcached keys and values exactly as tooz's memcached driver lays them out
 * (shared/reference/layouts/memcached.txt, Python tooz 3.1 with pymemcache):
 *
 * | key | value (client flags) | expiry |
 * |---|---|---|
 * | `_TOOZ_GROUP_LIST` | msgpack list of group ids, bin (2) | none |
 * | `_TOOZ_GROUP_<gid>` | msgpack map `{member_id(bin): {b'capabilities'(bin): caps}}` (2); `{}` when empty, nil while being deleted | none |
 * | `_TOOZ_MEMBER_<mid>` | `It's alive!` (1) | membership_timeout |
 * | `__TOOZ_LOCK_<name>` | owner member id (1) | lock_timeout |
 * | `__TOOZ_LOCK__TOOZ_GROUP_LEADER_<gid>` | leader member id (1) | leader_timeout |
 *
 * Flags are pymemcache's serde as tooz configures it: 1 = raw bytes, 2 = tooz msgpack; any other
 * flag is a SerializationError. Group values are rewritten entry by entry from the bytes they were
 * read as, so rewriting a group never re-encodes another member's capabilities (a Python datetime
 * keeps its microseconds, a UUID stays an ext value).
 */
import { SerializationError } from '../../../errors.js'
import { dumps, loads } from '../../codec/index.js'
import { splitMap } from '../../codec/scan.js'
import type { MemcachedItem } from '../../../clients/memcached/memcached-client.js'
import { strictUtf8 } from '../../../internal/unicode.js'

/** Client flags of a raw-bytes value (pymemcache serde as tooz sets it up). */
export const FLAG_BYTES = 1
/** Client flags of a tooz msgpack value. */
export const FLAG_MSGPACK = 2
/** The value of a member's liveness key. */
export const STILL_ALIVE = Buffer.from("It's alive!")

const GROUP_LIST = '_TOOZ_GROUP_LIST'
const GROUP = '_TOOZ_GROUP_'
const MEMBER = '_TOOZ_MEMBER_'
const LOCK = '__TOOZ_LOCK_'
const LEADER = `${LOCK}_TOOZ_GROUP_LEADER_`

/** The memcached key of every object, by kind. */
export const KEYS = {
  groupList: GROUP_LIST,
  group: (group: string): string => GROUP + group,
  member: (member: string): string => MEMBER + member,
  lock: (name: string): string => LOCK + name,
  leader: (group: string): string => LEADER + group,
}

/** The longest key prefix each kind of id is stored under (a group id also names its leader key). */
export const LONGEST_PREFIX_BYTES = { group: LEADER.length, member: MEMBER.length, lock: LOCK.length } as const

/** One member of a group value, kept as the bytes it was stored as. */
export interface GroupEntry {
  /** The member id; undefined when the map key is neither a UTF-8 bin nor a str. */
  readonly id: string | undefined
  /** The msgpack key, as stored. */
  readonly key: Uint8Array
  /** The msgpack value (`{b'capabilities': caps}`), as stored. */
  readonly value: Uint8Array
}

const CAPABILITIES = Buffer.from('capabilities')

/** Decodes a value's flags as tooz does: the payload when they are `expected`, else a SerializationError. */
function payload(item: MemcachedItem, what: string): Uint8Array {
  if (item.flags === FLAG_MSGPACK || item.flags === FLAG_BYTES) return item.value
  throw new SerializationError(
    `The ${what} has unknown client flags ${item.flags} (tooz writes 1 for bytes and 2 for msgpack): Unknown serialization format '${item.flags}'`,
  )
}

/**
 * A group's entries, or undefined when the group does not exist (no value, or the nil a deleting
 * tooz writes first). Throws SerializationError when the value is not a tooz group map.
 */
export function decodeGroup(item: MemcachedItem | undefined, group: string): GroupEntry[] | undefined {
  if (item === undefined) return undefined
  const what = `value of group ${JSON.stringify(group)} (${KEYS.group(group)})`
  const bytes = payload(item, what)
  if (item.flags !== FLAG_MSGPACK) throw new SerializationError(`The ${what} is raw bytes (flags 1), not a msgpack map (flags 2)`)
  if (bytes.length === 1 && bytes[0] === 0xc0) return undefined
  const { entries, error } = splitMap(bytes)
  if (error) throw new SerializationError(`The ${what} is not a tooz group map: ${error.message}`, { cause: error })
  return entries.map(({ key, value }) => ({ id: idOf(key), key, value }))
}

/** A group value made of these entries, byte for byte. */
export function encodeGroup(entries: readonly GroupEntry[]): Buffer {
  const n = entries.length
  const head = n <= 15
    ? Buffer.from([0x80 | n])
    : n <= 0xffff
    ? Buffer.from([0xde, n >> 8, n & 0xff])
    : Buffer.from([0xdf, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff])
  return Buffer.concat([head, ...entries.flatMap((e) => [e.key, e.value])])
}

/** This member's entry: `{member_id(bin): {b'capabilities'(bin): caps}}`, as tooz writes it. */
export function memberEntry(member: string, capabilities: Uint8Array): GroupEntry {
  const key = bin(Buffer.from(member))
  return { id: member, key, value: Buffer.concat([Buffer.from([0x81]), bin(CAPABILITIES), capabilities]) }
}

/** The encoded capabilities inside an entry, or a SerializationError for this member alone. */
export function capabilitiesOf(entry: GroupEntry, group: string): Uint8Array | SerializationError {
  const { entries, error } = splitMap(entry.value)
  // A plain Uint8Array view, not a copy: the Coordinator decodes it at once (and the decoder
  // copies what it keeps), so the group value it points into is not held for long.
  const caps = entries.find((e) => isCapabilitiesKey(e.key))?.value
  if (caps !== undefined) return new Uint8Array(caps.buffer, caps.byteOffset, caps.length)
  const reason = error?.message ?? 'it has no "capabilities" key'
  return new SerializationError(`The entry of member ${JSON.stringify(entry.id)} in group ${JSON.stringify(group)} is not {b'capabilities': ...}: ${reason}`, {
    cause: error,
  })
}

/** The group list's entries (bin or str ids, as stored), or [] when the key is absent. */
export function decodeGroupList(item: MemcachedItem | undefined): unknown[] {
  if (item === undefined) return []
  const what = `group list (${GROUP_LIST})`
  const bytes = payload(item, what)
  const list = item.flags === FLAG_MSGPACK ? loads(bytes) : bytes
  if (list === null) return []
  if (!Array.isArray(list)) throw new SerializationError(`The ${what} is not a msgpack list`)
  return list
}

/** A group-list entry's id, or undefined when it is neither a UTF-8 bin nor a str. */
export function groupListId(entry: unknown): string | undefined {
  if (typeof entry === 'string') return entry
  if (entry instanceof Uint8Array) {
    try {
      return strictUtf8.decode(entry)
    } catch {
      return undefined
    }
  }
  return undefined
}

/** The group list value holding `entries` (new ids are added as bin, as tooz adds bytes ids). */
export function encodeGroupList(entries: readonly unknown[]): Buffer {
  return Buffer.from(dumps(entries))
}

/** The owner member id stored in a lock or leader key (bytes, flags 1; a str id, flags 2). */
export function decodeOwner(item: MemcachedItem | undefined, key: string): string | null {
  if (item === undefined) return null
  const bytes = payload(item, `value of ${key}`)
  const value = item.flags === FLAG_MSGPACK ? loads(bytes) : bytes
  const id = groupListId(value)
  if (id === undefined) throw new SerializationError(`The value of ${key} is not a member id`)
  return id
}

/** Where the bytes of a bin or str key start (its header's length), or 0 when it is neither. */
function textStart(t: number): number {
  return t >= 0xa0 && t <= 0xbf ? 1 : t === 0xc4 || t === 0xd9 ? 2 : t === 0xc5 || t === 0xda ? 3 : t === 0xc6 || t === 0xdb ? 5 : 0
}

function idOf(key: Uint8Array): string | undefined {
  const start = textStart(key[0]!)
  if (start === 0 || key.length <= start) return undefined
  // Member ids are short ASCII nearly always: cheaper by hand than a TextDecoder call.
  let ascii = ''
  for (let i = start; i < key.length; i++) {
    const c = key[i]!
    if (c >= 0x80) {
      try {
        return strictUtf8.decode(key.subarray(start))
      } catch {
        return undefined
      }
    }
    ascii += String.fromCharCode(c)
  }
  return ascii
}

/** Whether the msgpack key `key` is `capabilities` (bin, as tooz writes it, or str). */
function isCapabilitiesKey(key: Uint8Array): boolean {
  const start = textStart(key[0]!)
  if (start === 0 || key.length - start !== CAPABILITIES.length) return false
  for (let i = 0; i < CAPABILITIES.length; i++) if (key[start + i] !== CAPABILITIES[i]) return false
  return true
}

function bin(b: Uint8Array): Buffer {
  const n = b.length
  const head = n < 0x100 ? [0xc4, n] : n < 0x10000 ? [0xc5, n >> 8, n & 0xff] : [0xc6, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]
  return Buffer.concat([Buffer.from(head), b])
}
