/**
 * Which backends a fault scenario applies to, decided by the capabilities each driver declares
 * (never by its name), and their URLs on the shared servers.
 */
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { loadDriver, parseBackendUrl, type Capability } from '../../../src/index.js'
import { backend, type Backend, type BackendConfig } from '../../support/backends.js'

/** Every backend the suite knows, in report order. */
export const ALL_BACKENDS: readonly Backend[] = ['memory', 'file', 'redis', 'memcached', 'zookeeper', 'etcd3', 'postgresql', 'mysql']

/** A backend with its declared capabilities. */
export interface FaultBackend {
  name: Backend
  config: BackendConfig
  caps: ReadonlySet<Capability>
}

/** Loads every backend's declaration. Reading a URL throws (failing the file) when its server was not started. */
export async function faultBackends(): Promise<FaultBackend[]> {
  return Promise.all(ALL_BACKENDS.map(async (name) => {
    const config = backend(name)
    // The file backend's configuration is a fresh temporary directory: remove it on exit.
    const { path } = parseBackendUrl(config.url)
    if (path.startsWith(`${tmpdir()}/rollcall-`)) process.once('exit', () => rmSync(path, { recursive: true, force: true }))
    const def = await loadDriver(parseBackendUrl(config.url).scheme)
    return { name, config, caps: new Set<Capability>(def.capabilities) }
  }))
}

/** True when `b` declares every capability in `all` and at least one of `any` (when given). */
export function declares(b: FaultBackend, all: readonly Capability[], any: readonly Capability[] = []): boolean {
  return all.every((c) => b.caps.has(c)) && (any.length === 0 || any.some((c) => b.caps.has(c)))
}

/** Appends a query parameter to a URL. */
export function withQuery(url: string, query: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${query}`
}
