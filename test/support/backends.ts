/**
 * The backend URLs tests run against. Servers come from scripts/backends.sh (which npm test and
 * .ci/run call); their URLs are read from .backends/urls.json. A backend whose URL is missing
 * fails the test file loudly: nothing is skipped because a server was not there.
 *
 * The per-backend table is typed Record<Backend, ...>, so a new backend does not compile until it
 * says how it is reached and how its liveness window is shortened.
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TIMING } from './timing.js'

/** Every backend the conformance suite runs against (zookeeper-ipv6: ZooKeeper reached at [::1]). */
export type Backend = 'memory' | 'file' | 'redis' | 'memcached' | 'zookeeper' | 'zookeeper-ipv6' | 'etcd3' | 'postgresql' | 'mysql'

/** How one backend is reached in tests. */
export interface BackendConfig {
  /** URL for ordinary cases. */
  url: string
  /** URL whose liveness window is about TIMING.expirySeconds, for expiry cases. */
  fastUrl: string
}

let serverUrls: Record<string, string> | undefined

/** The URL scripts/backends.sh wrote for a server; throws (failing the file) when absent. */
export function serverUrl(name: string): string {
  if (!serverUrls) {
    const file = join(process.cwd(), '.backends', 'urls.json')
    try {
      serverUrls = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
    } catch {
      throw new Error(`${file} is missing: start the test servers with "bash scripts/backends.sh up" (npm test does it)`)
    }
  }
  const url = serverUrls[name]
  if (!url) throw new Error(`No URL for the ${name} server in .backends/urls.json: scripts/backends.sh must start it`)
  return url
}

function withQuery(url: string, query: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${query}`
}

const fast = `timeout=${TIMING.expirySeconds}`

const CONFIGS: Record<Backend, () => BackendConfig> = {
  memory: () => {
    const url = `memory://${Math.random().toString(36).slice(2)}`
    return { url, fastUrl: url }
  },
  file: () => {
    const url = `file://${mkdtempSync(join(tmpdir(), 'rollcall-test-'))}`
    return { url, fastUrl: withQuery(url, fast) }
  },
  redis: () => ({ url: serverUrl('redis'), fastUrl: withQuery(serverUrl('redis'), fast) }),
  // memcached's whole-second clock can skip a second, so a key may lapse 2 s early: its short
  // liveness is 3 s (a 2 s lock could lapse between two beats).
  memcached: () => ({ url: serverUrl('memcached'), fastUrl: withQuery(serverUrl('memcached'), `timeout=${TIMING.expirySeconds + 1}`) }),
  zookeeper: () => ({ url: serverUrl('zookeeper'), fastUrl: withQuery(serverUrl('zookeeper'), fast) }),
  'zookeeper-ipv6': () => ({ url: serverUrl('zookeeper-ipv6'), fastUrl: withQuery(serverUrl('zookeeper-ipv6'), fast) }),
  etcd3: () => ({ url: serverUrl('etcd3'), fastUrl: withQuery(serverUrl('etcd3'), fast) }),
  postgresql: () => ({ url: serverUrl('postgresql'), fastUrl: withQuery(serverUrl('postgresql'), fast) }),
  mysql: () => ({ url: serverUrl('mysql'), fastUrl: withQuery(serverUrl('mysql'), fast) }),
}

/** The test configuration of one backend. */
export function backend(name: Backend): BackendConfig {
  return CONFIGS[name]()
}
