/**
 * Configuration: one INI file in nova.conf style, then `ROLLCALL_*` environment variables, then
 * overrides (command-line flags), each layer winning over the one before.
 *
 * Every setting is declared once in {@link SETTINGS} (section, key, environment variable,
 * default, unit, doc); docs/servicegroup.md lists the same table and a test keeps them equal.
 * Everything is validated before any I/O: each error is an InvalidConfigError naming the setting,
 * the value (credentials redacted), where the value came from and what is allowed. A tooz URL is
 * checked against rollcall's drivers and options, and its liveness window against
 * report_interval and service_down_time (warnings explain the consequence).
 */
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { MAX_TIMER_MS } from '../coordination/options.js'
import { displayUrl } from '../coordination/redact.js'
import { COMMON_OPTIONS, InvalidConfigError, knownSchemes, loadDriver, parseBackendUrl, type Logger, type OptionSpec } from '../index.js'
import { createServiceGroup, type ServiceGroup } from './api.js'
import { DEFAULT_SQLITE_FILE, openCatalog, parseCatalogUrl } from './catalog/catalog.js'
import { chooseMemcacheServers, osloBoolean } from './nova-memcache.js'
import { tablePrefixProblem } from './catalog/sql.js'
import { parseIni, type IniDocument } from './ini.js'
import { SETTING_NAMES, ZOOKEEPER_DEFAULTS, checkDriverSettings, hostPortProblem, invalid, type DriverSettings } from './settings.js'
import { TIMING_DEFAULTS, effectiveDownTime } from './times.js'
import { DRIVER_NAMES, PREVIOUS_DRIVER_NAMES, type DriverName, type PreviousDriverName } from './types.js'

export type { IniDocument } from './ini.js'
export { parseIni } from './ini.js'

/** How a setting's text is read. */
type Kind = 'enum' | 'seconds' | 'milliseconds' | 'url' | 'list' | 'string' | 'secret' | 'hostport' | 'hostlist' | 'prefix' | 'path'

/** One declared setting. */
export interface SettingSpec {
  section: 'DEFAULT' | 'database' | 'memcache' | 'cache' | 'zookeeper' | 'api'
  key: string
  /** The environment variable that overrides it. */
  env: string
  kind: Kind
  /** The default as written in the file ('' = unset). */
  default: string
  /** Unit shown in docs ('' when none). */
  unit: string
  /** Allowed words, for `enum`. */
  values?: readonly string[]
  doc: string
}

const s = (section: SettingSpec['section'], key: string, kind: Kind, def: string, unit: string, doc: string, values?: readonly string[]): SettingSpec =>
  ({ section, key, env: `ROLLCALL_${section === 'DEFAULT' ? '' : `${section.toUpperCase()}_`}${key.toUpperCase()}`, kind, default: def, unit, doc, values })

/** Every setting, in docs order. */
export const SETTINGS: readonly SettingSpec[] = [
  s('DEFAULT', 'servicegroup_driver', 'enum', 'db', '', 'Which driver decides up/down: db, mc (deprecated), zk (deprecated) or tooz.', DRIVER_NAMES),
  s('DEFAULT', 'report_interval', 'seconds', String(TIMING_DEFAULTS.reportIntervalSeconds), 's', 'Seconds between two reports of a service. 0 turns reports off.'),
  s('DEFAULT', 'service_down_time', 'seconds', String(TIMING_DEFAULTS.serviceDownTimeSeconds), 's', 'Seconds without a report after which a service is down (db, mc). Raised to 2.5 × report_interval when not above it.'),
  s('DEFAULT', 'initial_report_delay', 'seconds', String(TIMING_DEFAULTS.initialReportDelaySeconds), 's', 'Seconds from join to the first report (db, mc; Nova\'s fixed 5). zk and tooz join at once.'),
  s('DEFAULT', 'servicegroup_tooz_url', 'url', '', '', 'Coordination backend of the tooz driver, e.g. redis://127.0.0.1:6379?timeout=5.'),
  s('DEFAULT', 'report_to_previous_driver', 'enum', '', '', 'While migrating: also report to this driver (mc or zk), so readers still on it see services up.', ['', ...PREVIOUS_DRIVER_NAMES]),
  s('database', 'connection', 'url', `sqlite:///${DEFAULT_SQLITE_FILE}`, '', 'The services table: sqlite:///FILE (relative to the config file), postgresql://… or mysql://….'),
  s('database', 'table_prefix', 'prefix', '', '', 'Prefix of the table names, to share a database.'),
  s('memcache', 'servers', 'list', '', '', 'memcached servers of the mc driver, host:port, comma-separated (a fail-over list). When unset, Nova\'s names are read, in Nova\'s order: [DEFAULT] memcached_servers, then [cache] memcache_servers.'),
  s('DEFAULT', 'memcached_servers', 'list', '', '', 'Nova\'s deprecated name of the mc driver\'s servers; used when [memcache] servers is unset.'),
  s('cache', 'enabled', 'enum', 'false', '', 'oslo.cache\'s switch: when true (and neither name above is set), the mc driver uses [cache] memcache_servers, as Nova does.', ['false', 'true']),
  s('cache', 'memcache_servers', 'list', '', '', 'oslo.cache\'s memcached servers (oslo.cache\'s default localhost:11211 applies when [cache] enabled is true); read by the mc driver as Nova reads it.'),
  s('zookeeper', 'address', 'list', '', '', 'ZooKeeper servers of the zk driver, host:port, comma-separated.'),
  s('zookeeper', 'recv_timeout', 'milliseconds', String(ZOOKEEPER_DEFAULTS.recvTimeoutMs), 'ms', 'ZooKeeper session timeout: how long after a crash a zk service is down.'),
  s('zookeeper', 'sg_prefix', 'path', ZOOKEEPER_DEFAULTS.sgPrefix, '', 'ZooKeeper path under which the zk driver keeps its nodes.'),
  s('api', 'token', 'secret', '', '', 'Bearer token required by the status server\'s API (empty: no token).'),
  s('api', 'listen', 'hostport', '127.0.0.1:7979', '', 'Address of the status server, `rollcall serve` (loopback unless told otherwise).'),
  s('api', 'allowed_hosts', 'hostlist', '', '', 'Host names the status server answers to besides the ones it listens as (421 for any other Host header, against DNS rebinding), comma-separated.'),
]

/** Largest configuration file read (a larger one, or one that is not a regular file, is refused). */
export const MAX_CONFIG_BYTES = 1024 * 1024

/** Tokens shorter than this are accepted with a warning. */
export const MIN_TOKEN_CHARS = 16

/** A resolved configuration. */
export interface ServiceGroupConfig extends DriverSettings {
  database: { connection: string; tablePrefix: string; baseDir: string }
  api: { token: string | undefined; listen: { host: string; port: number }; allowedHosts: string[] }
  /** The file read, if any. */
  file: string | undefined
}

/** A warning found while loading (the caller logs it). */
export interface ConfigWarning {
  setting: string
  message: string
}

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** INI file to read (default: `env.ROLLCALL_CONFIG`; none when both are unset). */
  file?: string
  /** INI files to read in order, later ones overriding earlier ones key by key (oslo.config's repeated --config-file); replaces `file`. */
  files?: readonly string[]
  /** A directory whose `*.conf` files are read after `files`, in name order (oslo.config's --config-dir). */
  dir?: string
  /** Environment (default process.env). */
  env?: NodeJS.ProcessEnv
  /** Overrides by `section.key` (or `key` for DEFAULT), e.g. from flags: `{ report_interval: '5' }`. */
  overrides?: Readonly<Record<string, string | undefined>>
  /** Where relative paths resolve when there is no file (default: the working directory). */
  cwd?: string
}

/** What loadConfig() returns. */
export interface LoadedConfig {
  config: ServiceGroupConfig
  warnings: ConfigWarning[]
}

interface Raw {
  value: string
  from: string
}

const name = (spec: SettingSpec): string => `[${spec.section}] ${spec.key}`

/** The declaration of a setting (a [DEFAULT] one unless `section` says otherwise). */
const spec_ = (key: string, section: SettingSpec['section'] = 'DEFAULT'): SettingSpec => SETTINGS.find((x) => x.section === section && x.key === key)!

/** The setting each driver cannot do without. */
const REQUIRED_BY: Record<DriverName, string | undefined> = {
  db: undefined, mc: SETTING_NAMES.memcacheServers, zk: SETTING_NAMES.zookeeperAddress, tooz: SETTING_NAMES.toozUrl,
}

/**
 * Loads and validates the configuration; throws InvalidConfigError for the first bad setting.
 * Reads the INI file (if any) and nothing else: no backend is contacted.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env
  const files = configFiles(options, env)
  const file = files[0]
  const warnings: ConfigWarning[] = []
  // Later files override earlier ones, key by key (oslo.config's --config-file and --config-dir).
  const merged = new Map<string, Map<string, { value: string; line: number; file: string }>>()
  for (const file of files) {
    const doc = parseIni(readConfigFile(file), file)
    warnings.push(...unknownKeys(doc, file), ...miscasedSections(doc, file))
    for (const [section, keys] of doc) {
      const into = merged.get(section) ?? new Map()
      merged.set(section, into)
      for (const [key, v] of keys) into.set(key, { ...v, file })
    }
  }
  const raw = new Map<SettingSpec, Raw>()
  let dbFile: string | undefined
  for (const spec of SETTINGS) {
    const inFile = merged.get(spec.section)?.get(spec.key)
    if (inFile) raw.set(spec, { value: inFile.value, from: ` (from ${inFile.file}:${inFile.line})` })
    if (inFile && spec.section === 'database' && spec.key === 'connection') dbFile = inFile.file
    if (env[spec.env] !== undefined) raw.set(spec, { value: env[spec.env]!, from: ` (from ${spec.env})` })
  }
  for (const [key, value] of Object.entries(options.overrides ?? {})) {
    if (value === undefined) continue
    const [section, k] = key.includes('.') ? key.split('.', 2) as [string, string] : ['DEFAULT', key]
    const spec = SETTINGS.find((x) => x.section === section && x.key === k)
    if (!spec) throw new InvalidConfigError(key, `Unknown setting "${key}"; known: ${SETTINGS.map((x) => (x.section === 'DEFAULT' ? x.key : `${x.section}.${x.key}`)).join(', ')}`)
    raw.set(spec, { value, from: ' (from the command line)' })
  }
  // A relative SQLite path is relative to the file that names it (else the first file).
  const baseFile = dbFile ?? file
  const baseDir = baseFile !== undefined ? dirname(resolve(baseFile)) : resolve(options.cwd ?? process.cwd())
  const config = resolveSettings(raw, baseDir, file)
  const corrected = effectiveDownTime(config.reportIntervalSeconds, config.serviceDownTimeSeconds)
  if (corrected.warning) warnings.push({ setting: SETTING_NAMES.serviceDownTimeSeconds, message: corrected.warning })
  config.serviceDownTimeSeconds = corrected.serviceDownTimeSeconds
  if (config.toozUrl) warnings.push(...(await checkToozUrl(config, raw.get(spec_('servicegroup_tooz_url'))?.from ?? '')))
  const token = config.api.token
  if (token !== undefined && token.length < MIN_TOKEN_CHARS) {
    warnings.push({ setting: '[api] token', message: `[api] token${raw.get(spec_('token', 'api'))?.from ?? ''} has ${token.length} characters; use at least ${MIN_TOKEN_CHARS} random ones (openssl rand -hex 16)` })
  }
  return { config, warnings }
}

/**
 * Reads a configuration file: a regular file of at most MAX_CONFIG_BYTES. Opened non-blocking,
 * so a FIFO cannot stall the open; /dev/zero, /dev/urandom, FIFOs and directories are refused.
 */
function readConfigFile(file: string): string {
  const refuse = (why: string): InvalidConfigError => new InvalidConfigError('--config', `Cannot read the configuration file ${file}: ${why}`)
  let fd: number
  try {
    const st = statSync(file)
    if (!st.isFile()) throw refuse('not a regular file (a device, FIFO or directory); give the path of an INI file')
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (err) {
    if (err instanceof InvalidConfigError) throw err
    throw refuse((err as NodeJS.ErrnoException).code ?? (err as Error).message)
  }
  try {
    if (!fstatSync(fd).isFile()) throw refuse('not a regular file (a device, FIFO or directory); give the path of an INI file')
    const buf = Buffer.alloc(MAX_CONFIG_BYTES + 1)
    let n = 0
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null)
    if (n > MAX_CONFIG_BYTES) throw refuse(`larger than ${MAX_CONFIG_BYTES} bytes (1 MiB); a configuration file is a few kilobytes`)
    return buf.toString('utf8', 0, n)
  } catch (err) {
    if (err instanceof InvalidConfigError) throw err
    throw refuse((err as NodeJS.ErrnoException).code ?? (err as Error).message)
  } finally {
    closeSync(fd)
  }
}

function resolveSettings(raw: Map<SettingSpec, Raw>, baseDir: string, file: string | undefined): ServiceGroupConfig {
  const get = (key: string, section: SettingSpec['section'] = 'DEFAULT'): { spec: SettingSpec; value: string; from: string } => {
    const spec = spec_(key, section)
    const r = raw.get(spec)
    return { spec, value: (r?.value ?? spec.default).trim(), from: r?.from ?? '' }
  }
  const seconds = (key: string): number => {
    const { spec, value, from } = get(key)
    const n = Number(value)
    if (value === '' || !Number.isFinite(n) || n < 0 || n * 1000 > MAX_TIMER_MS) throw invalid(name(spec), value, `expected a number of seconds from 0 to ${MAX_TIMER_MS / 1000} (the longest a Node timer can wait)`, from)
    return n
  }
  const word = (key: string): string => {
    const { spec, value, from } = get(key)
    if (!spec.values!.includes(value)) throw invalid(name(spec), value, `expected one of ${spec.values!.filter(Boolean).join(', ')}${spec.values!.includes('') ? ', or nothing' : ''}`, from)
    return value
  }
  const list = (key: string, section: SettingSpec['section']): string[] => {
    const { spec, value, from } = get(key, section)
    const items = value.split(/[,\n]/).map((x) => x.trim()).filter(Boolean)
    for (const item of items) {
      const problem = hostPortProblem(item)
      if (problem) throw invalid(name(spec), value, problem, from)
    }
    return items
  }
  const db = get('connection', 'database')
  const dbUrl = db.from === '' ? `sqlite:///${resolve(baseDir, DEFAULT_SQLITE_FILE)}` : db.value
  try {
    parseCatalogUrl(dbUrl, baseDir)
  } catch (err) {
    throw new InvalidConfigError(name(db.spec), `${(err as Error).message}${db.from}`)
  }
  const prefix = get('table_prefix', 'database')
  const prefixProblem = tablePrefixProblem(prefix.value)
  if (prefixProblem) throw invalid(name(prefix.spec), prefix.value, prefixProblem, prefix.from)
  const recv = get('recv_timeout', 'zookeeper')
  if (!/^\d+$/.test(recv.value) || Number(recv.value) < 100 || Number(recv.value) > MAX_TIMER_MS) throw invalid(name(recv.spec), recv.value, `expected whole milliseconds from 100 to ${MAX_TIMER_MS}`, recv.from)
  const sgPrefix = get('sg_prefix', 'zookeeper')
  if (!/^(\/[^/\s]+)+$/.test(sgPrefix.value)) throw invalid(name(sgPrefix.spec), sgPrefix.value, 'expected an absolute ZooKeeper path without a trailing "/", e.g. /servicegroups', sgPrefix.from)
  const listen = get('listen', 'api')
  if (hostPortProblem(listen.value)) throw invalid(name(listen.spec), listen.value, 'expected host:port, e.g. 127.0.0.1:7979', listen.from)
  const token = get('token', 'api')
  // RFC 7230 field values: visible ASCII; a space or control character could never be sent back.
  if (token.value !== '' && !/^[\x21-\x7e]+$/.test(token.value)) {
    throw new InvalidConfigError(name(token.spec), `Invalid ${name(token.spec)}${token.from}: a token travels in an Authorization header, so it must be visible ASCII without spaces (the value is not shown); e.g. openssl rand -hex 16`)
  }
  const allowedHosts = get('allowed_hosts', 'api')
  const hostNames = allowedHosts.value.split(/[,\s]+/).filter(Boolean).map((h) => h.toLowerCase())
  for (const h of hostNames) {
    if (!/^([a-z0-9_-]+(\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/.test(h)) throw invalid(name(allowedHosts.spec), allowedHosts.value, `"${h.slice(0, 100)}" is not a host name (write names without port, e.g. status.example.com, comma-separated)`, allowedHosts.from)
  }
  const zkAddress = list('address', 'zookeeper')
  const previous = word('report_to_previous_driver')
  const cacheEnabled = get('enabled', 'cache')
  if (osloBoolean(cacheEnabled.value) === undefined) throw invalid(name(cacheEnabled.spec), cacheEnabled.value, 'expected true or false', cacheEnabled.from)
  const memcache = chooseMemcacheServers({
    own: list('servers', 'memcache'), novaDefault: list('memcached_servers', 'DEFAULT'),
    cache: list('memcache_servers', 'cache'), cacheSet: raw.has(spec_('memcache_servers', 'cache')), cacheEnabled: cacheEnabled.value,
  })
  const config: ServiceGroupConfig = {
    driver: word('servicegroup_driver') as DriverName,
    reportIntervalSeconds: seconds('report_interval'),
    serviceDownTimeSeconds: seconds('service_down_time'),
    initialReportDelaySeconds: seconds('initial_report_delay'),
    toozUrl: get('servicegroup_tooz_url').value || undefined,
    reportToPreviousDriver: (previous || undefined) as PreviousDriverName | undefined,
    memcacheServers: memcache.servers,
    zookeeper: zkAddress.length ? { address: zkAddress.join(','), recvTimeoutMs: Number(recv.value), sgPrefix: sgPrefix.value } : undefined,
    database: { connection: dbUrl, tablePrefix: prefix.value, baseDir },
    api: { token: token.value || undefined, allowedHosts: hostNames, listen: { host: listen.value.slice(0, listen.value.lastIndexOf(':')).replace(/^\[|\]$/g, ''), port: Number(listen.value.slice(listen.value.lastIndexOf(':') + 1)) } },
    file,
  }
  if (config.serviceDownTimeSeconds === 0) throw invalid(SETTING_NAMES.serviceDownTimeSeconds, '0', 'expected a number of seconds > 0', get('service_down_time').from)
  // Cross-field rules, once, shared with createServiceGroup(); add where the value came from.
  try {
    checkDriverSettings(config)
  } catch (err) {
    if (!(err instanceof InvalidConfigError)) throw err
    const spec = SETTINGS.find((x) => name(x) === err.setting)
    let from = spec ? raw.get(spec)?.from ?? '' : ''
    if (from === '') {
      // Unset, but required: say which setting requires it, and where that one came from.
      const [by, value] = config.reportToPreviousDriver && REQUIRED_BY[config.reportToPreviousDriver] === err.setting
        ? [spec_('report_to_previous_driver'), config.reportToPreviousDriver] : [spec_('servicegroup_driver'), config.driver]
      from = ` (unset; required by ${name(by)} = ${value}${raw.get(by)?.from ?? ''})`
    }
    throw new InvalidConfigError(err.setting, err.message.replace(/: /, `${from}: `))
  }
  return config
}

/** The files loadConfig() reads, in order. */
function configFiles(options: LoadConfigOptions, env: NodeJS.ProcessEnv): string[] {
  const files = [...(options.files ?? (options.file !== undefined ? [options.file] : options.dir === undefined && env.ROLLCALL_CONFIG ? [env.ROLLCALL_CONFIG] : []))]
  if (options.dir !== undefined) {
    let names: string[]
    try {
      names = readdirSync(options.dir).filter((n) => n.endsWith('.conf')).sort()
    } catch (err) {
      throw new InvalidConfigError('--config-dir', `Cannot read the configuration directory ${options.dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
    files.push(...names.map((n) => join(options.dir!, n)))
  }
  return files
}

/** Sections that differ from a known one only by case (`[default]`): oslo.config ignores them, so they are reported. */
function miscasedSections(doc: IniDocument, file: string): ConfigWarning[] {
  const known = [...new Set(SETTINGS.map((x) => x.section))]
  const out: ConfigWarning[] = []
  for (const [section, keys] of doc) {
    const meant = known.find((k) => k !== section && k.toLowerCase() === section.toLowerCase())
    if (!meant) continue
    const first = [...keys.values()][0]
    out.push({ setting: `[${section}]`, message: `${file}${first ? `:${first.line}` : ''}: section [${section}] is not [${meant}] (section names are case-sensitive, as in oslo.config): its ${keys.size} setting(s) are ignored; write [${meant}]` })
  }
  return out
}

/** Keys in known sections that look like a misspelt known key (nova.conf has many others; those are ignored). */
function unknownKeys(doc: IniDocument, file: string): ConfigWarning[] {
  const out: ConfigWarning[] = []
  for (const [section, keys] of doc) {
    const known = SETTINGS.filter((x) => x.section === section).map((x) => x.key)
    for (const [key, v] of keys) {
      if (known.includes(key)) continue
      // Within 2 edits only when the lengths are: a long key costs nothing.
      const near = known.find((k) => Math.abs(k.length - key.length) <= 2 && distance(k, key) <= 2)
      if (near) out.push({ setting: `[${section}] ${key}`, message: `${file}:${v.line}: unknown setting [${section}] ${key} is ignored; did you mean ${near}?` })
    }
  }
  return out
}

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
  }
  return d[a.length]![b.length]!
}

/**
 * Checks servicegroup_tooz_url without connecting: a scheme rollcall has, options its driver
 * knows with valid values; then compares the backend's liveness window (membership_timeout, else
 * timeout, else the driver's default) with report_interval and service_down_time.
 */
async function checkToozUrl(config: ServiceGroupConfig, from: string): Promise<ConfigWarning[]> {
  const setting = SETTING_NAMES.toozUrl
  const url = config.toozUrl!
  let parsed
  let def
  try {
    parsed = parseBackendUrl(url)
    def = await loadDriver(parsed.scheme)
  } catch (err) {
    throw new InvalidConfigError(setting, `Invalid ${setting} = "${displayUrl(url)}"${from}: ${(err as Error).message}; known schemes: ${knownSchemes().join(', ')}`)
  }
  const specs = { ...COMMON_OPTIONS, ...def.options } as Record<string, OptionSpec<unknown>>
  const byQuery = new Map(Object.values(specs).map((spec) => [spec.query, spec]))
  const values = new Map<string, unknown>()
  for (const [key, list] of parsed.query) {
    const spec = byQuery.get(key)
    if (!spec) throw invalid(setting, url, `the ${def.name} driver has no option "${key}"; known options: ${[...byQuery.keys()].sort().join(', ')}`, from)
    try {
      values.set(key, spec.fromQuery(list))
    } catch (err) {
      throw invalid(setting, url, `option ${key} ${(err as Error).message}`, from)
    }
  }
  const windowMs = liveness(specs, byQuery, values)
  if (windowMs === undefined) return []
  const w = windowMs / 1000
  const warnings: ConfigWarning[] = []
  const r = config.reportIntervalSeconds
  const sdt = config.serviceDownTimeSeconds
  if (r > 0 && w < 2 * r) {
    warnings.push({ setting, message: `${setting}: the ${def.name} membership timeout (${w} s) is shorter than two report intervals (2 × report_interval = ${2 * r} s). Liveness under the tooz driver is kept by the coordination heartbeat (about every ${w / 2} s), not by reports, so services stay up; but a report is what refreshes a service's Updated At and rejoins it if the backend dropped it, so Updated At will lag behind liveness by up to ${r} s. Lower report_interval or raise the timeout to silence this.` })
  }
  if (w > sdt) {
    warnings.push({ setting, message: `${setting}: the ${def.name} membership timeout (${w} s) is longer than service_down_time (${sdt} s): under the tooz driver a service that dies stays up for up to ${w} s, longer than service_down_time promises${config.reportToPreviousDriver ? `, and readers still on ${config.reportToPreviousDriver} will see it down ${w - sdt} s earlier than tooz readers` : ''}. Use timeout=${sdt} or less in the URL.` })
  } else if (config.reportToPreviousDriver && w < sdt) {
    warnings.push({ setting, message: `${setting}: the ${def.name} membership timeout (${w} s) differs from service_down_time (${sdt} s): after a crash, tooz readers see the service down up to ${sdt - w} s before readers still on ${config.reportToPreviousDriver}; rollcall migrate check reports those services as disagreeing meanwhile.` })
  }
  return warnings
}

/** The liveness window in ms: membership_timeout, else timeout, else the declared defaults. */
function liveness(specs: Record<string, OptionSpec<unknown>>, byQuery: Map<string, OptionSpec<unknown>>, values: Map<string, unknown>): number | undefined {
  const pick = (query: string, seen = 0): number | undefined => {
    const spec = byQuery.get(query)
    if (!spec || seen > 3) return undefined
    if (values.has(query)) return values.get(query) as number
    if (spec.defaultFrom !== undefined) return pick(specs[spec.defaultFrom]?.query ?? '', seen + 1)
    return spec.default as number | undefined
  }
  return pick('membership_timeout') ?? pick('timeout')
}

/** Opens the catalog named by the configuration and a ServiceGroup over it (which closes the catalog on close()). */
export async function openServiceGroup(config: ServiceGroupConfig, options: { logger?: Logger } = {}): Promise<ServiceGroup> {
  const catalog = await openCatalog(config.database.connection, { tablePrefix: config.database.tablePrefix, baseDir: config.database.baseDir })
  try {
    return await createServiceGroup({ ...config, catalog, closeCatalog: true, logger: options.logger, zookeeper: config.zookeeper })
  } catch (err) {
    await catalog.close()
    throw err
  }
}
