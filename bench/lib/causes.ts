/**
 * Why a target is missed, where the cause is known: matched against the target, backend and
 * figure of each miss, and printed beside it in docs/performance.md. Each entry names the exact
 * change that would fix it (in a file another engineer owns) or why it cannot be met.
 */
export interface Cause {
  /** Matches a miss: target text, backend, figure text (scenario prefix). */
  match(target: string, backend: string, figure: string): boolean
  text: string
}

export const CAUSES: Cause[] = [
  {
    match: (t, b, f) => /at least as good/.test(t) && /^(detection|failover)/.test(f) && ['redis', 'memcached', 'file', 'postgresql', 'mysql'].includes(b),
    text: 'detection / failover on polled backends: memcached keeps time in whole seconds (an item set with a 5 s TTL goes between 4 and 5 s later by the '
      + 'wall clock) and tells when a key expires only through a meta get (`mg <key> t`, again in whole seconds): rollcall reads the member keys with '
      + 'their TTLs and re-reads through the last two seconds of the soonest one (its clock can step two seconds at once); Redis, PostgreSQL, MySQL and '
      + 'file re-read a watched group when its first member expires (capability expiryWake, src/coordination/runtime/watchers.ts). Elections retry when the '
      + "leader lock may be free rather than on the next tick (capability electionWake: Redis answers the holder's PTTL with the failed acquire, "
      + "memcached reads the leader key's TTL with `mg <key> t`, file retries every 25 ms since the kernel frees a dead holder's lock at once; "
      + "PostgreSQL and MySQL wait in the server's lock queue). A remaining miss here is where the kill fell in the lease (±0.3 s between runs).",
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks \d+ processes/.test(f) && ['redis', 'memcached', 'file'].includes(b),
    text: "contended locks on Redis, memcached and file: rollcall waiters queue beside tooz's layout (Redis `<key>:queue`, memcached tickets "
      + "`__ROLLCALL_LQ_<sha1>_*`, file `.leaders/lock-waits/`), are woken by the release (Redis: PUBLISH on the head waiter's own channel; file: "
      + 'inotify on a wake file; memcached, which cannot notify: the head alone polls, every 2 ms at first), and a holder that took the lock while others '
      + 'waited keeps it for a turn (on Redis its share of 1024 acquisitions with the waiters behind it, at least 32; 128 on memcached, 32 on file; '
      + "within 100 ms), then hands it over: fewest/most acquisitions per process 0.9 or more, and the longest wait a fraction of tooz's (same cells). "
      + "tooz's totals come from barging: one process re-takes the lock in a tight loop while the others sleep 0.1 s between polls, so its holder "
      + 'runs at its uncontended speed and never pays a hand-over (compare the fairness and longest-wait figures). Measured apart on Redis with 8 '
      + "processes (merged per-process timelines after 5 s of looping): a hand-over takes 0.5 ms, nearly all of it the idle waiter's process waking "
      + '(from its wake message to holding the lock: p50 0.037 ms), against a 0.07 ms cycle within a turn, so turns of 128 spend about 6 % of the '
      + 'time handing over. Waking the head 8 acquisitions before the turn ends, to retry at once, halved the hand-over (0.55 to 0.28 ms) but on 2 '
      + "cores the retrying process slowed the holder's cycle as much (0.077 to 0.081-0.086 ms): no gain, not kept. On this 2-core VM the holder "
      + 'also cycles faster when the CPUs are kept busy (a single loop doubled beside two nice-19 spinners, tooz and rollcall alike), so figures '
      + 'from runs minutes apart differ by 20-50 %.',
  },
  {
    match: (t, b, f) => b === 'etcd3' && /(at least as good|lock fairness)/.test(t) && /^(locks )?\d+ processes/.test(f),
    text: "etcd locks: rollcall waiters queue beside tooz's key (one key each under /rollcall/locks/<name>/q/, on a 2 s lease, ordered by create "
      + 'revision); only the head watches the lock key, and takes it with one txn that also starts its turn: 64 acquisitions shared by the holder '
      + 'and the waiters behind it (at least 4 each, within 100 ms), so 8 processes get turns of 8 and each of them over ten turns in the 4 counted '
      + 'seconds. Interleaved 4 s runs, 8 processes: turns of 8 gave fairness 0.92-0.96, fixed turns of 12 0.88-0.89 once the machine ran '
      + "slower, turns of 100 ms 0.75-0.77 (five each: who got the last one decides). tooz's waiters poll every second, and its holder takes the "
      + 'key straight back.',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'redis',
    text: 'Redis locks uncontended: acquire and release are one script each (SET NX PX and the fencing INCR, with the queue read in the same round '
      + "trip; with nobody queued no turn is written: 5 commands per acquire, 3 per release, about 9 µs of server time per cycle), as tooz's SET NX "
      + 'PX and compare-and-delete are two commands: the same round trips. The rest is client CPU (about 75 µs per cycle, half of it the socket system '
      + 'calls). Alone, after a warm-up, the two cycle alike (p50 0.151 ms for tooz, 0.154 ms for rollcall, measured apart); run-to-run noise here '
      + 'is ±10 %.',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'mysql',
    text: 'MariaDB locks: the same two round trips as tooz (GET_LOCK with its fencing token in one statement on a kept session, then RELEASE_LOCK), but the '
      + 'fencing token is an InnoDB counter row bumped with LAST_INSERT_ID(value + 1): a committed write, so one redo-log flush per acquire '
      + '(innodb_flush_log_at_trx_commit = 1), and with 8 processes they queue on that one row. tooz takes no token. A deployment that needs no fencing '
      + 'sets `fencing=false` (GET_LOCK alone, as tooz; Lock.fencingToken is then undefined), measured in the "fencing=false" row; the targets '
      + 'compare that row with tooz. Contended rollcall acquires wait in turns (mysql-turn.ts): they queue on a second GET_LOCK name, and the '
      + 'holder of that one re-takes the lock up to 32 times in 100 ms before the next in line gets it (fairness 1.00); tooz polls '
      + 'GET_LOCK(name, 0) and a releasing process usually takes the lock straight back (fairness 0.50, longest wait about 3 s).',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'zookeeper',
    text: "ZooKeeper locks: rollcall (its own protocol client) makes kazoo's requests, per contended acquire+release 1 create, 2 getChildren, 1 "
      + 'getData (the watch on the predecessor) and 1 delete, but sends the create and the first getChildren together (ZooKeeper answers one '
      + "session's requests in order, so the listing holds the new node): an uncontended cycle takes 2 round trips, as the floor, against kazoo's 3. "
      + 'Uncontended, 2 and 8 processes are ahead in acquisitions per second, and 8 processes in longest wait (same cells). A longest wait is one '
      + 'sample per run. With 2 processes looping on this 2-vCPU machine every party is short of CPU: the ZooKeeper server alone spends 0.6-0.8 ms '
      + "of CPU per acquisition (about one vCPU at rollcall's rate), and the long waits, 15-25 ms for rollcall and kazoo alike, are moments when the "
      + "server or a contender waits for a CPU. On an idle machine a probe client saw the server's reply take 5-11 ms about twice a second; a "
      + "looping rollcall process had its event loop stopped 6-13 ms with no garbage collection inside. The bench's 2-process phase run 8 times "
      + "each, interleaved (2026-12-04): rollcall 17.1-23.9 ms (median 20.7) at 1.3-1.6 times kazoo's rate, kazoo 14.8-20.8 ms (median 17.3). The "
      + "gap follows the load: with a 1 ms hold, rollcall at 420-490 acquisitions/s (kazoo 680-790) waited at most 16.6-19.2 ms against kazoo's "
      + '17.3-21.9 in the same runs, each of its waits including the hold. Not the cause here: garbage collection (7 scavenges a second of at most '
      + "1.4 ms; with --single-threaded-gc 23.0-30.7 ms against 17.7-22.1 without), the server's priority (renice -10: the same), its JVM pauses "
      + '(3.5 ms young collections seconds apart), its tickTime (2000: the same). On an earlier machine, whose ZooKeeper ran 2.5 times faster, '
      + "V8's parallel scavenges were part of it (--single-threaded-gc: 7.9-8.4 ms against 8.9-15.4), and a library cannot set that flag for its "
      + 'host. Found on the way and fixed: on Node 20 every AbortController, and every listener added to and removed from a long-lived '
      + "AbortSignal, leaves garbage in V8's old space, and each contended acquisition made both: a mark-compact every second stalled each looping "
      + 'process for 5-8 ms (2 processes: old space grew about 4 MB/s; now under 0.1 MB/s). Tried and not kept: a child watch set by the listing '
      + 'sent with the create, so that a contender right behind the holder needs no getData (requests per acquisition stayed 3.9, longest wait '
      + '22.7-29.1 against 21.0-23.5 ms). Rejected: skipping the second getChildren when the deleted predecessor was the holder is unsafe when '
      + 'the lock node is deleted recursively: a waiter would hear its predecessor go before its own node and take a lock it no longer queues for.',
  },
  {
    match: (t, b, f) => b === 'zookeeper' && /read \d+ caps/.test(f) && /at least as good|floor/.test(t),
    text: "ZooKeeper group read with capabilities: rollcall's own client reads them with multiRead (OpCode 22, ZooKeeper ≥ 3.6): getChildren, then a "
      + 'first batch of 256 getData that sizes the rest, then batches within jute.maxbuffer, as the floor does; tooz (kazoo) sends one getData per '
      + "member. What rollcall adds to the floor is decoding each member's msgpack and sorting the ids (client CPU per 5,000-member read about 28 ms "
      + "against the floor's 12–14 ms, load ~20); it no longer decodes the Stat of each multiRead answer, which cost a quarter of that CPU.",
  },
  {
    match: (t, b, f) => b === 'zookeeper' && /read \d+ ids/.test(f) && /at least as good|floor/.test(t),
    text: 'ZooKeeper group read, ids only: one getChildren for rollcall, tooz and the floor alike; rollcall then sorts the ids (getMembers() returns '
      + 'them sorted; tooz returns an unordered set and the floor does not sort). ZooKeeper lists children in hash order, and sorting 5,000 of them '
      + "costs 2–4 ms here under load: client CPU per read 3.3 ms against the floor's 1.3 ms (load ~20), about the whole gap. Unchanged by the new "
      + "client (before it: 1.68 ms vs the floor's 0.85 ms, quiet).",
  },
  {
    match: (t, b) => /≥ 20×/.test(t) && b === 'zookeeper',
    text: 'ZooKeeper caps read 20× target: rollcall reads the capabilities with multiRead batches (about 2,900 getData per request at this size) where '
      + 'tooz sends 5,000 getData, so the ratio is the per-request cost of kazoo against one batched read and moves with the load: 17× at load 35 '
      + "(rollcall 89.8 ms, before the Stat of each answer was skipped), 31× at load 13 (62.6 ms vs 1,951 ms). On a quiet machine tooz's read was 313 "
      + 'ms (2026-12-01), so the target needs rollcall ≤ 15.6 ms there: the floor itself took 24.4 ms at the median at load 13 (fastest single read '
      + 'seen: 18.5 ms), so it is out of reach until the machine is quiet enough to measure it.',
  },
  {
    match: (t, b, f) => b === 'postgresql' && /^join/.test(f),
    text: 'PostgreSQL join: the join is one statement (an upsert that takes over only a lapsed row, plus pg_notify so that watchers hear of it at once), but '
      + 'in this scenario every member is a new coordinator whose server session runs its first statement: a fresh PostgreSQL backend loads the catalog '
      + 'entries of the members and groups tables, their indexes and foreign key, and plans the statement, which costs about 0.7 ms. The floor sends all '
      + 'its INSERTs on one warm session. Measured apart (60 members, load ~1): first join on a fresh session p50 1.34 ms; a second join on the same '
      + 'sessions 0.62 ms; the exact join statement on one warm raw session 0.37 ms (1.7×); a bare INSERT with and without pg_notify in a CTE, pgbench, '
      + 'one client: 0.26–0.29 ms either way, so the NOTIFY costs nothing measurable. A long-lived member pays the cold session once.',
  },
  {
    match: (t, b, f) => /100000 members with caps < 1 s/.test(t) && b === 'etcd3',
    text: '100,000-member read on etcd: the read is one range request, but the JSON gateway base64-encodes every key and value inside JSON (15.6 MiB for '
      + '100,000 members here), which etcd spends most of the time producing and Node parsing; the raw floor, doing only that request and no decoding, '
      + 'is itself above 1 s on this 2-core machine (see the scale table). gRPC with protobuf would avoid the base64 JSON, at the cost of the gRPC '
      + 'dependency the driver was built to avoid.',
  },
]

export function explain(target: string, backend: string, figure: string): string | undefined {
  return CAUSES.find((c) => c.match(target, backend, figure))?.text
}
