/**
 * The check of `[DEFAULT] servicegroup_tooz_url` made while loading the configuration, without
 * connecting: a scheme rollcall has and options its driver knows, read by the same option kit as
 * connect(); then the backend's liveness window (membership_timeout, else timeout, else the
 * driver's default) compared with report_interval and service_down_time, as warnings that explain
 * the consequence.
 */
import { readQuery, withDefaults } from '../coordination/config/options.js'
import { didYouMean } from '../internal/did-you-mean.js'
import { displayUrl } from '../internal/redact.js'
import { COMMON_OPTIONS, InvalidConfigError, knownSchemes, loadDriver, parseBackendUrl, type OptionSpecs } from '../index.js'
import type { ConfigWarning } from './config-files.js'
import { invalid, SETTING_NAMES, type DriverSettings } from './settings.js'

/** Checks the tooz URL of `config` (`from` says where it was written); returns the warnings. */
export async function checkToozUrl(config: DriverSettings, from: string): Promise<ConfigWarning[]> {
  const setting = SETTING_NAMES.toozUrl
  const url = config.toozUrl!
  let parsed
  let def
  try {
    parsed = parseBackendUrl(url)
    def = await loadDriver(parsed.scheme)
  } catch (err) {
    throw new InvalidConfigError(
      setting,
      `Invalid ${setting} = "${displayUrl(url)}"${from}: ${(err as Error).message}; known schemes: ${knownSchemes().join(', ')}`,
    )
  }
  const specs: OptionSpecs = { ...COMMON_OPTIONS, ...def.options }
  // A key without a value is read as '' here (connect() refuses it before reading).
  const given = readQuery(specs, parsed.query, (p) =>
    invalid(
      setting,
      url,
      p.kind === 'unknown'
        ? `the ${def.name} driver has no option "${p.key}"${didYouMean(p.near)}; known options: ${p.known.join(', ')}`
        : `option ${p.key} ${p.kind === 'unfit' ? p.phrase : 'has no value'}`,
      from,
    ), true)
  const resolved = withDefaults(specs, given)
  const byQuery = (query: string): number | undefined => {
    const name = Object.keys(specs).find((n) => specs[n]!.query === query)
    return name === undefined ? undefined : resolved[name] as number | undefined
  }
  const windowMs = byQuery('membership_timeout') ?? byQuery('timeout')
  return windowMs === undefined ? [] : livenessWarnings(config, def.name, windowMs / 1000)
}

/** Warnings when a liveness window of `w` seconds disagrees with report_interval and service_down_time. */
function livenessWarnings(config: DriverSettings, driver: string, w: number): ConfigWarning[] {
  const setting = SETTING_NAMES.toozUrl
  const warnings: ConfigWarning[] = []
  const r = config.reportIntervalSeconds
  const sdt = config.serviceDownTimeSeconds
  if (r > 0 && w < 2 * r) {
    warnings.push({
      setting,
      message: `${setting}: the ${driver} membership timeout (${w} s) is shorter than two report intervals (2 × report_interval = ${2 * r} s). `
        + `Liveness under the tooz driver is kept by the coordination heartbeat (about every ${w / 2} s), not by reports, so services stay up; `
        + "but a report is what refreshes a service's Updated At and rejoins it if the backend dropped it, "
        + `so Updated At will lag behind liveness by up to ${r} s. Lower report_interval or raise the timeout to silence this.`,
    })
  }
  if (w > sdt) {
    warnings.push({
      setting,
      message: `${setting}: the ${driver} membership timeout (${w} s) is longer than service_down_time (${sdt} s): `
        + `under the tooz driver a service that dies stays up for up to ${w} s, longer than service_down_time promises`
        + (config.reportToPreviousDriver
          ? `, and readers still on ${config.reportToPreviousDriver} will see it down ${w - sdt} s earlier than tooz readers`
          : '')
        + `. Use timeout=${sdt} or less in the URL.`,
    })
  } else if (config.reportToPreviousDriver && w < sdt) {
    warnings.push({
      setting,
      message: `${setting}: the ${driver} membership timeout (${w} s) differs from service_down_time (${sdt} s): `
        + `after a crash, tooz readers see the service down up to ${sdt - w} s before readers still on ${config.reportToPreviousDriver}; `
        + 'rollcall migrate check reports those services as disagreeing meanwhile.',
    })
  }
  return warnings
}
