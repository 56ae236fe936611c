/**
 * ServiceGroup: Nova's servicegroup API (join, isUp, getUpdatedTime), plus leave, the batched
 * reads Nova removed (getAll, isUpMany, list), liveness events and a graceful leave on SIGTERM.
 *
 * Semantics written once here, for every driver:
 * - forced_down ⇒ down, without asking the driver; disabled never changes State.
 * - service_down_time ≤ report_interval is raised to 2.5 × report_interval, with a warning.
 * - the updated time is the newer of the record's updated_at and the driver's last report.
 * - isUp() does no logging: the scheduler calls it per host per request.
 */
import { EventEmitter } from 'node:events'
import { keepAlive } from '../internal/keep-alive.js'
import { InvalidArgumentError, NotSupportedError, silentLogger, type Logger } from '../index.js'
import { adaptLogger } from '../coordination/logger.js'
import type { Catalog, ListFilter } from './catalog/catalog.js'
import type { LiveView, ServiceGroupDriver } from './driver.js'
import { Reporter, type ReporterTimers } from './reporter.js'
import { createDriver } from './registry.js'
import { ZOOKEEPER_DEFAULTS, checkDriverSettings, type DriverSettings, type ZookeeperSettings } from './settings.js'
import { TIMING_DEFAULTS, effectiveDownTime, newer, toDate } from './times.js'
import type { DriverName, PreviousDriverName, ServiceEvent, ServiceRecord, ServiceRef, ServiceSpec, ServiceStatus } from './types.js'

/** Options of {@link createServiceGroup}. Durations are in seconds, as in the INI file. */
export interface ServiceGroupOptions {
  /** The services table (see openCatalog()). closeCatalog decides whether close() closes it. */
  catalog: Catalog
  /** Close the catalog in close() (default false: the caller opened it). */
  closeCatalog?: boolean
  driver?: DriverName
  reportIntervalSeconds?: number
  serviceDownTimeSeconds?: number
  initialReportDelaySeconds?: number
  toozUrl?: string
  reportToPreviousDriver?: PreviousDriverName
  memcacheServers?: readonly string[]
  zookeeper?: Partial<ZookeeperSettings> & { address: string }
  logger?: Logger
  /** @internal A fake clock for the report loop. */
  timers?: ReporterTimers
}

/** Events of a ServiceGroup. */
export interface ServiceGroupEvents {
  /** A host of a watched topic became up (tooz and zk; see watch()). Not fired for hosts up when the watch began. */
  up: [ServiceEvent]
  /** A host of a watched topic became down: its last process left or died. */
  down: [ServiceEvent]
  /** Reports of a joined service to `driver` started failing (fires once per outage). */
  reportLost: [{ host: string; binary: string; topic: string; driver: DriverName; error: Error }]
  /** Reports of a joined service to `driver` succeed again after reportLost. */
  reportRecovered: [{ host: string; binary: string; topic: string; driver: DriverName }]
}

/** Options of {@link ServiceGroup.join}. */
export interface JoinOptions {
  /** Report at once instead of after initial_report_delay (db, mc). */
  reportImmediately?: boolean
}

interface JoinedService {
  service: ServiceRecord
  reporters: Reporter[]
  /** Ends the hold on the process (see join()). */
  letGo: () => void
}

/** Per joined service and driver: the report loop's health, for status pages and metrics. */
export interface ReporterHealth {
  host: string
  binary: string
  topic: string
  driver: DriverName
  disconnected: boolean
  reports: number
  failures: number
}

/**
 * Builds and starts a ServiceGroup: checks the settings (InvalidConfigError naming the setting),
 * applies the 2.5 × rule, and connects the driver (and the previous driver when migrating).
 *
 * @example
 * ```ts
 * import { openCatalog, createServiceGroup } from 'rollcall/servicegroup'
 * const catalog = await openCatalog('sqlite:////var/lib/rollcall/rollcall.sqlite')
 * const sg = await createServiceGroup({ catalog, driver: 'tooz', toozUrl: 'redis://127.0.0.1:6379?timeout=5' })
 * const svc = await sg.register({ host: 'node-1', binary: 'worker', topic: 'work' })
 * await sg.join('node-1', 'work', svc)
 * sg.stopOnSignals()                       // leave at once on SIGTERM/SIGINT
 * console.log(await sg.isUp(svc))          // true
 * ```
 */
export async function createServiceGroup(options: ServiceGroupOptions): Promise<ServiceGroup> {
  const logger = adaptLogger(options.logger ?? silentLogger)
  const settings: DriverSettings = {
    driver: options.driver ?? 'db',
    reportIntervalSeconds: options.reportIntervalSeconds ?? TIMING_DEFAULTS.reportIntervalSeconds,
    serviceDownTimeSeconds: options.serviceDownTimeSeconds ?? TIMING_DEFAULTS.serviceDownTimeSeconds,
    initialReportDelaySeconds: options.initialReportDelaySeconds ?? TIMING_DEFAULTS.initialReportDelaySeconds,
    toozUrl: options.toozUrl,
    reportToPreviousDriver: options.reportToPreviousDriver,
    memcacheServers: options.memcacheServers ?? [],
    zookeeper: options.zookeeper ? { ...ZOOKEEPER_DEFAULTS, ...options.zookeeper } : undefined,
  }
  checkDriverSettings(settings)
  const corrected = effectiveDownTime(settings.reportIntervalSeconds, settings.serviceDownTimeSeconds)
  if (corrected.warning) logger.warn(corrected.warning)
  settings.serviceDownTimeSeconds = corrected.serviceDownTimeSeconds
  const ctx = { catalog: options.catalog, settings, logger }
  const drivers = [await createDriver(settings.driver, ctx)]
  if (settings.reportToPreviousDriver) drivers.push(await createDriver(settings.reportToPreviousDriver, ctx))
  const started: ServiceGroupDriver[] = []
  try {
    for (const d of drivers) {
      await d.start()
      started.push(d)
    }
  } catch (err) {
    await Promise.allSettled(started.map((d) => d.close()))
    throw err
  }
  return new ServiceGroup(options, settings, drivers, logger)
}

/** Nova's servicegroup API over one driver (and, while migrating, a previous driver reported to as well). */
export class ServiceGroup extends EventEmitter<ServiceGroupEvents> {
  /** The services table. */
  readonly catalog: Catalog
  /** The driver that answers reads. */
  readonly driverName: DriverName
  /** Settings in effect (service_down_time after the 2.5 × rule). */
  readonly settings: Readonly<DriverSettings>
  readonly #drivers: ServiceGroupDriver[]
  readonly #logger: Logger
  readonly #options: ServiceGroupOptions
  readonly #joined = new Map<string, JoinedService>()
  readonly #watches = new Map<string, Promise<() => void>>()
  #signalCleanup: (() => void) | undefined
  #closing: Promise<void> | undefined

  /** @internal Use createServiceGroup(). */
  constructor(options: ServiceGroupOptions, settings: DriverSettings, drivers: ServiceGroupDriver[], logger: Logger) {
    super()
    this.catalog = options.catalog
    this.settings = settings
    this.#drivers = drivers
    this.driverName = drivers[0]!.name
    this.#logger = logger
    this.#options = options
  }

  /** The driver answering reads (for stats in tests and benchmarks). */
  get driver(): ServiceGroupDriver {
    return this.#drivers[0]!
  }

  /** Every driver reports go to: the driver, then the previous driver when migrating. */
  get drivers(): readonly ServiceGroupDriver[] {
    return this.#drivers
  }

  /** Registers (upserts) a service in the catalog: Nova's get-or-create in Service.start(). */
  register(spec: ServiceSpec): Promise<ServiceRecord> {
    return this.catalog.register(spec)
  }

  /**
   * Joins `host` to `topic` and starts reporting (Nova's join(member, group, service)): the first
   * report after initial_report_delay, then every report_interval; zk and tooz report (join) at
   * once. `service` is the catalog record; db and mc cannot work without it (TypeError, as
   * Nova's RuntimeError). Resolves to undefined. Joining the same host and topic again is a no-op.
   * With `reportImmediately`, every driver reports at once (`rollcall service run` does, so that
   * a service is up from the moment its command starts).
   *
   * A joined service keeps its process alive until leave() or close(), with every driver, as a
   * listening server does (the report timers themselves are unref'd). When join() resolves, every
   * read of this ServiceGroup sees the service's first report (zk, tooz: up).
   */
  async join(host: string, topic: string, service?: ServiceRecord, options: JoinOptions = {}): Promise<void> {
    if (service === undefined) {
      const needs = this.#drivers.find((d) => d.needsServiceRecord)
      if (needs) throw new TypeError(`service is a mandatory argument for the ${needs.name} ServiceGroup driver`)
    } else if (service.host !== host || service.topic !== topic) {
      throw new InvalidArgumentError(
        `join(${JSON.stringify(host)}, ${JSON.stringify(topic)}) was given the record of ${service.host} in topic ${service.topic}`,
      )
    }
    const key = joinKey(host, topic)
    if (this.#joined.has(key)) return
    const record = service ?? placeholderRecord(host, topic)
    const reporters = this.#drivers.map((driver) =>
      new Reporter({
        driver,
        service: record,
        logger: this.#logger,
        timers: this.#options.timers,
        intervalMs: this.settings.reportIntervalSeconds * 1000,
        initialDelayMs: this.settings.initialReportDelaySeconds * 1000,
        onLost: (e) => this.emit('reportLost', { host, binary: record.binary, topic, driver: driver.name, error: e.error ?? new Error('report failed') }),
        onRecovered: () => this.emit('reportRecovered', { host, binary: record.binary, topic, driver: driver.name }),
      })
    )
    this.#joined.set(key, { service: record, reporters, letGo: keepAlive() })
    await Promise.all(reporters.map(async (r, i) => {
      if (!this.#drivers[i]!.reportsOnJoin && !options.reportImmediately) return r.start()
      // Membership drivers join now (Nova's zk did); with reports off, this one report is all.
      if (this.settings.reportIntervalSeconds > 0) r.start(true)
      await r.reportNow()
    }))
  }

  /**
   * Stops reporting for `host` in `topic` and makes every driver forget it, so that it reads down
   * at once (db: last_seen_up stamped with the epoch; mc: key deleted; zk: nodes deleted; tooz:
   * the group left). Works for services joined elsewhere too (`rollcall service delete`), with
   * one limit: tooz can only make a member leave from a process that connects as that member.
   */
  async leave(host: string, topic: string): Promise<void> {
    const key = joinKey(host, topic)
    const joined = this.#joined.get(key)
    this.#joined.delete(key)
    if (joined) {
      joined.letGo()
      await Promise.all(joined.reporters.map((r) => r.stop()))
    }
    const results = await Promise.allSettled(this.#drivers.map((d) => d.leave(host, topic)))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
  }

  /** Nova's service_is_up: false when forced down (the driver is not asked), else the driver's verdict. Never logs. */
  async isUp(service: ServiceRef): Promise<boolean> {
    if (service.forcedDown) return false
    return this.#drivers[0]!.isUp(service)
  }

  /** isUp() for many records, in input order, reading the backend at most once per topic. */
  async isUpMany(services: readonly ServiceRef[]): Promise<boolean[]> {
    const views = await this.#views(services)
    return services.map((s) => !s.forcedDown && views.get(s.topic)!.isUp(s))
  }

  /**
   * Nova's get_updated_time: the record's updated_at, or the driver's last report when that is
   * newer (mc, zk, tooz keep one; db does not).
   */
  async getUpdatedTime(service: ServiceRef): Promise<Date | null> {
    const view = await this.#drivers[0]!.getAll(service.topic, [service])
    return newer(toDate(service.updatedAt ?? null), view.reportedAt(service))
  }

  /** Every live record of `topic` with its state: one catalog read and at most one backend read. */
  async getAll(topic: string): Promise<ServiceStatus[]> {
    return this.list({ topic })
  }

  /** The records `filter` selects, with state: one catalog read and one backend read per topic (`service list`). */
  async list(filter: ListFilter = {}): Promise<ServiceStatus[]> {
    const records = await this.catalog.list(filter)
    return this.statuses(records)
  }

  /** States for records already read, reading the backend once per topic. */
  async statuses(records: readonly ServiceRecord[]): Promise<ServiceStatus[]> {
    const views = await this.#views(records)
    return records.map((record) => {
      const view = views.get(record.topic)!
      return {
        record,
        status: record.disabled ? 'disabled' : 'enabled',
        state: !record.forcedDown && view.isUp(record) ? 'up' : 'down',
        updatedAt: newer(record.updatedAt, view.reportedAt(record)),
      }
    })
  }

  /**
   * Starts push notifications for `topic`: `up`/`down` events fire as hosts come and go (tooz
   * from the coordination layer's member watchers, zk from child watches). NotSupportedError for
   * db and mc, whose backends push nothing.
   */
  async watch(topic: string): Promise<void> {
    const driver = this.#drivers[0]!
    if (!driver.watch) throw new NotSupportedError(undefined, 'liveness events (watch, onUp, onDown)', `${driver.name} service-group`, 'use the tooz driver')
    let pending = this.#watches.get(topic)
    if (!pending) {
      pending = driver.watch(topic, (c) => this.emit(c.up ? 'up' : 'down', { topic: c.topic, host: c.host }))
      this.#watches.set(topic, pending)
      pending.catch(() => this.#watches.delete(topic))
    }
    await pending
  }

  /** Calls `listener` when a host of `topic` comes up; resolves to a function that stops it. */
  async onUp(topic: string, listener: (e: ServiceEvent) => void): Promise<() => void> {
    return this.#on('up', topic, listener)
  }

  /** Calls `listener` when a host of `topic` goes down; resolves to a function that stops it. */
  async onDown(topic: string, listener: (e: ServiceEvent) => void): Promise<() => void> {
    return this.#on('down', topic, listener)
  }

  /** Health of every report loop (one per joined service and driver). */
  health(): ReporterHealth[] {
    return [...this.#joined.values()].flatMap(({ service, reporters }) =>
      reporters.map((r, i) => ({
        host: service.host,
        binary: service.binary,
        topic: service.topic,
        driver: this.#drivers[i]!.name,
        disconnected: r.disconnected,
        ...r.counts,
      }))
    )
  }

  /**
   * On the first of `signals`, leaves every joined service (so each reads down at once), closes,
   * and then lets the signal do what it would have done (the process ends by it). Resolves
   * nothing; returns a function that removes the handlers.
   */
  stopOnSignals(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): () => void {
    this.#signalCleanup?.()
    const handler = (signal: NodeJS.Signals): void => {
      cleanup()
      void this.close().finally(() => process.kill(process.pid, signal))
    }
    const cleanup = (): void => {
      for (const s of signals) process.off(s, handler)
      this.#signalCleanup = undefined
    }
    for (const s of signals) process.on(s, handler)
    this.#signalCleanup = cleanup
    return cleanup
  }

  /** Stops reporting; leaves every joined service unless `leave` is false; closes drivers (and the catalog if owned). */
  close(options: { leave?: boolean } = {}): Promise<void> {
    this.#closing ??= this.#close(options.leave ?? true)
    return this.#closing
  }

  async #close(leave: boolean): Promise<void> {
    const joined = [...this.#joined.values()]
    await Promise.all(joined.flatMap((j) => j.reporters.map((r) => r.stop())))
    if (leave) {
      await Promise.allSettled(joined.map((j) =>
        this.leave(j.service.host, j.service.topic).catch((err: unknown) => {
          this.#logger.warn(`Leaving ${j.service.topic}/${j.service.host} at close failed: ${(err as Error).message}`)
        })
      ))
    }
    for (const j of joined) j.letGo()
    this.#joined.clear()
    this.#signalCleanup?.()
    await Promise.allSettled(this.#drivers.map((d) => d.close()))
    if (this.#options.closeCatalog) await this.catalog.close()
  }

  async #on(event: 'up' | 'down', topic: string, listener: (e: ServiceEvent) => void): Promise<() => void> {
    await this.watch(topic)
    const filtered = (e: ServiceEvent): void => {
      if (e.topic === topic) listener(e)
    }
    this.on(event, filtered)
    return () => void this.off(event, filtered)
  }

  async #views(services: readonly ServiceRef[]): Promise<Map<string, LiveView>> {
    const byTopic = new Map<string, ServiceRef[]>()
    for (const s of services) {
      const list = byTopic.get(s.topic)
      if (list) list.push(s)
      else byTopic.set(s.topic, [s])
    }
    const driver = this.#drivers[0]!
    const entries = await Promise.all([...byTopic].map(async ([topic, list]) => [topic, await driver.getAll(topic, list)] as const))
    return new Map(entries)
  }
}

function joinKey(host: string, topic: string): string {
  return `${topic}\u0000${host}`
}

/** A record for drivers that can join without one (zk, tooz): what Nova's join(member, group) passes as None. */
function placeholderRecord(host: string, topic: string): ServiceRecord {
  return {
    id: 0,
    host,
    binary: '',
    topic,
    availabilityZone: null,
    disabled: false,
    disabledReason: null,
    forcedDown: false,
    version: 0,
    reportCount: 0,
    lastSeenUp: null,
    createdAt: new Date(),
    updatedAt: null,
    deletedAt: null,
  }
}
