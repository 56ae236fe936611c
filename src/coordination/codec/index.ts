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
 *
 * The folder holds every way rollcall spells a value as Python does: msgpack here (encode.ts,
 * decode.ts, ext.ts, and scan.ts for reading by structure) and Python's str() (python-str.ts,
 * which places an object on the Partitioner's ring and spells tooz's legacy Redis lock keys).
 */
export { loads } from './decode.js'
export { dumps } from './encode.js'
export { ExtData } from './ext.js'
