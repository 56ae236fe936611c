/**
 * The `rollcall/web` entry: rollcall's Prometheus metrics on the application's own prom-client
 * Registry, and (see createStatusHandler) the status page, JSON API and health check as a request
 * handler for the application's own HTTP server. prom-client is an optional peer dependency,
 * loaded only when metrics are asked for.
 */
export { registerMetrics, REGISTER_METRICS_DEFAULTS } from './register-metrics.js'
export type { MetricsRegistry, MetricsSource, RegisterMetricsOptions, RollcallMetrics } from './register-metrics.js'
export { METRIC_NAMES } from './metric-names.js'
export { createStatusHandler } from './handler.js'
export type { StatusHandler, StatusHandlerOptions } from './handler.js'
export type { StatusAppOptions } from './status-options.js'
