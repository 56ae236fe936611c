/**
 * msgpack read by structure, not decoded: where a value ends, and a map split into the raw bytes
 * of its keys and values. Drivers that must hand on another writer's bytes unchanged (a member's
 * capabilities inside a tooz record) use it; {@link loads} decodes.
 */
import { SerializationError } from '../../errors.js'

const MAX_DEPTH = 100

/** One entry of a msgpack map: views of its key's and its value's bytes. */
export interface RawMapEntry {
  readonly key: Uint8Array
  readonly value: Uint8Array
}

/** The entries of the map that fills `bytes`, or what came before the first malformed entry together with the error. */
export function splitMap(bytes: Uint8Array): { entries: RawMapEntry[]; error: SerializationError | undefined } {
  const entries: RawMapEntry[] = []
  try {
    const [count, first] = mapHeader(bytes, 0)
    let pos = first
    for (let i = 0; i < count; i++) {
      const keyEnd = skipValue(bytes, pos)
      const valueEnd = skipValue(bytes, keyEnd)
      entries.push({ key: bytes.subarray(pos, keyEnd), value: bytes.subarray(keyEnd, valueEnd) })
      pos = valueEnd
    }
    if (pos !== bytes.length) throw new SerializationError(`${bytes.length - pos} bytes left over after the map`)
    return { entries, error: undefined }
  } catch (err) {
    return { entries, error: err as SerializationError }
  }
}

/** The number of entries of the map at `pos` and the offset of its first key. */
export function mapHeader(b: Uint8Array, pos: number): [count: number, first: number] {
  if (b.length === 0) throw new SerializationError('it is empty')
  const t = need(b, pos)
  if (t >= 0x80 && t <= 0x8f) return [t & 0x0f, pos + 1]
  if (t === 0xde) return [uint(b, pos + 1, 2), pos + 3]
  if (t === 0xdf) return [uint(b, pos + 1, 4), pos + 5]
  throw new SerializationError(`byte 0x${t.toString(16)} at ${pos} does not start a msgpack map`)
}

/** Widths of fixed-size msgpack values by type byte (0 = not fixed-size). */
const FIXED_WIDTH = new Uint8Array(256)
for (
  const [t, w] of [
    [0xca, 5],
    [0xcb, 9],
    [0xcc, 2],
    [0xcd, 3],
    [0xce, 5],
    [0xcf, 9],
    [0xd0, 2],
    [0xd1, 3],
    [0xd2, 5],
    [0xd3, 9],
    [0xd4, 3],
    [0xd5, 4],
    [0xd6, 6],
    [0xd7, 10],
    [0xd8, 18],
  ] as const
) FIXED_WIDTH[t] = w

/** Header length and length-field width of bin, str and ext values by type byte; ext has a type byte more. */
const SIZED: Record<number, [header: number, width: number]> = {
  0xc4: [2, 1],
  0xc5: [3, 2],
  0xc6: [5, 4],
  0xd9: [2, 1],
  0xda: [3, 2],
  0xdb: [5, 4],
  0xc7: [3, 1],
  0xc8: [4, 2],
  0xc9: [6, 4],
}

/** Item count (a map counts keys and values) and the offset of the first item, for arrays and maps. */
function container(b: Uint8Array, pos: number, t: number): [items: number, first: number] | undefined {
  if (t >= 0x80 && t <= 0x8f) return [2 * (t & 0x0f), pos + 1]
  if (t >= 0x90 && t <= 0x9f) return [t & 0x0f, pos + 1]
  if (t === 0xdc) return [uint(b, pos + 1, 2), pos + 3]
  if (t === 0xdd) return [uint(b, pos + 1, 4), pos + 5]
  if (t === 0xde) return [2 * uint(b, pos + 1, 2), pos + 3]
  if (t === 0xdf) return [2 * uint(b, pos + 1, 4), pos + 5]
  return undefined
}

/** The offset just past the msgpack value at `pos`, without decoding it (structure only). */
export function skipValue(b: Uint8Array, pos: number, depth = 0): number {
  if (depth > MAX_DEPTH) throw new SerializationError(`nested deeper than ${MAX_DEPTH} levels`)
  const t = need(b, pos)
  let end: number
  if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) end = pos + 1
  else if (t >= 0xa0 && t <= 0xbf) end = pos + 1 + (t & 0x1f)
  else if (FIXED_WIDTH[t]! > 0) end = pos + FIXED_WIDTH[t]!
  else if (SIZED[t] !== undefined) end = pos + SIZED[t]![0] + uint(b, pos + 1, SIZED[t]![1])
  else {
    const items = container(b, pos, t)
    if (items === undefined) throw new SerializationError(`byte 0x${t.toString(16)} at ${pos} starts no msgpack value`)
    let p = items[1]
    for (let i = 0; i < items[0]; i++) p = skipValue(b, p, depth + 1)
    return p
  }
  if (end > b.length) throw new SerializationError(`truncated at byte ${b.length}`)
  return end
}

function need(b: Uint8Array, pos: number): number {
  if (pos >= b.length) throw new SerializationError(`truncated at byte ${pos}`)
  return b[pos]!
}

function uint(b: Uint8Array, pos: number, width: number): number {
  let n = 0
  for (let i = 0; i < width; i++) n = n * 256 + need(b, pos + i)
  return n
}
