/**
 * The typed settings of a ServiceGroup and the one function that checks them, used both by
 * createServiceGroup() (settings given in code) and by the INI loader (config.ts). Every error
 * is an InvalidConfigError naming the setting as the INI file spells it, the value (redacted when
 * it may hold a credential) and what is allowed. Nothing here does I/O.
 */
import { shorten } from '../internal/shown-text.js'
import { InvalidConfigError, redactUrl } from '../index.js'
import { coerce, hostPort, oneOf, Unfit, type HostAndPort } from '../internal/coerce.js'
import { DRIVER_NAMES, PREVIOUS_DRIVER_NAMES, type DriverName, type PreviousDriverName } from './types.js'

/** ZooKeeper settings of the zk driver (Nova's `[zookeeper]` group). */
export interface ZookeeperSettings {
  /** `host1:port,host2:port` (Nova: `address`). */
  address: string
  /** Session timeout in milliseconds (Nova: `recv_timeout`, default 4000). */
  recvTimeoutMs: number
  /** Prefix of the service nodes (Nova: `sg_prefix`, default `/servicegroups`). */
  sgPrefix: string
}

/** Defaults of the `[zookeeper]` settings. */
export const ZOOKEEPER_DEFAULTS = { recvTimeoutMs: 4000, sgPrefix: '/servicegroups' } as const

/** What `[zookeeper] sg_prefix` must look like. */
export const ZOOKEEPER_PATH = /^(\/[^/\s]+)+$/
/** What {@link ZOOKEEPER_PATH} allows, as a phrase. */
export const ZOOKEEPER_PATH_ALLOWED = 'an absolute ZooKeeper path without a trailing "/", e.g. /servicegroups'

/** Everything that selects and tunes the drivers. */
export interface DriverSettings {
  /** `[DEFAULT] servicegroup_driver` (default `db`). */
  driver: DriverName
  /** `[DEFAULT] report_interval`, seconds between reports (default 10; 0 = never report). */
  reportIntervalSeconds: number
  /** `[DEFAULT] service_down_time`, seconds without a report before a service is down (default 60). */
  serviceDownTimeSeconds: number
  /** `[DEFAULT] initial_report_delay`, seconds before the first report (default 5, Nova's constant). */
  initialReportDelaySeconds: number
  /** `[DEFAULT] servicegroup_tooz_url`: the coordination backend of the tooz driver. */
  toozUrl: string | undefined
  /** `[DEFAULT] report_to_previous_driver`: also report to this driver (migration). */
  reportToPreviousDriver: PreviousDriverName | undefined
  /** `[memcache] servers`: `host:port` of each memcached server (mc driver). */
  memcacheServers: readonly string[]
  /** `[zookeeper]` settings (zk driver). */
  zookeeper: ZookeeperSettings | undefined
}

/** The INI names of the settings, for messages. */
export const SETTING_NAMES = {
  driver: '[DEFAULT] servicegroup_driver',
  reportIntervalSeconds: '[DEFAULT] report_interval',
  serviceDownTimeSeconds: '[DEFAULT] service_down_time',
  initialReportDelaySeconds: '[DEFAULT] initial_report_delay',
  toozUrl: '[DEFAULT] servicegroup_tooz_url',
  reportToPreviousDriver: '[DEFAULT] report_to_previous_driver',
  memcacheServers: '[memcache] servers',
  zookeeperAddress: '[zookeeper] address',
  recvTimeoutMs: '[zookeeper] recv_timeout',
  sgPrefix: '[zookeeper] sg_prefix',
} as const

/** Builds the error for one setting: `Invalid <setting> = "<value>"<where>: <allowed>`. */
export function invalid(setting: string, value: unknown, allowed: string, where = ''): InvalidConfigError {
  const shown = typeof value === 'string' ? shorten(redactUrl(value)) : JSON.stringify(value)
  return new InvalidConfigError(setting, `Invalid ${setting} = ${typeof value === 'string' ? `"${shown}"` : shown}${where}: ${allowed}`)
}

function seconds(setting: string, value: unknown, min: number, minText: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || (min > 0 && value === 0)) {
    throw invalid(setting, value, `expected a number of seconds ${minText}`)
  }
}

function servers(setting: string, list: readonly string[], shown: string): void {
  for (const server of list) coerce(() => serverAddress(server), (phrase) => invalid(setting, redactServers(shown), phrase))
}

/**
 * A list of servers (`[memcache] servers`, `[zookeeper] address`) as an error shows it: each
 * `user:password@host:port` as `***@host:port`, whatever the user name and password hold.
 */
export function redactServers(text: string): string {
  return text.split(/([,\n])/).map((item) => {
    const at = item.lastIndexOf('@')
    return at < 0 ? item : `***${item.slice(at)}`
  }).join('')
}

/**
 * One server of a list: `host:port`. Unfit: `"<server>" is not host:port (port 1–65535)`, or, for
 * `user:password@host:port`, a phrase that shows `***@host:port`: the mc and zk drivers send no
 * credentials, so a user name or password there is refused, never shown.
 */
export function serverAddress(text: string): HostAndPort {
  if (text.includes('@')) {
    throw new Unfit(
      `"${shorten(redactServers(text))}" has a user name or password before "@" (not shown); write host:port, the mc and zk drivers send no credentials`,
    )
  }
  return hostPort(text)
}

/**
 * Checks driver settings; throws InvalidConfigError for the first problem. Cross-field rules:
 * the tooz driver needs servicegroup_tooz_url; mc (as driver or previous driver) needs
 * [memcache] servers; zk needs [zookeeper] address; the previous driver must be mc or zk and
 * differ from the driver.
 */
export function checkDriverSettings(s: DriverSettings): void {
  coerce(() => oneOf(s.driver, DRIVER_NAMES), (phrase) => invalid(SETTING_NAMES.driver, s.driver, `expected ${phrase}`))
  seconds(SETTING_NAMES.reportIntervalSeconds, s.reportIntervalSeconds, 0, '≥ 0 (0 turns reports off)')
  seconds(SETTING_NAMES.serviceDownTimeSeconds, s.serviceDownTimeSeconds, Number.MIN_VALUE, '> 0')
  seconds(SETTING_NAMES.initialReportDelaySeconds, s.initialReportDelaySeconds, 0, '≥ 0')
  const previous = s.reportToPreviousDriver
  if (previous !== undefined) {
    if (!(PREVIOUS_DRIVER_NAMES as readonly string[]).includes(previous)) {
      throw invalid(
        SETTING_NAMES.reportToPreviousDriver,
        previous,
        `expected ${PREVIOUS_DRIVER_NAMES.join(' or ')} (the deprecated driver being migrated off), or nothing`,
      )
    }
    if (previous === s.driver) {
      throw invalid(
        SETTING_NAMES.reportToPreviousDriver,
        previous,
        `must differ from ${SETTING_NAMES.driver} (${s.driver}): it names the driver you are migrating off`,
      )
    }
  }
  const uses = new Set<DriverName>([s.driver, ...(previous ? [previous] : [])])
  if (uses.has('tooz') && !s.toozUrl) {
    throw invalid(SETTING_NAMES.toozUrl, s.toozUrl ?? '', 'the tooz driver needs a coordination URL, e.g. redis://127.0.0.1:6379?timeout=5')
  }
  if (uses.has('mc')) {
    if (s.memcacheServers.length === 0) {
      throw invalid(
        SETTING_NAMES.memcacheServers,
        '',
        "the mc driver needs at least one memcached server: [memcache] servers = 127.0.0.1:11211, or Nova's [DEFAULT] memcached_servers, or [cache] "
          + 'memcache_servers with [cache] enabled = true',
      )
    }
    servers(SETTING_NAMES.memcacheServers, s.memcacheServers, s.memcacheServers.join(','))
  }
  if (uses.has('zk')) {
    const zk = s.zookeeper
    if (!zk || !zk.address) throw invalid(SETTING_NAMES.zookeeperAddress, '', 'the zk driver needs ZooKeeper servers, e.g. address = 127.0.0.1:2181')
    servers(SETTING_NAMES.zookeeperAddress, zk.address.split(',').map((server) => server.trim()), zk.address)
    if (!Number.isInteger(zk.recvTimeoutMs) || zk.recvTimeoutMs < 100) {
      throw invalid(SETTING_NAMES.recvTimeoutMs, zk.recvTimeoutMs, 'expected whole milliseconds ≥ 100')
    }
    if (!ZOOKEEPER_PATH.test(zk.sgPrefix)) throw invalid(SETTING_NAMES.sgPrefix, zk.sgPrefix, `expected ${ZOOKEEPER_PATH_ALLOWED}`)
  }
}
