/**
 * The wait queue of a memcached lock (rollcall only: tooz never reads these keys; memcached-lock.ts
 * says how a lock uses it and why it cannot break exclusion). memcached has no notification and no
 * way to list keys, so the queue is a ticket line, its keys named by the SHA-1 of the lock key (so
 * that any lock key's queue keys are valid and short), `__ROLLCALL_LQ_<sha1 hex>_` then:
 * - `n`: the ticket counter (`ma` creates it at 0; no expiry). A waiter takes the next ticket;
 * - `w<ticket>`: one per queued waiter, re-set every REFRESH_MS with a TTL of WAITER_TTL_S, so a
 *   waiter whose process died drops out within that TTL;
 * - `low`: the ticket after the last waiter served (no expiry): tickets below it are done;
 * - `turn`: present while the holder that took the key as the head has its turn (TURN_TTL_S).
 *
 * A waiter is the head once no ticket key between `low` (as it read it) and its own is present;
 * it alone tries the lock, once no turn is on; it looks every HEAD_POLL_MS, the others every SCAN_MS,
 * and both less often as their wait grows (POLL_FRACTION, up to POLL_MAX_MS). Someone waits while
 * the key of a ticket issued past `low` is present: rollcall attempts outside a turn then decline
 * a free key. A waiter that gives up deletes its key; one whose process died drops out with it.
 */
import { createHash } from 'node:crypto'
import type { MemcachedClient } from '../../../clients/memcached/memcached-client.js'

/** The TTL of a waiter's key: at least 3 s, as memcached may drop a key up to 2 s early (memcached-expiries.ts). */
const WAITER_TTL_S = 3
/** The TTL of a turn key, should its holder die before it ends the turn (TURN_MS): memcached's shortest sure lifetime, as above. */
const TURN_TTL_S = 3
/** How often a queued waiter re-sets its key: well within the second it is sure to live. */
const REFRESH_MS = 500
/** How often the head looks whether it may try the lock, at first: the hand-over delay in a contended loop. */
const HEAD_POLL_MS = 2
/** How often a waiter that is not the head looks again whether it is, at first. */
const SCAN_MS = 10
/** Both look less often the longer they have waited, by this fraction of the time waited: a long hold costs its waiters at most 5 % more. */
const POLL_FRACTION = 0.05
/** ...up to this interval. */
const POLL_MAX_MS = 100
/** At most this many tickets below its own are looked at: older ones count as gone. */
const MAX_SCAN = 256

const EMPTY = Buffer.alloc(0)

/** A ticket number as stored (decimal text); an absent value is ticket 0. */
const ticketOf = (value: Buffer | undefined): bigint => (value === undefined ? 0n : BigInt(value.toString()))

/** Where a look at the tickets from `low` up to `to` (exclusive) starts: at most MAX_SCAN of them. */
const scanFrom = (low: bigint, to: bigint): bigint => (to - low > MAX_SCAN ? to - BigInt(MAX_SCAN) : low)

/** One lock object's place in the queue of its lock. */
export class MemcachedLockQueue {
  readonly #client: MemcachedClient
  readonly #prefix: string
  /** This object's ticket while it is queued. */
  #ticket: bigint | undefined
  /** The lowest ticket below this object's that may still be queued. */
  #from = 0n
  #head = false
  /** performance.now() when this object queued, and when it became the head. */
  #queuedAt = 0
  #headAt = 0
  #turnSeen = false
  #refresh: NodeJS.Timeout | undefined

  constructor(client: MemcachedClient, lockKey: string) {
    this.#client = client
    this.#prefix = `__ROLLCALL_LQ_${createHash('sha1').update(lockKey).digest('hex')}_`
  }

  /** Whether this object holds a ticket. */
  get queued(): boolean {
    return this.#ticket !== undefined
  }

  /** Whether this object is queued and the head: the one waiter that may take the lock. */
  get head(): boolean {
    return this.#head
  }

  /**
   * Whether anyone waits: a ticket issued past `low` whose key is present. Its first read (one get
   * of the counter and `low`) is sent at once, so that it shares a write with a request made in
   * the same tick; the keys are read only when tickets were issued past `low`. Finding none, it
   * moves `low` past them.
   */
  async busy(): Promise<boolean> {
    const values = await this.#client.get([this.#key('n'), this.#key('low')])
    const n = values.get(this.#key('n'))
    if (n === undefined) return false
    const last = ticketOf(n.value)
    const low = ticketOf(values.get(this.#key('low'))?.value)
    if (last < low) return false
    const present = await this.#client.present(this.#waiterKeys(scanFrom(low, last + 1n), last + 1n))
    if (present.size > 0) return true
    // Everyone who queued has gone (served, timed out, or dead): the next attempt need not look.
    this.#setLow(last + 1n)
    return false
  }

  /** Takes a ticket and puts this object's key in the queue. */
  async enqueue(): Promise<void> {
    const [n, low] = await Promise.all([this.#client.meta('ma', this.#key('n'), ['N0', 'J0', 'v']), this.#client.meta('mg', this.#key('low'), ['v'])])
    const ticket = ticketOf(n.value)
    this.#ticket = ticket
    this.#head = false
    this.#queuedAt = performance.now()
    this.#turnSeen = true
    this.#from = scanFrom(ticketOf(low.value), ticket)
    await this.#putKey(ticket)
    this.#refresh = setInterval(() => void this.#putKey(ticket).catch(() => {}), REFRESH_MS).unref()
  }

  /** Looks (one pipelined read of the keys ahead) whether this object is now the head. */
  async scan(): Promise<boolean> {
    const ticket = this.#ticket
    if (ticket === undefined || this.#head) return this.#head
    const ahead = this.#waiterKeys(this.#from, ticket)
    const present = await this.#client.present(ahead)
    if (this.#ticket !== ticket) return false
    const first = ahead.findIndex((k) => present.has(k))
    // Every key below the first one present is gone for good (a waiter never re-queues on an old ticket).
    this.#from = first < 0 ? ticket : this.#from + BigInt(first)
    this.#head = first < 0
    if (this.#head) this.#headAt = performance.now()
    return this.#head
  }

  /** Leaves the queue (the wait ended without the lock); with `served`, this object took the lock as the head: tickets up to its own are done. */
  leave(served = false): void {
    const ticket = this.#ticket
    if (ticket === undefined) return
    this.#ticket = undefined
    this.#head = false
    clearInterval(this.#refresh)
    // The turn starts before the head's key goes, so that the next head finds it on.
    if (served) this.#client.meta('ms', this.#key('turn'), [`T${TURN_TTL_S}`], EMPTY).catch(() => {})
    // Not awaited: a key not deleted lapses within WAITER_TTL_S, a `low` not moved costs the next acquire one queued pass.
    this.#client.meta('md', this.#key(`w${ticket}`), []).catch(() => {})
    if (served) this.#setLow(ticket + 1n)
  }

  /** Whether a holder's turn is on (the head waits for its end); the answer is kept as {@link turnSeen}. */
  async turnOn(): Promise<boolean> {
    this.#turnSeen = (await this.#client.meta('mg', this.#key('turn'), [])).code === 'HD'
    return this.#turnSeen
  }

  /** How long to wait before looking again (whether this object is the head, or whether the turn is over). */
  pollMs(): number {
    const [since, leastMs] = this.#head ? [this.#headAt, HEAD_POLL_MS] : [this.#queuedAt, SCAN_MS]
    return Math.min(Math.max(leastMs, (performance.now() - since) * POLL_FRACTION), POLL_MAX_MS)
  }

  /** Whether the last look ({@link turnOn}) found a turn on. */
  get turnSeen(): boolean {
    return this.#turnSeen
  }

  /** Ends the turn (not awaited: a turn key left behind lapses within TURN_TTL_S). */
  endTurn(): void {
    this.#client.meta('md', this.#key('turn'), []).catch(() => {})
  }

  /** The keys of tickets `from` (inclusive) to `to` (exclusive). */
  #waiterKeys(from: bigint, to: bigint): string[] {
    const keys: string[] = []
    for (let t = from; t < to; t++) keys.push(this.#key(`w${t}`))
    return keys
  }

  /** Moves `low` (not awaited: a `low` left behind costs the next attempt one read of the keys past it). */
  #setLow(ticket: bigint): void {
    this.#client.meta('ms', this.#key('low'), ['T0'], Buffer.from(String(ticket))).catch(() => {})
  }

  async #putKey(ticket: bigint): Promise<void> {
    await this.#client.meta('ms', this.#key(`w${ticket}`), [`T${WAITER_TTL_S}`], EMPTY)
  }

  #key(suffix: string): string {
    return this.#prefix + suffix
  }
}
