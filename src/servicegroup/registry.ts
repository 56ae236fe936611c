/**
 * Driver name → driver, a closed set (Nova's `servicegroup_driver` choices). Each driver is
 * imported only when chosen, so a db deployment never loads a ZooKeeper client.
 */
import type { Logger } from '../index.js'
import type { Catalog } from './catalog/catalog.js'
import type { ServiceGroupDriver } from './driver.js'
import type { DriverSettings } from './settings.js'
import type { DriverName } from './types.js'

/** What every driver factory receives. */
export interface ServiceGroupDriverContext {
  catalog: Catalog
  settings: DriverSettings
  logger: Logger
}

type Factory = (ctx: ServiceGroupDriverContext) => Promise<ServiceGroupDriver>

const FACTORIES: Record<DriverName, Factory> = {
  db: async ({ catalog, settings }) => new (await import('./drivers/db.js')).DbDriver({ catalog, serviceDownTimeSeconds: settings.serviceDownTimeSeconds }),
  mc: async ({ settings }) =>
    new (await import('./drivers/mc.js')).McDriver({ servers: settings.memcacheServers, serviceDownTimeSeconds: settings.serviceDownTimeSeconds }),
  zk: async ({ settings, logger }) => new (await import('./drivers/zk.js')).ZkDriver({ ...settings.zookeeper!, logger }),
  tooz: async ({ settings, logger }) => new (await import('./drivers/tooz.js')).ToozDriver({ url: settings.toozUrl!, logger }),
}

/** Builds (does not start) the driver called `name`. Settings must have passed checkDriverSettings(). */
export function createDriver(name: DriverName, ctx: ServiceGroupDriverContext): Promise<ServiceGroupDriver> {
  return FACTORIES[name](ctx)
}
