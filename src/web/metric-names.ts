/**
 * The names of rollcall's Prometheus metrics, apart from metrics.ts (which needs prom-client's
 * types) so that the public `rollcall/web` types can list them without naming prom-client.
 */

/** The name of every metric WebMetrics (metrics.ts) registers. */
export const METRIC_NAMES = [
  'rollcall_services',
  'rollcall_group_members',
  'rollcall_groups',
  'rollcall_report_latency_seconds',
  'rollcall_heartbeat_duration_seconds',
  'rollcall_heartbeat_failures_total',
  'rollcall_backend_connection_state',
  'rollcall_watcher_lag_seconds',
  'rollcall_refresh_duration_seconds',
  'rollcall_refresh_failures_total',
  'rollcall_sse_clients',
  'rollcall_http_requests_total',
] as const
