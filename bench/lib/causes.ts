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
    match: (t, b, f) => /at least as good/.test(t) && /^locks \d+ processes/.test(f) && ['redis', 'memcached', 'file'].includes(b),
    text: 'contended locks without a wait queue (Redis, memcached, file): a waiter polls tryAcquire with a jittered backoff from 20 ms up to 250 ms (src/coordination/lock.ts POLL_FIRST_MS/POLL_MAX_MS), while the holder, releasing and re-acquiring in a tight loop, usually re-takes the lock before any waiter polls. tooz behaves the same way, and its higher totals are mostly that barging: compare the fairness figures (tooz on memcached and MariaDB starves processes outright: 0–8 acquisitions in 4 s for some). Where rollcall is also slower per acquisition, the uncontended cause applies. Improvement (lock.ts): cap the poll backoff near the backend round trip (e.g. 50 ms) while the lock\'s holder keeps changing; for Redis, a release could PUBLISH on a per-lock channel that waiters SUBSCRIBE to (tooz does not, so it stays compatible).',
  },
  {
    match: (t, b, f) => b === 'memcached' && /^heartbeat/.test(f),
    text: 'memcached heartbeat: each rollcall beat also reads the value of every joined group, to notice that the member was dropped (and rejoin). In tooz\'s layout that value holds every member, so a beat moves the whole group (~130 bytes per member) and its cost grows with the group; tooz\'s beat is a fire-and-forget `set` (noreply) that never waits. Fix (src/coordination/drivers/memcached.ts, heartbeat): fetch only the group\'s CAS (`mg <key> c`, no value) and decode the value only when the CAS differs from the one last verified; or verify membership every k-th beat. Either keeps the one write per beat and makes the read O(1).',
  },
  {
    match: (t, b, f) => /raw floor/.test(t) && /^heartbeat/.test(f),
    text: 'heartbeat vs floor: the floor is one bare liveness write per beat; a rollcall beat also checks its membership (Redis: HEXISTS per joined group inside the same script, so 3 server operations but one round trip; ZooKeeper: one exists() per joined group besides tooz\'s exists(/tooz); etcd: LeaseTimeToLive with keys after the keepalive, a second request) and goes through the Coordinator (lock refresh, rejoin bookkeeping). Proposed (drivers): on etcd, ask LeaseTimeToLive only every k-th beat or when the keepalive\'s TTL shows a re-grant; on ZooKeeper, rely on the session watcher and check member nodes every k-th beat.',
  },
  {
    match: (t, b, f) => b === 'postgresql' && /^join/.test(f),
    text: 'PostgreSQL join: two statements (clearOwnExpired DELETE, then the INSERT whose CTE NOTIFYs) against the floor\'s one INSERT, and NOTIFY serialises commits. Fix (src/coordination/drivers/sql-schema.ts + sql-membership.ts joinGroup): one statement, `WITH ins AS (INSERT ... ON CONFLICT (group_id, member_id) DO UPDATE SET capabilities = EXCLUDED.capabilities, created_at = now(), updated_at = now(), expires_at = EXCLUDED.expires_at WHERE <members>.expires_at <= now() RETURNING group_id) SELECT pg_notify(...) FROM ins` (no row back = MemberExists); MySQL: `INSERT ... ON DUPLICATE KEY UPDATE` with each column `IF(expires_at <= UTC_TIMESTAMP(6), new, old)` (affected rows 0 = MemberExists).',
  },
  {
    match: (t, b, f) => b === 'file' && /at least as good/.test(t),
    text: 'file: every rollcall file operation goes through Node\'s asynchronous fs, one libuv thread-pool hop per call (a join: open and lock .driver_lock, exists .metadata, stat, write tmp, rename, close: ~7 hops; a lock: open, lock, fstat + stat to check the path, and the same on release); Python makes the same syscalls synchronously. The raw Node floor pays the same hops. Fix (src/coordination/drivers/file.ts, file-lock.ts): use the synchronous fs calls inside the .driver_lock critical section and for lock files (local metadata syscalls of a few µs each, cheaper than the hop).',
  },
  {
    match: (t, b, f) => (b === 'postgresql' || b === 'mysql') && /^locks/.test(f),
    text: 'SQL locks: rollcall opens a new session for every acquire (as tooz\'s PostgreSQL driver does), takes a fencing token in a second round trip, and closes the session on release; tooz\'s MySQL driver keeps one connection per Lock object for its lifetime. Fix (src/coordination/drivers/postgresql-lock.ts, mysql-lock.ts): keep the released session open on the Lock object for the next acquire (closed by stop() or after an idle timeout), and take the fence in the lock statement (`SELECT pg_try_advisory_lock($1,$2) AS ok, CASE WHEN ... THEN nextval(...) END`). Contended throughput falls out of the same change.',
  },
  {
    match: (t, b, f) => b === 'etcd3' && /^locks/.test(f),
    text: 'etcd locks: a rollcall acquire is range probe + lease grant + txn, and a release is txn + lease revoke (5 requests); tooz does lease grant + txn, release txn (3). Fix (src/coordination/drivers/etcd3-lock.ts #attempt/release): drop the range probe (put `range(key)` in the txn\'s failure branch, as tooz does, and read the holder\'s revision from it), and revoke the lease without awaiting it after the delete txn succeeded (or on a failed attempt). Keeps the no-leaked-lease property.',
  },
  {
    match: (t, b, f) => b === 'zookeeper' && /read \d+ caps/.test(f) && /at least as good|floor/.test(t),
    text: 'ZooKeeper group read: ZooKeeper has no bulk read in node-zookeeper-client: rollcall, tooz and the floor all do getChildren + one getData per member, pipelined on one session, so all three are the same round trips and differ only in client CPU.',
  },
  {
    match: (t, b) => /≥ 20×/.test(t) && b === 'file',
    text: 'file caps read 20× target: cannot be met. On files tooz reads a member\'s capabilities with one file read, and so must anyone: member ids and capabilities live inside each member\'s `.raw` record, so the floor itself (readdir + stat + read of every file) is only ~2.5× faster than tooz at 5,000 members; rollcall can at best reach the floor (see the file entries above for how).',
  },
  {
    match: (t, b) => /≥ 20×/.test(t) && b === 'zookeeper',
    text: 'ZooKeeper caps read 20× target: cannot be met by the client alone. tooz\'s get_member_capabilities on ZooKeeper is one getData per member, all pipelined by kazoo: the same requests as the floor (getChildren + N pipelined getData), which is only ~2× faster than tooz here. rollcall is slower than the floor by its client cost per request (node-zookeeper-client\'s jute decoding and one Promise per getData, plus decoding the capabilities). The way past it is ZooKeeper ≥ 3.6\'s multiRead (OpCode 22: many getData in one request, answers up to jute.maxbuffer), which node-zookeeper-client does not implement; batching 2,000 getData per multiRead would cut the packets 2,000-fold and the time by the client\'s per-request cost.',
  },
  {
    match: (t, b, f) => b === 'redis' && /read \d+ ids/.test(f),
    text: 'Redis getMembers: the Redis driver has no listMemberIds, so getMembers runs the same script as getMembersWithCapabilities (HGETALL: every member\'s capabilities cross the wire, 11.9 MB per read at 100,000 members) only to keep the ids. Fix (src/coordination/drivers/redis.ts + redis-scripts.ts): a listMemberIds running the list script with HKEYS instead of HGETALL (same liveness check and collection of the dead).',
  },
  {
    match: (t, b, f) => b === 'file' && /read \d+/.test(f),
    text: 'file group read: member ids live inside the `.raw` records (file names are sha1 hashes), so every read opens, reads and closes every member file through the thread pool (4 hops per file), under the driver lock. Fix (src/coordination/drivers/file.ts listMembers): cache decoded records by (file name, inode): a heartbeat only changes mtime and an update rewrites the file by rename (new inode), so a read needs one stat per member and a read only for new inodes; with synchronous fs inside the driver lock (see the file entry above) 5,000 stats take ~20 ms.',
  },
  {
    match: (t, b, f) => /100000 members with caps < 1 s/.test(t),
    text: '100,000-member read: the read is one round trip (Redis: one script doing HGETALL + EXISTS per member; etcd: one range), but a measured breakdown on Redis (private server, load ~7) is ~300 ms in the server (the script\'s 100,000 EXISTS), ~150 ms to receive and parse 12 MB, ~450 ms to decode 100,000 capability maps (msgpack, ~4.4 µs each) and ~400–700 ms of per-member bookkeeping: 1.3–1.6 s, while the raw floor (HGETALL + 100,000 pipelined EXISTS, no decoding) took 1.0–1.8 s, so the floor itself is not under 1 s on this 2-core machine. Available savings, all client-side: the codec change above (~−220 ms), not copying each value (`new Uint8Array(caps)` per member in redis.ts/etcd3.ts listMembers), and not sorting when the caller does not need order; on etcd the gateway\'s base64 JSON (25 MB) is the rest.',
  },
  {
    match: (t, b, f) => (b === 'postgresql' || b === 'mysql') && /read \d+ ids/.test(f),
    text: 'SQL getMembers: the SQL drivers have no listMemberIds, so getMembers reads every member\'s capabilities (and the LEFT JOIN on groups) only to drop them. Fix (src/coordination/drivers/sql-membership.ts + sql-schema.ts): add listMemberIds running `SELECT m.member_id, m.expires_at > now() AS live FROM groups g LEFT JOIN members m ...` without the capabilities column.',
  },
  {
    match: (t, b, f) => /raw floor/.test(t) && /read \d+ caps/.test(f),
    text: 'read with capabilities vs floor: the floor returns the raw bytes; rollcall also decodes every member\'s capabilities (msgpack, src/coordination/codec.ts), which is most of the difference at 5,000 members. The decoder spends its time in TextDecoder calls for short strings and Object.defineProperty per key; an ASCII fast path for strings ≤ 64 bytes (String.fromCharCode over the bytes) and plain assignment for every key but `__proto__` in Reader#map measured 2.1× faster on these capabilities (15 → 7 ms per 5,000, same output).',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^(detection|failover)/.test(f) && ['redis', 'memcached', 'file', 'postgresql', 'mysql'].includes(b),
    text: 'detection / failover on polled backends: rollcall and tooz both learn of an expiry by polling (rollcall every watch_interval = 1 s, tooz here every second too), so their medians differ by where the kill fell in the poll cycle and in the victim\'s heartbeat cycle; 20 runs leave ±0.2 s of noise on the median. Improvement (src/coordination/watchers.ts + drivers): have listMembers return the soonest expiry it saw (Redis PTTL of the beat keys, memcached `mg ... t`, SQL min(expires_at), file mtime + timeout) and schedule the next poll then, so that detection lands within a few ms of the backend\'s own expiry; likewise retry an election when the leader key\'s TTL ends rather than on the next tick.',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^heartbeat/.test(f) && b !== 'memcached',
    text: 'heartbeat vs tooz: see the membership check above; tooz\'s beat writes liveness only and never notices a lost membership.',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'zookeeper',
    text: 'ZooKeeper locks: rollcall and kazoo make the same requests (sequential ephemeral create + getChildren to acquire, delete to release); the difference is per-request client cost in node-zookeeper-client against kazoo, within run-to-run noise at this load.',
  },
  {
    match: (t, b, f) => /at least as good/.test(t) && /^locks/.test(f) && b === 'redis',
    text: 'Redis locks: rollcall\'s acquire is one script (SET NX PX + INCR of the fencing counter) and release one script, as tooz\'s SET NX PX + compare-and-delete: the same round trips; the difference is client cost and noise.',
  },
]

export function explain(target: string, backend: string, figure: string): string | undefined {
  return CAUSES.find((c) => c.match(target, backend, figure))?.text
}

