/**
 * The memcached driver's heartbeat: one write and one round trip whatever the group sizes.
 *
 * A beat pipelines, before awaiting any reply: the member key `set` (`_TOOZ_MEMBER_<id>`, expiry
 * membership_timeout; with a reply, unlike tooz's noreply, so that a failed beat is noticed), the
 * refresh of every held lock the Coordinator passes (it then sends none of its own: the beat's
 * result lists the locks lost), and for each joined group a probe of its CAS alone
 * (`mg <key> c`), which moves no value.
 *
 * The CAS cache: per joined group, the CAS of a value in which this member saw its own entry.
 * memcached gives every write of an item a new CAS, so while the group's CAS is still this one,
 * the entry is still there and the value need not be read. Only groups whose CAS changed are read
 * again (one multi-key `gets`), after the beat has answered, not within it: the beat stays one
 * round trip, which the Coordinator's liveness deadline assumes (a process stalled across a beat
 * that waited for a second one was told it was lost). A group whose probe finds it gone is lost in
 * the beat's result; one whose value no longer lists this member is reported lost when that read
 * answers (DriverEvents.membershipLost). Listings that see our entry update the cache too
 * (listed()). The cache is cleared on every (re)connect (reset()): a restarted server counts CAS
 * values from the start again.
 *
 * Servers before 1.6.10 have no meta commands: the probe is then one `gets` of every joined group,
 * values included; a value is still decoded only when its CAS changed.
 */
import type { HeartbeatResult } from '../../driver.js'
import type { MemcachedClient, MemcachedItem } from '../../../clients/memcached/memcached-client.js'
import { FLAG_BYTES, KEYS, STILL_ALIVE, decodeGroup } from './memcached-layout.js'
import type { MemcachedLock } from './memcached-lock.js'

/** The driver's expiries, in whole seconds. */
export interface HeartbeatTtls {
  readonly membership: number
  readonly lock: number
  readonly leader: number
}

/** One member's heartbeat and its per-group CAS cache. */
export class MemcachedHeartbeat {
  readonly #clientOf: () => MemcachedClient
  readonly #me: string
  readonly #ttl: HeartbeatTtls
  readonly #meta: () => boolean
  readonly #onLost: (groups: readonly string[]) => void
  /**
   * Per joined group, the CAS of a value in which this member saw its own entry. memcached gives
   * every write of an item a new CAS, so while the group's CAS is still this one, the entry is
   * still there and the heartbeat need not read the value. Cleared on every (re)connect: a
   * restarted server counts CAS values from the start again.
   */
  readonly #listedAt = new Map<string, bigint>()

  /**
   * `client` gives the driver's connection (it throws when not started); `meta` says whether the
   * server has meta commands; `onLost` hears of joined groups found no longer listing this member
   * after a beat (the read of changed values).
   */
  constructor(client: () => MemcachedClient, me: string, ttl: HeartbeatTtls, meta: () => boolean, onLost: (groups: readonly string[]) => void) {
    this.#clientOf = client
    this.#me = me
    this.#ttl = ttl
    this.#meta = meta
    this.#onLost = onLost
  }

  get #client(): MemcachedClient {
    return this.#clientOf()
  }

  /** Sets this member's key, renewing its expiry (membership_timeout). */
  touch(): Promise<unknown> {
    return this.#client.store('set', KEYS.member(this.#me), STILL_ALIVE, FLAG_BYTES, this.#ttl.membership)
  }

  /** One beat: the member key, the held locks' refreshes and the probe of every joined group. */
  async beat(joined: ReadonlyMap<string, Uint8Array>, heldLocks: ReadonlySet<MemcachedLock>): Promise<HeartbeatResult<MemcachedLock>> {
    for (const g of this.#listedAt.keys()) if (!joined.has(g)) this.#listedAt.delete(g)
    const groups = [...joined.keys()]
    // One write, one round trip: the requests below all leave before any reply is awaited.
    // Replied-to set, not noreply as in tooz: a failed beat must be noticed.
    const beat = this.touch()
    const locks = [...heldLocks]
    const refreshed = Promise.all(locks.map((lock) => lock.refresh()))
    const [result, extended] = await Promise.all([this.#beatGroups(groups, beat), refreshed])
    return { ...result, locks: { refreshed: true, lost: locks.filter((_lock, i) => !extended[i]) } }
  }

  /** A read of `group` found this member's entry in the value at `cas`: the next beat need not read it again. */
  listed(group: string, cas: bigint): void {
    if (this.#listedAt.has(group)) this.#listedAt.set(group, cas)
  }

  /** Forgets `group`'s CAS (this member leaves it). */
  forget(group: string): void {
    this.#listedAt.delete(group)
  }

  /** Forgets every CAS (a new connection: the server may count them from the start again). */
  reset(): void {
    this.#listedAt.clear()
  }

  /** The rest of a beat: waits for the member key's `set`, and says which groups no longer list this member. */
  async #beatGroups(groups: readonly string[], beat: Promise<unknown>): Promise<Omit<HeartbeatResult, 'locks'>> {
    const [, probed] = await Promise.all([beat, this.#probe(groups)])
    const lostGroups: string[] = []
    const changed: string[] = []
    for (const [i, g] of groups.entries()) {
      const p = probed[i]
      if (p === undefined) lostGroups.push(g)
      else if (p.cas !== undefined && p.cas === this.#listedAt.get(g)) continue
      else if (p.item !== undefined) this.#check(g, p.item, lostGroups)
      else changed.push(g)
    }
    if (changed.length > 0) void this.#recheck(changed)
    // memcached's clock ticks in whole seconds and a late tick skips one (memcached-expiries.ts):
    // a key can lapse up to 2 s before its expiry.
    const shortest = Math.min(this.#ttl.membership, this.#ttl.lock, this.#ttl.leader)
    return { nextBeatMs: Math.max(500, (shortest - 2) * 1000), lostGroups }
  }

  /**
   * Reads the values that changed since our entry was last seen in them, and reports the groups
   * that no longer list this member (or are gone). A failed read reports nothing: the cache is
   * unchanged, so the next beat's probe asks again.
   */
  async #recheck(groups: readonly string[]): Promise<void> {
    let items: Map<string, MemcachedItem>
    try {
      items = await this.#client.get(groups.map(KEYS.group), true)
    } catch {
      return
    }
    const lost: string[] = []
    for (const g of groups) {
      const item = items.get(KEYS.group(g))
      if (item === undefined) lost.push(g)
      else this.#check(g, item, lost)
    }
    if (lost.length > 0) this.#onLost(lost)
  }

  /**
   * Each group's CAS (undefined when the group is absent), by `mg <key> c`, which moves no value.
   * Without meta commands, one `gets` of every group: the values come along, as `item`.
   */
  async #probe(groups: readonly string[]): Promise<({ cas: bigint | undefined; item?: MemcachedItem } | undefined)[]> {
    if (!this.#meta()) {
      const items = await this.#client.get(groups.map(KEYS.group), true)
      return groups.map((g) => {
        const item = items.get(KEYS.group(g))
        return item && { cas: item.cas, item }
      })
    }
    const replies = await Promise.all(groups.map((g) => this.#client.meta('mg', KEYS.group(g), ['c'])))
    return replies.map((r) => (r.code === 'HD' ? { cas: casOf(r.flags.get('c')) } : undefined))
  }

  /** Adds `group` to `lost` unless its value lists this member; remembers the CAS when it does. */
  #check(group: string, item: MemcachedItem, lost: string[]): void {
    let listed: boolean
    try {
      listed = decodeGroup(item, group)?.some((e) => e.id === this.#me) ?? false
    } catch {
      listed = true // a corrupt group says nothing about us; reads of it report the corruption
    }
    if (!listed) {
      this.#listedAt.delete(group)
      lost.push(group)
    } else if (item.cas !== undefined) this.#listedAt.set(group, item.cas)
  }
}

/** A CAS value as a meta reply's `c` flag gives it. */
function casOf(text: string | undefined): bigint | undefined {
  return text === undefined || text === '' ? undefined : BigInt(text)
}
