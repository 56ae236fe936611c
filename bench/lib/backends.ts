/**
 * The backends the benchmarks run against: the same shared servers as the tests (the URL list
 * that scripts/backends.sh writes and test/support/backends.ts reads), plus the URL Python tooz
 * needs for each. Options are added per scenario with withQuery().
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serverUrl } from '../../test/support/backends.js'

/** Every backend a scenario can run on, in report order. */
export const BACKENDS = ['redis', 'memcached', 'zookeeper', 'etcd3', 'postgresql', 'mysql', 'file'] as const
export type BenchBackend = (typeof BACKENDS)[number]

/** How the docs name each backend. */
export const LABEL: Record<BenchBackend, string> = {
  redis: 'Redis',
  memcached: 'memcached',
  zookeeper: 'ZooKeeper',
  etcd3: 'etcd (gateway)',
  postgresql: 'PostgreSQL',
  mysql: 'MariaDB',
  file: 'file',
}

/** Backends on which Python tooz 3.1 has groups (on PostgreSQL and MySQL it has locks only). */
export const TOOZ_GROUPS: ReadonlySet<BenchBackend> = new Set(['redis', 'memcached', 'zookeeper', 'etcd3', 'file'])

/** Backends whose liveness the server expires itself (session / lease) rather than a TTL key. */
export const SESSION_BACKENDS: ReadonlySet<BenchBackend> = new Set(['zookeeper', 'etcd3'])

export function withQuery(url: string, query: string): string {
  if (!query) return url
  return `${url}${url.includes('?') ? '&' : '?'}${query}`
}

let fileDir: string | undefined

/** The rollcall URL of a shared backend (a fresh temporary directory for file://, once per run). */
export function rollcallUrl(backend: BenchBackend): string {
  if (backend === 'file') {
    fileDir ??= mkdtempSync(join(tmpdir(), 'rollcall-bench-'))
    return `file://${fileDir}`
  }
  return serverUrl(backend)
}

/** Removes the run's file:// directory (members, groups and lock files the scenarios left). */
export function removeFileDir(): void {
  if (fileDir) rmSync(fileDir, { recursive: true, force: true })
  fileDir = undefined
}

/**
 * The same backend as Python tooz 3.1 spells it: etcd 3.4+ needs `api_version=v3` (tooz's
 * discovery picks v3alpha, oracle.md); everything else is the same URL.
 */
export function toozUrl(backend: BenchBackend, url = rollcallUrl(backend)): string {
  if (backend === 'etcd3') return withQuery(url, 'api_version=v3')
  return url
}

/** A short random suffix for group, lock and member names, so runs never collide. */
export function uniq(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`
}
