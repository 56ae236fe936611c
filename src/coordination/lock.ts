/**
 * Named locks, the same on every backend.
 *
 * The driver supplies the backend's primitive (take if free, release, refresh, ownership check);
 * this file adds what tooz leaves to each driver and gets inconsistent: waiting, in the one model
 * the driver lock declares (DriverLock.waiting: polling with capped backoff, polling paused until
 * the driver hears a release, or the backend's own queue), a timeout that returns false on every
 * backend, cancellation through AbortSignal, non-re-entrancy, refresh by the coordinator's
 * heartbeat, and a `signal` that aborts the moment the lock is lost.
 *
 * Shared (reader) mode, on drivers with `sharedLocks`, follows tooz: shared holders hold
 * together, exclusive and shared exclude each other, and one Lock object taking its shared lock
 * twice holds it until it has released it twice (a third release returns false).
 */
import { CoordinatorStoppedError, InvalidArgumentError, InvalidStateError, LockLostError, NotSupportedError } from '../errors.js'
import { DeadlineError, withDeadline } from '../internal/deadline.js'
import { keepAlive } from '../internal/keep-alive.js'
import { linkedSignal } from '../internal/linked-signal.js'
import { sleep } from '../internal/sleep.js'
import type { DriverLock, LockMode, LockWaiting, NotifyWaiting, QueueWaiting } from './driver.js'
import { anySubscriber, lockAcquireChannel, lockReleaseChannel, type TraceBase } from './tracing.js'

/** How acquire() waits. */
export interface AcquireOptions {
  /** Wait for the lock (default true). false: one attempt, resolves at once; not with `timeoutMs`. */
  blocking?: boolean
  /**
   * Give up after this long and resolve false. Implies blocking (with `blocking: false` it is an
   * InvalidArgumentError). 0: exactly one attempt, which takes a free lock on every backend.
   */
  timeoutMs?: number
  /** Cancels the wait; acquire() then rejects with the signal's reason. */
  signal?: AbortSignal
  /**
   * Take it as a shared (reader) lock (tooz `shared=True`): other shared holders may hold it
   * too; exclusive holders may not. Needs the `sharedLocks` capability (NotSupportedError).
   */
  shared?: boolean
}

/** A lock the Coordinator keeps alive and watches. @internal */
export interface HeldLock {
  readonly name: string
  readonly driverLock: DriverLock
  /** Called by the Coordinator when the lock turns out to be gone; tells the application (lockLost) unless `quiet` (stop()). */
  lost(reason: string, options?: { quiet?: boolean }): void
}

/** How a holder (a Lock, an election's term) keeps its hold known to the Coordinator's held locks. @internal */
export interface HoldKeeper {
  track(lock: HeldLock): void
  untrack(lock: HeldLock): void
  /**
   * Before an acquisition of `lock`: resolves once no release of it given up on a lost connection is
   * under way, and keeps any from starting until the returned function is called (HeldLocks.acquiring).
   */
  acquiring(lock: DriverLock): Promise<() => void>
  /** A release of `lock` failed with `err` (HeldLocks.releaseFailed). */
  releaseFailed(lock: DriverLock, err: unknown): void
}

/** What a Lock needs from its Coordinator. @internal */
export interface LockHost extends HoldKeeper {
  call<T>(operation: string, fn: () => Promise<T>): Promise<T>
  /** Tells the application a lock was lost (the lockLost event). */
  emitLockLost(name: string, reason: string): void
  readonly stopSignal: AbortSignal
  /** The driver's name, for NotSupportedError. */
  readonly driverName: string
  /** True when the driver declares `sharedLocks`. */
  readonly sharedLocks: boolean
  /** What this coordinator's trace payloads carry. */
  readonly trace: TraceBase
}

/** True once `p` settles, false if `ms` pass first. */
function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  return withDeadline(p, ms).then(() => true, (err: unknown) => {
    if (err instanceof DeadlineError) return false
    throw err
  })
}

const POLL_FIRST_MS = 20
const POLL_MAX_MS = 250

/**
 * A named lock, from `coordinator.getLock(name)`. Locks are not re-entrant: acquiring a lock this
 * object already holds resolves false. Two Lock objects of one name exclude each other, within a
 * process and across processes and languages.
 *
 * @example
 * ```ts
 * const lock = coordinator.getLock('nightly-report')
 * if (await lock.acquire({ timeoutMs: 5_000 })) {
 *   try { await work(lock.signal) } finally { await lock.release() }
 * }
 * // or: await using held = await coordinator.acquireLock('nightly-report')
 * ```
 *
 * Lock is a HeldLock by shape, not by an `implements` clause: HeldLock is internal, and a shipped
 * declaration must not name a type the package does not ship.
 */
export class Lock {
  readonly name: string
  /** @internal */
  readonly driverLock: DriverLock
  readonly #host: LockHost
  /** The driver lock's wait model, read once. */
  readonly #waiting: LockWaiting
  #held = false
  /** How many shared holds this object has (0 when held exclusively or not at all). */
  #shared = 0
  #acquiring = false
  /** The settling of an attempt that outlived its wait's deadline (and the release of what it took). */
  #late: Promise<void> | undefined
  /** The current hold's controller, made on the first read of `signal` (most holds never read it). */
  #controller: AbortController | undefined
  /** Why the last hold ended, made only when `signal` is read after it (an Error's stack costs more than a lock cycle). */
  #endedBy: () => Error = () => new InvalidStateError('the lock is not held')

  /** @internal */
  constructor(host: LockHost, name: string, driverLock: DriverLock) {
    this.#host = host
    this.name = name
    this.driverLock = driverLock
    this.#waiting = driverLock.waiting
  }

  /** True while this object holds the lock, as far as this process knows. */
  get acquired(): boolean {
    return this.#held
  }

  /**
   * A token that grows with every new holder, on drivers with `fencing`; pass it to the resource
   * you protect so that it can refuse a stale holder. Undefined when not held or not supported.
   */
  get fencingToken(): bigint | undefined {
    return this.#held && this.#shared === 0 ? this.driverLock.fencingToken : undefined
  }

  /** True while this object holds the lock in shared mode. */
  get shared(): boolean {
    return this.#held && this.#shared > 0
  }

  /** Aborts when the current hold ends: released, lost, or the coordinator stopped. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (!this.#held) this.#controller.abort(this.#endedBy())
    }
    return this.#controller.signal
  }

  /**
   * Takes the lock. Resolves true once held; false on timeout, when not blocking and busy, or when
   * already held by this object (except a shared lock taken again shared: that counts a hold).
   */
  acquire(options: AcquireOptions = {}): Promise<boolean> {
    // The hot path of a lock cycle: no closure, no payload unless someone traces.
    if (!anySubscriber(lockAcquireChannel)) return this.#acquire(options)
    const payload = {
      ...this.#host.trace,
      lock: this.name,
      shared: options?.shared ?? false,
      blocking: options?.blocking ?? true,
      timeoutMs: options?.timeoutMs,
    }
    return lockAcquireChannel.tracePromise(() => this.#acquire(options), payload)
  }

  async #acquire(options: AcquireOptions): Promise<boolean> {
    const { timeoutMs, signal } = options
    const blocking = options.blocking ?? true
    const shared = options.shared ?? false
    if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs < 0)) {
      throw new InvalidArgumentError(`timeoutMs must be a number of milliseconds >= 0, not ${String(timeoutMs)}`)
    }
    if (timeoutMs !== undefined && options.blocking === false) {
      throw new InvalidArgumentError(
        `acquire() was given both blocking: false and timeoutMs: ${timeoutMs}, which contradict each other; pass blocking: false for one attempt, or timeoutMs alone to wait that long`,
      )
    }
    if (shared && (!this.#host.sharedLocks || !this.driverLock.tryAcquireShared)) {
      throw new NotSupportedError('sharedLocks', 'shared locks', this.#host.driverName, 'take the lock exclusively')
    }
    if (this.#held) {
      if (!shared || this.#shared === 0) return false
      this.#shared += 1
      return true
    }
    if (this.#acquiring) {
      throw new InvalidStateError(
        `acquire() is already under way on lock ${JSON.stringify(this.name)}; use another Lock object to contend from the same process`,
      )
    }
    this.#acquiring = true
    // A wait must keep the process alive until it settles (memory:// and file:// have no socket).
    const letGo = keepAlive()
    let acquiring: Promise<() => void> | undefined
    try {
      // An attempt of an earlier wait that outlived its deadline settles (and frees what it took) first, and so does a release of
      // this driver lock given up on a lost connection: a new attempt must not overlap either. That wait counts against the
      // deadline: either can take a request timeout or more to a host cut off (the etcd partition run's acquires of 3 s returned
      // after 10-17 s).
      const startedAt = performance.now()
      acquiring = this.#host.acquiring(this.driverLock)
      const before = Promise.all([this.#late, acquiring])
      if (!(await (blocking && timeoutMs !== undefined ? within(before, timeoutMs) : before.then(() => true)))) return false
      const leftMs = timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - startedAt))
      const got = blocking
        ? await this.#wait(leftMs, signal, shared)
        : await this.#host.call('acquire a lock', () => this.#try(shared))
      if (got) this.#onAcquired(shared)
      return got
    } finally {
      letGo()
      this.#acquiring = false
      void acquiring?.then((end) => end())
    }
  }

  /** Releases the lock. Resolves false when this object did not hold it (tooz semantics). */
  release(): Promise<boolean> {
    if (!anySubscriber(lockReleaseChannel)) return this.#release()
    return lockReleaseChannel.tracePromise(() => this.#release(), { ...this.#host.trace, lock: this.name })
  }

  async #release(): Promise<boolean> {
    if (!this.#held) return false
    if (this.#shared > 1) {
      this.#shared -= 1
      return true
    }
    this.#end(() => new InvalidStateError(`Lock ${JSON.stringify(this.name)} was released`))
    return this.#host.call('release a lock', () => this.driverLock.release()).catch((err: unknown) => {
      this.#host.releaseFailed(this.driverLock, err)
      throw err
    })
  }

  /** Extends the lock's lease now (the coordinator also does it on every heartbeat). False when not held. */
  async heartbeat(): Promise<boolean> {
    if (!this.#held) return false
    const ok = await this.#host.call('refresh a lock', () => this.driverLock.refresh?.() ?? this.driverLock.isStillOwner())
    if (!ok) this.lost('the backend no longer lists this holder')
    return ok
  }

  /** Asks the backend whether this object still holds the lock. */
  async isStillOwner(): Promise<boolean> {
    if (!this.#held) return false
    return this.#host.call('check lock ownership', () => this.driverLock.isStillOwner())
  }

  /** Deletes the lock whoever holds it (tooz `break_`). For tests and operators. */
  async break(): Promise<boolean> {
    return this.#host.call('break a lock', () => this.driverLock.break())
  }

  /** Releases on `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release()
  }

  /** @internal */
  lost(reason: string, { quiet = false }: { quiet?: boolean } = {}): void {
    if (!this.#held) return
    this.#end(() => new LockLostError(this.name, reason))
    if (!quiet) this.#host.emitLockLost(this.name, reason)
  }

  #try(shared: boolean): Promise<boolean> {
    return shared ? this.driverLock.tryAcquireShared!() : this.driverLock.tryAcquire()
  }

  async #wait(timeoutMs: number | undefined, userSignal: AbortSignal | undefined, shared: boolean): Promise<boolean> {
    const waiting = this.#waiting
    const settle = (): boolean => {
      if (userSignal?.aborted) throw userSignal.reason
      if (this.#host.stopSignal.aborted) throw new CoordinatorStoppedError('acquire a lock')
      return false
    }
    if (userSignal?.aborted || this.#host.stopSignal.aborted) return settle()
    const attempt = (): Promise<boolean> => this.#host.call('acquire a lock', () => this.#try(shared))
    const startedAt = performance.now()
    // A free lock is taken at once, however short the timeout (timeoutMs 0 included): this attempt is not raced,
    // and the signals below (a timer and a combined signal: more than a lock cycle's CPU) are made only for a wait.
    // A driver with its own queue waits there instead, except at a zero deadline, which allows this one attempt alone.
    const triedFirst = waiting.kind !== 'queue' || timeoutMs === 0
    if (triedFirst && (await attempt())) return true
    // The deadline runs from the call, not from the end of the first attempt.
    const leftMs = timeoutMs === undefined ? undefined : Math.max(0, Math.ceil(timeoutMs - (performance.now() - startedAt)))
    // Past it already (timeoutMs 0 always is): that attempt was the one, in every model; no wait is begun only to be ended.
    if (leftMs === 0 && triedFirst) return settle()
    const linked = linkedSignal([this.#host.stopSignal, userSignal], leftMs)
    const { signal } = linked
    // Aborted already: linkedSignal() attached nothing to dispose of.
    if (signal.aborted) return settle()
    const mode: LockMode = shared ? 'shared' : 'exclusive'
    try {
      switch (waiting.kind) {
        case 'queue':
          return (await this.#waitInQueue(waiting, mode, signal, leftMs === undefined && !userSignal)) || settle()
        case 'notify':
          return (await this.#poll(signal, waiting, mode)) || settle()
        case 'poll':
          return (await this.#poll(signal, undefined, mode)) || settle()
      }
    } finally {
      linked.dispose()
    }
  }

  /**
   * A wait in the driver's queue. `unbounded`: no deadline and no caller's signal, so only stop()
   * ends it, and the driver answers that itself.
   */
  async #waitInQueue(waiting: QueueWaiting, mode: LockMode, signal: AbortSignal, unbounded: boolean): Promise<boolean> {
    const wait = (): Promise<boolean> => this.#host.call('acquire a lock', () => waiting.acquireWaiting(signal, mode))
    if (unbounded) return wait()
    // Raced like a polling attempt: a driver's last round trip (leaving its queue: a durable write on etcd) must not
    // make the wait overrun its deadline. The next acquire() of this object waits for it (#late).
    return (await this.#attemptUntil(wait, signal)) === true
  }

  /**
   * Attempts with capped backoff until one takes the lock (true) or `signal` aborts (false).
   * With `notify` the driver's waitForRelease() stands in for each sleep, the attempts are a
   * waiter's, and a wait that ends without the lock ends the driver's wait too.
   */
  async #poll(signal: AbortSignal, notify: NotifyWaiting | undefined, mode: LockMode): Promise<boolean> {
    const attempt = notify
      ? () => this.#host.call('acquire a lock', () => notify.tryAcquireAsWaiter(mode))
      : () => this.#host.call('acquire a lock', () => this.#try(mode === 'shared'))
    let got: boolean | 'aborted' = false
    try {
      for (let delay = POLL_FIRST_MS;; delay = Math.min(delay * 1.5, POLL_MAX_MS)) {
        const pauseMs = delay * (0.5 + Math.random())
        if (notify) await notify.waitForRelease(signal, pauseMs)
        else await sleep(pauseMs, signal, true).catch(() => {})
        if (signal.aborted) return false
        got = await this.#attemptUntil(attempt, signal)
        if (got === 'aborted') return false
        if (got) return true
      }
    } finally {
      // Not awaited: leaving the queue must not make a timed-out wait overrun its deadline.
      if (notify && got !== true) notify.endWait().catch(() => {})
    }
  }

  /**
   * One attempt (or a driver's whole wait) raced against `signal`, so that a round trip still in
   * flight at the deadline does not make the wait overrun it: when the signal wins, an attempt that
   * succeeds later is released at once (nobody holds that Lock object's acquisition), and the next
   * acquire() waits for that.
   */
  async #attemptUntil(attempt: () => Promise<boolean>, signal: AbortSignal): Promise<boolean | 'aborted'> {
    const pending = attempt()
    let onAbort!: () => void
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted')
      signal.addEventListener('abort', onAbort, { once: true })
    })
    try {
      const got = await Promise.race([pending, aborted])
      if (got === 'aborted') {
        this.#late = pending.then((late) => late && this.driverLock.release(), () => false).catch(() => false).then(() => undefined)
      }
      return got
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  #onAcquired(shared: boolean): void {
    this.#held = true
    this.#shared = shared ? 1 : 0
    this.#controller = undefined
    this.#host.track(this)
  }

  /** Ends the hold; `reason` is made only if someone listens on (or later reads) `signal`. */
  #end(reason: () => Error): void {
    this.#held = false
    this.#shared = 0
    this.#host.untrack(this)
    this.#endedBy = reason
    this.#controller?.abort(reason())
  }
}
