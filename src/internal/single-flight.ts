/**
 * Runs a task so that runs never overlap: a call while it runs asks for one more run afterwards
 * and resolves when that run has finished, so every caller sees a run that began after its call.
 * Used by every refresh loop (watchers, the status page's views).
 * @internal
 */
export class SingleFlight {
  readonly #task: () => Promise<void>
  readonly #keepGoing: () => boolean
  #running: Promise<void> | undefined
  #again = false

  /** `keepGoing` is asked before each extra run (false: stop, e.g. once closed). */
  constructor(task: () => Promise<void>, keepGoing: () => boolean = () => true) {
    this.#task = task
    this.#keepGoing = keepGoing
  }

  /** The run under way, if any. */
  get running(): Promise<void> | undefined {
    return this.#running
  }

  run(): Promise<void> {
    if (this.#running) {
      this.#again = true
      return this.#running
    }
    const running = (async () => {
      try {
        do {
          this.#again = false
          await this.#task()
        } while (this.#again && this.#keepGoing())
      } finally {
        // In the same turn as the last check of #again: a call after that check starts a new run
        // (a .finally() on the promise would run ticks later, and a call in between would be lost).
        this.#running = undefined
      }
    })()
    this.#running = running
    return running
  }
}
