/**
 * rollcall's Prometheus metrics: on a Registry of the status server's own (never prom-client's
 * global one), or on the application's Registry when it calls registerMetrics(). prom-client is
 * an optional peer, loaded by prom.ts and handed in; this file only imports its types.
 * docs/operations.md lists every metric with its meaning; the names here are the source.
 */
import type { Counter, Gauge, Histogram, Registry, RegistryContentType } from 'prom-client'
import type { ConnectionState } from '../index.js'
import type { ServiceStatus } from '../servicegroup/index.js'
import type { GroupRow } from './groups.js'
import { METRIC_NAMES } from './metric-names.js'
import type { PromClient } from './prom.js'

/** A metric's name. */
type MetricName = (typeof METRIC_NAMES)[number]

/** The connection states the backend gauge has a series for. */
export const CONNECTION_STATES: readonly ConnectionState[] = ['connected', 'suspended', 'reconnected', 'lost']

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60]

/** Groups that get a series of their own in rollcall_group_members at most. */
export const MAX_GROUP_SERIES = 500

/** Every metric of one status server, or of one registerMetrics() call. */
export class WebMetrics {
  /** Where the metrics are registered. */
  readonly registry: Registry<RegistryContentType>
  readonly #services: Gauge
  readonly #members: Gauge
  readonly #groups: Gauge
  readonly #report: Histogram
  readonly #heartbeat: Histogram
  readonly #heartbeatFailed: Counter
  readonly #connection: Gauge
  readonly #watcherLag: Histogram
  readonly #refresh: Histogram
  readonly #refreshFailed: Counter
  readonly #sse: Gauge
  readonly #requests: Counter

  /**
   * Registers every metric on `registry`, or on a new Registry of its own (then with prom-client's
   * default process metrics too, as `rollcall serve` has always shown them).
   */
  constructor(prom: PromClient, registry?: Registry<RegistryContentType>) {
    this.registry = registry ?? new prom.Registry()
    const registers = [this.registry]
    // Each metric by its name (one of METRIC_NAMES), its help, its labels and, for a histogram, its buckets.
    const gauge = (name: MetricName, help: string, labelNames: readonly string[] = []): Gauge => new prom.Gauge({ name, help, labelNames, registers })
    const counter = (name: MetricName, help: string, labelNames: readonly string[]): Counter => new prom.Counter({ name, help, labelNames, registers })
    const histogram = (name: MetricName, help: string, labelNames: readonly string[], buckets: number[]): Histogram =>
      new prom.Histogram({ name, help, labelNames, buckets, registers })
    this.#services = gauge('rollcall_services', 'Services in the catalog by topic and state (up/down, as the status page shows them).', ['topic', 'state'])
    this.#members = gauge(
      'rollcall_group_members',
      `Live members of each coordination group that has any (at most ${MAX_GROUP_SERIES} groups, the largest; rollcall_groups counts them all).`,
      ['group'],
    )
    this.#groups = gauge('rollcall_groups', 'Coordination groups, with members (members="some") and empty (members="none").', ['members'])
    this.#report = histogram(
      'rollcall_report_latency_seconds',
      'Time from a service report landing on the backend to the status server seeing it (exact under the db driver, whose store stamps last_seen_up; '
        + "approximate under tooz, whose report time is as fresh as the driver's last full read).",
      ['topic'],
      LAG_BUCKETS,
    )
    this.#heartbeat = histogram(
      'rollcall_heartbeat_duration_seconds',
      "Round trip of a heartbeat of the status server's own coordinator to the coordination backend.",
      [],
      LATENCY_BUCKETS,
    )
    this.#heartbeatFailed = counter(
      'rollcall_heartbeat_failures_total',
      'Heartbeats that failed (reason="error") or landed after liveness had lapsed (reason="late"), from the coordinator\'s heartbeatFailed event.',
      ['reason'],
    )
    this.#connection = gauge('rollcall_backend_connection_state', "1 for the coordination backend connection's current state, 0 for the others.", ['state'])
    this.#watcherLag = histogram(
      'rollcall_watcher_lag_seconds',
      "Time from a membership change on the backend to the status server's watcher seeing it, where the change carries its time (joins by rollcall's "
        + 'tooz service-group driver).',
      ['source'],
      LAG_BUCKETS,
    )
    this.#refresh = histogram(
      'rollcall_refresh_duration_seconds',
      'Duration of one full read of the services (catalog + liveness) or of the coordination groups.',
      ['view'],
      LATENCY_BUCKETS,
    )
    this.#refreshFailed = counter(
      'rollcall_refresh_failures_total',
      'Reads of the services or groups that failed (the page shows the last good state meanwhile).',
      ['view'],
    )
    this.#sse = gauge('rollcall_sse_clients', 'Open server-sent event streams (status pages watching live).')
    this.#requests = counter('rollcall_http_requests_total', 'HTTP requests by route, method and status.', ['route', 'method', 'status'])
    if (!registry) prom.collectDefaultMetrics({ register: this.registry })
  }

  /** Takes every metric off the registry (they are kept nowhere else). */
  unregister(): void {
    for (const name of METRIC_NAMES) this.registry.removeSingleMetric(name)
  }

  /** The Content-Type of {@link text}. */
  get contentType(): string {
    return this.registry.contentType
  }

  /** Everything, in the Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics()
  }

  /** Up and down counts per topic (topics gone since the last call drop out). */
  setServiceCounts(statuses: readonly ServiceStatus[]): void {
    const counts = new Map<string, { up: number; down: number }>()
    for (const s of statuses) {
      const c = counts.get(s.record.topic) ?? { up: 0, down: 0 }
      c[s.state] += 1
      counts.set(s.record.topic, c)
    }
    this.#services.reset()
    for (const [topic, c] of counts) {
      this.#services.set({ topic, state: 'up' }, c.up)
      this.#services.set({ topic, state: 'down' }, c.down)
    }
  }

  /**
   * Member counts: one series per group with members, for the MAX_GROUP_SERIES largest (ties by
   * name), so that the series stay bounded however many groups there are; and the groups counted.
   */
  setGroupCounts(groups: readonly GroupRow[]): void {
    const live = groups.filter((g) => g.members.length > 0)
    const shown = live.length <= MAX_GROUP_SERIES
      ? live
      : [...live].sort((a, b) => b.members.length - a.members.length || (a.group < b.group ? -1 : 1)).slice(0, MAX_GROUP_SERIES)
    this.#members.reset()
    for (const g of shown) this.#members.set({ group: g.group }, g.members.length)
    this.#groups.set({ members: 'some' }, live.length)
    this.#groups.set({ members: 'none' }, groups.length - live.length)
  }

  reportSeen(topic: string, lagSeconds: number): void {
    this.#report.observe({ topic }, lagSeconds)
  }

  heartbeat(seconds: number): void {
    this.#heartbeat.observe(seconds)
  }

  heartbeatFailed(reason: 'error' | 'late'): void {
    this.#heartbeatFailed.inc({ reason })
  }

  /** Sets the current connection state (undefined: no coordination backend; every series 0). */
  connectionState(state: ConnectionState | undefined): void {
    for (const s of CONNECTION_STATES) this.#connection.set({ state: s }, s === state ? 1 : 0)
  }

  watcherLag(source: string, seconds: number): void {
    this.#watcherLag.observe({ source }, seconds)
  }

  refreshDuration(view: 'services' | 'groups', seconds: number): void {
    this.#refresh.observe({ view }, seconds)
  }

  refreshFailed(view: 'services' | 'groups'): void {
    this.#refreshFailed.inc({ view })
  }

  sseClients(count: number): void {
    this.#sse.set(count)
  }

  request(route: string, method: string, status: number): void {
    this.#requests.inc({ route, method, status: String(status) })
  }
}
