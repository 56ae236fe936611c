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
import { dirname, resolve } from 'node:path'
import { InvalidConfigError, type Logger } from '../index.js'
import { escapeControls } from '../internal/shown-text.js'
import { booleanWord, coerce, hostPort, oneOf, OSLO_CONFIG_BOOLEANS, secondsText, Unfit, wholeMsText, type HostAndPort } from '../internal/coerce.js'
import { createServiceGroup, type ServiceGroup } from './api.js'
import { DEFAULT_SQLITE_FILE, openCatalog, parseCatalogUrl } from './catalog/catalog.js'
import { tablePrefixProblem } from './catalog/sql.js'
import { configFiles, readConfigFiles, type ConfigSources, type ConfigWarning, type FileValue } from './config-files.js'
import { SETTINGS, type SettingSpec } from './config-table.js'
import { checkToozUrl } from './config-tooz.js'
import { chooseMemcacheServers } from './nova-memcache.js'
import { SETTING_NAMES, ZOOKEEPER_PATH, ZOOKEEPER_PATH_ALLOWED, checkDriverSettings, invalid, redactServers, serverAddress, type DriverSettings,
  type ZookeeperSettings } from './settings.js'
import { effectiveDownTime } from './times.js'
import { DRIVER_NAMES, type DriverName, type PreviousDriverName } from './types.js'

export type { IniDocument } from './ini.js'
export { parseIni } from './ini.js'
export type { ConfigWarning } from './config-files.js'
export { MAX_CONFIG_BYTES } from './config-files.js'
export type { SettingKind, SettingSpec } from './config-table.js'
export type { HostAndPort } from '../internal/coerce.js'
export { SETTINGS } from './config-table.js'

/** Tokens shorter than this are accepted with a warning. */
export const MIN_TOKEN_CHARS = 16

/** A resolved configuration. */
export interface ServiceGroupConfig extends DriverSettings {
  database: { connection: string; tablePrefix: string; baseDir: string }
  api: { token: string | undefined; listen: HostAndPort; allowedHosts: string[] }
  /** The file read, if any. */
  file: string | undefined
}

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions extends ConfigSources {
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

/** The text given for a setting and where: ` (from FILE:LINE)`, ` (from ROLLCALL_X)` or ` (from the command line)`. */
interface Raw {
  value: string
  from: string
}

const name = (spec: SettingSpec): string => `[${spec.section}] ${spec.key}`

/** The declaration of a setting (a [DEFAULT] one unless `section` says otherwise). */
const spec_ = (key: string, section: SettingSpec['section'] = 'DEFAULT'): SettingSpec => SETTINGS.find((x) => x.section === section && x.key === key)!

/** The setting each driver cannot do without. */
const REQUIRED_BY: Record<DriverName, string | undefined> = {
  db: undefined,
  mc: SETTING_NAMES.memcacheServers,
  zk: SETTING_NAMES.zookeeperAddress,
  tooz: SETTING_NAMES.toozUrl,
}

/**
 * Loads and validates the configuration; throws InvalidConfigError for the first bad setting.
 * Reads the INI file (if any) and nothing else: no backend is contacted.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env
  const files = configFiles(options, env)
  const file = files[0]
  const { merged, warnings } = readConfigFiles(files, SETTINGS)
  const { raw, dbFile } = layerSettings(merged, env, options.overrides ?? {})
  // A relative SQLite path is relative to the file that names it (else the first file).
  const baseFile = dbFile ?? file
  const baseDir = baseFile !== undefined ? dirname(resolve(baseFile)) : resolve(options.cwd ?? process.cwd())
  const text = new SettingsText(raw)
  const config = resolveSettings(text, baseDir, file)
  const corrected = effectiveDownTime(config.reportIntervalSeconds, config.serviceDownTimeSeconds)
  if (corrected.warning) warnings.push({ setting: SETTING_NAMES.serviceDownTimeSeconds, message: corrected.warning })
  config.serviceDownTimeSeconds = corrected.serviceDownTimeSeconds
  if (config.toozUrl) warnings.push(...(await checkToozUrl(config, text.get('servicegroup_tooz_url').from)))
  const token = config.api.token
  if (token !== undefined && token.length < MIN_TOKEN_CHARS) {
    warnings.push({
      setting: '[api] token',
      message: `[api] token${text.get('token', 'api').from} has ${token.length} characters; use at least ${MIN_TOKEN_CHARS} random ones (openssl rand -hex 16)`,
    })
  }
  return { config, warnings }
}

/** The text of each setting given: the files', then the environment's, then the overrides'; and the file that set [database] connection. */
function layerSettings(
  merged: Map<string, Map<string, FileValue>>,
  env: NodeJS.ProcessEnv,
  overrides: Readonly<Record<string, string | undefined>>,
): { raw: Map<SettingSpec, Raw>; dbFile: string | undefined } {
  const raw = new Map<SettingSpec, Raw>()
  let dbFile: string | undefined
  for (const spec of SETTINGS) {
    const inFile = merged.get(spec.section)?.get(spec.key)
    if (inFile) raw.set(spec, { value: inFile.value, from: ` (from ${escapeControls(inFile.file)}:${inFile.line})` })
    if (inFile && spec === spec_('connection', 'database')) dbFile = inFile.file
    if (env[spec.env] !== undefined) raw.set(spec, { value: env[spec.env]!, from: ` (from ${spec.env})` })
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue
    const [section, k] = key.includes('.') ? key.split('.', 2) as [string, string] : ['DEFAULT', key]
    const spec = SETTINGS.find((x) => x.section === section && x.key === k)
    if (!spec) {
      throw new InvalidConfigError(
        key,
        `Unknown setting "${key}"; known: ${SETTINGS.map((x) => (x.section === 'DEFAULT' ? x.key : `${x.section}.${x.key}`)).join(', ')}`,
      )
    }
    raw.set(spec, { value, from: ' (from the command line)' })
  }
  return { raw, dbFile }
}

/** One setting as read: its text (trimmed; the default when unset) and where it came from ('' when unset). */
interface Setting {
  spec: SettingSpec
  value: string
  from: string
}

/**
 * The layered text of the settings, read with the coercion kit: a value that does not fit is an
 * InvalidConfigError naming the setting, the value and where it came from.
 */
class SettingsText {
  constructor(readonly raw: ReadonlyMap<SettingSpec, Raw>) {}

  get(key: string, section: SettingSpec['section'] = 'DEFAULT'): Setting {
    const spec = spec_(key, section)
    const r = this.raw.get(spec)
    return { spec, value: (r?.value ?? spec.default).trim(), from: r?.from ?? '' }
  }

  /** Reads a setting with a kit reader; `allowed` words the reader's phrase (default: `expected <phrase>`). */
  read<T>(key: string, section: SettingSpec['section'], reader: (text: string) => T, allowed = (phrase: string) => `expected ${phrase}`): T {
    const { spec, value, from } = this.get(key, section)
    return coerce(() => reader(value), (phrase) => invalid(name(spec), value, allowed(phrase), from))
  }

  /** A list of host:port servers, comma- or newline-separated. */
  servers(key: string, section: SettingSpec['section']): string[] {
    const { spec, value, from } = this.get(key, section)
    return coerce(
      () => value.split(/[,\n]/).map((x) => x.trim()).filter(Boolean).map((item) => (serverAddress(item), item)),
      (phrase) => invalid(name(spec), redactServers(value), phrase, from),
    )
  }
}

/** Reads and checks every setting, in steps; throws InvalidConfigError for the first bad one. */
function resolveSettings(text: SettingsText, baseDir: string, file: string | undefined): ServiceGroupConfig {
  const database = databaseSettings(text, baseDir)
  const zookeeper = zookeeperSettings(text)
  const api = apiSettings(text)
  const previous = text.read('report_to_previous_driver', 'DEFAULT', (v) => oneOf(v, spec_('report_to_previous_driver').values!))
  const memcacheServers = memcacheSettings(text)
  const config: ServiceGroupConfig = {
    driver: text.read('servicegroup_driver', 'DEFAULT', (v) => oneOf(v, DRIVER_NAMES)),
    ...timingSettings(text),
    toozUrl: text.get('servicegroup_tooz_url').value || undefined,
    reportToPreviousDriver: (previous || undefined) as PreviousDriverName | undefined,
    memcacheServers,
    zookeeper,
    database,
    api,
    file,
  }
  checkAcrossSettings(config, text)
  return config
}

/** [database]: a catalog URL (the default SQLite file sits in `baseDir`) and a table prefix. */
function databaseSettings(text: SettingsText, baseDir: string): ServiceGroupConfig['database'] {
  const db = text.get('connection', 'database')
  const connection = db.from === '' ? `sqlite:///${resolve(baseDir, DEFAULT_SQLITE_FILE)}` : db.value
  try {
    parseCatalogUrl(connection, baseDir)
  } catch (err) {
    throw new InvalidConfigError(name(db.spec), `${(err as Error).message}${db.from}`)
  }
  const tablePrefix = text.read('table_prefix', 'database', (v) => checked(v, tablePrefixProblem(v)), (phrase) => phrase)
  return { connection, tablePrefix, baseDir }
}

/** [zookeeper]: checked even when unused; the zk settings exist when an address is given. */
function zookeeperSettings(text: SettingsText): ZookeeperSettings | undefined {
  const recvTimeoutMs = text.read('recv_timeout', 'zookeeper', (v) => wholeMsText(v, 100))
  const sgPrefix = text.read('sg_prefix', 'zookeeper', (v) => checked(v, ZOOKEEPER_PATH.test(v) ? undefined : ZOOKEEPER_PATH_ALLOWED))
  const address = text.servers('address', 'zookeeper')
  return address.length ? { address: address.join(','), recvTimeoutMs, sgPrefix } : undefined
}

/** [api]: the status server's address, token and extra host names. */
function apiSettings(text: SettingsText): ServiceGroupConfig['api'] {
  const listen = text.read('listen', 'api', hostPort, () => 'expected host:port, e.g. 127.0.0.1:7979')
  const token = text.get('token', 'api')
  // RFC 7230 field values: visible ASCII; a space or control character could never be sent back.
  if (token.value !== '' && !/^[\x21-\x7e]+$/.test(token.value)) {
    throw new InvalidConfigError(
      name(token.spec),
      `Invalid ${name(token.spec)}${token.from}: a token travels in an Authorization header, so it must be visible ASCII without spaces `
        + '(the value is not shown); e.g. openssl rand -hex 16',
    )
  }
  const allowedHosts = text.read('allowed_hosts', 'api', hostNames, (phrase) => phrase)
  return { token: token.value || undefined, allowedHosts, listen }
}

/** Host names, comma- or space-separated, lower-cased. Unfit: `"<name>" is not a host name (…)`. */
function hostNames(text: string): string[] {
  const names = text.split(/[,\s]+/).filter(Boolean).map((h) => h.toLowerCase())
  for (const h of names) {
    if (!/^([a-z0-9_-]+(\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/.test(h)) {
      throw new Unfit(`"${h.slice(0, 100)}" is not a host name (write names without port, e.g. status.example.com, comma-separated)`)
    }
  }
  return names
}

/** The mc driver's servers, under rollcall's and Nova's names (nova-memcache.ts says which wins). */
function memcacheSettings(text: SettingsText): readonly string[] {
  const cacheEnabled = text.read('enabled', 'cache', (v) => checked(v, booleanWord(v, OSLO_CONFIG_BOOLEANS) === undefined ? 'true or false' : undefined))
  return chooseMemcacheServers({
    own: text.servers('servers', 'memcache'),
    novaDefault: text.servers('memcached_servers', 'DEFAULT'),
    cache: text.servers('memcache_servers', 'cache'),
    cacheSet: text.raw.has(spec_('memcache_servers', 'cache')),
    cacheEnabled,
  }).servers
}

/** The three durations, in seconds; service_down_time cannot be 0. */
function timingSettings(text: SettingsText): Pick<DriverSettings, 'reportIntervalSeconds' | 'serviceDownTimeSeconds' | 'initialReportDelaySeconds'> {
  const times = {
    reportIntervalSeconds: text.read('report_interval', 'DEFAULT', secondsText),
    serviceDownTimeSeconds: text.read('service_down_time', 'DEFAULT', secondsText),
    initialReportDelaySeconds: text.read('initial_report_delay', 'DEFAULT', secondsText),
  }
  if (times.serviceDownTimeSeconds === 0) {
    throw invalid(SETTING_NAMES.serviceDownTimeSeconds, '0', 'expected a number of seconds > 0', text.get('service_down_time').from)
  }
  return times
}

/** Cross-field rules, once, shared with createServiceGroup(); adds where the value came from. */
function checkAcrossSettings(config: ServiceGroupConfig, text: SettingsText): void {
  try {
    checkDriverSettings(config)
  } catch (err) {
    if (!(err instanceof InvalidConfigError)) throw err
    const spec = SETTINGS.find((x) => name(x) === err.setting)
    let from = spec ? text.raw.get(spec)?.from ?? '' : ''
    if (from === '') {
      // Unset, but required: say which setting requires it, and where that one came from.
      const [by, value] = config.reportToPreviousDriver && REQUIRED_BY[config.reportToPreviousDriver] === err.setting
        ? [spec_('report_to_previous_driver'), config.reportToPreviousDriver]
        : [spec_('servicegroup_driver'), config.driver]
      from = ` (unset; required by ${name(by)} = ${value}${text.raw.get(by)?.from ?? ''})`
    }
    throw new InvalidConfigError(err.setting, err.message.replace(/: /, `${from}: `))
  }
}

/** `value`, or Unfit with `problem` when there is one. */
function checked(value: string, problem: string | undefined): string {
  if (problem !== undefined) throw new Unfit(problem)
  return value
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
