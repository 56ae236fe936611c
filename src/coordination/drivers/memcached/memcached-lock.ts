/**
 * A tooz memcached lock: key `__TOOZ_LOCK_<name>` (or the leader key), value = the owner's member
 * id with flags 1, added with an expiry of lock_timeout and kept alive by the heartbeat.
 *
 * tooz releases with GET, compare with the member id, DELETE: not atomic, and unable to tell two
 * holders that share a member id apart. Here every hold is identified by the item's CAS value,
 * which memcached changes on every write: acquire adds the key and keeps the CAS it got (`ms ME
 * c`), refresh re-stores the value only if the CAS is still ours (`ms C<cas>`: an atomic
 * compare-and-touch), and release deletes only if the CAS is still ours (`md C<cas>`). So two Lock
 * objects of one name in one process exclude each other (the second add fails) and neither can
 * free the other's hold, even though both write the same member id, as Python tooz would read it.
 *
 * Servers older than 1.6.10 have no usable meta commands: the lock then falls back to classic
 * commands with the CAS read by `gets`, whose release is a compare-then-delete with a short race,
 * as tooz's is.
 *
 * The driver's heartbeat refreshes every held lock in the same write as the member key, as
 * tooz's heartbeat touches them, and tells the Coordinator which were lost.
 *
 * After a failed acquire, nextChanceInMs() reads the holder's TTL (`mg <key> t`, whole seconds)
 * and answers when to try again on the schedule of memcached-expiries.ts, whose clock caveats
 * apply to a leader key as to a member key.
 *
 * Fair hand-over (rollcall only, meta servers): a blocked acquire takes a ticket in the lock's
 * queue (memcached-lock-queue.ts) at its first wait; only the head waiter tries the key, once no
 * turn is on (it looks every 2 ms, less often as its wait grows), and taking it starts a turn of turnSize(TURN_RULES.memcached)
 * acquisitions within TURN_MS, during which its holder may free and re-take the key however many
 * wait. The release that uses the turn up ends it, and so does one that this object does not follow
 * with another attempt at once (it stopped looping). Any other rollcall attempt reads
 * whether anyone waits in the same write as its add, and gives a key it got that way straight back
 * (compare-and-delete on its CAS). This cannot break mutual exclusion: the key is still taken only
 * by an add, and the queue only makes rollcall give up a key it could have kept. Python tooz
 * ignores the queue and takes a free key whenever it polls (ahead of the queue).
 */
import type { DriverLock, NotifyWaiting } from '../../driver.js'
import type { MemcachedClient } from '../../../clients/memcached/memcached-client.js'
import { sleep } from '../../../internal/sleep.js'
import { RetakeWatch, Turn, TURN_RULES, turnSize } from '../kit/lock-turn.js'
import { LEADER_LAST_SECONDS_RETRY_MS, MIN_HOLD_TTL_S, recheckInMs } from './memcached-expiries.js'
import { FLAG_BYTES } from './memcached-layout.js'
import { MemcachedLockQueue } from './memcached-lock-queue.js'

/** One lock object; `meta` says whether the server has meta commands. */
export class MemcachedLock implements DriverLock {
  /** Never set: an evicted or restarted memcached can hand out any value again, so there is no fencing. */
  readonly fencingToken = undefined
  readonly #client: MemcachedClient
  readonly #key: string
  readonly #owner: Buffer
  readonly #ttlSeconds: number
  readonly #meta: () => boolean
  /** The CAS value of our hold; undefined when not held. */
  #cas: bigint | undefined
  /** The refresh under way: a second refresh() joins it (a second `ms C<cas>` would find the CAS changed by the first). */
  #refreshing: Promise<boolean> | undefined
  /** A write whose reply was lost may have changed the CAS: check the value before declaring a loss. */
  #uncertain = false
  /** This object's place in the lock's queue (meta servers). */
  readonly #queue: MemcachedLockQueue
  /** This object's turn, from taking the key as the head waiter until its acquisitions or time are used up. */
  #turn: Turn | undefined
  /** The release that ended this object's turn was its last: its next attempt asks whether anyone waits first. */
  #handedOver = false
  /** Attempts in flight: a release within the turn ends it unless an attempt follows at once. */
  readonly #retakes = new RetakeWatch()

  /** A waiter queues at its first waitForRelease() and tries only as the head waiter, once no turn is on (see above). */
  readonly waiting: NotifyWaiting = {
    kind: 'notify',
    waitForRelease: (signal, timeoutMs) => this.#waitForRelease(signal, timeoutMs),
    tryAcquireAsWaiter: () => this.#tryAcquire(true),
    endWait: async () => this.#queue.leave(),
  }

  constructor(client: MemcachedClient, key: string, memberId: string, ttlSeconds: number, meta: () => boolean) {
    this.#client = client
    this.#key = key
    this.#owner = Buffer.from(memberId)
    this.#ttlSeconds = Math.max(ttlSeconds, MIN_HOLD_TTL_S)
    this.#meta = meta
    this.#queue = new MemcachedLockQueue(client, key)
  }

  /** Within this object's turn: the add alone. Otherwise the add, given back if anyone waits. */
  tryAcquire(): Promise<boolean> {
    return this.#tryAcquire(false)
  }

  /** As a `waiter` that has queued (waitForRelease()), only as the head waiter: the add alone. Otherwise as tryAcquire(). */
  async #tryAcquire(waiter: boolean): Promise<boolean> {
    if (!this.#meta()) {
      if ((await this.#client.store('add', this.#key, this.#owner, FLAG_BYTES, this.#ttlSeconds)) !== 'stored') return false
      this.#setCas((await this.#client.gets(this.#key))?.cas)
      return this.#cas !== undefined
    }
    return this.#retakes.attempt(() => this.#attempt(waiter))
  }

  async #attempt(waiter: boolean): Promise<boolean> {
    const queue = this.#queue
    if (waiter && queue.queued) {
      if (!queue.head || queue.turnSeen || !(await this.#add())) return false
      queue.leave(true)
      this.#turn = new Turn(turnSize(TURN_RULES.memcached))
      this.#turn.count()
      return true
    }
    if (this.#turn !== undefined) {
      if (await this.#add()) {
        this.#turn.count()
        return true
      }
      this.#endTurn()
    }
    if (this.#handedOver) {
      // This object's turn just ended, so someone is likely queued: ask before taking the key (and giving it back).
      this.#handedOver = false
      return !(await queue.busy()) && this.#add()
    }
    // Asked in the same write as the add (both leave in this tick); unanswered, the key is kept.
    const busy = queue.busy().catch(() => false)
    if (!(await this.#add())) return false
    if (!(await busy)) return true
    await this.release()
    return false
  }

  /**
   * Between two attempts of a blocked acquire: queues (at the first call), then returns once this
   * object is the head waiter and no turn is on (looking as often as the queue's pollMs() says),
   * or `timeoutMs` passes. Without meta commands it only sleeps. Never throws.
   */
  async #waitForRelease(signal: AbortSignal, timeoutMs: number): Promise<void> {
    const until = performance.now() + timeoutMs
    try {
      if (!this.#meta()) return await sleep(timeoutMs, signal)
      if (!this.#queue.queued) await this.#queue.enqueue()
      while (!(await this.#queue.scan())) {
        const leftMs = until - performance.now()
        if (leftMs <= 0) return
        await sleep(Math.min(this.#queue.pollMs(), leftMs), signal)
      }
      // The head: while another holder's turn is on, the key is theirs to free and take back.
      do await sleep(this.#queue.pollMs(), signal)
      while ((await this.#queue.turnOn()) && performance.now() < until)
    } catch {
      // Aborted, or the server failed: the Coordinator's next attempt tells.
    }
  }

  /** Ends this object's turn, if it has one: the head waiter may take the key once it is free. */
  #endTurn(): void {
    if (this.#turn === undefined) return
    this.#turn = undefined
    this.#queue.endTurn()
  }

  /** `ms` with mode E (add): creates the key if absent and keeps its CAS. */
  async #add(): Promise<boolean> {
    const r = await this.#client.meta('ms', this.#key, ['ME', `F${FLAG_BYTES}`, `T${this.#ttlSeconds}`, 'c'], this.#owner)
    if (r.code !== 'HD') return false
    this.#hold(r.flags.get('c'))
    return true
  }

  async release(): Promise<boolean> {
    // A refresh under way changes the CAS of the hold: let it land, so that the delete compares the new one.
    if (this.#refreshing) await this.#refreshing.catch(() => false)
    const cas = this.#cas
    this.#setCas(undefined)
    if (cas === undefined) return false
    if (this.#meta()) {
      const deleted = this.#client.meta('md', this.#key, [`C${cas}`])
      // Sent after the delete, in the same write: the head waiter then finds the key free.
      if (this.#turn?.over) {
        this.#endTurn()
        this.#handedOver = true
      }
      const done = (await deleted).code === 'HD'
      // Within the turn: unless this object asks again at once (it loops on the lock), the turn ends.
      if (this.#turn !== undefined) this.#retakes.endUnlessRetaken(() => this.#cas !== undefined, () => this.#endTurn())
      return done
    }
    const item = await this.#client.gets(this.#key)
    return item?.cas === cas && (await this.#client.delete(this.#key))
  }

  /** Extends the hold by lock_timeout; false when it is no longer ours. Concurrent calls share one request. */
  refresh(): Promise<boolean> {
    return this.#refreshOnce()
  }

  #refreshOnce(): Promise<boolean> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = undefined
    })
    return this.#refreshing
  }

  async #refresh(): Promise<boolean> {
    if (this.#cas === undefined) return false
    try {
      if (!this.#meta()) {
        const item = await this.#client.gets(this.#key)
        if (item?.cas !== this.#cas) return this.#lose()
        // touch keeps the CAS value, so the hold stays recognisable.
        return (await this.#client.touch(this.#key, this.#ttlSeconds)) || this.#lose()
      }
      const r = await this.#client.meta('ms', this.#key, [`C${this.#cas}`, `F${FLAG_BYTES}`, `T${this.#ttlSeconds}`, 'c'], this.#owner)
      if (r.code === 'HD') {
        this.#hold(r.flags.get('c'))
        return true
      }
      if (r.code === 'EX' && this.#uncertain && (await this.#adopt())) return this.#refresh()
      return this.#lose()
    } catch (err) {
      this.#uncertain = true
      throw err
    }
  }

  /** When the holder's key may have lapsed (0: it is gone already); undefined without meta commands or with no expiry. */
  async nextChanceInMs(): Promise<number | undefined> {
    if (!this.#meta()) return undefined
    const ttlS = (await this.#client.ttls([this.#key])).get(this.#key)
    if (ttlS === undefined) return 0
    return ttlS < 0 ? undefined : recheckInMs(ttlS, LEADER_LAST_SECONDS_RETRY_MS)
  }

  async isStillOwner(): Promise<boolean> {
    if (this.#cas === undefined) return false
    const item = await this.#client.gets(this.#key)
    return item !== undefined && item.cas === this.#cas && this.#owner.equals(item.value)
  }

  async break(): Promise<boolean> {
    this.#setCas(undefined)
    return this.#client.delete(this.#key)
  }

  #hold(cas: string | undefined): void {
    this.#setCas(cas === undefined || cas === '' ? undefined : BigInt(cas))
    this.#uncertain = false
  }

  #lose(): boolean {
    this.#setCas(undefined)
    this.#uncertain = false
    return false
  }

  /** Records the CAS of our hold (undefined: not held). */
  #setCas(cas: bigint | undefined): void {
    this.#cas = cas
  }

  /** After a lost reply: if the key still names us, its new CAS is the one our own write made. */
  async #adopt(): Promise<boolean> {
    this.#uncertain = false
    const item = await this.#client.gets(this.#key)
    if (item === undefined || !this.#owner.equals(item.value)) return false
    this.#setCas(item.cas)
    return true
  }
}
