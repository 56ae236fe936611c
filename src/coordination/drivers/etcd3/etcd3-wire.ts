/**
 * The wire forms of etcd's v3 JSON gateway: key-values, txn comparisons and operations, and their
 * JSON encodings (keys and values base64, int64 fields as strings). etcd3-gateway.ts sends them
 * and re-exports what the driver uses.
 */

/** A key-value pair as etcd stores it. `lease` is '0' for none. */
export interface KeyValue {
  key: Buffer
  value: Buffer
  createRevision: bigint
  modRevision: bigint
  version: bigint
  lease: string
}

/** One comparison of a txn (`tooz`-style enum names). */
export interface Compare {
  key: Uint8Array
  rangeEnd?: Uint8Array
  target: 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE'
  result: 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL'
  /** The number (revision, version or lease id) or the value bytes compared against. */
  operand: bigint | string | Uint8Array
}

/** One operation of a txn. */
export type RequestOp =
  | { range: { key: Uint8Array; rangeEnd?: Uint8Array; keysOnly?: boolean } }
  | { put: { key: Uint8Array; value: Uint8Array; lease?: string } }
  | { deleteRange: { key: Uint8Array; rangeEnd?: Uint8Array } }

/** A txn's outcome: the branch taken, the store revision after it, and one entry per op (the kvs of ranges, [] for others). */
export interface TxnResult {
  succeeded: boolean
  revision: bigint
  responses: KeyValue[][]
}

/** A decoded JSON object of the gateway. @internal */
export type Json = Record<string, any>

/** Base64 of bytes, as the gateway wants keys and values. @internal */
export const b64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64')
/** An int64 the gateway sent as a string. @internal */
export const big = (s: unknown): bigint => BigInt(typeof s === 'string' || typeof s === 'number' ? s : 0)

/** The end of the range holding every key that starts with `prefix` (etcd's clientv3.GetPrefixRangeEnd). */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  const end = Uint8Array.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]! += 1
      return end.subarray(0, i + 1)
    }
  }
  return new Uint8Array([0])
}

/** A gateway key-value object, decoded. @internal */
export function decodeKv(kv: Json): KeyValue {
  return {
    key: Buffer.from(kv.key ?? '', 'base64'),
    value: Buffer.from(kv.value ?? '', 'base64'),
    createRevision: big(kv.create_revision),
    modRevision: big(kv.mod_revision),
    version: big(kv.version),
    lease: String(kv.lease ?? '0'),
  }
}

/** A txn comparison as the gateway wants it. @internal */
export function encodeCompare(c: Compare): Json {
  const out: Json = { key: b64(c.key), target: c.target, result: c.result }
  if (c.rangeEnd) out.range_end = b64(c.rangeEnd)
  const field = { VERSION: 'version', CREATE: 'create_revision', MOD: 'mod_revision', VALUE: 'value', LEASE: 'lease' }[c.target]
  out[field] = c.operand instanceof Uint8Array ? b64(c.operand) : String(c.operand)
  return out
}

/** A txn operation as the gateway wants it. @internal */
export function encodeOp(op: RequestOp): Json {
  if ('range' in op) {
    const r: Json = { key: b64(op.range.key), keys_only: op.range.keysOnly ?? false }
    if (op.range.rangeEnd) r.range_end = b64(op.range.rangeEnd)
    return { request_range: r }
  }
  if ('put' in op) {
    const p: Json = { key: b64(op.put.key), value: b64(op.put.value) }
    if (op.put.lease) p.lease = op.put.lease
    return { request_put: p }
  }
  const d: Json = { key: b64(op.deleteRange.key) }
  if (op.deleteRange.rangeEnd) d.range_end = b64(op.deleteRange.rangeEnd)
  return { request_delete_range: d }
}
