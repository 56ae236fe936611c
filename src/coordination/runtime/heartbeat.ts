/**
 * The one timer loop that keeps a member alive.
 *
 * Like tooz's Heart it beats at half the interval the driver returns ("better too soon than too
 * late"), with a little jitter so that a fleet started together does not beat in lockstep. Unlike
 * the Heart it never hides a failure: every failed beat and every beat that lands after liveness
 * had already lapsed is reported, and the moment the lapse deadline passes without a successful
 * beat (whether beats fail or hang on a silent server) the owner is told that everything ephemeral
 * must be presumed lost (client-side expiry, as the Java ZooKeeper client does it). The deadline
 * runs from when the last good beat was sent, or, when the owner's session keeps liveness between
 * beats (hooks.deadline), from that session's deadline as it stands when judged, whichever is
 * later. Timers are unref'd: they never keep a process alive.
 */
import { asRollcallError, type RollcallError } from '../../errors.js'

/**
 * A deadline timer that fires more than this after its deadline was held up: the event loop was
 * busy (a stall, a GC pause), and answers that came in meanwhile may still be unread.
 */
const HELD_UP_MS = 20

/** Each armed loop's check of its deadline, for settleLapses(). */
const armed = new Set<() => void>()

/**
 * Judges now the lapse of every loop in the process whose deadline has passed and is not judged
 * yet: called before a grant (a lock, a leadership) is recorded. A lapse judged after the turn's
 * I/O (#armExpiry), or whose timer a stall has not let run yet, is then told before the grant:
 * a rival in this process granted what a lapsed lease held (the lease had to lapse on the
 * backend for it) never holds it while the old holder still believes.
 * @internal
 */
export function settleLapses(): void {
  for (const settle of [...armed]) settle()
}

/** How the loop reports to its owner. */
export interface HeartbeatHooks {
  /** One beat: returns milliseconds until liveness lapses without another. */
  beat(): Promise<number>
  /** A beat failed; `pastDeadline` when liveness has lapsed meanwhile. */
  onFailure(error: RollcallError, consecutiveFailures: number, pastDeadline: boolean): void
  /** A beat succeeded; `lateByMs` > 0 when it came after the lapse deadline. */
  onSuccess(lateByMs: number): void
  /** The lapse deadline passed without a successful beat (one may still be in flight). */
  onExpired?(): void
  /**
   * The lapse deadline as it stands now (Date.now() ms), when something besides beats keeps
   * liveness (a session's pings): the loop's own deadline moves to it whenever it is later.
   */
  deadline?(): number
}

/** Tuning; the defaults suit every built-in driver. */
export interface HeartbeatTiming {
  /** Fraction of the half-interval by which a beat may come early. */
  jitter: number
  /** First retry delay after a failure; doubles up to maxRetryMs. */
  minRetryMs: number
  maxRetryMs: number
}

/** Defaults for {@link HeartbeatTiming}. */
export const HEARTBEAT_DEFAULTS: HeartbeatTiming = { jitter: 0.1, minRetryMs: 200, maxRetryMs: 2000 }

/** The heartbeat loop. Start it once; stop() ends it for good. */
export class HeartbeatLoop {
  #timer: NodeJS.Timeout | undefined
  #expiry: NodeJS.Timeout | undefined
  #stopped = false
  #running: Promise<void> | undefined
  #failures = 0
  #deadline = Number.POSITIVE_INFINITY
  #lastIntervalMs = 0
  /** Counts renewConnection() calls: a beat sent under an older count was sent on a connection since replaced. */
  #connectionEpoch = 0
  /** The connection epoch the beat under way was sent under. */
  #runningEpoch = 0
  readonly #hooks: HeartbeatHooks
  readonly #timing: HeartbeatTiming

  constructor(hooks: HeartbeatHooks, timing: HeartbeatTiming = HEARTBEAT_DEFAULTS) {
    this.#hooks = hooks
    this.#timing = timing
  }

  /** Milliseconds until the next beat is needed, as last reported by the driver. */
  get intervalMs(): number {
    return this.#lastIntervalMs
  }

  /** Failed beats in a row. */
  get consecutiveFailures(): number {
    return this.#failures
  }

  /** Starts the loop after a beat sent at `sentAt` returned `firstIntervalMs`; the next follows after about half of it. */
  start(firstIntervalMs: number, sentAt = Date.now()): void {
    this.#record(firstIntervalMs, sentAt)
    this.#schedule(this.#delayAfterSuccess(firstIntervalMs, sentAt))
  }

  /**
   * Runs one beat now (or joins the one under way, unless that one was sent on a connection since
   * replaced: then a fresh beat follows it) and reschedules. Never rejects.
   */
  beatNow(): Promise<void> {
    if (this.#running) return this.#runningOnCurrent ? this.#running : this.#running.then(() => this.beatNow())
    clearTimeout(this.#timer)
    this.#runningEpoch = this.#connectionEpoch
    this.#running = this.#run().finally(() => {
      this.#running = undefined
    })
    return this.#running
  }

  /**
   * The owner's session was replaced by a new one: liveness now runs from `from` for the last
   * interval, whatever the old session's deadline was (earlier or later). Nothing before start().
   */
  restartDeadline(from = Date.now()): void {
    if (this.#stopped || !Number.isFinite(this.#deadline)) return
    this.#record(this.#lastIntervalMs, from)
  }

  /**
   * The owner lost its connection and has a new one (it rejoined what was lost): a beat sent before
   * this that answers afterwards went out on the old connection and says nothing of the new one, so
   * its failure is reported but not judged against the liveness deadline, and its success moves no
   * deadline (memcached and MySQL partition runs: such a beat, failing or answering just after the
   * rejoin, made the member presume itself lost again).
   */
  renewConnection(): void {
    this.#connectionEpoch += 1
  }

  /** The beat under way (or last run) went out on the current connection. */
  get #runningOnCurrent(): boolean {
    return this.#runningEpoch === this.#connectionEpoch
  }

  /** Ends the loop; a beat under way finishes but schedules nothing. */
  stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    clearTimeout(this.#expiry)
    armed.delete(this.#settle)
    this.#timer = undefined
  }

  async #run(): Promise<void> {
    // The backend's lease runs from when it received the beat, so the deadline must run from
    // when the beat was sent, not from when its answer arrived.
    const startedAt = Date.now()
    try {
      const next = await this.#hooks.beat()
      if (!this.#runningOnCurrent) {
        // Sent on a connection since replaced: its window, counted from its send, says nothing of the new connection's (judged, it
        // would often have passed, and the member would presume itself lost again just after its rejoin). A fresh beat follows it.
        this.#failures = 0
        this.#lastIntervalMs = next
        this.#hooks.onSuccess(0)
        this.#schedule(this.#delayAfterSuccess(next, startedAt))
        return
      }
      this.#extend()
      const lateBy = Date.now() - this.#deadline
      this.#failures = 0
      this.#record(next, startedAt)
      this.#hooks.onSuccess(Math.max(0, lateBy))
      this.#schedule(this.#delayAfterSuccess(next, startedAt))
    } catch (err) {
      this.#failures += 1
      const error = asRollcallError(err, 'Heartbeat')
      this.#extend()
      this.#hooks.onFailure(error, this.#failures, this.#runningOnCurrent && Date.now() > this.#deadline)
      const backoff = Math.min(this.#timing.maxRetryMs, this.#timing.minRetryMs * 2 ** (this.#failures - 1))
      // Keep retrying well before the lapse: never wait more than a quarter of the interval.
      this.#schedule(Math.max(this.#timing.minRetryMs, Math.min(backoff, this.#lastIntervalMs / 4 || backoff)))
    }
  }

  #record(intervalMs: number, from = Date.now()): void {
    this.#lastIntervalMs = intervalMs
    this.#deadline = from + intervalMs
    this.#armExpiry()
  }

  /**
   * Client-side expiry does not wait for a beat to fail: a beat stuck on a silent server never does.
   *
   * A lease's deadline (no hooks.deadline) is judged in its timer when the timer runs on time:
   * nothing read after it can come first (the Redis fault suite, a holder cut off at a proxy:
   * judged a turn later, a rival's grant read in that turn's I/O, another coordinator of the same
   * process, came 1 ms before the holder was told). A timer held up by a stall, with a beat in
   * flight, is judged after the turn's I/O instead: the beat's answer may have come in time and
   * be waiting unread (the process-stall fault test: lost, then the answer 1 ms later). Whether
   * Node runs such a timer before that I/O depends on what else ran in the stalled turn; a rival
   * granted meanwhile in this process is held back by settleLapses(). Where the owner's session
   * keeps liveness between beats (hooks.deadline: ZooKeeper), this deadline is a backstop behind
   * the session's own expiry, and is always judged after the turn's I/O, as the session's
   * watchdog judges.
   */
  #armExpiry(): void {
    clearTimeout(this.#expiry)
    this.#expiry = undefined
    if (this.#stopped || !Number.isFinite(this.#deadline)) return
    armed.add(this.#settle)
    const timer = setTimeout(() => {
      const heldUp = Date.now() - this.#deadline > HELD_UP_MS && this.#running !== undefined && this.#runningOnCurrent
      if (!this.#hooks.deadline && !heldUp) this.#judge()
      else setImmediate(() => this.#expiry === timer && this.#judge())
    }, Math.max(0, this.#deadline - Date.now()))
    timer.unref()
    this.#expiry = timer
  }

  /** settleLapses() for this loop: judges the deadline if it has passed and is armed still. */
  readonly #settle = (): void => {
    if (this.#expiry !== undefined && Date.now() >= this.#deadline) this.#judge()
  }

  /** The deadline has passed: tells the owner once, unless its session has moved the deadline on. */
  #judge(): void {
    if (this.#stopped || this.#extend()) return
    clearTimeout(this.#expiry)
    this.#expiry = undefined
    armed.delete(this.#settle)
    this.#hooks.onExpired?.()
  }

  /** Moves the deadline, and the expiry timer, to the owner's current deadline when that is later; true if it moved. */
  #extend(): boolean {
    const current = this.#hooks.deadline?.()
    if (current === undefined || !(current > this.#deadline)) return false
    this.#deadline = current
    this.#armExpiry()
    return true
  }

  /**
   * The next beat is due half an interval after the last good one was sent, not after it answered:
   * the lapse deadline runs from the send, so a slow answer (a loaded server or machine) must
   * shorten the pause, or a slow beat and the next one in flight pass the deadline with none failed.
   */
  #delayAfterSuccess(intervalMs: number, sentAt: number): number {
    return Math.max(0, sentAt + (intervalMs / 2) * (1 - this.#timing.jitter * Math.random()) - Date.now())
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => void this.beatNow(), delayMs)
    this.#timer.unref()
  }
}
