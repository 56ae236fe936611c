/**
 * The `db` driver (default): liveness is the services table itself, as in Nova.
 *
 * - report(): `report_count + 1` and one save; the store sets last_seen_up to the database
 *   server's clock, and only because the count rose.
 * - isUp(): `|now − (last_seen_up ?? created_at)| ≤ service_down_time`, inclusive, symmetric
 *   for clock skew. A new row that never reported is up for service_down_time after created_at.
 *   `updated_at` is never consulted, so enabling or disabling a dead service cannot revive it.
 * - getAll(): nothing to read: the records the caller read from the catalog are the liveness.
 * - leave(): stamps last_seen_up with the epoch, so the service reads down at once.
 *
 * Hazard: "now" is this process's clock while last_seen_up is the database server's; the abs()
 * tolerates skew up to service_down_time but not more. Keep clocks in sync (NTP).
 */
import { isFresh, toDate } from '../times.js'
import type { DriverStats, LiveView, ServiceGroupDriver } from '../driver.js'
import type { Catalog } from '../catalog/catalog.js'
import type { ServiceRecord, ServiceRef } from '../types.js'

/** What the db driver needs. */
export interface DbDriverOptions {
  catalog: Catalog
  serviceDownTimeSeconds: number
  /** The clock, for tests; default Date.now. */
  now?: () => number
}

/** The db verdict for one record, exported for the migration checker and tests. */
export function dbIsUp(service: ServiceRef, serviceDownTimeSeconds: number, nowMs: number): boolean {
  const last = toDate(service.lastSeenUp ?? null) ?? toDate(service.createdAt ?? null)
  if (last === null) return false
  return isFresh(last, nowMs, serviceDownTimeSeconds)
}

/** The db service-group driver. */
export class DbDriver implements ServiceGroupDriver {
  readonly name = 'db' as const
  readonly backendName = 'the services table'
  readonly reportsOnJoin = false
  readonly needsServiceRecord = true
  readonly keepsReportTime = false
  readonly stats: DriverStats = { reads: 0, writes: 0 }
  readonly #options: DbDriverOptions
  readonly #now: () => number

  constructor(options: DbDriverOptions) {
    this.#options = options
    this.#now = options.now ?? Date.now
  }

  async start(): Promise<void> {}

  async report(service: ServiceRecord): Promise<void> {
    const count = service.reportCount + 1
    service.reportCount = count
    this.stats.writes += 1
    const saved = await this.#options.catalog.update(service.id, { reportCount: count })
    Object.assign(service, saved)
  }

  async isUp(service: ServiceRef): Promise<boolean> {
    return dbIsUp(service, this.#options.serviceDownTimeSeconds, this.#now())
  }

  async getAll(_topic: string, _services: readonly ServiceRef[]): Promise<LiveView> {
    const now = this.#now()
    const downTime = this.#options.serviceDownTimeSeconds
    return { isUp: (s) => dbIsUp(s, downTime, now), reportedAt: () => null }
  }

  async leave(host: string, topic: string): Promise<void> {
    this.stats.writes += 1
    await this.#options.catalog.markDown(host, topic)
  }

  async close(): Promise<void> {}
}
