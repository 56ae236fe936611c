/** A fake clock for the report loop (the only place the house style allows one). */
import type { ReporterTimers } from '../../src/servicegroup/index.js'

interface Timer {
  id: number
  at: number
  fn: () => void
  everyMs: number | undefined
}

/** Timers that run only when advance() is called; records every schedule call. */
export class FakeTimers implements ReporterTimers {
  now = 0
  readonly calls: { kind: 'timeout' | 'interval'; ms: number }[] = []
  #timers: Timer[] = []
  #next = 1

  setTimeout(fn: () => void, ms: number): unknown {
    this.calls.push({ kind: 'timeout', ms })
    return this.#add(fn, ms, undefined)
  }

  setInterval(fn: () => void, ms: number): unknown {
    this.calls.push({ kind: 'interval', ms })
    return this.#add(fn, ms, ms)
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle)
  }

  clearInterval(handle: unknown): void {
    this.clearTimeout(handle)
  }

  /** Timers still scheduled. */
  get pending(): number {
    return this.#timers.length
  }

  /** Moves the clock forward, running what falls due in order, letting promises settle after each. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0]
      if (!due) break
      this.now = due.at
      if (due.everyMs === undefined) this.clearTimeout(due.id)
      else due.at += due.everyMs
      due.fn()
      await settle()
    }
    this.now = end
    await settle()
  }

  #add(fn: () => void, ms: number, everyMs: number | undefined): number {
    const id = this.#next++
    this.#timers.push({ id, at: this.now + ms, fn, everyMs })
    return id
  }
}

/** Lets pending promise callbacks (and a little I/O) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r))
}
