/**
 * Deprecation warnings of the mc and zk drivers: a Node `DeprecationWarning` with a stable code,
 * emitted once per process (like Node's own), saying what to use instead. `node
 * --no-deprecation` silences them; `--throw-deprecation` makes them fatal, as for any
 * DeprecationWarning. docs/deprecation.md has the timeline.
 */

/** The warning codes, stable across releases. */
export const DEPRECATION_CODES = { mc: 'ROLLCALL_DEP_MC', zk: 'ROLLCALL_DEP_ZK' } as const

const MESSAGES: Record<keyof typeof DEPRECATION_CODES, string> = {
  mc: 'The mc service-group driver is deprecated and will be removed: use servicegroup_driver = tooz with servicegroup_tooz_url = '
    + 'memcached://HOST:11211?timeout=5 (or redis://, kazoo://). See docs/migration.md.',
  zk: 'The zk service-group driver is deprecated and will be removed: use servicegroup_driver = tooz with servicegroup_tooz_url = '
    + 'kazoo://HOST:2181?timeout=5. See docs/migration.md.',
}

const emitted = new Set<string>()

/** Emits the driver's DeprecationWarning unless this process already has. */
export function warnDeprecated(driver: keyof typeof DEPRECATION_CODES): void {
  if (emitted.has(driver)) return
  emitted.add(driver)
  process.emitWarning(MESSAGES[driver], { type: 'DeprecationWarning', code: DEPRECATION_CODES[driver] })
}
