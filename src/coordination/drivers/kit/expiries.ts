/**
 * What a driver answers to nextExpiryAt(group): per group, when the first member seen by the
 * latest listing expires unless it beats again, on this process's monotonic clock. The watcher
 * re-reads the group just after that moment (runtime/watchers.ts).
 * @internal
 */
export class FirstExpiries {
  readonly #at = new Map<string, number>()
  readonly #max: number

  /** Remembers at most `max` groups, forgetting the least recently listed. */
  constructor(max = 1_000) {
    this.#max = max
  }

  /**
   * A listing of `group` just answered: its first member expires in `inMs` (counted from now, the
   * answer's arrival, so never earlier than the backend's own verdict). Not finite: none will.
   */
  note(group: string, inMs: number): void {
    this.#at.delete(group)
    if (!Number.isFinite(inMs)) return
    this.#at.set(group, performance.now() + inMs)
    if (this.#at.size > this.#max) this.#at.delete(this.#at.keys().next().value!)
  }

  /** When (performance.now() ms) the first member of the latest listing of `group` expires. */
  get(group: string): number | undefined {
    return this.#at.get(group)
  }
}
