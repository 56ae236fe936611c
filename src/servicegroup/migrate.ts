/**
 * The migration check behind `rollcall migrate check --from mc|zk --to tooz`: for every service
 * in the catalog, what the old driver says (up/down) against what the new one says, and the list
 * of services on which they disagree. While report_to_previous_driver makes services report to
 * both, a healthy fleet shows no disagreement; a service still reporting only to the old driver
 * (not yet restarted with the new config) shows `up` on the old side and `down` on the new one.
 *
 * Both sides are read the batched way: one catalog read, then one read per topic per driver.
 * forced_down is left out: it is the catalog's, identical on both sides.
 */
import { InvalidArgumentError, silentLogger, type Logger } from '../index.js'
import { adaptLogger } from '../coordination/logger.js'
import { coerce, oneOf } from '../internal/coerce.js'
import { openCatalog, type Catalog } from './catalog/catalog.js'
import type { ServiceGroupConfig } from './config.js'
import type { ServiceGroupDriver } from './driver.js'
import { createDriver } from './registry.js'
import { checkDriverSettings } from './settings.js'
import { DRIVER_NAMES, type DriverName, type ServiceRecord } from './types.js'

/** One service the two drivers disagree on. */
export interface Disagreement {
  id: number
  host: string
  binary: string
  topic: string
  from: 'up' | 'down'
  to: 'up' | 'down'
}

/** The outcome of a check. */
export interface MigrationReport {
  from: DriverName
  to: DriverName
  /** Services compared. */
  checked: number
  disagreements: Disagreement[]
}

/** What compareDrivers() reads. */
export interface CompareOptions {
  catalog: Catalog
  from: ServiceGroupDriver
  to: ServiceGroupDriver
  /** Only this topic (default: every topic). */
  topic?: string
  /** Called after each topic with the services checked so far, out of all. */
  onProgress?: (progress: { topic: string; checked: number; total: number }) => void
}

/** Compares two started drivers over the catalog's live records. */
export async function compareDrivers(options: CompareOptions): Promise<MigrationReport> {
  const records = await options.catalog.list(options.topic === undefined ? {} : { topic: options.topic })
  const byTopic = new Map<string, ServiceRecord[]>()
  for (const r of records) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r])
  const disagreements: Disagreement[] = []
  let checked = 0
  for (const [topic, list] of byTopic) {
    const [a, b] = await Promise.all([options.from.getAll(topic, list), options.to.getAll(topic, list)])
    for (const r of list) {
      const from = a.isUp(r) ? 'up' : 'down'
      const to = b.isUp(r) ? 'up' : 'down'
      if (from !== to) disagreements.push({ id: r.id, host: r.host, binary: r.binary, topic: r.topic, from, to })
    }
    checked += list.length
    options.onProgress?.({ topic, checked, total: records.length })
  }
  return { from: options.from.name, to: options.to.name, checked: records.length, disagreements }
}

/**
 * Opens the catalog and both drivers from a configuration, compares, and closes everything.
 * Each driver needs its settings in the configuration (mc: [memcache] servers, zk: [zookeeper]
 * address, tooz: servicegroup_tooz_url), whichever servicegroup_driver says.
 */
export async function checkMigration(
  config: ServiceGroupConfig,
  options: { from: string; to: string; topic?: string; logger?: Logger; onProgress?: CompareOptions['onProgress'] },
): Promise<MigrationReport> {
  const driver = (flag: string, value: string): DriverName =>
    coerce(() => oneOf(value, DRIVER_NAMES), (phrase) => new InvalidArgumentError(`${flag} takes ${phrase}, not ${JSON.stringify(value)}`))
  const from = driver('--from', options.from)
  const to = driver('--to', options.to)
  if (from === to) throw new InvalidArgumentError('--from and --to name the same driver: there is nothing to compare')
  // Each side must be configured as if it were the driver.
  checkDriverSettings({ ...config, driver: from, reportToPreviousDriver: undefined })
  checkDriverSettings({ ...config, driver: to, reportToPreviousDriver: undefined })
  const logger = adaptLogger(options.logger ?? silentLogger)
  const catalog = await openCatalog(config.database.connection, { tablePrefix: config.database.tablePrefix, baseDir: config.database.baseDir })
  const drivers: ServiceGroupDriver[] = []
  try {
    for (const name of [from, to]) {
      const d = await createDriver(name, { catalog, settings: config, logger })
      await d.start()
      drivers.push(d)
    }
    return await compareDrivers({ catalog, from: drivers[0]!, to: drivers[1]!, topic: options.topic, onProgress: options.onProgress })
  } finally {
    await Promise.allSettled(drivers.map((d) => d.close()))
    await catalog.close()
  }
}
