/**
 * The `tooz` driver: liveness is membership in rollcall's coordination layer, at the URL of
 * `servicegroup_tooz_url` (any scheme rollcall supports: `kazoo://`, `zookeeper://`,
 * `memcached://`, `redis://`, `etcd3+http://`, `file://`, `postgresql://`, `mysql://`,
 * `memory://`).
 *
 * - Group = topic (created on demand). Member id = one per process (`<hostname>-<pid>-<hex>`),
 *   so workers of one host never collide. Capabilities carry host, binary, topic, zone, version,
 *   pid and the last report time.
 * - Heartbeats are the Coordinator's, paced by the backend's own timeout (half of it), not by
 *   report_interval. A report only (re)joins the group if needed and refreshes the capabilities'
 *   report time, so a dropped membership is restored by the next report. The coordinator does
 *   not rejoin by itself: a service made to leave from elsewhere (service delete) stays down
 *   until its next report, whether or not its process watches the topic. A membership the
 *   connection took with it (a ZooKeeper session that expired, a lease or key that lapsed while
 *   the backend was out of reach) is reported again as soon as the connection is back, not at the
 *   next report: a partition then costs the service its absence, not up to report_interval more.
 * - Up = some live member of the topic's group has capabilities.host == host (and the same
 *   binary, when both name one). A process that dies is down once the backend drops it (ZooKeeper
 *   session expiry, the redis/memcached/etcd membership timeout); one that stops cleanly (stop(),
 *   SIGTERM through stopOnSignals()) is down at once.
 * - Reads come from a live view per topic over the coordination layer's group view
 *   (Coordinator.viewGroup, see tooz-view.ts): while it is fresh, isUp()/getAll() read nothing
 *   and log nothing. When it is not, one read refreshes it; a backend error then raises
 *   ServiceGroupUnavailableError.
 *
 * Hazards: with backends that expire members by polling (redis, memcached, postgresql, mysql,
 * file) a crash is noticed within the membership timeout plus the watch interval (1 s). The
 * report time in capabilities is as fresh as the last full read of the view (at most
 * RESYNC_MS old), so Updated At is approximate by that much.
 */
import { InvalidArgumentError, ServiceGroupUnavailableError, connect, defaultMemberId, redactUrl, type Coordinator, type Logger,
  type RollcallError } from '../../index.js'
import type { DriverStats, LiveView, LivenessChange, ServiceGroupDriver } from '../driver.js'
import type { ServiceRecord, ServiceRef } from '../types.js'
import { ToozTopicView, memberInfo, type ServiceCapabilities } from './tooz-view.js'

/** How often views of watched topics are re-read in full (the group view's resyncIntervalMs), to refresh report times. */
export const RESYNC_MS = 30_000

/** Options of the tooz driver. */
export interface ToozDriverOptions {
  url: string
  logger: Logger
  /** Default: `<hostname>-<pid>-<6 hex>`. */
  memberId?: string
  resyncMs?: number
}

/** Errors that are the caller's, not the backend's: they pass through unwrapped. */
const CALLER_CODES = new Set(['INVALID_ID', 'INVALID_ARGUMENT', 'NOT_SUPPORTED'])

/** The tooz service-group driver. */
export class ToozDriver implements ServiceGroupDriver {
  readonly name = 'tooz' as const
  readonly backendName: string
  readonly reportsOnJoin = true
  readonly needsServiceRecord = false
  readonly keepsReportTime = true
  readonly stats: DriverStats = { reads: 0, writes: 0 }
  readonly #options: ToozDriverOptions
  readonly #views = new Map<string, ToozTopicView>()
  /** topic → host this process joined it as. */
  readonly #joined = new Map<string, string>()
  /** topic → the record last reported in it, reported again when the connection comes back from a loss. */
  readonly #reported = new Map<string, ServiceRecord>()
  #coordinator: Coordinator | undefined

  constructor(options: ToozDriverOptions) {
    this.#options = options
    this.backendName = `the coordination backend ${redactUrl(options.url)}`
  }

  /** The coordinator (after start()), for diagnostics. */
  get coordinator(): Coordinator {
    if (!this.#coordinator) throw new InvalidArgumentError('The tooz service-group driver is not started')
    return this.#coordinator
  }

  async start(): Promise<void> {
    // Failed background reads are the coordinator's warnings, logged once per kind by its logger.
    // rejoin off: a membership dropped by the backend or by a leave from elsewhere (service delete)
    // comes back with the next report, as Nova's drivers do; rejoining at once would undo the delete.
    const c = await connect(this.#options.url, { memberId: this.#options.memberId ?? defaultMemberId(), logger: this.#options.logger, rejoin: false })
    this.#coordinator = c
    c.on('connectionStateChanged', ({ state, previous }) => {
      if (state === 'reconnected' && previous === 'lost') this.#reportAgain()
    })
  }

  /** Reports again, now, every service this process reports: the lost connection took their memberships with it. */
  #reportAgain(): void {
    for (const [topic, service] of this.#reported) {
      if (this.#joined.get(topic) !== service.host) continue
      this.report(service).catch((err: unknown) => {
        this.#options.logger.warn(
          `Reporting ${service.host} in ${topic} again after the connection came back failed (the next report retries): ${(err as Error).message}`,
        )
      })
    }
  }

  async report(service: ServiceRecord): Promise<void> {
    const c = this.coordinator
    const joinedAs = this.#joined.get(service.topic)
    if (joinedAs !== undefined && joinedAs !== service.host) {
      throw new InvalidArgumentError(
        `This process already reports ${joinedAs} in topic ${service.topic}; one process is one member: use one ServiceGroup per reported service`,
      )
    }
    this.#reported.set(service.topic, service)
    const caps: ServiceCapabilities = {
      host: service.host,
      binary: service.binary,
      topic: service.topic,
      availability_zone: service.availabilityZone,
      version: service.version,
      pid: process.pid,
      reported_at: new Date().toISOString(),
    }
    this.stats.writes += 1
    try {
      if (joinedAs !== undefined && c.joinedGroups.includes(service.topic)) {
        try {
          await c.updateCapabilities(service.topic, caps)
          return
        } catch (err) {
          const code = (err as RollcallError).code
          // Dropped by the backend meanwhile (restart, eviction, expiry): join again below.
          if (code !== 'MEMBER_NOT_JOINED' && code !== 'GROUP_NOT_FOUND' && code !== 'NOT_SUPPORTED') throw err
          if (code === 'NOT_SUPPORTED') return
        }
      }
      await c.joinGroupCreate(service.topic, caps).catch((err: unknown) => {
        if ((err as RollcallError).code !== 'MEMBER_EXISTS') throw err
      })
      this.#joined.set(service.topic, service.host)
      // Liveness may have lapsed with the membership (a beat key deleted, an expired lease):
      // beat now rather than at the next scheduled heartbeat, so that the service is up at once.
      await c.heartbeat()
      await this.#readOwnWrite(service.topic)
    } catch (err) {
      throw this.#unavailable(err, `reporting ${service.host} in ${service.topic}`)
    }
  }

  async isUp(service: ServiceRef): Promise<boolean> {
    const view = await this.#fresh(service.topic)
    return view.index.isUp(service.host, service.binary)
  }

  async getAll(topic: string, _services: readonly ServiceRef[]): Promise<LiveView> {
    const { index } = await this.#fresh(topic)
    return { isUp: (s) => index.isUp(s.host, s.binary), reportedAt: (s) => index.reportedAt(s.host) }
  }

  async leave(host: string, topic: string): Promise<void> {
    const c = this.coordinator
    if (this.#joined.get(topic) === host) {
      this.#joined.delete(topic)
      this.#reported.delete(topic)
      this.stats.writes += 1
      await c.leaveGroup(topic).catch((err: unknown) => {
        const code = (err as RollcallError).code
        if (code !== 'MEMBER_NOT_JOINED' && code !== 'GROUP_NOT_FOUND') throw this.#unavailable(err, `leaving ${topic}`)
      })
      await this.#readOwnWrite(topic)
      return
    }
    // Another process's members: tooz lets a member leave only as itself, so act as each one.
    let members: Map<string, unknown>
    try {
      this.stats.reads += 1
      members = await c.getMembersWithCapabilities(topic)
    } catch (err) {
      if ((err as RollcallError).code === 'GROUP_NOT_FOUND') return
      throw this.#unavailable(err, `reading ${topic}`)
    }
    for (const [member, caps] of members) {
      if (memberInfo(caps)?.host !== host || member === c.memberId) continue
      const as = await connect(this.#options.url, { memberId: member, heartbeat: false, autoWatch: false, logger: this.#options.logger })
      try {
        this.stats.writes += 1
        await as.leaveGroup(topic).catch((err: unknown) => {
          if ((err as RollcallError).code !== 'MEMBER_NOT_JOINED') throw err
        })
      } finally {
        await as.stop()
      }
    }
    // Read the topic again now, so that the hosts made to leave read down at once.
    await this.#views.get(topic)?.refresh().catch(() => undefined)
  }

  async watch(topic: string, listener: (change: LivenessChange) => void): Promise<() => void> {
    const view = await this.#fresh(topic)
    view.index.listeners.add(listener)
    return () => void view.index.listeners.delete(listener)
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#views.values()].map((v) => v.close()))
    this.#views.clear()
    await this.#coordinator?.stop()
  }

  /**
   * After this process joined or left `topic`: an open view of it (a watch) reads the group again
   * now, so that every read of this process sees the change at once instead of at the watch's next
   * poll. A failed read leaves the view not fresh: the next read refreshes it.
   */
  async #readOwnWrite(topic: string): Promise<void> {
    const view = this.#views.get(topic)
    if (!view) return
    this.stats.reads += 1
    await view.refresh().catch(() => undefined)
  }

  /** The topic's view, refreshed first unless it is fresh (the hot path: no read, no log). */
  async #fresh(topic: string): Promise<ToozTopicView> {
    let view = this.#views.get(topic)
    if (view?.fresh) return view
    if (!view) this.#views.set(topic, view = new ToozTopicView(this.coordinator, topic, this.#options.resyncMs ?? RESYNC_MS))
    this.stats.reads += 1
    try {
      await view.refresh()
    } catch (err) {
      throw this.#unavailable(err, `reading the members of ${topic}`)
    }
    return view
  }

  #unavailable(err: unknown, what: string): Error {
    if (err instanceof ServiceGroupUnavailableError || CALLER_CODES.has((err as RollcallError)?.code)) return err as Error
    return new ServiceGroupUnavailableError('tooz', `${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err })
  }
}
