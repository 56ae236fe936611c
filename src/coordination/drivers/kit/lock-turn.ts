/**
 * A lock holder's turn, the same on every backend that hands contended locks over in turns (file,
 * Redis, MySQL/MariaDB): while rollcall waiters wait, a holder may release and re-take the lock up
 * to {@link TURN_SIZE} times within {@link TURN_MS} of its turn's first acquisition; the release
 * that ends the turn lets the next in line have it. Each driver says how its waiters line up.
 * @internal
 */

/** How many acquisitions a turn allows... */
export const TURN_SIZE = 32
/** ...and within how long (ms from the turn's first acquisition). */
export const TURN_MS = 100

/** The acquisitions and time one turn has used. */
export class Turn {
  #startedAt = 0
  #acquisitions = 0

  /** Counts an acquisition made under this turn (the first starts its clock). */
  count(): void {
    if (this.#acquisitions === 0) this.#startedAt = performance.now()
    this.#acquisitions += 1
  }

  /** True once the turn's acquisitions or time are used up: the next release ends it. */
  get over(): boolean {
    return this.#acquisitions >= TURN_SIZE || performance.now() - this.#startedAt >= TURN_MS
  }
}
