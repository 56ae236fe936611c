/**
 * Bugs the fault suite found that are not fixed yet. A scenario one of them breaks runs as a
 * `todo` test: it runs, records its failures (docs/reliability.md shows them) and prints them,
 * but does not fail `npm test`. With FAULT_STRICT=1 it runs as an ordinary test: do that once the
 * fix has landed, then delete the entry here.
 */

/** Bug id → what is wrong, where, and how to fix it (one paragraph each). */
export const KNOWN_BUGS = {
  // The last fault-suite bug, 'zookeeper-false-loss' (ZooKeeper cut-short reported lost under load), was fixed by
  // initialising the private SQL servers asynchronously; the case then passed 50/50 strict with a CPU hog per core.
  // 'etcd-hung-keepalive' (a keepalive held by a stuck member, a paused one or a follower forwarding it to a lost leader, made
  // healthy etcd members lost) was fixed by sending a beat's requests again to the next host every twentieth of the TTL while
  // unanswered (src/coordination/drivers/etcd3/etcd3-hedge.ts, test/fault/etcd-hung-keepalive.test.ts).
  // The partition harness (test/partition/) classifies its findings against the two below (test/partition/support/verdict.ts).
  'zookeeper-follower-cut-overlap':
    'ZooKeeper, a holder whose server is cut off from the leader (a follower): the cut-off follower keeps answering pings until its own link to the leader '
    + 'times out (syncLimit x tickTime), rollcall counts those answers as session renewals, and the leader expires the session and grants the lock (or '
    + 'leadership) to the next holder before the first is told it lost it: belief overlaps of ~1.0-1.4 s (issue 27). Fix: count the session from the '
    + 'send time of the last request the leader (not a follower) answered, or treat `suspended` as the end of a hold.',
  'redis-sentinel-failover':
    'Redis with Sentinel: fencing tokens are a counter on the master, which asynchronous replication loses on failover, so a lock re-taken on the new '
    + 'master repeats a token; and a holder cut off with the old master is never told during the partition (overlaps of 13-14 s for a 7.3 s cut, '
    + 'issue 27). Fix: put the failover epoch in the token (or WAIT before granting) and expire holds client-side on the master link.',
  'memcached-paused-holder':
    "memcached, a lock holder or leader paused (SIGSTOP) past its key's expiry: the key lapses on the server and the next contender is granted the lock "
    + 'or leadership while the paused process, which runs no code, still believes it holds it (overlaps of up to the pause, issue 27). memcached has no '
    + "fencing token to refuse the stale holder's writes; a holder cut off by the network is told in time (client-side expiry at half the key's TTL). "
    + 'Inherent to a lease without fencing: documented in docs/drivers.md; use a backend with fencing where a paused process must not act.',
  'stale-beat-after-reconnect':
    'memcached and MySQL (single servers), after a heal: a heartbeat sent before the reconnect fails (or reports the group it could not refresh) after the Coordinator reconnected '
    + 'and rejoined, and is judged against the old liveness deadline, so the member sees itself lost and rejoined again within a few ms (a false down of '
    + "the member's own view, issue 27). Fix: judge a beat's failure against the connection it was sent on (src/coordination/heartbeat.ts, runtime.ts).",
} as const satisfies Record<string, string>

/** A known bug's id. */
export type KnownBug = keyof typeof KNOWN_BUGS

/** The `todo` option for a test broken by `bug` (undefined under FAULT_STRICT=1, or with no bug). */
export function todoFor(bug: KnownBug | undefined): string | undefined {
  if (bug === undefined || process.env.FAULT_STRICT === '1') return undefined
  return `known bug ${bug} (test/fault/support/known.ts); FAULT_STRICT=1 runs it as an ordinary test`
}
