/**
 * The services the status server shows: Nova's os-services view of the catalog (one row per
 * service, with Status and State), kept current for the page.
 *
 * A refresh is one `ServiceGroup.list()`: one catalog read and one liveness read per topic. It
 * runs every `refreshMs` (the db and mc drivers push nothing, and their State changes with the
 * clock alone) and at once when the driver pushes a change (tooz and zk: `up`/`down` events).
 * Refreshes never overlap; a request for one while one runs queues exactly one more. Each
 * refresh is compared with the last, row by row, and only rows that changed are announced.
 */
import { SingleFlight } from '../internal/single-flight.js'
import { EventEmitter } from 'node:events'
import { InvalidArgumentError, redactUrl, type RollcallError } from '../index.js'
import type { ServiceGroup, ServiceRecord, ServiceStatus } from '../servicegroup/index.js'
import type { GroupRow } from './groups.js'
import type { WebMetrics } from './metrics.js'

/** One service as the API and the page show it (Nova's os-services fields, plus topic and report time). */
export interface ServiceRow {
  id: number
  binary: string
  host: string
  topic: string
  /** Availability zone (Nova shows `internal` where none is set; rollcall shows null). */
  zone: string | null
  /** `enabled` / `disabled`: administrative intent; never changes State. */
  status: 'enabled' | 'disabled'
  /** `up` / `down`: liveness from the driver, overridden to down by forced_down. */
  state: 'up' | 'down'
  /** The driver's updated time (Nova's `updated_at`), ISO-8601 UTC. */
  updated_at: string | null
  /**
   * When the service last reported, ISO-8601 UTC: db: last_seen_up; other drivers: their report
   * time, or, once the driver has forgotten a departed service, the last one this server saw.
   */
  last_report_at: string | null
  disabled_reason: string | null
  forced_down: boolean
  version: number
  created_at: string
}

/** Filters of the services list (`?topic=&zone=&state=&host=&binary=`). */
export interface ServiceFilter {
  topic?: string
  zone?: string
  state?: 'up' | 'down'
  host?: string
  binary?: string
}

/** Query parameters the services list accepts. */
export const SERVICE_FILTER_KEYS = ['topic', 'zone', 'state', 'host', 'binary'] as const

/** Reads filters from a query string; InvalidArgumentError for unknown keys or a bad state. */
export function parseServiceFilter(query: URLSearchParams): ServiceFilter {
  const filter: ServiceFilter = {}
  for (const [key, value] of query) {
    if (!(SERVICE_FILTER_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgumentError(`Unknown query parameter "${key}"; the services list takes ${SERVICE_FILTER_KEYS.join(', ')}`)
    }
    if (value.length > 255) throw new InvalidArgumentError(`The ${key} filter is longer than 255 characters`)
    if (key === 'state') {
      if (value !== 'up' && value !== 'down') throw new InvalidArgumentError(`state must be up or down, not ${JSON.stringify(value)}`)
      filter.state = value
    } else if (value !== '') {
      filter[key as Exclude<keyof ServiceFilter, 'state'>] = value
    }
  }
  return filter
}

/** True when `row` passes `filter`. */
export function matchesFilter(row: ServiceRow, filter: ServiceFilter): boolean {
  return (filter.topic === undefined || row.topic === filter.topic)
    && (filter.zone === undefined || (row.zone ?? '') === filter.zone)
    && (filter.state === undefined || row.state === filter.state)
    && (filter.host === undefined || row.host === filter.host)
    && (filter.binary === undefined || row.binary === filter.binary)
}

/** A catalog id from a path segment: a positive integer, else InvalidArgumentError (400). */
export function parseServiceId(text: string): number {
  if (!/^[1-9]\d{0,15}$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw new InvalidArgumentError(`A service id is a positive integer, not ${JSON.stringify(text.slice(0, 64))}`)
  }
  return Number(text)
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null)

/** Events of a {@link ServiceView}. */
export interface ServiceViewEvents {
  /** A row appeared or changed. */
  changed: [ServiceRow]
  /** A row is gone (deleted from the catalog). */
  removed: [{ id: number }]
  /** A refresh failed (`error`) or succeeded again after failing (`undefined`). */
  health: [RollcallError | Error | undefined]
}

/** Options of a {@link ServiceView}. */
export interface ServiceViewOptions {
  refreshMs: number
  metrics?: WebMetrics
  onWarning?: (message: string) => void
}

/** The live services table behind the status page. */
export class ServiceView extends EventEmitter<ServiceViewEvents> {
  readonly serviceGroup: ServiceGroup
  readonly #options: ServiceViewOptions
  #rows = new Map<number, { row: ServiceRow; json: string }>()
  /** The last report time seen per id: kept when a driver forgets it (a departed tooz member has none). */
  readonly #lastReport = new Map<number, string>()
  #watched = new Set<string>()
  /** Newest report time per `topic\nhost\nbinary`, from applyGroupReports(). */
  readonly #groupReports = new Map<string, string>()
  readonly #refresher = new SingleFlight(() => this.#refreshOnce(), () => !this.#stopped)
  #timer: NodeJS.Timeout | undefined
  #soon: NodeJS.Timeout | undefined
  #error: Error | undefined
  #lastOkAt: Date | undefined
  #stopped = false
  #onChange = (): void => this.refreshSoon()

  constructor(serviceGroup: ServiceGroup, options: ServiceViewOptions) {
    super()
    this.serviceGroup = serviceGroup
    this.#options = options
  }

  /** Every row of the last refresh, by topic then host then binary. */
  get rows(): ServiceRow[] {
    return [...this.#rows.values()].map((r) => r.row).sort(byTopicHost)
  }

  /** The last refresh's error, if it failed. */
  get error(): Error | undefined {
    return this.#error
  }

  /** When a refresh last succeeded. */
  get lastOkAt(): Date | undefined {
    return this.#lastOkAt
  }

  /** First refresh (errors are kept, not thrown), then the timer and the driver's push events. */
  async start(): Promise<void> {
    this.serviceGroup.on('up', this.#onChange).on('down', this.#onChange)
    await this.refresh()
    this.#timer = setInterval(() => void this.refresh(), this.#options.refreshMs)
    this.#timer.unref()
  }

  /** Stops the timer and the listeners. */
  stop(): void {
    this.#stopped = true
    clearInterval(this.#timer)
    clearTimeout(this.#soon)
    this.serviceGroup.off('up', this.#onChange).off('down', this.#onChange)
  }

  /** A refresh within a few milliseconds (coalescing bursts of events). */
  refreshSoon(): void {
    if (this.#soon || this.#stopped) return
    this.#soon = setTimeout(() => {
      this.#soon = undefined
      void this.refresh()
    }, 20)
    this.#soon.unref()
  }

  /** Re-reads everything now; resolves when a refresh that began after this call has finished. */
  refresh(): Promise<void> {
    return this.#refresher.run()
  }

  /** Rows read now from the catalog and the driver (the API's reads), filtered. */
  async list(filter: ServiceFilter = {}): Promise<ServiceRow[]> {
    const statuses = await this.serviceGroup.list({ topic: filter.topic, host: filter.host, binary: filter.binary })
    return statuses.map((s) => this.toRow(s)).filter((r) => matchesFilter(r, filter)).sort(byTopicHost)
  }

  /** One row read now (ServiceNotFoundError when there is no live record with this id). */
  async get(id: number): Promise<ServiceRow> {
    const record = await this.serviceGroup.catalog.get(id)
    const [status] = await this.serviceGroup.statuses([record])
    return this.toRow(status!)
  }

  /**
   * Report times read from the tooz driver's groups (one group per topic, one member per service
   * process, `reported_at` in its capabilities) by the groups section: rows of that topic take
   * them at once when they are newer than what the driver's view last read, so Updated At and
   * Last report move with every report, as the groups section does.
   */
  applyGroupReports(group: GroupRow): void {
    for (const m of group.members) {
      const caps = m.capabilities as { host?: unknown; binary?: unknown; reported_at?: unknown } | null
      if (!caps || typeof caps.host !== 'string' || typeof caps.reported_at !== 'string' || Number.isNaN(Date.parse(caps.reported_at))) continue
      const key = `${group.group}\n${caps.host}\n${typeof caps.binary === 'string' ? caps.binary : ''}`
      const before = this.#groupReports.get(key)
      if (before === undefined || Date.parse(before) < Date.parse(caps.reported_at)) this.#groupReports.set(key, new Date(caps.reported_at).toISOString())
    }
    for (const [id, entry] of this.#rows) {
      if (entry.row.topic !== group.group) continue
      const row = this.#withGroupReport(entry.row)
      const json = JSON.stringify(row)
      if (json === entry.json) continue
      this.#rows.set(id, { row, json })
      if (!this.#stopped) this.emit('changed', row)
    }
  }

  /** `row` with the newest report time the groups have shown for it, if newer than its own. */
  #withGroupReport(row: ServiceRow): ServiceRow {
    if (row.state !== 'up') return row
    const seen = this.#groupReports.get(`${row.topic}\n${row.host}\n${row.binary}`)
    if (seen === undefined || (row.updated_at !== null && Date.parse(row.updated_at) >= Date.parse(seen))) return row
    this.#lastReport.set(row.id, seen)
    return { ...row, updated_at: seen, last_report_at: seen }
  }

  /** A ServiceStatus as a row. */
  toRow(s: ServiceStatus): ServiceRow {
    return this.#withGroupReport(this.#toDriverRow(s))
  }

  #toDriverRow(s: ServiceStatus): ServiceRow {
    const r: ServiceRecord = s.record
    let lastReport = iso(this.serviceGroup.driver.keepsReportTime ? s.updatedAt : r.lastSeenUp)
    if (lastReport !== null) this.#lastReport.set(r.id, lastReport)
    else lastReport = this.#lastReport.get(r.id) ?? null
    // Names are the operator's text: a URL with a password in one (a binary named after its DSN) is redacted too.
    return {
      id: r.id,
      binary: redactUrl(r.binary),
      host: redactUrl(r.host),
      topic: redactUrl(r.topic),
      zone: r.availabilityZone === null ? null : redactUrl(r.availabilityZone),
      status: s.status,
      state: s.state,
      updated_at: iso(s.updatedAt),
      last_report_at: lastReport,
      disabled_reason: r.disabledReason === null ? null : redactUrl(r.disabledReason),
      forced_down: r.forcedDown,
      version: r.version,
      created_at: r.createdAt.toISOString(),
    }
  }

  async #refreshOnce(): Promise<void> {
    const started = performance.now()
    let statuses: ServiceStatus[]
    try {
      statuses = await this.serviceGroup.list()
    } catch (err) {
      if (this.#error === undefined) this.emit('health', err as Error)
      this.#error = err as Error
      this.#options.metrics?.refreshFailed('services')
      return
    }
    const seenAt = Date.now()
    this.#options.metrics?.refreshDuration('services', (performance.now() - started) / 1000)
    if (this.#error !== undefined) {
      this.#error = undefined
      this.emit('health', undefined)
    }
    this.#lastOkAt = new Date()
    const next = new Map<number, { row: ServiceRow; json: string }>()
    for (const s of statuses) {
      const row = this.toRow(s)
      const json = JSON.stringify(row)
      next.set(row.id, { row, json })
      const before = this.#rows.get(row.id)
      if (before?.json === json) continue
      this.#observeReport(before?.row, row, seenAt)
      if (!this.#stopped) this.emit('changed', row)
    }
    for (const id of this.#rows.keys()) {
      if (next.has(id)) continue
      this.#lastReport.delete(id)
      if (!this.#stopped) this.emit('removed', { id })
    }
    this.#rows = next
    this.#options.metrics?.setServiceCounts(statuses)
    this.#watchTopics(statuses)
  }

  /** A report the server sees for the first time: how long ago it landed (exact under db, whose store stamps it). */
  #observeReport(before: ServiceRow | undefined, row: ServiceRow, seenAt: number): void {
    if (!before || !row.last_report_at || row.last_report_at === before.last_report_at) return
    const lagSeconds = (seenAt - Date.parse(row.last_report_at)) / 1000
    if (lagSeconds >= 0 && lagSeconds < 3600) this.#options.metrics?.reportSeen(row.topic, lagSeconds)
  }

  /** Asks the driver to push changes of every topic seen (tooz, zk); db and mc cannot, and are polled. */
  #watchTopics(statuses: readonly ServiceStatus[]): void {
    for (const { record } of statuses) {
      if (this.#watched.has(record.topic)) continue
      this.#watched.add(record.topic)
      this.serviceGroup.watch(record.topic).catch((err: unknown) => {
        if ((err as RollcallError).code === 'NOT_SUPPORTED') return
        this.#watched.delete(record.topic)
        this.#options.onWarning?.(`Watching topic ${record.topic} failed (polling instead until the next refresh): ${(err as Error).message}`)
      })
    }
  }
}

function byTopicHost(a: ServiceRow, b: ServiceRow): number {
  return a.topic.localeCompare(b.topic) || a.host.localeCompare(b.host) || a.binary.localeCompare(b.binary) || a.id - b.id
}
