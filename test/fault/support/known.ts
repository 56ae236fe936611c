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
  // 'zookeeper-follower-cut-overlap' (a holder whose follower was cut off from the leader kept answering pings, counted as
  // renewals) was fixed by counting only what the leader is proven to have seen (cf46d1c, test/fault/zookeeper-follower-cut.test.ts);
  // the partition short form then ran ZooKeeper with FAULT_STRICT=1 with no overlap (issue 27).
  // 'zookeeper-stuck-after-failed-release' (partition seed 2701: nobody granted the lock nor elected after a heal) was contender
  // nodes whose create failed with the connection and was committed seconds later, after the one clean-up had looked; they are now
  // looked for for the life of the session (src/clients/zookeeper/zookeeper-orphans.ts, test/drivers/zookeeper-session.test.ts).
  // 'sql-election-stuck' (PostgreSQL: candidates waiting in the leader lock's queue through a cut of the server never elected again) was
  // a waiting session whose connection the server's keepalive dropped during the cut, unknown to the client, which sent nothing while
  // it waited; lock sessions now probe the server themselves (src/coordination/drivers/postgresql/postgresql-lock.ts probeServer,
  // test/partition/postgresql-cut-waiter.test.ts).
  // The partition harness (test/partition/) classifies its findings against the ones below (test/partition/support/verdict.ts).
  'redis-sentinel-failover':
    'Redis with Sentinel is not CP: a holder cut off with the old master from every sentinel cannot be told it lost the lock until the cut '
    + 'heals and the sentinels demote that master (10-11.5 s after the heal), while the promoted master grants the lock once the replicated key '
    + 'lapses, and the old master keeps granting to clients cut off with it: two holders at once, tokens from both masters interleaved; a '
    + 'member cut off with it stays listed there by its own beats, and after the heal, moving to the promoted master where it lapsed, sees '
    + 'itself leave (a false down of its own view, about a second after the heal). Fencing holds: '
    + "a promoted master's tokens exceed every token of the old one (29275d6, 6287732; test/fault/redis-sentinel-fencing.test.ts), so the register "
    + 'refuses the stale writes; a holder that reaches a sentinel is told within about a second of the failover. What is left is the hazard '
    + 'docs/drivers.md states. Fix, if Redis is to be CP: end a hold client-side when no sentinel has confirmed its master for a lock TTL.',
  'memcached-paused-holder':
    "memcached, a lock holder or leader paused (SIGSTOP) past its key's expiry: the key lapses on the server and the next contender is granted the lock "
    + 'or leadership while the paused process, which runs no code, still believes it holds it (overlaps of up to the pause, issue 27). memcached has no '
    + "fencing token to refuse the stale holder's writes; a holder cut off by the network is told in time (client-side expiry at half the key's TTL). "
    + 'Inherent to a lease without fencing: documented in docs/drivers.md; use a backend with fencing where a paused process must not act.',
} as const satisfies Record<string, string>

/** A known bug's id. */
export type KnownBug = keyof typeof KNOWN_BUGS

/** The `todo` option for a test broken by `bug` (undefined under FAULT_STRICT=1, or with no bug). */
export function todoFor(bug: KnownBug | undefined): string | undefined {
  if (bug === undefined || process.env.FAULT_STRICT === '1') return undefined
  return `known bug ${bug} (test/fault/support/known.ts); FAULT_STRICT=1 runs it as an ordinary test`
}
