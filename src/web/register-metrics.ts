/**
 * registerMetrics(): rollcall's Prometheus metrics on the application's own prom-client Registry,
 * fed from its coordinator and/or service group, without a status server. prom-client is loaded
 * here, on first use (it is an optional peer dependency).
 *
 * @example
 * ```ts
 * import { Registry } from 'prom-client'
 * import { registerMetrics } from 'rollcall/web'
 * const registry = new Registry()
 * const metrics = await registerMetrics(coordinator, { registry })
 * // registry.metrics() now includes rollcall_backend_connection_state, rollcall_group_members, ...
 * await metrics.close()
 * ```
 */
import { Coordinator, InvalidArgumentError } from '../index.js'
import { ServiceGroup } from '../servicegroup/index.js'
import { feedCoordinatorMetrics } from './feed.js'
import { GroupListView } from './groups.js'
import { METRIC_NAMES } from './metric-names.js'
import { WebMetrics } from './metrics.js'
import { loadPromClient } from './prom.js'
import { ServiceView } from './services.js'

/**
 * What registerMetrics() needs of a prom-client `Registry` (any `new Registry()` of prom-client
 * 15 fits), written out so that rollcall's types do not depend on prom-client's.
 */
export interface MetricsRegistry {
  /** Adds a metric (prom-client's `Registry.registerMetric`). */
  registerMetric(metric: unknown): void
  /** Removes a metric by name (prom-client's `Registry.removeSingleMetric`). */
  removeSingleMetric(name: string): void
}

/** What registerMetrics() reads: a coordinator, a service group, or both. */
export type MetricsSource = Coordinator | ServiceGroup | { coordinator?: Coordinator; serviceGroup?: ServiceGroup }

/** Options of {@link registerMetrics}. */
export interface RegisterMetricsOptions {
  /** The application's prom-client Registry; rollcall adds its metrics to it (never to prom-client's global one). */
  registry: MetricsRegistry
  /**
   * How often the groups and services behind rollcall_group_members, rollcall_groups and
   * rollcall_services are re-read (default 5000 ms; membership changes show sooner, by watch).
   */
  refreshMs?: number
  /** How often the coordinator's heartbeat round trip is measured for rollcall_heartbeat_duration_seconds (default 5000 ms). */
  heartbeatProbeMs?: number
  /**
   * Whether to read the coordination groups (every group on the backend: the series of
   * rollcall_group_members and rollcall_groups). Default true; false keeps to the coordinator's own
   * connection and heartbeats.
   */
  groups?: boolean
}

/** The defaults of {@link RegisterMetricsOptions}. */
export const REGISTER_METRICS_DEFAULTS = { refreshMs: 5000, heartbeatProbeMs: 5000, groups: true } as const

/** rollcall's metrics on an application's registry, kept current until close(). */
export interface RollcallMetrics {
  /** The names of the metrics registered. */
  readonly names: readonly string[]
  /** Stops feeding the metrics and removes them from the registry. Stops neither the coordinator nor the service group. */
  close(): Promise<void>
}

/**
 * Registers rollcall's metrics (docs/operations.md lists them) on `options.registry` and keeps
 * them current from `source`: the backend connection state, heartbeat round trips and failures of
 * a coordinator, its groups' member counts, and a service group's services by state. Loads
 * prom-client, throwing MetricsUnavailableError (METRICS_UNAVAILABLE) when it is not installed.
 * The first reads are done when it resolves.
 */
export async function registerMetrics(source: MetricsSource, options: RegisterMetricsOptions): Promise<RollcallMetrics> {
  const { coordinator, serviceGroup } = source instanceof Coordinator
    ? { coordinator: source, serviceGroup: undefined }
    : source instanceof ServiceGroup
    ? { coordinator: undefined, serviceGroup: source }
    : (source ?? {})
  if (!coordinator && !serviceGroup) {
    throw new InvalidArgumentError('registerMetrics() needs a Coordinator, a ServiceGroup, or { coordinator, serviceGroup } to read')
  }
  const registry = options?.registry
  if (typeof registry?.registerMetric !== 'function' || typeof registry.removeSingleMetric !== 'function') {
    throw new InvalidArgumentError("registerMetrics() needs { registry }: a prom-client Registry (import { Registry } from 'prom-client'; new Registry())")
  }
  const prom = await loadPromClient()
  const metrics = new WebMetrics(prom, registry as unknown as WebMetrics['registry'])
  const refreshMs = options.refreshMs ?? REGISTER_METRICS_DEFAULTS.refreshMs
  const services = serviceGroup ? new ServiceView(serviceGroup, { refreshMs, metrics }) : undefined
  const groups = coordinator && (options.groups ?? REGISTER_METRICS_DEFAULTS.groups) ? new GroupListView(coordinator, { refreshMs, metrics }) : undefined
  if (!coordinator) metrics.connectionState(undefined)
  const stopFeed = coordinator
    ? feedCoordinatorMetrics(coordinator, metrics, options.heartbeatProbeMs ?? REGISTER_METRICS_DEFAULTS.heartbeatProbeMs)
    : undefined
  let closing: Promise<void> | undefined
  const close = (): Promise<void> =>
    closing ??= (async () => {
      stopFeed?.()
      services?.stop()
      await groups?.stop()
      metrics.unregister()
    })()
  try {
    await Promise.all([services?.start(), groups?.start()])
  } catch (err) {
    await close()
    throw err
  }
  return { names: METRIC_NAMES, close }
}
