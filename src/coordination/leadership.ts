/**
 * Leadership as a value, as etcd3's Election.campaign() and Curator's LeaderLatch hand back: a
 * campaign resolves, once this member leads a group, to a Leadership that carries the term's
 * `signal` (aborted the moment the term ends) and `term` (the leader lock's fencing token), and
 * ends with resign(). It is built on the same candidacy as watchElectedAsLeader(): one leader lock
 * per group and member, whichever API asked for it.
 */
import { CoordinatorStoppedError, InvalidStateError } from '../errors.js'
import type { Elections, LeaderCallback, Term } from './runtime/election.js'

/** Options of campaign() and withLeadership(). */
export interface CampaignOptions {
  /**
   * Cancels the wait to lead: the call then rejects with the signal's reason, and this member stops
   * running (unless watchElectedAsLeader() keeps it a candidate). Not looked at once it leads.
   */
  signal?: AbortSignal
}

/**
 * One term of this member's leadership of a group, from `coordinator.campaign(group)`. Resign it
 * when done (`await using` does): the member stands down and stops running for it.
 *
 * @example
 * ```ts
 * await using leadership = await c.campaign('schedulers')
 * await serve(leadership.signal, leadership.term)
 * ```
 */
export class Leadership {
  /** The group this member leads. */
  readonly group: string
  /** Aborts, with a LeadershipLostError, the moment the term ends: resigned, stood down, lost session or lease, stop(). */
  readonly signal: AbortSignal
  /**
   * Grows with every new leader of the group: the leader lock's fencing token, on drivers with
   * `fencing`; undefined elsewhere. Pass it to what the leader writes, so that it can refuse a
   * deposed leader that still runs.
   */
  readonly term: bigint | undefined
  readonly #resign: () => Promise<void>

  /** @internal */
  constructor(group: string, term: Term, resign: () => Promise<void>) {
    this.group = group
    this.signal = term.signal
    this.term = term.token
    this.#resign = resign
  }

  /** True until the term ends. */
  get active(): boolean {
    return !this.signal.aborted
  }

  /**
   * Ends the term (stands down, with `leadershipLost` reason `resigned`) if it has not ended, and
   * stops running for the group. Safe to call twice; never rejects (a failed release is a `warning`).
   */
  resign(): Promise<void> {
    return this.#resign()
  }

  /** resign(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.resign()
  }
}

/** The campaigns of one Coordinator: at most one per group. @internal */
export class Campaigns {
  readonly #elections: Elections
  readonly #stopSignal: AbortSignal
  readonly #groups = new Set<string>()

  constructor(elections: Elections, stopSignal: AbortSignal) {
    this.#elections = elections
    this.#stopSignal = stopSignal
  }

  /** Runs for leader of `group` and resolves once leading (the group's name is already checked). */
  async campaign(group: string, options: CampaignOptions): Promise<Leadership> {
    if (this.#groups.has(group)) {
      throw new InvalidStateError(
        `a campaign for group ${JSON.stringify(group)} is already under way on this coordinator; share its Leadership, or resign it before campaigning again`,
      )
    }
    options.signal?.throwIfAborted()
    this.#groups.add(group)
    const elections = this.#elections
    let onElected!: LeaderCallback
    const cleanUp: (() => void)[] = []
    let term: Term
    try {
      term = await new Promise<Term>((resolve, reject) => {
        const check = (): void => {
          const t = elections.term(group)
          if (t) resolve(t)
        }
        onElected = check
        const cancel = (reason: unknown): void => reject(reason)
        const onStop = (): void => cancel(new CoordinatorStoppedError('run for leader'))
        const onAbort = (): void => cancel(options.signal!.reason)
        this.#stopSignal.addEventListener('abort', onStop, { once: true })
        cleanUp.push(() => this.#stopSignal.removeEventListener('abort', onStop))
        if (options.signal) {
          options.signal.addEventListener('abort', onAbort, { once: true })
          cleanUp.push(() => options.signal!.removeEventListener('abort', onAbort))
        }
        elections.watch(group, onElected)
        // Already leading (watchElectedAsLeader): this term is the campaign's too.
        check()
      })
    } catch (err) {
      this.#groups.delete(group)
      // Elected in the same turn as the cancel: that term is nobody's, so it ends too.
      await elections.resign(group, onElected, undefined)
      throw err
    } finally {
      for (const f of cleanUp) f()
    }
    // Once only, and marked before anything runs: ending the term aborts its signal, whose listener calls this again.
    let resigned: Promise<void> | undefined
    const resign = (): Promise<void> => {
      if (resigned) return resigned
      let settle!: () => void
      resigned = new Promise<void>((r) => (settle = r))
      this.#groups.delete(group)
      void elections.resign(group, onElected, term.signal).then(settle, settle)
      return resigned
    }
    // The term ended by itself (lost, stood down, stop()): the member stops running for this campaign.
    term.signal.addEventListener('abort', () => void resign(), { once: true })
    return new Leadership(group, term, resign)
  }
}
