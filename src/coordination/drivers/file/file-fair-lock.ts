/**
 * Named file locks with wake-ups and fair hand-over between rollcall processes (issue 14).
 *
 * The lock is the record lock of file-lock.ts on `DIR/<name>`, nothing else. A holder that releases
 * and re-takes it in a loop gets it back within microseconds, long before a waiter polling every
 * 20–375 ms (lock.ts) looks, so waiters starved. Beside each contended lock rollcall keeps two
 * sidecar files, `DIR/.leaders/lock-waits/<sha1 name>` (the registry) and `<sha1 name>.wake`
 * (.leaders/ is already reserved, and a sha1 group name cannot be `lock-waits`); Python tooz
 * never looks at them.
 * - A waiter (an acquire that waits: from its first waitForRelease() on) watches the wake file
 *   (file-wake.ts), then registers: an OFD read lock on byte 0 of the registry, held until it
 *   takes the lock or gives up (the kernel drops it when the waiter's process dies), and takes a
 *   ticket, its place in line (file-wait-registry.ts lays the registry out).
 * - A releaser finds out whether anyone waits by trying a write lock on that byte (and dropping it
 *   at once): it fails while any waiter is registered. If so, it writes one byte to the wake file.
 *   Every watching waiter hears it; the one next in line (the earliest ticket not yet served)
 *   tries the lock at once, the others give those ahead of them a millisecond each first.
 * - A holder has a turn (kit/lock-turn.ts): up to turnSize(TURN_RULES.file) acquisitions within TURN_MS, during which
 *   it may release and re-take the lock even when waiters are registered, so that a holder looping
 *   on the lock does not pay a hand-over per acquisition; a release within the turn wakes waiters
 *   only if the holder has not re-taken the lock by the next turn of its event loop.
 * - A release that ends the turn while waiters are registered wakes them and yields: for at most
 *   {@link YIELD_MS} the releaser declines the free lock while other waiters are registered (its
 *   own registration does not count), until one of them has started a turn (each turn start adds
 *   one to a counter in the registry, written only by the exclusive holder). The decliner waits
 *   like anyone else meanwhile.
 *
 * Why exclusion cannot break: the sidecars are never consulted to take the lock, only to decline
 * it or to try sooner. A rollcall process takes the lock exactly as before (F_OFD_SETLK on the
 * lock file, then the path check of file-lock.ts), so rollcall and Python tooz processes exclude
 * each other both ways as they did; a Python process ignores the sidecars and may take a free lock
 * ahead of rollcall waiters, but never overlaps a holder.
 *
 * Hazards, and their bounds:
 * - A registered waiter that is stuck (SIGSTOPped, or hung) makes a yielding releaser decline a
 *   free lock for at most YIELD_MS; when such a yield ends with nobody having started a turn, the
 *   releaser yields no more for {@link STUCK_BACKOFF_MS}. A releaser with no registered waiter
 *   besides itself never declines.
 * - A lost wake-up (the watch not yet open, the inotify queue overflowing, a Python releaser, a
 *   holder killed) costs the waiter one poll interval of lock.ts, never a stuck waiter: a waiter
 *   that has just registered tries once at once, since a release just before it saw no waiter.
 * - Tickets only order who tries first: a waiter further back still tries after a few ms when
 *   nobody ahead of it took over (gone, slow, or holding a duplicate ticket), and any waiter tries
 *   at its poll. So the order is first-come first-served as a rule, not as a guarantee.
 * - Shared (reader) acquisitions take no turns and never decline; they register and are woken like
 *   exclusive waiters (one taken after a wait counts a turn start, which ends a writer's yield),
 *   and their releases wake waiters. A writer waiting behind readers that keep overlapping can
 *   still wait long, as before.
 * - The sidecars stay once created (as lock files do); a replaced wake file is no longer watched by
 *   the processes watching the old one, which then poll until their watch lingers out.
 */
import { closeSync, constants } from 'node:fs'
import type { DriverLock, NotifyWaiting } from '../../driver.js'
import { Turn, TURN_RULES, turnSize } from '../kit/lock-turn.js'
import { openMakingDirs, type RecordLock } from './file-lock.js'
import { WaitRegistry } from './file-wait-registry.js'
import { fireWake, subscribeWake, type WakeSubscription } from './file-wake.js'

/** How long a releaser whose turn ended declines the free lock for a registered waiter to take it. */
const YIELD_MS = 50
/** After a yield that no waiter used (a stuck waiter), how long releasers do not yield again. */
const STUCK_BACKOFF_MS = 1_000
/** How long a woken waiter lets each waiter with an earlier ticket try first... */
const RANK_STEP_MS = 1
/** ...when at most this many are ahead of it (those further back wait for the next wake-up). */
const MAX_RANK = 4

/** What a fair lock needs from its driver. */
export interface FairLockHost {
  /** Record locks held, closed by the driver's stop(). */
  readonly held: Set<RecordLock>
  /** Fair locks with a registry descriptor open, disposed of by the driver's stop(). */
  readonly active: Set<FairFileLock>
  /** Set by the driver's stop(): from then on no sidecar is opened (a wait ending late must not reopen one). */
  readonly stopped: boolean
}

/** A named lock of the file driver: the record lock, plus wake-ups and turns among rollcall processes. */
export class FairFileLock implements DriverLock {
  readonly fencingToken = undefined
  readonly #record: RecordLock
  readonly #registry: WaitRegistry
  readonly #wakePath: string
  readonly #host: FairLockHost
  /** How this object holds the lock, when it does. */
  #mode: 'exclusive' | 'shared' | undefined
  /** The current turn (kit/lock-turn.ts), while this object has one. */
  #turn: Turn | undefined
  /** While yielding: until when (performance.now() ms); 0 otherwise. */
  #yieldUntil = 0
  /** The registry's turn count when the yield began: a change means a waiter took over. */
  #yieldTurns = 0
  /** No yield before this time (a recent yield went unused). */
  #noYieldBefore = 0
  /** In a wait: waitForRelease() called since the last acquisition or endWait() (the registry counts this object busy meanwhile). */
  #waiting = false
  #wake: WakeSubscription | undefined
  /** Wake events seen when the last attempt began. */
  #seenEvents = 0
  /** Ends the current waitForRelease(), if one is under way. */
  #endPause: (() => void) | undefined
  /** A woken waiter's pause while waiters with earlier tickets try first. */
  #rankTimer: NodeJS.Timeout | undefined
  #wakeCheck: NodeJS.Immediate | undefined

  /** A waiter registers and watches the wake file at its first waitForRelease(); its attempts may start a turn (see above). */
  readonly waiting: NotifyWaiting = {
    kind: 'notify',
    waitForRelease: (signal, timeoutMs) => this.#waitForRelease(signal, timeoutMs),
    tryAcquireAsWaiter: (mode) => mode === 'shared' ? this.#tryAcquireShared(true) : this.#tryAcquire(true),
    endWait: () => this.#endWait(),
  }

  constructor(record: RecordLock, registryPath: string, host: FairLockHost) {
    this.#record = record
    this.#wakePath = `${registryPath}.wake`
    this.#host = host
    this.#registry = new WaitRegistry(registryPath, {
      stopped: () => host.stopped,
      opened: (isOpen) => void (isOpen ? host.active.add(this) : host.active.delete(this)),
      busy: () => this.#mode !== undefined || this.#waiting,
    })
  }

  tryAcquire(): Promise<boolean> {
    return this.#tryAcquire(false)
  }

  tryAcquireShared(): Promise<boolean> {
    return this.#tryAcquireShared(false)
  }

  /** One exclusive attempt; a `waiter`'s (a wait's, after waitForRelease()) starts a new turn when it takes the lock. */
  async #tryAcquire(waiter: boolean): Promise<boolean> {
    this.#seenEvents = this.#wake?.events() ?? 0
    if (this.#declines()) return false
    if (!(await this.#record.tryAcquire(false))) return false
    this.#acquired('exclusive')
    if (waiter || !this.#turn) {
      this.#turn = new Turn(turnSize(TURN_RULES.file))
      this.#registry.startTurn()
    }
    this.#turn.count()
    this.#yieldUntil = 0
    this.#stopWaiting()
    return true
  }

  /** One shared attempt; a `waiter`'s counts a turn start when it takes the lock. */
  async #tryAcquireShared(waiter: boolean): Promise<boolean> {
    this.#seenEvents = this.#wake?.events() ?? 0
    if (!(await this.#record.tryAcquire(true))) return false
    this.#acquired('shared')
    // A reader taking over from a yielder counts a turn, so that the yielder stops declining. Readers may hold together, so
    // this read-then-write of the counter can lose an increment to another reader's: the counter changes all the same.
    if (waiter) this.#registry.startTurn()
    this.#stopWaiting()
    return true
  }

  async release(): Promise<boolean> {
    const mode = this.#mode
    this.#mode = undefined
    this.#host.held.delete(this.#record)
    const turnOver = mode === 'exclusive' && this.#turn?.over === true
    // Read while still holding: no other turn can have started yet.
    const turns = turnOver ? this.#registry.turns() : 0
    const ok = await this.#record.release()
    if (turnOver) {
      this.#turn = undefined
      if (this.#registry.othersWaiting()) {
        fireWake(this.#wakePath)
        const now = performance.now()
        if (now >= this.#noYieldBefore) {
          this.#yieldUntil = now + YIELD_MS
          this.#yieldTurns = turns
        }
      }
    } else if (mode !== undefined) this.#wakeUnlessRetaken()
    this.#registry.idle()
    return ok
  }

  /** Until a release wakes this waiter, at most `timeoutMs` (and not past the end of a yield), or until `signal` aborts. */
  async #waitForRelease(signal: AbortSignal, timeoutMs: number): Promise<void> {
    this.#waiting = true
    if (signal.aborted) return
    // Newly watching or registered: a release just before may have seen no waiter, so try at once (a yielder would only decline).
    if (this.#register() && this.#yieldUntil === 0) return
    const woken = this.#wake !== undefined && this.#wake.events() !== this.#seenEvents
    if (woken && this.#registry.rank() <= 0) return
    const waitMs = this.#yieldUntil > 0 ? Math.min(timeoutMs, Math.max(0, this.#yieldUntil - performance.now()) + 1) : timeoutMs
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        clearTimeout(this.#rankTimer)
        this.#rankTimer = undefined
        signal.removeEventListener('abort', done)
        if (this.#endPause === done) this.#endPause = undefined
        resolve()
      }
      const timer = setTimeout(done, waitMs)
      signal.addEventListener('abort', done, { once: true })
      this.#endPause = done
      if (woken) this.#onWake()
    })
  }

  /** The wait is over without the lock: unregister, stop listening; a waiter next in line passes its place on. */
  async #endWait(): Promise<void> {
    const next = this.#registry.registered && this.#registry.rank() <= 0
    if (next) this.#registry.passOn()
    this.#stopWaiting()
    if (next) fireWake(this.#wakePath)
    this.#registry.idle()
  }

  async refresh(): Promise<boolean> {
    return this.#record.isStillOwner()
  }

  async isStillOwner(): Promise<boolean> {
    return this.#record.isStillOwner()
  }

  async break(): Promise<boolean> {
    return this.#record.break()
  }

  /** Drops the registration, the subscription, the descriptor and every timer (driver stop; the record lock is closed by the driver). */
  dispose(): void {
    this.#stopWaiting()
    this.#endPause?.()
    clearImmediate(this.#wakeCheck)
    this.#wakeCheck = undefined
    this.#registry.close()
  }

  #acquired(mode: 'exclusive' | 'shared'): void {
    this.#mode = mode
    this.#host.held.add(this.#record)
  }

  /** True while yielding and another waiter is registered and none has started a turn since the yield began. */
  #declines(): boolean {
    if (this.#yieldUntil === 0) return false
    const now = performance.now()
    const turns = this.#registry.turns()
    if (now >= this.#yieldUntil) {
      if (turns === this.#yieldTurns) this.#noYieldBefore = now + STUCK_BACKOFF_MS
      this.#yieldUntil = 0
      return false
    }
    if (turns !== this.#yieldTurns || !this.#registry.othersWaiting()) {
      this.#yieldUntil = 0
      return false
    }
    return true
  }

  /**
   * A wake-up during a pause: the waiter next in line (the earliest ticket not yet served) tries at
   * once; one up to MAX_RANK places further back first gives each waiter ahead of it RANK_STEP_MS,
   * then tries unless one of them has started a turn meanwhile (so a gone or slow head costs a few
   * ms); one further back still waits for the next wake-up, or its poll.
   */
  #onWake(): void {
    const done = this.#endPause
    if (!done) return
    clearTimeout(this.#rankTimer)
    this.#rankTimer = undefined
    const rank = this.#registry.rank()
    if (rank <= 0) return done()
    if (rank > MAX_RANK) return
    const turns = this.#registry.turns()
    this.#rankTimer = setTimeout(() => {
      this.#rankTimer = undefined
      if (this.#registry.rank() <= 0 || this.#registry.turns() === turns) done()
    }, Math.min(rank, MAX_RANK) * RANK_STEP_MS)
  }

  /** After a release within the turn: wake waiters if this object has not re-taken the lock by the next turn of the event loop. */
  #wakeUnlessRetaken(): void {
    if (this.#wakeCheck) return
    this.#wakeCheck = setImmediate(() => {
      this.#wakeCheck = undefined
      if (this.#mode === undefined && !this.#waiting && this.#registry.othersWaiting()) fireWake(this.#wakePath)
    })
    this.#wakeCheck.unref()
  }

  /** Watches the wake file, then registers; true when either is new. Best effort: a failure leaves the waiter polling. */
  #register(): boolean {
    let changed = false
    if (this.#wake === undefined || !this.#wake.isOpen()) {
      this.#wake?.close()
      this.#wake = undefined
      const create = (): void => closeSync(openMakingDirs(this.#wakePath, constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK))
      // Undefined (no wake file, no watch): poll.
      this.#wake = subscribeWake(this.#wakePath, () => this.#onWake(), create)
      changed = this.#wake !== undefined
    }
    // Registration fails only while a releaser's check holds the byte for a moment: the next wait tries again.
    return this.#registry.register() || changed
  }

  #stopWaiting(): void {
    this.#waiting = false
    this.#registry.unregister()
    this.#wake?.close()
    this.#wake = undefined
  }
}
