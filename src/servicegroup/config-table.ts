/**
 * The table of settings: each one declared once (section, key, environment variable, default,
 * unit, doc). config.ts reads them; docs/servicegroup.md lists the same table and a test keeps
 * them equal.
 */
import { DEFAULT_SQLITE_FILE } from './catalog/catalog.js'
import { ZOOKEEPER_DEFAULTS } from './settings.js'
import { TIMING_DEFAULTS } from './times.js'
import { DRIVER_NAMES, PREVIOUS_DRIVER_NAMES } from './types.js'

/** How a setting's text is read (SettingSpec `kind`). */
export type SettingKind = 'enum' | 'seconds' | 'milliseconds' | 'url' | 'list' | 'string' | 'secret' | 'hostport' | 'hostlist' | 'prefix' | 'path'

/** One declared setting. */
export interface SettingSpec {
  /** The file section it is read from. */
  section: 'DEFAULT' | 'database' | 'memcache' | 'cache' | 'zookeeper' | 'api'
  /** Its key in that section (nova.conf's spelling). */
  key: string
  /** The environment variable that overrides it. */
  env: string
  /** How its text is read. */
  kind: SettingKind
  /** The default as written in the file ('' = unset). */
  default: string
  /** Unit shown in docs ('' when none). */
  unit: string
  /** Allowed words, for `enum`. */
  values?: readonly string[]
  /** One sentence for docs/servicegroup.md. */
  doc: string
}

const s = (
  section: SettingSpec['section'],
  key: string,
  kind: SettingKind,
  def: string,
  unit: string,
  doc: string,
  values?: readonly string[],
): SettingSpec => ({
  section,
  key,
  env: `ROLLCALL_${section === 'DEFAULT' ? '' : `${section.toUpperCase()}_`}${key.toUpperCase()}`,
  kind,
  default: def,
  unit,
  doc,
  values,
})

/** Every setting, in docs order. */
export const SETTINGS: readonly SettingSpec[] = [
  s('DEFAULT', 'servicegroup_driver', 'enum', 'db', '', 'Which driver decides up/down: db, mc (deprecated), zk (deprecated) or tooz.', DRIVER_NAMES),
  s(
    'DEFAULT',
    'report_interval',
    'seconds',
    String(TIMING_DEFAULTS.reportIntervalSeconds),
    's',
    'Seconds between two reports of a service. 0 turns reports off.',
  ),
  s(
    'DEFAULT',
    'service_down_time',
    'seconds',
    String(TIMING_DEFAULTS.serviceDownTimeSeconds),
    's',
    'Seconds without a report after which a service is down (db, mc). Raised to 2.5 × report_interval when not above it.',
  ),
  s(
    'DEFAULT',
    'initial_report_delay',
    'seconds',
    String(TIMING_DEFAULTS.initialReportDelaySeconds),
    's',
    "Seconds from join to the first report (db, mc; Nova's fixed 5). zk and tooz join at once.",
  ),
  s('DEFAULT', 'servicegroup_tooz_url', 'url', '', '', 'Coordination backend of the tooz driver, e.g. redis://127.0.0.1:6379?timeout=5.'),
  s('DEFAULT', 'report_to_previous_driver', 'enum', '', '', 'While migrating: also report to this driver (mc or zk), so readers still on it see services up.', [
    '',
    ...PREVIOUS_DRIVER_NAMES,
  ]),
  s(
    'database',
    'connection',
    'url',
    `sqlite:///${DEFAULT_SQLITE_FILE}`,
    '',
    'The services table: sqlite:///FILE (relative to the config file), postgresql://… or mysql://….',
  ),
  s('database', 'table_prefix', 'prefix', '', '', 'Prefix of the table names, to share a database.'),
  s(
    'memcache',
    'servers',
    'list',
    '',
    '',
    "memcached servers of the mc driver, host:port, comma-separated (a fail-over list). When unset, Nova's names are read, in Nova's order: [DEFAULT] "
      + 'memcached_servers, then [cache] memcache_servers.',
  ),
  s('DEFAULT', 'memcached_servers', 'list', '', '', "Nova's deprecated name of the mc driver's servers; used when [memcache] servers is unset."),
  s(
    'cache',
    'enabled',
    'enum',
    'false',
    '',
    "oslo.cache's switch: when true (and neither name above is set), the mc driver uses [cache] memcache_servers, as Nova does.",
    ['false', 'true'],
  ),
  s(
    'cache',
    'memcache_servers',
    'list',
    '',
    '',
    "oslo.cache's memcached servers (oslo.cache's default localhost:11211 applies when [cache] enabled is true); read by the mc driver as Nova reads it.",
  ),
  s('zookeeper', 'address', 'list', '', '', 'ZooKeeper servers of the zk driver, host:port, comma-separated.'),
  s(
    'zookeeper',
    'recv_timeout',
    'milliseconds',
    String(ZOOKEEPER_DEFAULTS.recvTimeoutMs),
    'ms',
    'ZooKeeper session timeout: how long after a crash a zk service is down.',
  ),
  s('zookeeper', 'sg_prefix', 'path', ZOOKEEPER_DEFAULTS.sgPrefix, '', 'ZooKeeper path under which the zk driver keeps its nodes.'),
  s('api', 'token', 'secret', '', '', "Bearer token required by the status server's API (empty: no token)."),
  s('api', 'listen', 'hostport', '127.0.0.1:7979', '', 'Address of the status server, `rollcall serve` (loopback unless told otherwise).'),
  s(
    'api',
    'allowed_hosts',
    'hostlist',
    '',
    '',
    'Host names the status server answers to besides the ones it listens as (421 for any other Host header, against DNS rebinding), comma-separated.',
  ),
]
