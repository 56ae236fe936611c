/**
 * When a watched memcached group is re-read so that a crashed member is seen leaving soon after
 * memcached drops its key. memcached counts TTLs in whole seconds on a clock that a 1 s timer
 * sets from the monotonic clock (`current_time = now − start`, rounded down). On time, a key
 * reported (`mg <key> t`) with n seconds left lapses between n − 1 and n seconds later. But the
 * timer is re-armed 1 s after each run, so its phase drifts (and slips further when the server is
 * busy); when a late tick crosses a whole second, memcached's clock advances by 2 at once, and
 * such a key lapses up to a second sooner, between n − 2 and n seconds later (seen in CI: a key
 * reported with 3 s left gone 0.5 s later). The driver notes the soonest such moment per group
 * (FirstExpiries) and the watcher re-reads the group then (runtime/watchers.ts).
 */

/**
 * The shortest expiry (s) a lock or leader key is stored with. It may lapse up to 2 s early, so
 * with 3 s it lives at least 1 s from a refresh, past its holder's heartbeat deadline (at least
 * 500 ms, memcached-heartbeat.ts); with 2 s it could lapse at once, and another process take a
 * lock its holder still believes it holds (seen in the fault suite with timeout=2: taken 260 ms
 * before the holder's lockLost).
 */
export const MIN_HOLD_TTL_S = 3

/** How often a watched group is re-read during the last two seconds of its first member's TTL. */
const LAST_SECONDS_RECHECK_MS = 100

/**
 * How often a candidate retries a leader key during the last two seconds of its TTL: a retry is
 * one small add, cheaper than a group's re-read, and fail-over should follow the lapse closely.
 */
export const LEADER_LAST_SECONDS_RETRY_MS = 50

/**
 * When to re-read a group whose first member key has `ttlS` seconds left (memcached's whole
 * seconds: it lapses between ttlS − 2 and ttlS seconds from now, see above): at the start of its
 * last two seconds, and from then on every `lastSecondsEveryMs`, so that its expiry is seen
 * within about that long. Infinity: no member key will lapse. The same schedule serves a
 * candidate retrying a leader key (with {@link LEADER_LAST_SECONDS_RETRY_MS}).
 */
export function recheckInMs(ttlS: number, lastSecondsEveryMs = LAST_SECONDS_RECHECK_MS): number {
  if (!Number.isFinite(ttlS)) return Infinity
  return ttlS >= 3 ? (ttlS - 2) * 1000 : lastSecondsEveryMs
}
