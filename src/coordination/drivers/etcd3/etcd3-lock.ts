/**
 * etcd locks as tooz's etcd3gw driver lays them out: key `/tooz/locks<name>` (no separator),
 * value = this lock object's token (16 random bytes; a `{member, nonce}` msgpack map for leader
 * locks), attached to a lease of the lock's own with TTL lock_timeout, created by a txn
 * `CREATE(key) == 0` so that Python and Node holders exclude each other.
 *
 * Requests: an acquire is that txn, plus a lease grant when the object has no fresh lease of its
 * own; a release is one compare-and-delete txn. tooz grants a lease for every attempt (and leaks
 * the lease of each failed one), so its acquire + release is three requests, this one's two.
 *
 * Fair hand-over (rollcall only): a blocked acquire queues a key of its own beside the lock and
 * waits for its turn (etcd3-lock-queue.ts). The head waiter takes the lock in one txn that also
 * starts its turn, and for its share, turnSize(TURN_RULES.etcd3, waiters) (within TURN_MS), its holder may release
 * and take the lock again while others wait; any other rollcall attempt needs an empty queue. A
 * release ends a used-up turn in its own txn, and a holder that does not take the lock back at once
 * ends it a moment later. This cannot break mutual exclusion: every rollcall txn that writes the lock key
 * still requires `CREATE(key) == 0`, exactly tooz's condition; the queue and turn keys only add
 * conditions under which a rollcall attempt declines a free key. tooz neither reads nor writes
 * them, so a tooz process polls and takes a free key as before (ahead of the queue).
 */
import { randomBytes } from 'node:crypto'
import type { DriverLock, QueueWaiting } from '../../driver.js'
import { RetakeWatch, Turn, TURN_RULES, turnSize } from '../kit/lock-turn.js'
import { isLeaseGone, type Compare, type EtcdGateway, type Hedge, type RequestOp, type TxnResult } from './etcd3-gateway.js'
import { hedgeForTtl } from './etcd3-hedge.js'
import { absent } from './etcd3-layout.js'
import { enqueueOps, headFailureOps, queueEmpty, queueKeys, QueueWait, type QueueKeys } from './etcd3-lock-queue.js'
import type { WaiterLease } from './etcd3-waiter-lease.js'

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
  /** The lease of the driver's queued waiters. */
  readonly waiters: WaiterLease
}

/** One attempt's txn, besides the create of the lock key: what else it compares, writes on success, and does on failure. */
interface Attempt {
  compare: Compare[]
  then: RequestOp[]
  otherwise: RequestOp[]
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
  /** Waiters queue under the lock's queue prefix (etcd3-lock-queue.ts). */
  readonly waiting: QueueWaiting = { kind: 'queue', acquireWaiting: (signal) => this.#acquireWaiting(signal) }
  readonly #host: Etcd3LockHost
  readonly #name: string
  readonly #key: Buffer
  readonly #value: Buffer
  readonly #queue: QueueKeys
  /** This object's key in the queue while it waits. */
  readonly #waiterKey: Buffer
  /** The lease the key is on, while this object holds the lock. */
  #held: Lease | undefined
  /**
   * The lease of a hold whose release failed on the way (no answer): the key may still be on it,
   * and etcd renews every lease at each change of its leader, so it may outlive its TTL by far. The
   * next release() (the Coordinator sends one once the backend answers again) or attempt revokes it.
   */
  #unreleased: Lease | undefined
  /** A lease from a release or a failed attempt, kept for the next attempt; revoked after SPARE_LEASE_IDLE_MS unused. */
  #spare: Lease | undefined
  #spareTimer: NodeJS.Timeout | undefined
  /** This object's turn, from taking the lock as the head waiter until a release ends it (the turn key holds this object's value meanwhile). */
  #turn: Turn | undefined
  /** Attempts in flight: a release within the turn ends it unless an attempt follows at once. */
  readonly #retakes = new RetakeWatch()
  /** Holds while the turn key names this object. */
  readonly #myTurn: Compare

  constructor(host: Etcd3LockHost, name: string, value: Uint8Array) {
    this.#host = host
    this.#name = name
    this.#key = lockKey(name)
    this.#value = Buffer.from(value)
    this.#queue = queueKeys(name)
    this.#waiterKey = Buffer.concat([this.#queue.queue, Buffer.from(randomBytes(8).toString('hex'))])
    this.#myTurn = { key: this.#queue.turn, target: 'VALUE', result: 'EQUAL', operand: this.#value }
  }

  async tryAcquire(): Promise<boolean> {
    // Not re-entrant (driver.ts): an attempt would drop our hold and take the key anew.
    if (this.#held !== undefined || this.#retakes.inFlight) return false
    return (await this.#attempt(this.#ownTry())).acquired
  }

  /**
   * Tries; while the lock is held (or kept for the queue), queues and waits for its turn
   * (etcd3-lock-queue.ts). A failed first attempt queues in its own txn when the driver's waiter
   * lease is at hand, else in a second one.
   */
  async #acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted || this.#held !== undefined) return false
    const lease = this.#host.waiters.tryUse()
    let queued: TxnResult | undefined
    try {
      const first = this.#ownTry()
      if (lease !== undefined) first.otherwise = enqueueOps(this.#queue, this.#key, this.#waiterKey, lease)
      const r = await this.#attempt(first).catch((err: unknown) => {
        if (lease !== undefined && isLeaseGone(err)) this.#host.waiters.lost(lease)
        throw err
      })
      if (r.acquired) return true
      if (r.responses.length > 0) queued = r
    } finally {
      if (lease !== undefined) this.#host.waiters.done()
    }
    if (!signal.aborted) return this.#waitQueued(signal, queued)
    // Timed out during the attempt: a waiter key it queued must not hold the queue up.
    if (queued) await this.#host.gw.deleteRange(this.#waiterKey).catch(() => {})
    return false
  }

  /** Queues (unless `queued` says it is), waits as etcd3-lock-queue.ts says, and leaves the queue if the wait ends without the lock. */
  async #waitQueued(signal: AbortSignal, queued: TxnResult | undefined): Promise<boolean> {
    await this.#host.waiters.use()
    let acquired = false
    try {
      const wait = new QueueWait({
        gw: this.#host.gw,
        keys: this.#queue,
        lockKey: this.#key,
        waiterKey: this.#waiterKey,
        value: this.#value,
        enqueue: () => this.#enqueue(),
        tryAsHead: (queuedAt, staleTurn) => this.#attempt(this.#headTry(queuedAt, staleTurn)),
      }, signal)
      acquired = await wait.run(queued ?? (await this.#enqueue()))
      return acquired
    } finally {
      this.#host.waiters.done()
      if (!acquired) await this.#host.gw.deleteRange(this.#waiterKey).catch(() => {})
    }
  }

  /** Puts this object's waiter key on the waiter lease (again, if it lapsed) and reads the queue. */
  async #enqueue(): Promise<TxnResult> {
    for (let retried = false;; retried = true) {
      const lease = await this.#host.waiters.use()
      try {
        return await this.#host.gw.txn([], enqueueOps(this.#queue, this.#key, this.#waiterKey, lease))
      } catch (err) {
        // The lease lapsed (an outage longer than its TTL): once more, on a new one.
        if (!isLeaseGone(err) || retried) throw err
        this.#host.waiters.lost(lease)
      } finally {
        this.#host.waiters.done()
      }
    }
  }

  /**
   * Compare-and-delete, as tooz; the lease stays with this object as its spare (it carries no key
   * any more). A release that uses up this object's turn deletes the turn key in the same txn; one
   * within the turn leaves it, and the turn ends unless this object tries again at once.
   */
  async release(): Promise<boolean> {
    // A release that failed on the way, sent again: revoking its lease deletes the key if it is still that hold's, and never a later hold.
    if (this.#held === undefined && this.#unreleased !== undefined) return this.#revokeUnreleased()
    const token = this.fencingToken
    const lease = this.#drop()
    const endsTurn = this.#turn !== undefined && this.#turn.over
    if (endsTurn) this.#turn = undefined
    const ops: RequestOp[] = [{ deleteRange: { key: this.#key } }]
    if (endsTurn) ops.push({ deleteRange: { key: this.#queue.turn } })
    // The value names this object, not this hold: a release that reached etcd late (sent to a
    // member cut off, timed out here, and delivered after the heal by the kernel's retransmission)
    // would delete a later hold of this object's (etcd partition seed 1: another holder was
    // granted the lock 0.2 s later, while this one still believed it held it). The key's create
    // revision, the hold's fencing token, names the hold.
    const mine: Compare[] = [{ key: this.#key, target: 'VALUE', result: 'EQUAL', operand: this.#value }]
    if (token !== undefined) mine.push({ key: this.#key, target: 'CREATE', result: 'EQUAL', operand: token })
    let r: TxnResult
    try {
      r = await this.#host.gw.txn(mine, ops)
    } catch (err) {
      // The delete may or may not have happened: revoking the lease deletes the key (and the turn key) if it is still ours. Until a
      // revoke is answered the lease stays #unreleased (a revoke sent now, to the host that did not answer, is often lost as well).
      this.#turn = undefined
      if (lease) {
        if (this.#unreleased) this.#revokeLater(this.#unreleased)
        this.#unreleased = lease
        this.#track()
        this.#host.background(`revoke lease ${lease.id} of lock ${JSON.stringify(this.#name)}`, this.#revokeUnreleased())
      }
      throw err
    }
    if (lease && r.succeeded) this.#keepSpare(lease)
    else if (lease) this.#revokeLater(lease)
    if (this.#turn !== undefined) this.#retakes.endUnlessRetaken(() => this.#held !== undefined, () => void this.endTurn())
    return r.succeeded
  }

  /** Revokes the #unreleased lease; it stays #unreleased unless etcd answers (a lease already gone counts as revoked). */
  async #revokeUnreleased(): Promise<boolean> {
    const lease = this.#unreleased
    if (lease === undefined) return false
    await this.#host.gw.leaseRevoke(lease.id)
    if (this.#unreleased === lease) this.#unreleased = undefined
    this.#track()
    return true
  }

  /** Ends this object's turn if it has one (deleting the turn key if it is still this object's): the head waiter may then take the lock. Never rejects. */
  async endTurn(): Promise<void> {
    if (this.#turn === undefined) return
    this.#turn = undefined
    // A failure leaves the turn to the head waiter, which overrides it after TURN_STALE_MS.
    await this.#host.gw.txn([this.#myTurn], [{ deleteRange: { key: this.#queue.turn } }]).catch(() => {})
  }

  /** Keeps the lease alive and checks the key is still ours, each request hedged across the hosts (etcd3-hedge.ts). */
  async refresh(): Promise<boolean> {
    const held = this.#held
    if (held === undefined) return false
    const sentAt = performance.now()
    if ((await this.#host.gw.leaseKeepAlive(held.id, this.#hedge(held))) > 0 && (await this.isStillOwner())) {
      held.renewedAt = Math.max(held.renewedAt, sentAt)
      return true
    }
    await this.abandon()
    return false
  }

  async isStillOwner(): Promise<boolean> {
    const held = this.#held
    if (held === undefined) return false
    const kv = (await this.#host.gw.range(this.#key, { hedge: this.#hedge(held) })).kvs[0]
    return kv !== undefined && kv.lease === held.id && kv.value.equals(this.#value)
  }

  async break(): Promise<boolean> {
    return (await this.#host.gw.deleteRange(this.#key)) > 0
  }

  /** Forgets any hold and revokes every lease of this object (deleting the key if it is still ours). Never rejects. */
  async abandon(): Promise<void> {
    this.#turn = undefined
    const unreleased = this.#unreleased
    this.#unreleased = undefined
    const leases = [this.#drop(), this.#takeSpare(), unreleased]
    await Promise.all(leases.map((l) => (l ? this.#host.gw.leaseRevoke(l.id).catch(() => {}) : undefined)))
  }

  /** How a request on behalf of `held` is hedged: within its TTL. */
  #hedge(held: Lease): Hedge {
    return hedgeForTtl(held.ttlMs, this.#host.gw.timeoutMs)
  }

  /** Clears the hold synchronously, so that a concurrent attempt never loses its lease to an older cleanup. */
  #drop(): Lease | undefined {
    const held = this.#held
    this.#held = undefined
    this.fencingToken = undefined
    this.#track()
    return held
  }

  /**
   * The attempt of an object that is not the head waiter: within its turn, take the free lock
   * if the turn key still holds this object's value; otherwise only while nobody is queued.
   */
  #ownTry(): Attempt {
    return { compare: [this.#turn !== undefined ? this.#myTurn : queueEmpty(this.#queue)], then: [], otherwise: [] }
  }

  /** The head waiter's attempt (QueueWaitHost.tryAsHead): its turn starts and it leaves the queue in the same txn, which reads who waits behind it. */
  #headTry(queuedAt: bigint, staleTurn: bigint | undefined): Attempt {
    const first: Compare = { key: this.#queue.queue, rangeEnd: this.#queue.queueEnd, target: 'CREATE', result: 'GREATER', operand: queuedAt - 1n }
    const turnFree: Compare = staleTurn === undefined
      ? absent(this.#queue.turn)
      : { key: this.#queue.turn, target: 'MOD', result: 'EQUAL', operand: staleTurn }
    const then: RequestOp[] = [
      { put: { key: this.#queue.turn, value: this.#value } },
      { deleteRange: { key: this.#waiterKey } },
      // Last, as the turn's length needs it (#attemptOnce): the waiters left behind this one.
      { range: { key: this.#queue.queue, rangeEnd: this.#queue.queueEnd, keysOnly: true } },
    ]
    return { compare: [first, turnFree], then, otherwise: headFailureOps(this.#queue, this.#key) }
  }

  #attempt(how: Attempt): Promise<TxnResult & { acquired: boolean }> {
    return this.#retakes.attempt(() => this.#attemptOnce(how))
  }

  async #attemptOnce(how: Attempt): Promise<TxnResult & { acquired: boolean }> {
    // A hold the Coordinator gave up on (lost, then retried): its key must be gone before we try.
    const stale = this.#drop()
    if (stale) await this.#host.gw.leaseRevoke(stale.id).catch(() => {})
    // A release of ours that failed on the way may have left the key on its lease: it would block this attempt too.
    await this.#revokeUnreleased().catch(() => {})
    let lease = this.#freshSpare() ?? (await this.#grant())
    let r: TxnResult
    try {
      r = await this.#create(lease, how)
    } catch (err) {
      // A spare revoked or lapsed behind our back: etcd refused the whole txn, nothing was written.
      if (!isLeaseGone(err)) return this.#failed(lease, err)
      lease = await this.#grant()
      r = await this.#create(lease, how).catch((again: unknown) => this.#failed(lease, again))
    }
    if (!r.succeeded) {
      this.#keepSpare(lease)
      // Taken back within the turn failed (a tooz process took the key, or the head waiter overrode the turn): the turn is over.
      if (this.#turn !== undefined && how.then.length === 0) void this.endTurn()
      return { ...r, acquired: false }
    }
    this.#held = lease
    // The put of the lock key is the txn's first write, so the txn's revision is the key's create revision.
    this.fencingToken = r.revision
    // The head's txn ends with a read of the queue: the waiters behind it.
    if (how.then.length > 0) this.#turn = new Turn(turnSize(TURN_RULES.etcd3, r.responses.at(-1)?.length ?? 0))
    this.#turn?.count()
    this.#track()
    return { ...r, acquired: true }
  }

  /** The txn tooz sends (create the key on `lease` if it does not exist), with what `how` adds. */
  #create(lease: Lease, how: Attempt): Promise<TxnResult> {
    const then = how.then.map((op) => ('put' in op ? { put: { ...op.put, lease: lease.id } } : op))
    return this.#host.gw.txn([absent(this.#key), ...how.compare], [{ put: { key: this.#key, value: this.#value, lease: lease.id } }, ...then], how.otherwise)
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
    if (this.#held || this.#spare || this.#unreleased) this.#host.holding.add(this)
    else this.#host.holding.delete(this)
  }
}
