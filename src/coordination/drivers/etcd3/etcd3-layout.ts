/**
 * tooz's etcd key layout (described on index.ts): the keys of groups and members, the txn
 * comparisons made on them, and the ids read back from keys.
 */
import { SerializationError } from '../../../errors.js'
import type { Compare, KeyValue } from './etcd3-wire.js'
import { strictUtf8 } from '../../../internal/unicode.js'

/** The prefix of every group and member key. */
export const GROUP_PREFIX = 'tooz/groups/'

/** A key: the UTF-8 bytes of `text`. */
export const key = (text: string): Buffer => Buffer.from(text, 'utf8')
/** The key of a group: `tooz/groups/<g>/`. */
export const groupKey = (group: string): Buffer => key(`${GROUP_PREFIX}${group}/`)
/** The key of a member: `tooz/groups/<g>/<m>`. */
export const memberKey = (group: string, member: string): Buffer => key(`${GROUP_PREFIX}${group}/${member}`)
/** A txn comparison that holds while `k` exists. */
export const exists = (k: Uint8Array): Compare => ({ key: k, target: 'CREATE', result: 'GREATER', operand: 0n })
/** A txn comparison that holds while `k` does not exist. */
export const absent = (k: Uint8Array): Compare => ({ key: k, target: 'CREATE', result: 'EQUAL', operand: 0n })

/** Reports a key that is skipped because its id cannot be read. */
export type SkipWarning = (err: SerializationError) => void

/** The group ids among the keys under {@link GROUP_PREFIX}. */
export function groupIds(kvs: readonly KeyValue[], warn: SkipWarning): string[] {
  const prefix = key(GROUP_PREFIX)
  const groups: string[] = []
  // Only `tooz/groups/<g>/` with no other "/" is a group (tooz 3.1 also returns member-key debris).
  for (const kv of kvs) {
    const rest = kv.key.subarray(prefix.length)
    if (rest.length < 2 || rest[rest.length - 1] !== 0x2f || rest.subarray(0, -1).includes(0x2f)) continue
    const id = decodeId(rest.subarray(0, -1), kv.key, warn)
    if (id !== undefined) groups.push(id)
  }
  return groups
}

/** The members among the keys under the group key `g`, and whether `g` itself was among them. */
export function groupMembers(kvs: readonly KeyValue[], g: Buffer, warn: SkipWarning): { found: boolean; members: Map<string, Buffer> } {
  const members = new Map<string, Buffer>()
  let found = false
  for (const kv of kvs) {
    if (kv.key.length === g.length) {
      found = true
      continue
    }
    const id = decodeId(kv.key.subarray(g.length), kv.key, warn)
    if (id !== undefined) members.set(id, kv.value)
  }
  return { found, members }
}

/** An id from a key, or undefined (with a warning) when someone stored bytes that are not UTF-8. */
function decodeId(bytes: Uint8Array, whole: Buffer, warn: SkipWarning): string | undefined {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    warn(new SerializationError(`Skipping etcd key ${JSON.stringify(whole.toString('latin1'))}: its id is not UTF-8`))
    return undefined
  }
}
