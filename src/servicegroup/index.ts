/**
 * `rollcall/servicegroup`: Nova's service-group API (join, isUp, getUpdatedTime, leave, getAll),
 * its drivers (`db`, `mc`, `zk`, `tooz`), the services catalog (SQLite, PostgreSQL,
 * MySQL/MariaDB), the nova.conf-style configuration and the migration checker.
 *
 * @example
 * ```ts
 * import { loadConfig, openServiceGroup } from 'rollcall/servicegroup'
 * const { config, warnings } = await loadConfig({ file: '/etc/rollcall/rollcall.conf' })
 * warnings.forEach((w) => console.warn(w.message))
 * const sg = await openServiceGroup(config)
 * const svc = await sg.register({ host: 'node-1', binary: 'rollcall-worker', topic: 'worker' })
 * await sg.join(svc.host, svc.topic, svc)
 * sg.stopOnSignals()
 * ```
 */
export { ServiceGroup, createServiceGroup } from './api.js'
export type { ServiceGroupOptions, ServiceGroupEvents, ReporterHealth, JoinOptions } from './api.js'
export { Catalog, openCatalog, parseCatalogUrl, DEFAULT_SQLITE_FILE } from './catalog/catalog.js'
export type { CatalogOptions, CatalogTarget, ListFilter } from './catalog/catalog.js'
export { SCHEMA_VERSION } from './catalog/schema.js'
export type { Dialect } from './catalog/sql.js'
export { loadConfig, openServiceGroup, parseIni, SETTINGS } from './config.js'
export type { ConfigWarning, HostAndPort, LoadConfigOptions, LoadedConfig, ServiceGroupConfig, SettingKind, SettingSpec, IniDocument } from './config.js'
export type { IniValue } from './ini.js'
export type { ConfigSources } from './config-files.js'
export { checkDriverSettings, ZOOKEEPER_DEFAULTS } from './settings.js'
export type { DriverSettings, ZookeeperSettings } from './settings.js'
export type { LiveView, ServiceGroupDriver, DriverStats, LivenessChange } from './driver.js'
export { DEPRECATION_CODES } from './deprecation.js'
export { compareDrivers, checkMigration } from './migrate.js'
export type { Disagreement, MigrationReport, CompareOptions } from './migrate.js'
export { Reporter } from './reporter.js'
export type { ReportEvent, ReporterOptions, ReporterTimers } from './reporter.js'
export { effectiveDownTime, toDate, isFresh, TIMING_DEFAULTS, INITIAL_REPORT_DELAY_SECONDS } from './times.js'
export type { DownTimeCheck } from './times.js'
export { DRIVER_NAMES, PREVIOUS_DRIVER_NAMES, isDriverName } from './types.js'
export type { DriverName, PreviousDriverName, ServiceRecord, ServiceRef, ServiceSpec, ServiceChanges, ServiceStatus, ServiceEvent, TimeLike } from './types.js'
// The root of their hierarchy and the logger type are the root entry's, re-exported so that this entry's signatures are complete.
export { RollcallError, ServiceGroupUnavailableError, ServiceNotFoundError, InvalidConfigError } from '../index.js'
export type { ErrorCode, LogFields, Logger, RollcallErrorOptions } from '../index.js'
