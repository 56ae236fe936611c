/**
 * Time helpers of the service-group layer: timestamp normalisation (Nova's drivers accept
 * datetimes and strings; naive ones are UTC), the inclusive freshness test, and the one rule that
 * ties `service_down_time` to `report_interval`.
 */
import type { TimeLike } from './types.js'

/** Nova's INITIAL_REPORTING_DELAY: seconds before a service's first report. */
export const INITIAL_REPORT_DELAY_SECONDS = 5

/** Defaults of the timing settings, in seconds (Nova's). */
export const TIMING_DEFAULTS = { reportIntervalSeconds: 10, serviceDownTimeSeconds: 60, initialReportDelaySeconds: INITIAL_REPORT_DELAY_SECONDS } as const

const NAIVE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/

/**
 * A Date from a Date, an ISO-8601 string or epoch milliseconds; null for null/undefined/''.
 * A string without a zone is read as UTC (Nova stores naive UTC datetimes). Microseconds
 * (`.000000`) are accepted. Throws TypeError for anything else.
 */
export function toDate(value: TimeLike | null | undefined): Date | null {
  if (value === null || value === undefined || value === '') return null
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError('Invalid Date')
    return value
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`Not a time: ${value}`)
    return new Date(value)
  }
  if (typeof value === 'string') {
    let text = value.trim()
    if (NAIVE.test(text)) text = `${text.replace(' ', 'T')}Z`
    // JavaScript keeps milliseconds only; Nova writes microseconds.
    text = text.replace(/(\.\d{3})\d+/, '$1')
    const d = new Date(text)
    if (Number.isNaN(d.getTime())) throw new TypeError(`Not an ISO-8601 time: ${JSON.stringify(value)}`)
    return d
  }
  throw new TypeError(`Not a time: ${String(value)}`)
}

/**
 * Nova's freshness test: `|now − last| ≤ serviceDownTime`. Inclusive, and symmetric so that a
 * beat "in the future" from clock skew counts as fresh only up to serviceDownTime ahead.
 */
export function isFresh(last: Date, nowMs: number, serviceDownTimeSeconds: number): boolean {
  return Math.abs(nowMs - last.getTime()) <= serviceDownTimeSeconds * 1000
}

/** The later of two times; null only when both are. Nova's mc/updated-time precedence. */
export function newer(a: Date | null, b: Date | null): Date | null {
  if (a === null) return b
  if (b === null) return a
  return b.getTime() > a.getTime() ? b : a
}

/** Result of {@link effectiveDownTime}. */
export interface DownTimeCheck {
  /** The service_down_time to use, in seconds: the one given, or the corrected one. */
  serviceDownTimeSeconds: number
  /** Set when the value was corrected; a sentence for the log. */
  warning: string | undefined
}

/**
 * Nova's construction-time guard: when `service_down_time <= report_interval`, a service would be
 * down between two reports, so service_down_time is raised to 2.5 × report_interval (whole
 * seconds when report_interval is whole, as Nova's `int()`), with a warning. Equality triggers it:
 * 10/10 → 25. A report_interval of 0 (no reports) never triggers it.
 */
export function effectiveDownTime(reportIntervalSeconds: number, serviceDownTimeSeconds: number): DownTimeCheck {
  if (reportIntervalSeconds <= 0 || serviceDownTimeSeconds > reportIntervalSeconds) return { serviceDownTimeSeconds, warning: undefined }
  const raw = reportIntervalSeconds * 2.5
  const corrected = Number.isInteger(reportIntervalSeconds) ? Math.floor(raw) : raw
  return {
    serviceDownTimeSeconds: corrected,
    warning: `Report interval must be less than service down time. Current config: service_down_time: ${serviceDownTimeSeconds}, report_interval: `
      + `${reportIntervalSeconds}. Setting service_down_time to: ${corrected}`,
  }
}
