/**
 * The report loop: the only timer of the service-group layer, and the only place that logs a lost
 * or recovered backend (Nova had a copy of this in every driver, and one copy once let an
 * exception kill the timer: the Liberty "zombie service", bug 1517926).
 *
 * - The first report comes after `initialDelayMs` (Nova: 5 s), then one every `intervalMs` on a
 *   fixed-interval timer. An interval of 0 schedules nothing (Nova: report_interval 0/None).
 * - A report never overlaps the previous one: a tick that finds one still running is skipped.
 * - Nothing escapes: every error is caught. The `disconnected` latch (Nova's
 *   `model_disconnected`) turns on at the first failure and off at the next success. A backend
 *   that cannot be reached is logged once as a warning on the way down and once as info on the
 *   way back; a deleted record is logged as an error at every report (it needs an operator); any
 *   other error is logged with its stack at every report.
 * - Timers are unref'd: a reporter never keeps a process alive (the ServiceGroup does, while a
 *   service is joined).
 */
import { isRetryable, ServiceNotFoundError, type Logger, type RollcallError } from '../index.js'
import { adaptLogger } from '../coordination/logger.js'
import type { ServiceGroupDriver } from './driver.js'
import type { ServiceRecord } from './types.js'

/** The timer functions the reporter uses; tests pass a fake clock. */
export interface ReporterTimers {
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
  setInterval(fn: () => void, ms: number): unknown
  clearInterval(handle: unknown): void
}

/** Node's own timers, unref'd. */
export const REAL_TIMERS: ReporterTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  setInterval: (fn, ms) => setInterval(fn, ms).unref(),
  clearInterval: (h) => clearInterval(h as NodeJS.Timeout),
}

/** What a report failure or recovery tells the owner. */
export interface ReportEvent {
  service: ServiceRecord
  driver: string
  error?: RollcallError | Error
}

/** Construction options of a {@link Reporter}. */
export interface ReporterOptions {
  driver: ServiceGroupDriver
  service: ServiceRecord
  intervalMs: number
  initialDelayMs: number
  logger: Logger
  timers?: ReporterTimers
  /** The latch turned on (first failure after success). */
  onLost?(event: ReportEvent): void
  /** The latch turned off (first success after failure). */
  onRecovered?(event: ReportEvent): void
}

/** The periodic reporter of one service to one driver. */
export class Reporter {
  readonly #options: ReporterOptions
  readonly #timers: ReporterTimers
  #initial: unknown
  #interval: unknown
  #running: Promise<void> | undefined
  #stopped = false
  #disconnected = false
  #reports = 0
  #failures = 0

  constructor(options: ReporterOptions) {
    this.#options = { ...options, logger: adaptLogger(options.logger) }
    this.#timers = options.timers ?? REAL_TIMERS
  }

  /** The service record, as the last report left it. */
  get service(): ServiceRecord {
    return this.#options.service
  }

  /** The latch: true from a failed report until the next successful one (Nova's model_disconnected). */
  get disconnected(): boolean {
    return this.#disconnected
  }

  /** Reports attempted and failed so far. */
  get counts(): { reports: number; failures: number } {
    return { reports: this.#reports, failures: this.#failures }
  }

  /**
   * Starts the timer: first report after the initial delay (or at once with `immediately`), then
   * every interval. Nothing is scheduled when the interval is 0.
   */
  start(immediately = false): void {
    if (this.#stopped || this.#options.intervalMs <= 0) return
    const begin = (): void => {
      this.#initial = undefined
      if (this.#stopped) return
      void this.reportNow()
      this.#interval = this.#timers.setInterval(() => void this.reportNow(), this.#options.intervalMs)
    }
    if (immediately) begin()
    else this.#initial = this.#timers.setTimeout(begin, this.#options.initialDelayMs)
  }

  /** Ends the loop; a report under way finishes. Resolves once it has. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#initial !== undefined) this.#timers.clearTimeout(this.#initial)
    if (this.#interval !== undefined) this.#timers.clearInterval(this.#interval)
    this.#initial = this.#interval = undefined
    await this.#running
  }

  /** One report now, unless one is under way (then that one). Never rejects. */
  reportNow(): Promise<void> {
    this.#running ??= this.#reportOnce().finally(() => {
      this.#running = undefined
    })
    return this.#running
  }

  async #reportOnce(): Promise<void> {
    const { driver, service, logger } = this.#options
    this.#reports += 1
    try {
      await driver.report(service)
    } catch (err) {
      this.#failures += 1
      this.#failed(err)
      return
    }
    if (this.#disconnected) {
      this.#disconnected = false
      logger.info(`Recovered connection to ${driver.backendName} for reporting service status.`, {
        driver: driver.name,
        host: service.host,
        binary: service.binary,
      })
      this.#options.onRecovered?.({ service, driver: driver.name })
    }
  }

  #failed(err: unknown): void {
    const { driver, service, logger } = this.#options
    const wasDisconnected = this.#disconnected
    this.#disconnected = true
    const fields = { driver: driver.name, host: service.host, binary: service.binary, error: err instanceof Error ? err.message : String(err) }
    if (err instanceof ServiceNotFoundError) {
      logger.error(
        `The services table record for the ${service.binary} service on host ${service.host} is gone. You either need to stop this service if it should `
          + `be deleted or restart it to recreate the record in the database.`,
        fields,
      )
    } else if (isRetryable(err)) {
      if (!wasDisconnected) logger.warn(`Lost connection to ${driver.backendName} for reporting service status.`, fields)
    } else {
      logger.error('Unexpected error while reporting service status', { ...fields, stack: err instanceof Error ? err.stack : undefined })
    }
    if (!wasDisconnected) this.#options.onLost?.({ service, driver: driver.name, error: err instanceof Error ? err : new Error(String(err)) })
  }
}
