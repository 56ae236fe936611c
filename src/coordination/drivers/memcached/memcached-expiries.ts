/**
 * When a watched memcached group is re-read so that a crashed member is seen leaving soon after
 * memcached drops its key. memcached counts TTLs in whole seconds on a clock that ticks once a
 * second, so a key reported (`mg <key> t`) with n seconds left lapses somewhere between n − 1 and
 * n seconds later; the driver notes the soonest such moment per group (FirstExpiries) and the
 * watcher re-reads the group then (watchers.ts).
 */

/** How often a watched group is re-read during the last second of its first member's TTL. */
const LAST_SECOND_RECHECK_MS = 100

/**
 * When to re-read a group whose first member key has `ttlS` seconds left (memcached's whole
 * seconds: it lapses between ttlS − 1 and ttlS seconds from now): at the start of its last
 * second, and from then on every {@link LAST_SECOND_RECHECK_MS}, so that its expiry is seen within
 * about that long. Infinity: no member key will lapse.
 */
export function recheckInMs(ttlS: number): number {
  if (!Number.isFinite(ttlS)) return Infinity
  return ttlS >= 2 ? (ttlS - 1) * 1000 : LAST_SECOND_RECHECK_MS
}
