/**
 * One redis lock: the same key, value shape and commands as tooz's RedisLock (redis-py's Lock):
 * `SET key token NX PX lock_timeout`, compare-and-delete to release, compare-and-PEXPIRE to
 * extend, DEL to break, GET == token to check ownership. So a Python tooz process and this one
 * exclude each other, as long as both build the key the same way (`lock_key_style`). rollcall's
 * release also requires the fencing counter and epoch (below) to be the hold's: a lock object keeps
 * its token from hold to hold, so value alone cannot tell a late release from a current one.
 *
 * Added here: each acquisition INCRs a counter beside the key (`<key>:fence`), in the same script,
 * and the fencing token is that counter under the Sentinel epoch kept in `<key>:fence:epoch`
 * (redis-fencing.ts: epoch 0 and the counter alone without Sentinel); the lock's value carries the
 * member id, so getLeader() can name a rollcall leader. A failed acquire answers the holder's PTTL in the same round trip, so that a
 * candidate can retry the moment the holder's lease lapses (nextChanceInMs).
 *
 * Wake-ups and fair hand-over (rollcall only; tooz's key, value and commands are unchanged):
 * - a waiter (an acquire that waits: its attempts after waitForRelease(), the first of which
 *   follows the first plain attempt at once once its channel below is subscribed) queues its
 *   token in `<key>:queue`,
 *   kept alive by a `<key>:waiter:<token>` key it renews on every attempt (WAITER_LEASE_MS), and
 *   listens on its own channel `<key>:wake:<token>` (redis-wakeups.ts), so that a hand-over wakes
 *   one process, not every process that waits;
 * - a holder that takes the key from the queue has a turn (`<key>:turn`): its share of
 *   turnSize(TURN_RULES.redis, waiters) within TURN_MS, during which it may free and re-take the key however many
 *   wait, so a holder looping on the lock does not pay a hand-over per acquisition. With nobody
 *   queued no turn is written (an uncontended cycle stays cheap); the first waiter to queue
 *   behind such a holder gets the key at its next release;
 * - a free key is taken by a rollcall client only when it is its turn, or when no other holder's
 *   turn is on and it is the head waiter or nobody is queued. A release that ends a turn
 *   PUBLISHes on the head's channel; the head then takes the key with its usual SET NX, and its
 *   turn starts. The releaser, asking again, is refused and queues behind the others (a turn
 *   keeps the key from every other rollcall attempt, queued or not: the releaser's first attempt
 *   is not queued yet, and would otherwise take the key back whenever the new holder freed it);
 * - a release within the turn leaves the free key to its holder. Unless that lock object asks for
 *   the key again by the next turn of its event loop (a holder looping on the lock), it ends its
 *   turn (rollcallLockEndTurn), which wakes the head; the driver's stop() ends open turns too, and
 *   the turn of a holder that died lapses within TURN_MS. A message that reaches a waiter between
 *   two of its attempts wakes its next wait at once (redis-wakeups.ts).
 *
 * Why exclusion cannot break: the lock is still only the key. The queue and the turn are read
 * inside the same Lua scripts as SET NX and compare-and-delete, and only ever make a rollcall
 * client decline a key it could have taken; nothing but SET NX (or the holder's own PEXPIRE)
 * writes the key. A Python tooz process ignores them and takes a free key as before (it may jump
 * the queue; it cannot overlap a holder). A head waiter whose process died is dropped by the next
 * release or try that finds the key free (its PUBLISH reaches no subscriber), and in any case once
 * its liveness key lapses (WAITER_LEASE_MS); a lost PUBLISH costs the head one poll interval. A
 * pattern subscriber on the wake channels (a monitoring client's PSUBSCRIBE) counts as a listener,
 * and masks a dead head until its liveness key lapses.
 */
import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { DriverLock, NotifyWaiting } from '../../driver.js'
import { RetakeWatch, TURN_MS, TURN_RULES } from '../kit/lock-turn.js'
import { BackendError } from '../../../errors.js'
import { fencingToken } from './redis-fencing.js'
import { lockToken } from './redis-keys.js'
import type { ScriptArg, ScriptName, ScriptReply } from './redis-scripts.js'
import type { RedisWakeups } from './redis-wakeups.js'

/** How long a queued waiter stays queued without another attempt. */
const WAITER_LEASE_MS = 1_000
/** How often a queued waiter tries at least (it renews its place in the queue then): well within WAITER_LEASE_MS. */
const QUEUED_POLL_MS = 300

/** What a lock needs from its driver. */
export interface RedisLockHost {
  /** The connected client (throws when the driver is not started). */
  client(): Redis
  run(name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]): Promise<ScriptReply>
  /** Runs rollcallLockAcquire with `args` and, appended, the Sentinel epoch confirmed for the current connection (redis-fencing.ts). */
  acquire(keys: readonly string[], args: readonly ScriptArg[]): Promise<ScriptReply>
  readonly lockTimeoutMs: number
  readonly memberId: string
  /** Told when a release leaves this lock's turn open (true) and when it is closed, so that the driver's stop() can close it. */
  turnOpen(lock: RedisLock, open: boolean): void
  /** Told when this lock is taken (true) and given up or found lost (false): a Sentinel client checks its master while it holds a lock (or is in a group). */
  holding(lock: RedisLock, held: boolean): void
  /** The coordinator's subscriber connection; undefined once stopped. */
  readonly wakeups: RedisWakeups | undefined
}

/** A named lock on one key. */
export class RedisLock implements DriverLock {
  /** Set by a successful acquire; cleared on release. */
  fencingToken: bigint | undefined
  /** The fencing epoch and counter of the hold fencingToken names: its release deletes the key only while they are still current. */
  #hold: [epoch: number, counter: number] | undefined
  /** The lock's key, as tooz names it in the configured style. */
  readonly key: string
  /** KEYS of the lock scripts: the lock, its fencing counter, queue, turn and fencing epoch. */
  readonly #keys: readonly string[]
  readonly #waiterPrefix: string
  /** Wake channels are `<key>:wake:<token>`: this prefix, then the waiter's token. */
  readonly #channelPrefix: string
  readonly #channel: string
  readonly #token: string
  /** The last failed attempt queued this lock's token. */
  #queued = false
  readonly #host: RedisLockHost
  /** Acquire attempts in flight: a release within the turn ends it unless one follows at once. */
  readonly #retakes = new RetakeWatch()
  /** A release within this object's turn left it open while waiters are queued (rollcallLockRelease answered 2). */
  #turnOpen = false
  /** When (performance.now() ms) the holder seen by the last failed acquire lapses; undefined: unknown. */
  #holderLapsesAt: number | undefined

  /** A release names its waiter on the waiter's own channel; a waiter's failed attempts queue (see above). */
  readonly waiting: NotifyWaiting = {
    kind: 'notify',
    waitForRelease: (signal, timeoutMs) => this.#waitForRelease(signal, timeoutMs),
    tryAcquireAsWaiter: () => this.#tryAcquire(true),
    endWait: () => this.#endWait(),
  }

  constructor(host: RedisLockHost, key: string, fenceKey: string) {
    this.#host = host
    this.key = key
    this.#keys = [key, fenceKey, `${key}:queue`, `${key}:turn`, `${fenceKey}:epoch`]
    this.#waiterPrefix = `${key}:waiter:`
    // One token per lock object: a retry by the same object after an unclear outcome (a lost
    // reply) finds its own token and takes the lock again instead of waiting for it to expire.
    this.#token = lockToken(randomBytes(16).toString('hex'), host.memberId)
    this.#channelPrefix = `${key}:wake:`
    this.#channel = `${this.#channelPrefix}${this.#token}`
  }

  tryAcquire(): Promise<boolean> {
    return this.#tryAcquire(false)
  }

  /** One attempt; a `waiter`'s (a wait's after waitForRelease()) queues when it fails. */
  async #tryAcquire(waiter: boolean): Promise<boolean> {
    // Not re-entrant (driver.ts): the script would take our own token again.
    if (this.fencingToken !== undefined || this.#retakes.inFlight) return false
    // A waiter queues once its wake channel is subscribed: a release drops a queued waiter nobody listens for.
    const queueMs = waiter && this.#host.wakeups?.isSubscribed(this.#channel) ? WAITER_LEASE_MS : 0
    const fence = await this.#retakes.attempt(() => this.#host.acquire(this.#keys, this.#args(queueMs)))
    if (!Array.isArray(fence)) {
      this.#holderLapsesAt = typeof fence === 'number' && fence < 0 ? performance.now() + (-1 - fence) : undefined
      this.#queued ||= queueMs > 0
      return false
    }
    this.#queued = false
    this.#setTurnOpen(false)
    const [epoch, counter] = fence
    if (typeof epoch !== 'number' || typeof counter !== 'number') throw new BackendError(`Unexpected answer acquiring the lock ${this.key}`)
    this.fencingToken = fencingToken(epoch, counter)
    this.#hold = [epoch, counter]
    this.#host.holding(this, true)
    return true
  }

  async release(): Promise<boolean> {
    const hold = this.#hold ?? ['', '']
    this.fencingToken = undefined
    this.#hold = undefined
    this.#host.holding(this, false)
    const answer = await this.#host.run('rollcallLockRelease', this.#keys, [...this.#args(0), ...hold])
    // Released within the turn: other rollcall attempts leave the key to this holder while its turn is on, so the turn
    // ends now unless this object asks for the key again by the next turn of the event loop (a holder looping on the lock).
    if (answer === 2) {
      this.#setTurnOpen(true)
      this.#retakes.endUnlessRetaken(() => this.fencingToken !== undefined, () => void this.endTurn())
    }
    return answer === 1 || answer === 2
  }

  /**
   * Ends a turn that release() left open, waking the head waiter if the key is still free; the
   * driver's stop() calls it too. A failure (the connection broke) leaves the turn to lapse by
   * itself, within TURN_MS. Never rejects.
   */
  async endTurn(): Promise<void> {
    if (!this.#turnOpen) return
    this.#setTurnOpen(false)
    try {
      await this.#host.run('rollcallLockEndTurn', this.#keys, this.#args(0))
    } catch {
      // As above: the turn lapses.
    }
  }

  #setTurnOpen(open: boolean): void {
    if (this.#turnOpen === open) return
    this.#turnOpen = open
    this.#host.turnOpen(this, open)
  }

  /** Until a release names this waiter (or the holder's lease or turn ends), at most `timeoutMs`, or until `signal` aborts. */
  async #waitForRelease(signal: AbortSignal, timeoutMs: number): Promise<void> {
    if (signal.aborted) return
    const chanceMs = this.#holderLapsesAt === undefined ? timeoutMs : Math.max(0, this.#holderLapsesAt - performance.now()) + 1
    await new Promise<void>((resolve) => {
      let unlisten = (): void => {}
      const done = (): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        unlisten()
        resolve()
      }
      // A queued waiter is woken by a PUBLISH when its turn comes: it polls only to renew its place, and in case a message is lost.
      const pollMs = this.#queued ? Math.max(timeoutMs, QUEUED_POLL_MS) : timeoutMs
      const timer = setTimeout(done, Math.min(pollMs, chanceMs))
      signal.addEventListener('abort', done, { once: true })
      const wakeups = this.#host.wakeups
      if (!wakeups) return
      const unlistenRelease = wakeups.listen(this.#channel, this.#token, done)
      // Not queued yet (the wait's first attempt never queues): try again, queueing, as soon as the channel is subscribed,
      // not at the end of the first poll interval, while the holder, seeing nobody queued, re-takes the lock without a turn.
      const unlistenSubscribed = this.#queued ? () => {} : wakeups.whenSubscribed(this.#channel, done)
      unlisten = () => {
        unlistenRelease()
        unlistenSubscribed()
      }
    })
  }

  /** The wait is over without the lock: leave the queue, and wake the next waiter if the key is free. */
  async #endWait(): Promise<void> {
    const queued = this.#queued
    this.#queued = false
    if (queued) await this.#host.run('rollcallLockWithdraw', this.#keys, this.#args(0))
  }

  #args(queueMs: number): ScriptArg[] {
    return [this.#token, this.#host.lockTimeoutMs, this.#waiterPrefix, queueMs, TURN_MS, TURN_RULES.redis.round, this.#channelPrefix, TURN_RULES.redis.min]
  }

  async refresh(): Promise<boolean> {
    const ours = (await this.#host.run('rollcallLockRefresh', [this.key], [this.#token, this.#host.lockTimeoutMs])) === 1
    if (!ours) {
      this.fencingToken = undefined
      this.#hold = undefined
      this.#host.holding(this, false)
    }
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
