/**
 * The latch between a shared connection's `suspended` and `reconnected` reports (Redis, etcd3, the
 * SQL drivers): each break is reported once however many failures show it, and a return is told
 * only after a break was. What counts as down or up is the driver's; the latch only keeps the
 * reports paired.
 */
import type { DriverEvents } from '../../driver.js'

/** Reports a shared connection's breaks (`suspended`) and returns (`reconnected`) in pairs. */
export class BreakLatch {
  readonly #events: Pick<DriverEvents, 'connectionState'>
  #broken = false

  /** A latch reporting to `events`, starting up. */
  constructor(events: Pick<DriverEvents, 'connectionState'>) {
    this.#events = events
  }

  /** True between a reported break and the return that ends it. */
  get broken(): boolean {
    return this.#broken
  }

  /** The connection is down: reports `suspended` with `cause`, unless this break was reported already. */
  down(cause?: unknown): void {
    if (this.#broken) return
    this.#broken = true
    this.#events.connectionState('suspended', cause)
  }

  /** The connection answers again: reports `reconnected` when a break had been reported. */
  up(): void {
    if (this.endBreak()) this.#events.connectionState('reconnected')
  }

  /**
   * The connection answers again, and the caller says what follows (etcd3 checks its lease first):
   * true when this ends a reported break, which the caller then reports.
   */
  endBreak(): boolean {
    if (!this.#broken) return false
    this.#broken = false
    return true
  }
}
