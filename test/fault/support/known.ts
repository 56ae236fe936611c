/**
 * Bugs the fault suite found that are not fixed yet. A scenario one of them breaks runs as a
 * `todo` test: it runs, records its failures (docs/reliability.md shows them) and prints them,
 * but does not fail `npm test`. With FAULT_STRICT=1 it runs as an ordinary test: do that once the
 * fix has landed, then delete the entry here.
 */

/** Bug id → what is wrong, where, and how to fix it (one paragraph each). */
export const KNOWN_BUGS = {
  'zookeeper-false-loss':
    "ZooKeeper, under heavy load: a 1.5 s cut of a 10 s session was still reported once as a lost session with rollcall's own client (1 of 2 runs in a full "
    + 'run at load average 16: suspended, then lost 2 ms later, i.e. the wire expiry found no answered request in the last 9 s). The client now judges expiry '
    + 'after the event loop has read its sockets (a timer after a stall no longer ignores answers that arrived in time), which may be the cause; unproven. '
    + 'A second shape, on a quiet machine: suspended at the cut, then no reconnect for 11.5 s and lost — one reconnect attempt hung for the whole '
    + 'connect timeout, which is the full session with one server (bounding attempts at a third of it was tried and reverted: a TLS handshake with a '
    + 'cold server then failed at 1.7 s). '
    + "Likely root cause, found last: the fault suite runs every backend's cases in one process, and the private PostgreSQL and MariaDB were initialised with "
    + "spawnSync (initdb, mariadb-install-db: seconds each), freezing that process's event loop, so no ping left and no reconnect ran; they now run "
    + 'asynchronously. Alone, the case passed 8/8 strict. '
    + "Next: log answeredSentAt, the last ping and the private server's GC/stall times in that scenario under a full npm test; then run with FAULT_STRICT=1 "
    + 'and delete this entry.',
} as const satisfies Record<string, string>

/** A known bug's id. */
export type KnownBug = keyof typeof KNOWN_BUGS

/** The `todo` option for a test broken by `bug` (undefined under FAULT_STRICT=1, or with no bug). */
export function todoFor(bug: KnownBug | undefined): string | undefined {
  if (bug === undefined || process.env.FAULT_STRICT === '1') return undefined
  return `known bug ${bug} (test/fault/support/known.ts); FAULT_STRICT=1 runs it as an ordinary test`
}
