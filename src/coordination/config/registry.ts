/**
 * URL scheme → driver. Built-in drivers load lazily, so a program that only uses Redis never
 * loads the ZooKeeper client. Aliases are further lines (tooz's entry points do the same).
 */
import { UnknownDriverError } from '../../errors.js'
import type { DriverDefinition } from '../driver.js'

/** Loads a driver definition. */
export type DriverLoader = () => Promise<{ default: DriverDefinition<any> }>

/** A URL scheme of a built-in driver. */
export type BuiltinScheme =
  | 'memory'
  | 'file'
  | 'redis'
  | 'rediss'
  | 'memcached'
  | 'zookeeper'
  | 'kazoo'
  | 'etcd3'
  | 'etcd3+http'
  | 'etcd3+https'
  | 'postgresql'
  | 'mysql'

/**
 * The built-in loaders with their modules' own types (for the option-type check in
 * connect-options.ts). Not exported from the package: `import()` types in a public declaration
 * are what API Extractor cannot read.
 */
export const BUILTIN_LOADERS = {
  memory: () => import('../drivers/memory.js'),
  file: () => import('../drivers/file/index.js'),
  redis: () => import('../drivers/redis/index.js'),
  rediss: () => import('../drivers/redis/index.js'),
  memcached: () => import('../drivers/memcached/index.js'),
  zookeeper: () => import('../drivers/zookeeper/index.js'),
  kazoo: () => import('../drivers/zookeeper/index.js'),
  etcd3: () => import('../drivers/etcd3/index.js'),
  'etcd3+http': () => import('../drivers/etcd3/index.js'),
  'etcd3+https': () => import('../drivers/etcd3/index.js'),
  postgresql: () => import('../drivers/postgresql/index.js'),
  mysql: () => import('../drivers/mysql/index.js'),
} as const satisfies Record<BuiltinScheme, DriverLoader>

/** The drivers that ship with rollcall, by URL scheme. */
export const BUILTIN_DRIVERS: Readonly<Record<BuiltinScheme, DriverLoader>> = BUILTIN_LOADERS

const custom = new Map<string, DriverLoader>()

/**
 * Registers a third-party driver under a URL scheme (lower case, without "://").
 * Registering a built-in scheme replaces it for this process.
 */
export function registerDriver(scheme: string, loader: DriverLoader): void {
  if (!/^[a-z][a-z0-9+.-]*$/.test(scheme)) {
    throw new TypeError(`Driver scheme "${scheme}" must be lower case letters, digits, "+", "-" or "."`)
  }
  custom.set(scheme, loader)
}

/** Every scheme that connect() accepts, sorted. */
export function knownSchemes(): string[] {
  return [...new Set([...Object.keys(BUILTIN_DRIVERS), ...custom.keys()])].sort()
}

/** Loads the driver for a scheme, or throws UnknownDriverError listing the known schemes. */
export async function loadDriver(scheme: string): Promise<DriverDefinition<any>> {
  const loader = custom.get(scheme) ?? (BUILTIN_DRIVERS as Record<string, DriverLoader>)[scheme]
  if (loader === undefined) throw new UnknownDriverError(scheme, knownSchemes())
  return (await loader()).default
}
