/**
 * The service-group driver contract: `report()`, `isUp()`, `getAll()`, `leave()`, plus start/close.
 *
 * Everything that is the same for every driver lives once elsewhere: the report timer and the
 * lost/recovered latch in reporter.ts, the forced_down short-circuit, the 2.5 × correction and
 * the updated-time precedence in api.ts. A driver only says how a report is written and how
 * liveness is read from its backend.
 */
import type { DriverName, ServiceRecord, ServiceRef } from './types.js'

/** A batched answer for one topic: what the driver knows, read in one go. */
export interface LiveView {
  /** The driver's verdict (forced_down is not the driver's business: the API applies it). */
  isUp(service: ServiceRef): boolean
  /** The last report time the backend keeps (mc, zk, tooz), or null (db keeps none apart from the record). */
  reportedAt(service: ServiceRef): Date | null
}

/** Backend requests made so far, for tests and benchmarks ("one read per topic"). */
export interface DriverStats {
  reads: number
  writes: number
}

/** A change of a host's liveness in a watched topic. */
export interface LivenessChange {
  topic: string
  host: string
  up: boolean
}

/** One service-group driver. Built by drivers/<name>.ts; chosen by name from a closed set. */
export interface ServiceGroupDriver {
  readonly name: DriverName
  /**
   * What the report loop's "lost connection to …" and "recovered …" log lines call the backend
   * (`the services table`, `memcache server`, ...).
   */
  readonly backendName: string
  /**
   * True when liveness is membership set up by the first report (zk, tooz): join() then reports
   * at once, as Nova's zk driver joined at once; otherwise the first report follows the initial
   * delay (Nova's db and mc drivers).
   */
  readonly reportsOnJoin: boolean
  /** True when a report needs the service's catalog record (db, mc), so join() without one is a TypeError, as in Nova. */
  readonly needsServiceRecord: boolean
  /**
   * True when the backend keeps each service's last report time (mc, zk, tooz: LiveView.reportedAt);
   * false when the catalog record's last_seen_up is the only one (db), which is then what a status
   * page shows as the last report.
   */
  readonly keepsReportTime: boolean
  readonly stats: DriverStats
  /** Connects (no-op where there is nothing to connect). */
  start(): Promise<void>
  /**
   * One report for `service`. May update `service` in place (db: report_count, last_seen_up).
   * Throws on failure; the reporter catches, logs and latches.
   */
  report(service: ServiceRecord): Promise<void>
  /** The driver's verdict for one service (may read the backend; may answer from a fresh view). */
  isUp(service: ServiceRef): Promise<boolean>
  /**
   * Every service of `topic` in a bounded number of backend reads (at most one for db, mc and
   * tooz; zk reads only what its watches have not already delivered). `services` are the
   * catalog's records of that topic.
   */
  getAll(topic: string, services: readonly ServiceRef[]): Promise<LiveView>
  /** Makes the driver forget `host` in `topic` so it reads down at once. Idempotent. */
  leave(host: string, topic: string): Promise<void>
  /** Push notifications of liveness changes in `topic` (zk, tooz); absent where the backend has none. */
  watch?(topic: string, listener: (change: LivenessChange) => void): Promise<() => void>
  /** Stops timers and closes connections. Does not leave (the API does, for graceful stops). */
  close(): Promise<void>
}
