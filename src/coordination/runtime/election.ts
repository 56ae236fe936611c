/**
 * Leader election on top of the driver's leader lock, as tooz does it: a member that watches a
 * group's election is a candidate; the candidate that holds the group's leader lock leads.
 *
 * Where the leader lock has a wait queue (ZooKeeper, memory) each candidate waits in it and the
 * next one is woken the moment the leader's lock goes: fail-over without polling. Elsewhere
 * candidates try the lock on every watcher tick, as tooz's run_elect_coordinator() does; where the
 * driver can tell when the lock may be free (`electionWake`: the holder's lease lapses, or a dead
 * holder's lock is freed at once), a candidate whose attempt failed also retries just after that
 * moment when it comes before the next tick, as the watchers do at a member's expiry. Unlike
 * tooz, a leader learns that it lost its term (`leadershipLost`): when its lock lease lapses, its
 * session is lost, or it stands down.
 *
 * With `manual` (autoWatch off) nothing runs by itself, as in tooz: each runWatchers() makes one
 * attempt per candidate that does not lead (tryAcquire, even where the lock has a queue) and runs
 * the callbacks of those elected before it resolves. A lost term is still reported at once
 * (`leadershipLost`): a member must not go on believing it leads.
 */
import { asRollcallError, LeadershipLostError, type RollcallError } from '../../errors.js'
import { keepAlive } from '../../internal/keep-alive.js'
import { sleep } from '../../internal/sleep.js'
import type { DriverLock, QueueWaiting } from '../driver.js'
import type { LeaderEvent } from '../events.js'
import type { HeldLock, HoldKeeper } from '../lock.js'
import { electionLostChannel, electionWonChannel, publish, type TraceBase } from '../tracing.js'
import { callUserCode, type ReportFailure } from './user-code.js'

/** Called when this member is elected. */
export type LeaderCallback = (event: LeaderEvent) => unknown

/** What elections need from the Coordinator. @internal */
export interface ElectionHost extends HoldKeeper {
  readonly memberId: string
  readonly stopSignal: AbortSignal
  readonly watchIntervalMs: number
  /** The driver declares `electionWake` and autoWatch is on: a failed attempt asks nextChanceInMs(). */
  readonly wakeAtChance: boolean
  /** autoWatch off: elections run only in runAll() (runWatchers). */
  readonly manual: boolean
  /** The driver declares `fencing`: a term's token is its leader lock's fencing token. */
  readonly fencing: boolean
  leaderLock(group: string): DriverLock
  call<T>(operation: string, fn: () => Promise<T>): Promise<T>
  emitElected(event: LeaderEvent): void
  emitLost(group: string, reason: string): void
  warn(err: RollcallError): void
  /** A leader callback failed. */
  callbackFailed: ReportFailure
  /** What this coordinator's trace payloads carry. */
  readonly trace: TraceBase
}

/** One term of this member's leadership of a group. */
export interface Term {
  /** Aborts (with a LeadershipLostError) the moment the term ends. */
  readonly signal: AbortSignal
  /** The leader lock's fencing token for this term, on drivers with `fencing`; undefined elsewhere. */
  readonly token: bigint | undefined
}

interface Candidacy {
  readonly group: string
  readonly callbacks: Set<LeaderCallback>
  readonly lock: DriverLock
  /** The lock's wait when it waits in the backend's queue: the candidate campaigns in it. Otherwise it polls (runAll(), electionWake). */
  readonly queue: QueueWaiting | undefined
  readonly held: HeldLock
  leading: boolean
  /** The current term while leading: its token and the controller that ends it. */
  term: { controller: AbortController; token: bigint | undefined } | undefined
  /** No attempts before this time (after standing down, to let another candidate win). */
  holdoffUntil: number
  /** Ends a queued wait (native-queue drivers). */
  campaign: AbortController | undefined
  /** The attempt under way (tryAcquire, then the callbacks if elected): joined, never doubled. */
  attempt: Promise<void> | undefined
  /** The retry due when the lock may be free (electionWake), and when it fires (performance.now() ms). */
  wake: NodeJS.Timeout | undefined
  wakeAt: number
}

/** Options of standDown(). */
export interface StandDownOptions {
  /**
   * Make no attempt to lead again for this long, so that another candidate wins the next round.
   * Default 0, as in tooz: the next round elects whoever tries first, this member too if alone.
   */
  holdOffMs?: number
}

/** How long after the moment the lock may be free a candidate retries: the backend's clock may run a little behind ours. */
const CHANCE_MARGIN_MS = 5

/** The elections one Coordinator runs in. @internal */
export class Elections {
  readonly #host: ElectionHost
  readonly #candidacies = new Map<string, Candidacy>()
  /** Keeps the process alive while this member runs in an election with autoWatch on. */
  #alive: (() => void) | undefined

  constructor(host: ElectionHost) {
    this.#host = host
  }

  /** True while this member leads `group`. */
  isLeading(group: string): boolean {
    return this.#candidacies.get(group)?.leading ?? false
  }

  /** The term this member is in for `group`, or undefined when it does not lead it. */
  term(group: string): Term | undefined {
    const c = this.#candidacies.get(group)
    return c?.leading && c.term ? { signal: c.term.controller.signal, token: c.term.token } : undefined
  }

  /** Becomes a candidate (or adds a callback to an existing candidacy). */
  watch(group: string, cb: LeaderCallback): void {
    let c = this.#candidacies.get(group)
    if (!c) {
      const lock = this.#host.leaderLock(group)
      const held: HeldLock = { name: `leader of ${group}`, driverLock: lock, lost: (reason) => this.#lose(group, reason) }
      c = {
        group,
        callbacks: new Set(),
        lock,
        queue: lock.waiting.kind === 'queue' ? lock.waiting : undefined,
        held,
        leading: false,
        term: undefined,
        holdoffUntil: 0,
        campaign: undefined,
        attempt: undefined,
        wake: undefined,
        wakeAt: Infinity,
      }
      this.#candidacies.set(group, c)
      if (!this.#host.manual) this.#alive ??= keepAlive()
    }
    c.callbacks.add(cb)
    if (c.leading || this.#host.manual) return
    if (c.queue) this.#startCampaign(c)
    else void this.#tryOnce(c)
  }

  /** Removes a callback; with the last one the member stops being a candidate (and stands down). */
  async unwatch(group: string, cb: LeaderCallback): Promise<boolean> {
    const c = this.#candidacies.get(group)
    if (!c || !c.callbacks.delete(cb)) return false
    if (c.callbacks.size === 0) {
      this.#withdraw(c)
      if (c.leading) await this.#release(c, 'this member stopped running for leader')
    }
    return true
  }

  /**
   * Removes `cb` (a Leadership's) and, when `signal` is the current term's, ends that term with
   * `leadershipLost` (reason `resigned`). The member stays a candidate while other callbacks remain.
   */
  async resign(group: string, cb: LeaderCallback, signal: AbortSignal | undefined): Promise<void> {
    const c = this.#candidacies.get(group)
    if (!c || !c.callbacks.delete(cb)) return
    const last = c.callbacks.size === 0
    if (last) this.#withdraw(c)
    // A later term that only this callback wanted ends too (it cannot be used by anyone).
    if (!c.leading || (c.term?.controller.signal !== signal && !last)) return
    await this.#release(c, 'resigned')
    this.#host.emitLost(group, 'resigned')
    if (!last && !this.#host.manual && c.queue && this.#candidacies.get(group) === c) this.#startCampaign(c)
  }

  /**
   * One election round (tooz run_elect_coordinator): an attempt for every candidate that polls
   * (every candidate, when manual), joining one already under way. Resolves once the attempts,
   * and the callbacks of those elected, have settled.
   */
  async runAll(): Promise<void> {
    await Promise.all([...this.#candidacies.values()].filter((c) => this.#host.manual || !c.queue).map((c) => this.#tryOnce(c)))
  }

  /** Gives up leadership of `group`; false when this member did not lead it. Stays a candidate. */
  async standDown(group: string, options: StandDownOptions = {}): Promise<boolean> {
    const c = this.#candidacies.get(group)
    if (!c?.leading) return false
    c.holdoffUntil = Date.now() + (options.holdOffMs ?? 0)
    await this.#release(c, 'stood down')
    this.#host.emitLost(group, 'stood down')
    if (!this.#host.manual && c.queue && this.#candidacies.get(group) === c) this.#startCampaign(c)
    return true
  }

  /** Every term ends (connection lost). Candidacies stay and campaign again. */
  loseAll(reason: string): void {
    for (const c of this.#candidacies.values()) if (c.leading) this.#lose(c.group, reason)
  }

  /** Ends every campaign and releases every leader lock. */
  async stop(): Promise<void> {
    const all = [...this.#candidacies.values()]
    this.#candidacies.clear()
    this.#letGo()
    for (const c of all) {
      c.campaign?.abort()
      clearTimeout(c.wake)
    }
    await Promise.allSettled(all.filter((c) => c.leading).map((c) => this.#release(c, 'the coordinator stopped')))
  }

  #tryOnce(c: Candidacy): Promise<void> {
    if (c.attempt) return c.attempt
    if (c.leading || Date.now() < c.holdoffUntil || this.#host.stopSignal.aborted) return Promise.resolve()
    // An attempt under way (a tick's, a wake-up's) is joined, so that runWatchers() settles with it.
    c.attempt = (async () => {
      const end = await this.#host.acquiring(c.lock)
      try {
        if (!(await this.#host.call('run for election', () => c.lock.tryAcquire()))) {
          end()
          await this.#wakeAtChance(c)
          return
        }
      } catch (err) {
        this.#host.warn(asRollcallError(err, `Running for leader of ${c.group}`))
        return
      } finally {
        end()
      }
      // Withdrawn (or stopped) while the attempt was under way: the lock is not wanted any more.
      if (this.#candidacies.get(c.group) !== c) {
        await c.lock.release().catch(() => false)
        return
      }
      await this.#elected(c)
    })().finally(() => {
      c.attempt = undefined
    })
    return c.attempt
  }

  /**
   * After a failed attempt: asks the driver when the lock may be free and retries just after that,
   * when it comes before the next tick (which retries anyway). An earlier retry already due is kept.
   */
  async #wakeAtChance(c: Candidacy): Promise<void> {
    if (!this.#host.wakeAtChance || !c.lock.nextChanceInMs) return
    let inMs: number | undefined
    try {
      inMs = await this.#host.call('ask when the leader lock may be free', () => c.lock.nextChanceInMs!())
    } catch (err) {
      this.#host.warn(asRollcallError(err, `Asking when the leader lock of ${c.group} may be free`))
      return
    }
    if (inMs === undefined || !Number.isFinite(inMs) || this.#candidacies.get(c.group) !== c || this.#host.stopSignal.aborted) return
    const delayMs = Math.max(0, inMs) + CHANCE_MARGIN_MS
    if (delayMs >= this.#host.watchIntervalMs) return
    const at = performance.now() + delayMs
    if (c.wake !== undefined && c.wakeAt <= at) return
    clearTimeout(c.wake)
    c.wakeAt = at
    c.wake = setTimeout(() => {
      c.wake = undefined
      c.wakeAt = Infinity
      // An attempt under way (a tick's) is joined; its own failure schedules the next retry.
      void this.#tryOnce(c)
    }, delayMs)
    // The candidacy keeps the process alive (keepAlive), not this timer.
    c.wake.unref()
  }

  /** Ends the candidacy: no more attempts. Its term, if any, is the caller's to end. */
  #withdraw(c: Candidacy): void {
    this.#candidacies.delete(c.group)
    if (this.#candidacies.size === 0) this.#letGo()
    c.campaign?.abort()
    clearTimeout(c.wake)
  }

  #letGo(): void {
    this.#alive?.()
    this.#alive = undefined
  }

  #startCampaign(c: Candidacy): void {
    const { queue } = c
    if (!queue || (c.campaign && !c.campaign.signal.aborted)) return
    const controller = new AbortController()
    c.campaign = controller
    const signal = AbortSignal.any([controller.signal, this.#host.stopSignal])
    void (async () => {
      while (!signal.aborted && this.#candidacies.get(c.group) === c && !c.leading) {
        try {
          if (Date.now() < c.holdoffUntil) await sleep(c.holdoffUntil - Date.now(), signal)
          const end = await this.#host.acquiring(c.lock)
          let got: boolean
          try {
            got = await this.#host.call('run for election', () => queue.acquireWaiting(signal, 'exclusive'))
            // Decided before the mark ends: a term is tracked (#elected) before any release of a lost one can go out.
            if (got && (signal.aborted || this.#candidacies.get(c.group) !== c)) await c.lock.release().catch(() => false)
            else if (got) void this.#elected(c)
          } finally {
            end()
          }
          if (!got && !signal.aborted) {
            // Refused without waiting: the lock of a lost term is still being released (SQL drivers
            // refuse while they hold it). Trying again at once would spin on promises alone and
            // starve the event loop that has to finish that release.
            await sleep(this.#host.watchIntervalMs, signal).catch(() => {})
          }
        } catch (err) {
          if (signal.aborted) break
          this.#host.warn(asRollcallError(err, `Waiting to lead ${c.group}`))
          await sleep(this.#host.watchIntervalMs, signal).catch(() => {})
        }
      }
      // Ended (elected or withdrawn): a later #lose() or standDown() must be able to campaign again.
      if (c.campaign === controller) c.campaign = undefined
    })()
  }

  /** Records the term and runs the callbacks; resolves once every callback has settled. */
  async #elected(c: Candidacy): Promise<void> {
    // Tracked first: a lapse it tells of (settleLapses) finds this term not begun.
    this.#host.track(c.held)
    c.leading = true
    c.term = { controller: new AbortController(), token: this.#host.fencing ? c.lock.fencingToken : undefined }
    publish(electionWonChannel, () => ({ ...this.#host.trace, group: c.group, term: c.term?.token }))
    const event = { group: c.group, member: this.#host.memberId }
    this.#host.emitElected(event)
    await Promise.allSettled([...c.callbacks].map((cb) => callUserCode(cb, event, 'watchElectedAsLeader', 'callback', this.#host.callbackFailed)))
  }

  async #release(c: Candidacy, reason: string): Promise<void> {
    this.#endTerm(c, reason)
    this.#host.untrack(c.held)
    await this.#host.call('stand down', () => c.lock.release()).catch((err: unknown) => {
      this.#host.releaseFailed(c.lock, err)
      this.#host.warn(asRollcallError(err, `Releasing the leader lock of ${c.group}`))
    })
  }

  #lose(group: string, reason: string): void {
    const c = this.#candidacies.get(group)
    if (!c?.leading) return
    this.#endTerm(c, reason)
    this.#host.untrack(c.held)
    this.#host.emitLost(group, reason)
    // A Leadership whose term this was withdraws on its signal: campaign only if still a candidate.
    if (!this.#host.manual && c.queue && this.#candidacies.get(group) === c) this.#startCampaign(c)
  }

  /** Not leading any more; the term's signal aborts, once, where `leadershipLost` is decided. */
  #endTerm(c: Candidacy, reason: string): void {
    c.leading = false
    const term = c.term
    c.term = undefined
    term?.controller.abort(new LeadershipLostError(c.group, reason))
    publish(electionLostChannel, () => ({ ...this.#host.trace, group: c.group, reason }))
  }
}
