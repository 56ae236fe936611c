/**
 * The extension types oslo's msgpack defines (`oslo_serialization.msgpackutils`), and the nesting
 * limit; shared by the encoder (encode.ts) and the decoder (decode.ts).
 */

/** An msgpack extension value rollcall does not interpret; it round-trips unchanged. */
export class ExtData {
  constructor(readonly type: number, readonly data: Uint8Array) {}
}

/** Deepest nesting either direction accepts. */
export const MAX_DEPTH = 100
/** oslo's ext code for `uuid.UUID`. */
export const EXT_UUID = 0
/** oslo's ext code for `datetime`. */
export const EXT_DATETIME = 1
/** oslo's ext code for `set`. */
export const EXT_SET = 4
/** oslo's ext code for `frozenset`. */
export const EXT_FROZENSET = 5
/** oslo's ext code for `date`. */
export const EXT_DATE = 7
