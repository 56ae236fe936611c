/**
 * Compare-and-swap updates of memcached values: the retry loop (short jittered backoff where
 * tooz sleeps 1 s), and the updates of tooz's group list made with it.
 */
import { OperationTimeoutError } from '../../../errors.js'
import { sleep } from '../../../internal/sleep.js'
import type { MemcachedClient } from '../../../clients/memcached/memcached-client.js'
import { FLAG_MSGPACK, KEYS, decodeGroupList, encodeGroupList, groupListId } from './memcached-layout.js'

/** Returned by a CAS step that lost the race and must run again. */
export const RETRY = Symbol('retry')

/** What a CAS loop is bounded by: the `timeout` option, and the driver's stop signal. */
export interface CasBounds {
  readonly options: { readonly timeoutMs: number }
  readonly signal: AbortSignal
}

/** Runs `step` until it stops answering RETRY, with short jittered backoff, for at most `timeout`. */
export async function casLoop(what: string, bounds: CasBounds, step: () => Promise<true | typeof RETRY>): Promise<void> {
  const started = Date.now()
  for (let attempt = 1;; attempt++) {
    if ((await step()) !== RETRY) return
    if (Date.now() - started > bounds.options.timeoutMs) {
      throw new OperationTimeoutError(`Gave up ${what} after ${attempt} compare-and-swap conflicts in ${Date.now() - started} ms (timeout)`)
    }
    await sleep(Math.min(100, 2 * 1.5 ** attempt) * (0.5 + Math.random()), bounds.signal)
  }
}

/** Adds `group` to the group list (creating the list when it is absent); nothing when it is listed. */
export async function addToGroupList(client: () => MemcachedClient, group: string, bounds: CasBounds): Promise<void> {
  await casLoop(`adding ${group} to the group list`, bounds, async () => {
    const item = await client().gets(KEYS.groupList)
    if (item === undefined) {
      return (await client().store('add', KEYS.groupList, encodeGroupList([Buffer.from(group)]), FLAG_MSGPACK, 0)) === 'stored' || RETRY
    }
    const list = decodeGroupList(item)
    if (list.some((e) => groupListId(e) === group)) return true
    return (await client().store('cas', KEYS.groupList, encodeGroupList([...list, Buffer.from(group)]), FLAG_MSGPACK, 0, item.cas)) === 'stored'
      || RETRY
  })
}

/** Removes `group` from the group list; nothing when it is not listed or the list is gone. */
export async function removeFromGroupList(client: () => MemcachedClient, group: string, bounds: CasBounds): Promise<void> {
  await casLoop(`removing ${group} from the group list`, bounds, async () => {
    const item = await client().gets(KEYS.groupList)
    if (item === undefined) return true // evicted: nothing to remove it from
    const list = decodeGroupList(item)
    const rest = list.filter((e) => groupListId(e) !== group)
    if (rest.length === list.length) return true
    return (await client().store('cas', KEYS.groupList, encodeGroupList(rest), FLAG_MSGPACK, 0, item.cas)) !== 'exists' || RETRY
  })
}
