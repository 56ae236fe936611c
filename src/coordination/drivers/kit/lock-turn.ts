/**
 * A lock holder's turn, the same on every backend that hands contended locks over in turns (file,
 * Redis, memcached, MySQL/MariaDB, etcd): while rollcall waiters wait, a holder may release and
 * re-take the lock up to {@link TURN_SIZE} (Redis and memcached: {@link LONG_TURN_SIZE}; etcd: 64
 * shared by the holder and its waiters, etcd3-lock.ts says why) times within {@link TURN_MS} of
 * its turn's first acquisition; the release that ends the turn lets the next in line have it. Each
 * driver says how its waiters line up.
 * @internal
 */

/** How many acquisitions a turn allows... */
export const TURN_SIZE = 32
/**
 * ...where a hand-over costs several lock cycles: on Redis the release PUBLISHes, the next waiter's
 * process wakes and takes the key in another round trip (about 0.6 ms, against a 0.12 ms cycle of a
 * holder looping on the lock), so turns of 32 spent an eighth of the time handing over. With 8
 * processes, interleaved 8 s runs gave 5,930-7,866 acquisitions/s against 4,712-6,814, the
 * longest wait 176-484 ms against 72-94 ms (tooz: 1,407 ms), fewest/most per process 0.94-0.98.
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
