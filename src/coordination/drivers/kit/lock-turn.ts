/**
 * A lock holder's turn, the same on every backend that hands contended locks over in turns (file,
 * Redis, memcached, MySQL/MariaDB, etcd): while rollcall waiters wait, a holder may release and
 * re-take the lock up to {@link TURN_SIZE} (memcached: {@link LONG_TURN_SIZE}; Redis and etcd: a
 * share of a round divided among the holder and its waiters, as redis-lock.ts and etcd3-lock.ts
 * say) times within {@link TURN_MS} of its turn's first acquisition; the release that ends the
 * turn lets the next in line have it. Each driver says how its waiters line up.
 * @internal
 */

/** How many acquisitions a turn allows... */
export const TURN_SIZE = 32
/**
 * ...where a hand-over costs several lock cycles: on memcached the head waiter polls (every 2 ms
 * at first) and takes the key in another round trip, against a 0.06 ms cycle of a holder looping
 * on the lock. On Redis (a PUBLISH, then the waiter's process waking: about 0.6 ms against a
 * 0.12 ms cycle then) turns of 32 spent an eighth of the time handing over: with 8 processes,
 * turns of 128 did 5,930-7,866 acquisitions/s against 4,712-6,814 (interleaved 8 s runs).
 * File and MariaDB hand over in about a cycle and gained nothing from longer turns.
 */
export const LONG_TURN_SIZE = 128
/** ...and within how long (ms from the turn's first acquisition). */
export const TURN_MS = 100

/** The acquisitions and time one turn has used. */
export class Turn {
  readonly #size: number
  #startedAt = 0
  #acquisitions = 0

  /** A turn of up to `size` acquisitions (and TURN_MS). */
  constructor(size = TURN_SIZE) {
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
