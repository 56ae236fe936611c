/**
 * etcd locks as tooz's etcd3gw driver lays them out: key `/tooz/locks<name>` (no separator),
 * value = this lock object's token (16 random bytes; a `{member, nonce}` msgpack map for leader
 * locks), attached to a lease of the lock's own with TTL lock_timeout, created by a txn
 * `CREATE(key) == 0` so that Python and Node holders exclude each other.
 */
import type { DriverLock } from '../driver.js'
import type { EtcdGateway, TxnResult } from './etcd3-gateway.js'
import { openWatch, type Watch } from './etcd3-watch.js'

const LOCK_PREFIX = '/tooz/locks'

/** The key of lock `name`. */
export function lockKey(name: string): Buffer {
  return Buffer.from(`${LOCK_PREFIX}${name}`, 'utf8')
}

/** What a lock needs from its driver. */
export interface LockHost {
  readonly gw: EtcdGateway
  readonly lockTtlSeconds: number
  /** Lock objects that hold a lease, for stop() and lease loss. */
  readonly holding: Set<Etcd3Lock>
}

/**
 * One lock object. Unlike tooz it grants a lease only once the key looks free and revokes the
 * lease of a failed attempt (tooz leaks one per try), revokes it on release, and checks on every
 * refresh that the key still holds this object's value on this object's lease.
 */
export class Etcd3Lock implements DriverLock {
  fencingToken: bigint | undefined
  readonly #host: LockHost
  readonly #key: Buffer
  readonly #value: Buffer
  #lease: string | undefined

  constructor(host: LockHost, name: string, value: Uint8Array) {
    this.#host = host
    this.#key = lockKey(name)
    this.#value = Buffer.from(value)
  }

  async tryAcquire(): Promise<boolean> {
    return (await this.#attempt()).acquired
  }

  /** Tries; while the lock is held, watches its key for the DELETE (release or lease expiry) and tries again. */
  async acquireWaiting(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      const { acquired, revision } = await this.#attempt()
      if (acquired) return true
      if (!(await this.#deletedSince(revision + 1n, signal))) return false
    }
    return false
  }

  async release(): Promise<boolean> {
    const lease = this.#drop()
    try {
      const r = await this.#host.gw.txn([{ key: this.#key, target: 'VALUE', result: 'EQUAL', operand: this.#value }], [{ deleteRange: { key: this.#key } }])
      return r.succeeded
    } finally {
      if (lease) await this.#host.gw.leaseRevoke(lease).catch(() => {})
    }
  }

  async refresh(): Promise<boolean> {
    const lease = this.#lease
    if (lease === undefined) return false
    if ((await this.#host.gw.leaseKeepAlive(lease)) > 0 && (await this.isStillOwner())) return true
    await this.abandon()
    return false
  }

  async isStillOwner(): Promise<boolean> {
    const lease = this.#lease
    if (lease === undefined) return false
    const kv = (await this.#host.gw.range(this.#key)).kvs[0]
    return kv !== undefined && kv.lease === lease && kv.value.equals(this.#value)
  }

  async break(): Promise<boolean> {
    return (await this.#host.gw.deleteRange(this.#key)) > 0
  }

  /** Forgets any hold and revokes its lease (deleting the key if it is still ours). Never rejects. */
  async abandon(): Promise<void> {
    const lease = this.#drop()
    if (lease) await this.#host.gw.leaseRevoke(lease).catch(() => {})
  }

  /** Clears the hold synchronously, so that a concurrent attempt never loses its fresh lease to an older cleanup. */
  #drop(): string | undefined {
    const lease = this.#lease
    this.#lease = undefined
    this.fencingToken = undefined
    this.#host.holding.delete(this)
    return lease
  }

  async #attempt(): Promise<{ acquired: boolean; revision: bigint }> {
    // A hold the Coordinator gave up on (lost, then retried): make sure nothing of it is left.
    await this.abandon()
    const { gw } = this.#host
    const probe = await gw.range(this.#key, { keysOnly: true })
    if (probe.kvs.length > 0) return { acquired: false, revision: probe.revision }
    const lease = await gw.leaseGrant(this.#host.lockTtlSeconds)
    let r: TxnResult
    try {
      r = await gw.txn([{ key: this.#key, target: 'CREATE', result: 'EQUAL', operand: 0n }], [{ put: { key: this.#key, value: this.#value, lease: lease.id } }])
    } catch (err) {
      // The txn may have been applied before the answer was lost: revoking deletes the key too.
      await gw.leaseRevoke(lease.id).catch(() => {})
      throw err
    }
    if (!r.succeeded) {
      await gw.leaseRevoke(lease.id).catch(() => {})
      return { acquired: false, revision: r.revision }
    }
    this.#lease = lease.id
    // The put is the txn's only write, so the txn's revision is the key's create revision.
    this.fencingToken = r.revision
    this.#host.holding.add(this)
    return { acquired: true, revision: r.revision }
  }

  /** Resolves true once the key has been deleted at or after `from`, false when `signal` aborts. */
  async #deletedSince(from: bigint, signal: AbortSignal): Promise<boolean> {
    let wake!: (deleted: boolean) => void
    const woken = new Promise<boolean>((resolve) => (wake = resolve))
    const onAbort = (): void => wake(false)
    signal.addEventListener('abort', onAbort, { once: true })
    let watch: Watch | undefined
    try {
      if (signal.aborted) return false
      watch = await openWatch(this.#host.gw, { key: this.#key, startRevision: from, filters: ['NOPUT'] }, { onEvents: () => wake(true), onGap: () => wake(true) })
      return await woken
    } finally {
      signal.removeEventListener('abort', onAbort)
      watch?.close()
    }
  }
}
