/**
 * Which memcached servers the mc driver uses, read under the names Nova read them, in Nova's
 * precedence. Nova's mc driver took its client from `nova.cache_utils.get_memcached_client()`:
 * the deprecated `[DEFAULT] memcached_servers` when set, else oslo.cache's
 * `[cache] memcache_servers` when `[cache] enabled` is true (oslo.cache's default server list is
 * `localhost:11211`, so `enabled = true` alone means that server; without `enabled = true`
 * `[cache] memcache_servers` is ignored, as Nova ignores it). rollcall's own
 * `[memcache] servers`, when set, comes first: it is the name written for rollcall.
 */
import { booleanWord, OSLO_CONFIG_BOOLEANS } from '../internal/coerce.js'

/** oslo.cache's default `[cache] memcache_servers`. */
export const OSLO_CACHE_DEFAULT_SERVERS: readonly string[] = ['localhost:11211']

/** The three sources, each as parsed from the configuration ([] when unset). */
export interface MemcacheSources {
  /** `[memcache] servers` (rollcall's name). */
  own: readonly string[]
  /** `[DEFAULT] memcached_servers` (Nova before oslo.cache). */
  novaDefault: readonly string[]
  /** `[cache] memcache_servers` (oslo.cache), and whether it was set at all. */
  cache: readonly string[]
  cacheSet: boolean
  /** `[cache] enabled`, as written. */
  cacheEnabled: string
}

/** The chosen servers and the setting they came from ('' when none). */
export interface MemcacheChoice {
  servers: readonly string[]
  from: string
}

/** Picks the servers; see the file's header. */
export function chooseMemcacheServers(s: MemcacheSources): MemcacheChoice {
  if (s.own.length) return { servers: s.own, from: '[memcache] servers' }
  if (s.novaDefault.length) return { servers: s.novaDefault, from: '[DEFAULT] memcached_servers' }
  if (booleanWord(s.cacheEnabled, OSLO_CONFIG_BOOLEANS) === true) {
    return s.cacheSet
      ? { servers: s.cache, from: '[cache] memcache_servers' }
      : { servers: OSLO_CACHE_DEFAULT_SERVERS, from: "[cache] enabled (oslo.cache's default memcache_servers)" }
  }
  // [cache] memcache_servers without [cache] enabled = true: ignored, as Nova ignores it (the
  // mc driver's "needs a server" error then names the switch).
  return { servers: [], from: '' }
}
