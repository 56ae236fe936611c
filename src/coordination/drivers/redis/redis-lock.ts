/**
 * One redis lock: the same key, value shape and commands as tooz's RedisLock (redis-py's Lock):
 * `SET key token NX PX lock_timeout`, compare-and-delete to release, compare-and-PEXPIRE to
 * extend, DEL to break, GET == token to check ownership. So a Python tooz process and this one
 * exclude each other, as long as both build the key the same way (`lock_key_style`).
 *
 * Added here: each acquisition INCRs a counter beside the key (`<key>:fence`), in the same script,
 * and its value is the fencing token; the token carries the member id, so getLeader() can name a
 * rollcall leader. A failed acquire answers the holder's PTTL in the same round trip, so that a
 * candidate can retry the moment the holder's lease lapses (nextChanceInMs).
 */
import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { DriverLock } from '../../driver.js'
import { lockToken } from './redis-keys.js'
import type { ScriptArg, ScriptName, ScriptReply } from './redis-scripts.js'

/** What a lock needs from its driver. */
export interface RedisLockHost {
  /** The connected client (throws when the driver is not started). */
  client(): Redis
  run(name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]): Promise<ScriptReply>
  readonly lockTimeoutMs: number
  readonly memberId: string
  /** Told when this lock is taken (true) or given up (false), so the driver can re-check it after a reconnect. */
  held(lock: RedisLock, isHeld: boolean): void
}

/** A named lock on one key. */
export class RedisLock implements DriverLock {
  /** Set by a successful acquire; cleared on release. */
  fencingToken: bigint | undefined
  /** The lock's key, as tooz names it in the configured style. */
  readonly key: string
  readonly #fenceKey: string
  readonly #token: string
  readonly #host: RedisLockHost
  /** When (performance.now() ms) the holder seen by the last failed acquire lapses; undefined: unknown. */
  #holderLapsesAt: number | undefined

  constructor(host: RedisLockHost, key: string, fenceKey: string) {
    this.#host = host
    this.key = key
    this.#fenceKey = fenceKey
    // One token per lock object: a retry by the same object after an unclear outcome (a lost
    // reply) finds its own token and takes the lock again instead of waiting for it to expire.
    this.#token = lockToken(randomBytes(16).toString('hex'), host.memberId)
  }

  async tryAcquire(): Promise<boolean> {
    const fence = await this.#host.run('rollcallLockAcquire', [this.key, this.#fenceKey], [this.#token, this.#host.lockTimeoutMs])
    if (typeof fence !== 'number' || fence <= 0) {
      this.#holderLapsesAt = typeof fence === 'number' && fence < 0 ? performance.now() + (-1 - fence) : undefined
      return false
    }
    this.fencingToken = BigInt(fence)
    this.#host.held(this, true)
    return true
  }

  async release(): Promise<boolean> {
    this.fencingToken = undefined
    this.#host.held(this, false)
    return (await this.#host.run('rollcallLockRelease', [this.key], [this.#token])) === 1
  }

  async refresh(): Promise<boolean> {
    const ours = (await this.#host.run('rollcallLockRefresh', [this.key], [this.#token, this.#host.lockTimeoutMs])) === 1
    if (!ours) this.#host.held(this, false)
    return ours
  }

  async isStillOwner(): Promise<boolean> {
    const value = await this.#host.client().getBuffer(this.key)
    return value !== null && value.toString('utf8') === this.#token
  }

  /** From the last failed acquire's answer: no extra round trip. */
  async nextChanceInMs(): Promise<number | undefined> {
    return this.#holderLapsesAt === undefined ? undefined : Math.max(0, this.#holderLapsesAt - performance.now())
  }

  async break(): Promise<boolean> {
    return (await this.#host.client().del(this.key)) > 0
  }
}
