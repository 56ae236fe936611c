/**
 * Repeated warnings, collapsed: a backend outage makes every group's poll fail the same way, and a
 * log line per group per poll buries everything else (50 copies of one line in a 10 s outage).
 *
 * Warnings are grouped by a key the caller picks (the error code for a backend that is down, the
 * whole message otherwise). The first warning of a kind is logged as it is: the change of state.
 * Repeats are counted, not logged; while they go on, one summary line every `summaryEveryMs`
 * (default 30 s) says how long it has lasted and how many were left out. recovered() ends the
 * episodes it is told of with one line; a kind quiet for twice `summaryEveryMs` starts afresh.
 * @internal
 */

/** Where the lines go: a Logger's warn and info, usually. */
export interface WarningSink {
  warn(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
}

interface Episode {
  firstMessage: string
  latest: string
  startedAt: number
  lastAt: number
  summarizedAt: number
  /** Repeats since the last line logged. */
  untold: number
  /** Repeats in the whole episode. */
  repeats: number
}

/** Default interval between two summaries of one kind of warning. */
export const SUMMARY_EVERY_MS = 30_000

/** Collapses repeats of the same kind of warning into one line, then a summary now and then. */
export class RepeatedWarnings {
  readonly #sink: WarningSink
  readonly #summaryEveryMs: number
  readonly #now: () => number
  readonly #episodes = new Map<string, Episode>()

  constructor(sink: WarningSink, options: { summaryEveryMs?: number; now?: () => number } = {}) {
    this.#sink = sink
    this.#summaryEveryMs = options.summaryEveryMs ?? SUMMARY_EVERY_MS
    this.#now = options.now ?? (() => performance.now())
  }

  /** Logs `message` unless a warning of the same `key` is already being reported; true when it logged a line. */
  warn(key: string, message: string, fields?: Record<string, unknown>): boolean {
    const now = this.#now()
    const e = this.#episodes.get(key)
    if (e === undefined || now - e.lastAt > 2 * this.#summaryEveryMs) {
      this.#episodes.set(key, { firstMessage: message, latest: message, startedAt: now, lastAt: now, summarizedAt: now, untold: 0, repeats: 0 })
      this.#sink.warn(message, fields)
      return true
    }
    e.lastAt = now
    e.latest = message
    e.untold += 1
    e.repeats += 1
    if (now - e.summarizedAt < this.#summaryEveryMs) return false
    this.#sink.warn(`Still failing after ${seconds(now - e.startedAt)} s (${e.untold} similar warnings since the last line): ${message}`, {
      ...fields,
      repeats: e.untold,
    })
    e.summarizedAt = now
    e.untold = 0
    return true
  }

  /** Ends the episodes whose key `matches` (all by default): one info line each that had repeats. */
  recovered(matches: (key: string) => boolean = () => true): void {
    if (this.#episodes.size === 0) return
    const now = this.#now()
    for (const [key, e] of this.#episodes) {
      if (!matches(key)) continue
      this.#episodes.delete(key)
      if (e.repeats > 0) {
        this.#sink.info(`Recovered after ${seconds(now - e.startedAt)} s (${e.repeats} repeats of this warning were not logged): ${e.firstMessage}`, {
          repeats: e.repeats,
        })
      }
    }
  }
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10
}
