/**
 * etcd locks as tooz's etcd3gw driver lays them out: key `/tooz/locks<name>` (no separator),
 * value = this lock object's token (16 random bytes; a `{member, nonce}` msgpack map for leader
 * locks), attached to a lease of the lock's own with TTL lock_timeout, created by a txn
 * `CREATE(key) == 0` so that Python and Node holders exclude each other.
 *
 * Requests: an acquire is that txn, plus a lease grant when the object has no fresh lease of its
 * own; a release is one compare-and-delete txn. tooz grants a lease for every attempt (and leaks
 * the lease of each failed one), so its acquire + release is three requests, this one's two.
 */
import type { DriverLock } from '../../driver.js'
import { isLeaseGone, type EtcdGateway, type TxnResult } from './etcd3-gateway.js'
import { openWatch, type Watch } from './etcd3-watch.js'

const LOCK_PREFIX = '/tooz/locks'

/** How long a lease outlives the hold it carried (after a release or a failed attempt) unused, before it is revoked. */
const SPARE_LEASE_IDLE_MS = 1_000

/** The key of lock `name`. */
export function lockKey(name: string): Buffer {
  return Buffer.from(`${LOCK_PREFIX}${name}`, 'utf8')
}

/** What a lock needs from its driver. */
export interface Etcd3LockHost {
  readonly gw: EtcdGateway
  readonly lockTtlSeconds: number
  /** Lock objects that hold a lease (for the lock, or a spare), for stop() and lease loss. */
  readonly holding: Set<Etcd3Lock>
  /** performance.now() when the driver's latest heartbeat began; 0 before the first. */
  lastBeatAt(): number
  /** Runs `task` without waiting for it; stop() waits for it, and a failure becomes a warning saying what failed. */
  background(what: string, task: Promise<unknown>): void
}

/** A lease of this lock object. `renewedAt`: performance.now() when its grant or last keepalive was sent. */
interface Lease {
  readonly id: string
  readonly ttlMs: number
  renewedAt: number
}

/**
 * One lock object. Unlike tooz it never leaves a lease behind for longer than a second (tooz leaks
 * one per failed attempt), keeps its lease across attempts and holds while that is safe (below),
 * and checks on every refresh that the key still holds this object's value on this object's lease.
 */
export class Etcd3Lock implements DriverLock {
  fencingToken: bigint | undefined
  readonly #host: Etcd3LockHost
  readonly #name: string
  readonly #key: Buffer
  readonly #value: Buffer
  /** The lease the key is on, while this object holds the lock. */
  #held: Lease | undefined
  /** A lease from a release or a failed attempt, kept for the next attempt; revoked after SPARE_LEASE_IDLE_MS unused. */
  #spare: Lease | undefined
  #spareTimer: NodeJS.Timeout | undefined

  constructor(host: Etcd3LockHost, name: string, value: Uint8Array) {
    this.#host = host
    this.#name = name
    this.#key = lockKey(name)
    this.#value = Buffer.from(value)
  }

  async tryAcquire(): Promise<boolean> {
    return (await this.#attempt()).acquired
  }

  /**
   * Tries; while the lock is held, waits for its key's DELETE (release or lease expiry) and tries
   * again. One watch serves the whole wait, however many races for the key this object loses.
   */
  async acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false
    let { acquired, revision: tried } = await this.#attempt()
    if (acquired || signal.aborted) return acquired
    /** The revision of the latest DELETE seen; `gap`: history was compacted, so one may have gone unseen. */
    let deletedAt = 0n
    let gap = false
    let wake = (): void => {}
    const onAbort = (): void => wake()
    signal.addEventListener('abort', onAbort, { once: true })
    let watch: Watch | undefined
    try {
      watch = await openWatch(this.#host.gw, { key: this.#key, startRevision: tried + 1n, filters: ['NOPUT'] }, {
        onEvents: (events) => {
          for (const e of events) if (e.kv.modRevision > deletedAt) deletedAt = e.kv.modRevision
          wake()
        },
        onGap: () => {
          gap = true
          wake()
        },
      })
      for (;;) {
        // A DELETE at or before the last attempt's revision was already there for that attempt to see.
        while (deletedAt <= tried && !gap && !signal.aborted) await new Promise<void>((resolve) => (wake = resolve))
        if (signal.aborted) return false
        gap = false
        ;({ acquired, revision: tried } = await this.#attempt())
        if (acquired) return true
      }
    } finally {
      signal.removeEventListener('abort', onAbort)
      watch?.close()
    }
  }

  /** Compare-and-delete, as tooz; the lease stays with this object as its spare (it carries no key any more). */
  async release(): Promise<boolean> {
    const lease = this.#drop()
    let r: TxnResult
    try {
      r = await this.#host.gw.txn([{ key: this.#key, target: 'VALUE', result: 'EQUAL', operand: this.#value }], [{ deleteRange: { key: this.#key } }])
    } catch (err) {
      // The delete may or may not have happened: revoking the lease deletes the key if it is still ours.
      if (lease) this.#revokeLater(lease)
      throw err
    }
    if (lease && r.succeeded) this.#keepSpare(lease)
    else if (lease) this.#revokeLater(lease)
    return r.succeeded
  }

  async refresh(): Promise<boolean> {
    const held = this.#held
    if (held === undefined) return false
    const sentAt = performance.now()
    if ((await this.#host.gw.leaseKeepAlive(held.id)) > 0 && (await this.isStillOwner())) {
      held.renewedAt = Math.max(held.renewedAt, sentAt)
      return true
    }
    await this.abandon()
    return false
  }

  async isStillOwner(): Promise<boolean> {
    const held = this.#held
    if (held === undefined) return false
    const kv = (await this.#host.gw.range(this.#key)).kvs[0]
    return kv !== undefined && kv.lease === held.id && kv.value.equals(this.#value)
  }

  async break(): Promise<boolean> {
    return (await this.#host.gw.deleteRange(this.#key)) > 0
  }

  /** Forgets any hold and revokes every lease of this object (deleting the key if it is still ours). Never rejects. */
  async abandon(): Promise<void> {
    const leases = [this.#drop(), this.#takeSpare()]
    await Promise.all(leases.map((l) => (l ? this.#host.gw.leaseRevoke(l.id).catch(() => {}) : undefined)))
  }

  /** Clears the hold synchronously, so that a concurrent attempt never loses its lease to an older cleanup. */
  #drop(): Lease | undefined {
    const held = this.#held
    this.#held = undefined
    this.fencingToken = undefined
    this.#track()
    return held
  }

  async #attempt(): Promise<{ acquired: boolean; revision: bigint }> {
    // A hold the Coordinator gave up on (lost, then retried): its key must be gone before we try.
    const stale = this.#drop()
    if (stale) await this.#host.gw.leaseRevoke(stale.id).catch(() => {})
    let lease = this.#freshSpare() ?? (await this.#grant())
    let r: TxnResult
    try {
      r = await this.#create(lease)
    } catch (err) {
      // A spare revoked or lapsed behind our back: etcd refused the whole txn, nothing was written.
      if (!isLeaseGone(err)) return this.#failed(lease, err)
      lease = await this.#grant()
      r = await this.#create(lease).catch((again: unknown) => this.#failed(lease, again))
    }
    if (!r.succeeded) {
      this.#keepSpare(lease)
      return { acquired: false, revision: r.revision }
    }
    this.#held = lease
    // The put is the txn's only write, so the txn's revision is the key's create revision.
    this.fencingToken = r.revision
    this.#track()
    return { acquired: true, revision: r.revision }
  }

  /** The txn tooz sends: create the key on `lease` if it does not exist. */
  #create(lease: Lease): Promise<TxnResult> {
    return this.#host.gw.txn([{ key: this.#key, target: 'CREATE', result: 'EQUAL', operand: 0n }], [{
      put: { key: this.#key, value: this.#value, lease: lease.id },
    }])
  }

  /** The txn failed in transit: it may have been applied, and revoking the lease deletes the key too. */
  async #failed(lease: Lease, err: unknown): Promise<never> {
    await this.#host.gw.leaseRevoke(lease.id).catch(() => {})
    throw err
  }

  async #grant(): Promise<Lease> {
    const sentAt = performance.now()
    const granted = await this.#host.gw.leaseGrant(this.#host.lockTtlSeconds)
    return { id: granted.id, ttlMs: granted.ttlSeconds * 1000, renewedAt: sentAt }
  }

  /**
   * The spare lease, if it may carry a new hold; else revokes it in the background. A hold on it
   * lasts only until the lease's TTL runs out from its last renewal, while the Coordinator counts
   * a lock valid until a full interval after the start of its last successful heartbeat (which
   * also renews every held lock). So the spare must have been renewed after the driver's latest
   * heartbeat began, and, should no heartbeat run, within half its TTL.
   */
  #freshSpare(): Lease | undefined {
    const spare = this.#takeSpare()
    if (spare === undefined) return undefined
    if (spare.renewedAt >= this.#host.lastBeatAt() && performance.now() - spare.renewedAt < spare.ttlMs / 2) return spare
    this.#revokeLater(spare)
    return undefined
  }

  #takeSpare(): Lease | undefined {
    const spare = this.#spare
    this.#spare = undefined
    clearTimeout(this.#spareTimer)
    this.#track()
    return spare
  }

  /** Keeps `lease` for the next attempt of this object; unused for SPARE_LEASE_IDLE_MS, it is revoked. */
  #keepSpare(lease: Lease): void {
    const previous = this.#takeSpare()
    if (previous) this.#revokeLater(previous)
    this.#spare = lease
    this.#spareTimer = setTimeout(() => {
      if (this.#spare === lease) this.#revokeLater(this.#takeSpare()!)
    }, SPARE_LEASE_IDLE_MS)
    this.#spareTimer.unref()
    this.#track()
  }

  #revokeLater(lease: Lease): void {
    this.#host.background(`revoke lease ${lease.id} of lock ${JSON.stringify(this.#name)}`, this.#host.gw.leaseRevoke(lease.id))
  }

  #track(): void {
    if (this.#held || this.#spare) this.#host.holding.add(this)
    else this.#host.holding.delete(this)
  }
}
