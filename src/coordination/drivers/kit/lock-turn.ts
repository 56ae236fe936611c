/**
 * A lock holder's turn, the same on every backend that hands contended locks over in turns (file,
 * Redis, memcached, MySQL/MariaDB, etcd): while rollcall waiters wait, a holder may release and
 * re-take the lock up to {@link turnSize} times within {@link TURN_MS} of its turn's first
 * acquisition; the release that ends the turn lets the next in line have it. Each driver says how
 * its waiters line up; the size of a turn follows one rule, with each backend's parameters in
 * {@link TURN_RULES}.
 * @internal
 */

/** How a backend sizes a turn: a share of `round` acquisitions among the holder and the waiters it knows of, never fewer than `min`. */
export interface TurnRule {
  /** The acquisitions that the turns of a holder and its waiters allow together. */
  readonly round: number
  /** The fewest acquisitions a turn allows, however many wait. */
  readonly min: number
}

/**
 * Each backend's turn rule. A longer turn spends less of the time handing over; a shorter one lets
 * each waiter in sooner. Where a backend cannot count its waiters, `round` equals `min` and every
 * turn has that size.
 */
export const TURN_RULES = {
  /** File and MySQL/MariaDB hand over in about one lock cycle (a lock wakes the next waiter in the kernel or the server), so a short fixed turn costs little. */
  file: { round: 32, min: 32 },
  mysql: { round: 32, min: 32 },
  /** memcached's head waiter polls and takes the key in a round trip of its own: a hand-over costs many cycles of a holder looping on the key, so turns are long. */
  memcached: { round: 128, min: 128 },
  /**
   * Redis counts its queued waiters. A hand-over is a PUBLISH and the waiter's process waking,
   * several times a holder's cycle, so the round is large; the minimum keeps a turn worth a
   * hand-over however many wait.
   */
  redis: { round: 1024, min: 32 },
  /**
   * etcd counts its queued waiters. Every acquisition is a consensus write through the gateway, so
   * a hand-over costs about one acquisition: a small round lets each of many waiters in often.
   */
  etcd3: { round: 64, min: 4 },
} as const satisfies Record<string, TurnRule>

/** The acquisitions a turn allows under `rule` with `waiters` queued behind the holder. */
export function turnSize(rule: TurnRule, waiters = 0): number {
  return Math.max(rule.min, Math.floor(rule.round / (waiters + 1)))
}

/** How long a turn lasts at most (ms from its first acquisition). */
export const TURN_MS = 100

/**
 * The acquisitions and time one turn has used, where a process counts them (file, memcached,
 * MySQL/MariaDB, etcd). Redis counts them in its scripts (redis-scripts.ts), from TURN_MS and
 * TURN_RULES.redis passed as arguments.
 */
export class Turn {
  readonly #size: number
  #startedAt = 0
  #acquisitions = 0

  /** A turn of up to `size` acquisitions (and TURN_MS). */
  constructor(size: number) {
    this.#size = size
  }

  /** Counts an acquisition made under this turn (the first starts its clock). */
  count(): void {
    if (this.#acquisitions === 0) this.#startedAt = performance.now()
    this.#acquisitions += 1
  }

  /** True once the turn's acquisitions or time are used up: the next release ends it. */
  get over(): boolean {
    return this.#acquisitions >= this.#size || performance.now() - this.#startedAt >= TURN_MS
  }
}

/**
 * A lock object's attempts in flight, for the turn a release within it leaves open: unless the
 * object asks for the lock again by the next turn of the event loop (a holder looping on it), that
 * turn ends then (Redis, memcached, etcd).
 */
export class RetakeWatch {
  #attempts = 0

  /** True while an attempt is in flight. */
  get inFlight(): boolean {
    return this.#attempts > 0
  }

  /** Runs one attempt, counted while it is in flight. */
  async attempt<T>(run: () => Promise<T>): Promise<T> {
    this.#attempts += 1
    try {
      return await run()
    } finally {
      this.#attempts -= 1
    }
  }

  /** After a release within a turn: on the next turn of the event loop, calls `end` unless an attempt is in flight or `held()`. */
  endUnlessRetaken(held: () => boolean, end: () => void): void {
    setImmediate(() => {
      if (this.#attempts === 0 && !held()) end()
    })
  }
}
