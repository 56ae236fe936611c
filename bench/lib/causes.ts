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
      + 'file re-read a watched group when its first member expires (capability expiryWake, src/coordination/watchers.ts). Elections retry when the '
      + "leader lock may be free rather than on the next tick (capability electionWake: Redis answers the holder's PTTL with the failed acquire, "
      + "memcached reads the leader key's TTL with `mg <key> t`, file retries every 25 ms since the kernel frees a dead holder's lock at once; "
      + "PostgreSQL and MySQL wait in the server's lock queue). A remaining miss here is where the kill fell in the lease (±0.3 s between runs).",
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks \d+ processes/.test(f) && ['redis', 'memcached', 'file'].includes(b),
    text: 'contended locks without a wait queue (Redis, memcached, file): a waiter polls tryAcquire with a jittered backoff from 20 ms up to 250 ms '
      + '(src/coordination/lock.ts POLL_FIRST_MS/POLL_MAX_MS), while the holder, releasing and re-acquiring in a tight loop, usually re-takes the lock '
      + 'before any waiter polls. tooz behaves the same way, and its higher totals are mostly that barging: compare the fairness figures. On file, '
      + "lowering the cap to 100 ms (as Python's fasteners polls) was tried and changed nothing beyond run-to-run noise (2 processes, longest wait 947 "
      + "ms with it; 849 ms and 1,406 ms in two runs without): the holder's tight loop re-takes a released lock within microseconds, before any poll, "
      + 'while a Python holder leaves a gap between release and re-acquire. The real fix is a kernel wait queue (F_OFD_SETLKW in a worker thread), which '
      + "needs a way to cancel a blocked wait. Improvement (lock.ts): cap the poll backoff near the backend round trip while the lock's holder keeps "
      + 'changing; for Redis, a release could PUBLISH on a per-lock channel that waiters SUBSCRIBE to (tooz does not, so it stays compatible).',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'redis',
    text: "Redis locks: rollcall's acquire is one script (SET NX PX + INCR of the fencing counter) and release one script, as tooz's SET NX PX + "
      + 'compare-and-delete: the same round trips, one more server write (the fencing counter); the rest is client cost and run-to-run noise (±10 % '
      + 'between runs here).',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'mysql',
    text: 'MariaDB locks: the same two round trips as tooz (GET_LOCK with its fencing token in one statement on a kept session, then RELEASE_LOCK), but the '
      + 'fencing token is an InnoDB counter row bumped with LAST_INSERT_ID(value + 1): a committed write, so one redo-log flush per acquire '
      + '(innodb_flush_log_at_trx_commit = 1), and with 8 processes they queue on that one row. tooz takes no token. A deployment that needs no fencing '
      + 'sets `fencing=false` (GET_LOCK alone, as tooz; Lock.fencingToken is then undefined), measured in the "fencing=false" row; the targets '
      + 'compare that row with tooz.',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'zookeeper',
    text: 'ZooKeeper locks: rollcall (its own protocol client) and kazoo make the same requests: counted per contended acquire+release with 8 '
      + "processes, 1 create, 2 getChildren, 1 getData (the watch on the predecessor) and 1 delete, kazoo's recipe exactly; uncontended, the same 3 "
      + "as the floor (create, getChildren, delete), and measured back to back in one process the rollcall cycle kept up with the floor's (334 vs 293 "
      + 'ops/s, 0.88 ms CPU each, load ~12), so the uncontended gap is run-to-run noise. The contended gap is not client CPU: the 8 rollcall '
      + "processes used about 0.3 cores in all against tooz's 0.9 (4.2 vs 2.7 ms CPU per acquire+release per process, load ~20), and 8 rollcall "
      + "contenders in one Node process reached 300 ops/s where 8 processes reached 55–245 and tooz's 8 processes 340–420 minutes apart. It is "
      + "latency between processes: in a trace of the 8-process run each handoff (delete → the next waiter's watch event → its getChildren) took 3.6 "
      + "+ 4.6 ms at the median, while a probe on the same server answered in 0.9 ms. Tried and ruled out: V8's parallel GC threads "
      + "(--single-threaded-gc: no change) and the releasing holder's re-queue (a write) delaying the woken waiter's read (a 2 ms pause before "
      + "re-queueing: no change). Not explained yet: the next step is to compare the scheduling of a Node process woken by a socket with Python's on "
      + 'this 2-core host (perf sched), at low load.',
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
