/**
 * The path of a host URL that tooz ignores (redis, memcached, etcd3: tooz reads only the host,
 * port and query there). It is accepted, so that a tooz URL such as `memcached://127.0.0.1:11211/f00`
 * (tooz's own test URLs carry one) works unchanged, and the logger is told once, naming it.
 * A driver whose path could be read as choosing where data goes refuses such paths itself first
 * (redis: `/2` reads as a database index).
 * @internal
 */
import type { BackendUrl } from '../../config/url.js'

/**
 * Calls `warn` once when `url` has a path other than `/`; `instead` says how the thing a path might
 * be meant to choose is chosen (e.g. `the database is chosen with ?db=N`).
 */
export function warnIgnoredPath(url: BackendUrl, warn: (message: string) => void, instead?: string): void {
  if (url.path === '' || url.path === '/') return
  warn(`The path "${url.path}" of ${url.redacted} is ignored, as tooz ignores it${instead === undefined ? '' : `; ${instead}`}`)
}
