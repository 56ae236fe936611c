/**
 * The lease that carries a coordinator's lock-queue keys (etcd3-lock-queue.ts): one per driver,
 * granted when the first waiter queues, with etcd's shortest TTL, kept alive until no waiter
 * has used it for IDLE_MS, then revoked. A process that dies leaves its queued waiters
 * behind for at most that TTL: etcd then deletes their keys, and the waiters behind them move up.
 */
import { isLeaseGone, type EtcdGateway } from './etcd3-gateway.js'

/** The TTL asked for: etcd's minimum (1.5 x the election timeout, rounded up: 2 s by default), which it grants instead of anything lower. */
const WAITER_LEASE_TTL_S = 2
/** How often a used lease is kept alive: four times within its TTL. */
const KEEPALIVE_EVERY_MS = 500
/** How long an unused lease is kept for the next waiter before it is revoked. */
const IDLE_MS = 2_000

/** The driver's waiter lease; see the file comment. */
export class WaiterLease {
  readonly #gw: () => EtcdGateway
  #id: string | undefined
  #granting: Promise<string> | undefined
  #users = 0
  #keepalive: NodeJS.Timeout | undefined
  #idle: NodeJS.Timeout | undefined

  /** `gw`: the connected gateway. */
  constructor(gw: () => EtcdGateway) {
    this.#gw = gw
  }

  /** The lease, for a new user, if one is granted already; undefined otherwise (no round trip). Pair with done(). */
  tryUse(): string | undefined {
    if (this.#id === undefined) return undefined
    this.#addUser()
    return this.#id
  }

  /** The lease, for a new user, granting one first if need be. Pair with done(). */
  async use(): Promise<string> {
    this.#addUser()
    try {
      return this.#id ?? (await (this.#granting ??= this.#grant()))
    } catch (err) {
      this.done()
      throw err
    }
  }

  /** A user is done with the lease. */
  done(): void {
    this.#users -= 1
    if (this.#users > 0) return
    // The keepalive runs on until the revoke: users that come and go faster than it beats must not stop it.
    this.#idle = setTimeout(() => this.revoke(), IDLE_MS)
    this.#idle.unref()
  }

  /** A write found `id` gone (it lapsed): forget it, so that the next use() grants another. */
  lost(id: string): void {
    if (this.#id === id) this.#id = undefined
  }

  /** Revokes the lease now (stop(), or idle), deleting any key still on it. Never rejects: a lease not revoked lapses within its TTL. */
  async revoke(): Promise<void> {
    clearTimeout(this.#idle)
    clearInterval(this.#keepalive)
    this.#keepalive = undefined
    const id = this.#id
    this.#id = undefined
    if (id !== undefined) await this.#gw().leaseRevoke(id).catch(() => {})
  }

  #addUser(): void {
    this.#users += 1
    clearTimeout(this.#idle)
    this.#keepalive ??= setInterval(() => void this.#keepAlive(), KEEPALIVE_EVERY_MS).unref()
  }

  async #grant(): Promise<string> {
    try {
      this.#id = (await this.#gw().leaseGrant(WAITER_LEASE_TTL_S)).id
      return this.#id
    } finally {
      this.#granting = undefined
    }
  }

  async #keepAlive(): Promise<void> {
    const id = this.#id
    if (id === undefined) return
    try {
      // Gone (it lapsed during an outage): its keys went with it, and their waiters queue again on a new one.
      if ((await this.#gw().leaseKeepAlive(id)) <= 0) this.lost(id)
    } catch (err) {
      // A transport failure is the driver's to report (the gateway tells it); the next keepalive tries again.
      if (isLeaseGone(err)) this.lost(id)
    }
  }
}
