/**
 * The status server (status page, JSON API, event stream, Prometheus metrics, health check) that
 * `rollcall serve` and `rollcall demo` run. It reads services and groups through the public APIs
 * only (`rollcall` and `rollcall/servicegroup`).
 */
export { startStatusServer, StatusServer, DEFAULTS as STATUS_SERVER_DEFAULTS } from './server.js'
export type { StatusServerOptions } from './server.js'
export type { ServiceRow, ServiceFilter } from './services.js'
export type { GroupRow, GroupMemberRow } from './groups.js'
export type { StatusHealth, HealthCheck } from './health.js'
export { MAX_BODY_BYTES } from './http.js'
