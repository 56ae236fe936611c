/**
 * memcached:// — tooz's memcached driver, key for key and byte for byte (memcached-layout.ts).
 *
 * URL: `memcached://[HOST[:PORT]][,HOST2[:PORT]...][?timeout=30&membership_timeout=..&lock_timeout=..&leader_timeout=..]`,
 * default `localhost:11211`. tooz talks to one server; extra hosts here are a **fail-over list**
 * (the first that answers is used, and every reconnect starts again from the first), never
 * shards: a Python process would not find keys spread over servers. `use_ssl=true` (with
 * `ca_cert`, `ssl_cert`, `ssl_key`, ...) connects over TLS. A path is ignored, as tooz ignores it (one warning).
 *
 * Consistency and hazards: the declaration in defineDriver below (docs/drivers.md). How: a group's
 * compare-and-swap conflicts are retried with short jittered backoff (tooz sleeps 1 s); a group is
 * read with `gets` of the group, then one multi-key `get` of every member key `_TOOZ_MEMBER_<id>`
 * (tooz does one per member), and the reader prunes dead members but never itself; locks compare
 * the CAS of their own hold (memcached-lock.ts), and blocked rollcall acquires queue in keys tooz
 * never reads (memcached-lock-queue.ts); a watched group's first expiry is read with `mg <key> t`
 * alongside the listing.
 *
 * A heartbeat (memcached-heartbeat.ts) is one write and one round trip whatever the group sizes:
 * the member key `set` (with a reply, unlike tooz's noreply, so that a failed beat is noticed), the
 * refresh of every held lock, and for each joined group a probe of its CAS alone (`mg <key> c`). A
 * group value is read again only when its CAS differs from the last one at which this member saw
 * its own entry there.
 *
 * On a server without meta commands (before 1.6.10) the heartbeat reads every joined group's value
 * (one multi-key `gets`) instead, decoding a value only when its CAS changed. Ids must fit a
 * memcached key once prefixed (250 bytes, no spaces or control characters): validateId() refuses
 * the rest before anything is written.
 */
import {
  BackendError,
  ConnectionError,
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  InvalidIdError,
  InvalidOptionError,
  MemberExistsError,
  MemberNotJoinedError,
  OperationTimeoutError,
  SerializationError,
} from '../../../errors.js'
import { withinStopGrace } from '../../../internal/deadline.js'
import { defineDriver, type CoordinationDriver, type DriverContext, type HeartbeatResult, type IdKind } from '../../driver.js'
import {
  MAX_KEY_BYTES,
  MemcachedClient,
  MemcachedConnectionError,
  MemcachedKeyError,
  MemcachedServerError,
  MemcachedTimeoutError,
  type MemcachedServer,
} from '../../../clients/memcached/memcached-client.js'
import {
  FLAG_MSGPACK,
  KEYS,
  LONGEST_PREFIX_BYTES,
  capabilitiesOf,
  decodeGroup,
  decodeGroupList,
  decodeOwner,
  encodeGroup,
  groupListId,
  memberEntry,
  type GroupEntry,
} from './memcached-layout.js'
import { FirstExpiries } from '../kit/expiries.js'
import { recheckInMs } from './memcached-expiries.js'
import { MemcachedHeartbeat } from './memcached-heartbeat.js'
import { MemcachedLock } from './memcached-lock.js'
import { warnIgnoredPath } from '../kit/ignored-path.js'
import { addToGroupList, casLoop, removeFromGroupList, RETRY } from './memcached-cas.js'
import { MEMCACHED_OPTIONS, tlsOptions, type ResolvedMemcachedOptions } from './memcached-options.js'

const DEFAULT_PORT = 11211

export { MEMCACHED_OPTIONS, type ResolvedMemcachedOptions } from './memcached-options.js'

class MemcachedDriver implements CoordinationDriver<MemcachedLock> {
  /** The beat touches the held locks in its own batch (memcached-heartbeat.ts). */
  readonly beatRefreshesLocks = true
  readonly #ctx: DriverContext<ResolvedMemcachedOptions>
  readonly #me: string
  readonly #ttl: { membership: number; lock: number; leader: number }
  #client: MemcachedClient | undefined
  #server: MemcachedServer | undefined
  #meta = false
  /** The member key, the held locks' refreshes and the per-group CAS probes (memcached-heartbeat.ts). */
  readonly #heartbeat: MemcachedHeartbeat
  /** When the first member key of each group's latest listMemberIds() may lapse. */
  readonly #expiries = new FirstExpiries()

  constructor(ctx: DriverContext<ResolvedMemcachedOptions>) {
    this.#ctx = ctx
    this.#me = ctx.memberId
    warnIgnoredPath(ctx.url, (message) => ctx.log.warn(message))
    const o = ctx.options
    const secs = (ms: number): number => Math.max(1, Math.ceil(ms / 1000))
    this.#ttl = { membership: secs(o.membershipTimeoutMs), lock: secs(o.lockTimeoutMs), leader: secs(o.leaderTimeoutMs) }
    this.#heartbeat = new MemcachedHeartbeat(
      () => this.#connected,
      this.#me,
      this.#ttl,
      () => this.#meta,
      (groups) => ctx.events.membershipLost(groups, 'the backend no longer lists this member'),
    )
  }

  get #connected(): MemcachedClient {
    if (!this.#client) throw new ConnectionError('The memcached driver is not started')
    return this.#client
  }

  async start(): Promise<void> {
    const { url, options } = this.#ctx
    const hosts = url.hosts.length
      ? url.hosts.map((h) => ({ host: h.host || 'localhost', port: h.port ?? DEFAULT_PORT }))
      : [{ host: 'localhost', port: DEFAULT_PORT }]
    this.#client = new MemcachedClient({
      hosts,
      connectTimeoutMs: options.timeoutMs,
      requestTimeoutMs: options.timeoutMs,
      tls: options.useSsl ? tlsOptions(options) : undefined,
      onConnected: (server, reconnect) => this.#onConnected(server, reconnect),
      onDisconnected: (cause) => this.#ctx.events.connectionState('suspended', cause),
    })
    try {
      await this.#client.connect()
    } catch (err) {
      throw new ConnectionError(`Cannot connect to ${url.redacted}: ${(err as Error).message}`, { cause: err })
    }
    if (url.username !== undefined || url.password !== undefined) {
      this.#ctx.events.warning(
        new InvalidOptionError("memcached's text protocol has no authentication: the user name and password in the URL are ignored (as tooz ignores them)"),
      )
    }
    if (!this.#meta) {
      this.#ctx.events.warning(
        new BackendError(
          `memcached ${this.#server?.version} has no meta commands (they need 1.6.10 or later): locks are released with tooz's non-atomic get-compare-delete`,
        ),
      )
    }
  }

  async stop(): Promise<void> {
    const client = this.#client
    if (!client) return
    // tooz deletes its member key on stop; do it if the server answers quickly, never wait long.
    if (client.server) await withinStopGrace(client.delete(KEYS.member(this.#me)))
    await client.close()
  }

  /** One write and one round trip whatever the group sizes (MemcachedHeartbeat.beat()). */
  async heartbeat(joined: ReadonlyMap<string, Uint8Array>, heldLocks: ReadonlySet<MemcachedLock>): Promise<HeartbeatResult<MemcachedLock>> {
    return this.#heartbeat.beat(joined, heldLocks)
  }

  async createGroup(group: string): Promise<void> {
    if ((await this.#connected.store('add', KEYS.group(group), encodeGroup([]), FLAG_MSGPACK, 0)) !== 'stored') throw new GroupExistsError(group)
    await addToGroupList(() => this.#connected, group, this.#ctx)
  }

  async deleteGroup(group: string): Promise<void> {
    const key = KEYS.group(group)
    await casLoop(`deleting group ${group}`, this.#ctx, async () => {
      const item = await this.#connected.gets(key)
      const entries = this.#entries(item, group)
      // Unlike tooz, members whose key has lapsed do not keep the group alive.
      if ((await this.#alive(entries)).length > 0) throw new GroupNotEmptyError(group)
      // As tooz: first CAS the value to nil (so no join can slip in), then delete it. The nil gets
      // an expiry here, so that a delete cut short by a dropped connection cannot leave it forever.
      const r = await this.#connected.store('cas', key, Buffer.from([0xc0]), FLAG_MSGPACK, Math.ceil(this.#ctx.options.timeoutMs / 1000), item!.cas)
      if (r === 'notFound') throw new GroupNotFoundError(group)
      return r === 'stored' || RETRY
    })
    await this.#connected.delete(key)
    await removeFromGroupList(() => this.#connected, group, this.#ctx)
  }

  async listGroups(): Promise<string[]> {
    const ids = new Set<string>()
    for (const entry of decodeGroupList(await this.#connected.get([KEYS.groupList]).then((m) => m.get(KEYS.groupList)))) {
      const id = groupListId(entry)
      if (id === undefined) {
        this.#ctx.events.warning(new SerializationError(`The group list (${KEYS.groupList}) holds an entry that is not a UTF-8 group id; it is skipped`))
      } else ids.add(id)
    }
    return [...ids]
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    // Refresh our member key alongside the first read, so that nobody prunes us right after we join.
    let beat: Promise<unknown> | undefined = this.#heartbeat.touch()
    beat.catch(() => {}) // awaited (and reported) by the first step; this only guards an early throw
    // Already listed (a rejoin after our key lapsed, or a second join): the value is written back unchanged all the same. A reader
    // that found our key gone before it was set again prunes us with the CAS of the value it read; the write makes that CAS fail,
    // and its next read finds us alive. Without it the rejoin answered "still listed" and the prune removed us just after (memcached
    // partition full form: members lost again a few ms after their rejoin).
    let listed = false
    await this.#update(group, `joining group ${group}`, (entries) => {
      listed = entries.some((e) => e.id === this.#me)
      return listed ? entries : [...entries, memberEntry(this.#me, capabilities)]
    }, () => {
      const first = beat
      beat = undefined
      return first
    })
    if (listed) throw new MemberExistsError(group, this.#me)
  }

  async leaveGroup(group: string): Promise<void> {
    this.#heartbeat.forget(group)
    await this.#update(group, `leaving group ${group}`, (entries) => {
      if (!entries.some((e) => e.id === this.#me)) throw new MemberNotJoinedError(group, this.#me)
      return entries.filter((e) => e.id !== this.#me)
    })
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    await this.#update(group, `updating capabilities in group ${group}`, (entries) => {
      if (!entries.some((e) => e.id === this.#me)) throw new MemberNotJoinedError(group, this.#me)
      return entries.map((e) => (e.id === this.#me ? memberEntry(this.#me, capabilities) : e))
    })
  }

  async listMembers(group: string): Promise<Map<string, Uint8Array | SerializationError>> {
    const out = new Map<string, Uint8Array | SerializationError>()
    for (const e of await this.#live(group)) if (e.id !== undefined) out.set(e.id, capabilitiesOf(e, group))
    return out
  }

  /** Live member ids; with meta commands the member keys are read with their TTLs, for nextExpiryAt(). */
  async listMemberIds(group: string): Promise<string[]> {
    const ids: string[] = []
    let live: GroupEntry[]
    try {
      live = await this.#live(group, true)
    } catch (err) {
      this.#expiries.note(group, Infinity)
      throw err
    }
    for (const e of live) if (e.id !== undefined) ids.push(e.id)
    return ids
  }

  nextExpiryAt(group: string): number | undefined {
    return this.#expiries.get(group)
  }

  createLock(name: string): MemcachedLock {
    return new MemcachedLock(this.#connected, KEYS.lock(name), this.#me, this.#ttl.lock, () => this.#meta)
  }

  leaderLock(group: string): MemcachedLock {
    return new MemcachedLock(this.#connected, KEYS.leader(group), this.#me, this.#ttl.leader, () => this.#meta)
  }

  async getLeader(group: string): Promise<string | null> {
    const key = KEYS.leader(group)
    return decodeOwner((await this.#connected.get([key])).get(key), key)
  }

  /** A group's entries; GroupNotFoundError when it does not exist. Unreadable member ids are reported. */
  #entries(item: Parameters<typeof decodeGroup>[0], group: string): GroupEntry[] {
    const entries = decodeGroup(item, group)
    if (entries === undefined) throw new GroupNotFoundError(group)
    for (const e of entries) {
      if (e.id === undefined) {
        this.#ctx.events.warning(
          new SerializationError(`Group ${JSON.stringify(group)} holds a member whose id is not UTF-8 text; it is left in place but not listed`),
        )
      }
    }
    return entries
  }

  /**
   * The live entries of a group: self, members whose key exists (ONE multi-get for all of them),
   * and members whose id cannot be read (their liveness cannot be checked, so they are kept).
   * With `expiriesOf` (and meta commands) the member keys are read with their TTLs instead (`mg
   * <key> t`, still one round trip), and when the first of them may lapse is noted for that group.
   */
  async #alive(entries: readonly GroupEntry[], expiriesOf?: string): Promise<GroupEntry[]> {
    const keys = entries.map((e) => (e.id === undefined || e.id === this.#me ? undefined : KEYS.member(e.id)))
    const wanted = keys.filter((k): k is string => k !== undefined)
    if (expiriesOf === undefined || !this.#meta) {
      const beats = await this.#connected.present(wanted)
      return entries.filter((_, i) => keys[i] === undefined || beats.has(keys[i]))
    }
    const ttls = await this.#connected.ttls(wanted)
    let soonestS = Infinity
    for (const t of ttls.values()) if (t >= 0 && t < soonestS) soonestS = t
    this.#expiries.note(expiriesOf, recheckInMs(soonestS))
    return entries.filter((_, i) => keys[i] === undefined || ttls.has(keys[i]))
  }

  /** A group's live entries (two round trips at any size), pruning the dead ones from its value. */
  async #live(group: string, withExpiries = false): Promise<GroupEntry[]> {
    const key = KEYS.group(group)
    const item = await this.#connected.gets(key)
    const entries = this.#entries(item, group)
    const alive = await this.#alive(entries, withExpiries ? group : undefined)
    const dead = entries.length - alive.length
    if (dead > 0) {
      // Lazy garbage collection, as tooz does it. Losing the CAS race is fine: the next reader retries.
      // #alive() keeps every entry it cannot check, so the live entries are exactly what stays.
      await this.#connected.store('cas', key, encodeGroup(alive), FLAG_MSGPACK, 0, item!.cas).catch((err: unknown) => {
        this.#ctx.events.warning(new BackendError(`Pruning ${dead} dead members from group ${group} failed: ${(err as Error).message}`, { cause: err }))
      })
    } else if (alive.some((e) => e.id === this.#me)) {
      // A read the heartbeat need not repeat: our entry is in the value at this CAS.
      this.#heartbeat.listed(group, item!.cas!)
    }
    return alive
  }

  /** One gets/modify/cas loop over a group's value; `change` throws the domain errors. */
  async #update(group: string, what: string, change: (entries: GroupEntry[]) => GroupEntry[], alongside?: () => Promise<unknown> | undefined): Promise<void> {
    const key = KEYS.group(group)
    await casLoop(what, this.#ctx, async () => {
      const [item] = await Promise.all([this.#connected.gets(key), alongside?.()])
      const next = change(this.#entries(item, group))
      const r = await this.#connected.store('cas', key, encodeGroup(next), FLAG_MSGPACK, 0, item!.cas)
      if (r === 'notFound') throw new GroupNotFoundError(group)
      return r === 'stored' || RETRY
    })
  }

  #onConnected(server: MemcachedServer, reconnect: boolean): void {
    this.#heartbeat.reset()
    const previous = this.#server
    this.#server = server
    const [major = 0, minor = 0, patch = 0] = server.version.split('.').map((n) => Number.parseInt(n, 10) || 0)
    this.#meta = major > 1 || (major === 1 && (minor > 6 || (minor === 6 && patch >= 10)))
    if (!reconnect || !previous) return
    const same = previous.host === server.host && previous.port === server.port && previous.pid === server.pid
      && (previous.bootedAt === undefined || server.bootedAt === undefined || Math.abs(previous.bootedAt - server.bootedAt) <= 1)
    if (same) this.#ctx.events.connectionState('reconnected')
    else {this.#ctx.events.sessionReplaced(
        `memcached at ${server.host}:${server.port} is not the server this member used before (restarted, or a fail-over host): every key is gone`,
      )}
  }
}

export default defineDriver({
  name: 'memcached',
  summary: "tooz's memcached layout: groups as CAS-updated msgpack values, members alive while their expiring key exists, locks and leaders as added keys. "
    + 'Shares groups, locks and leaders with Python tooz processes.',
  urlForms: ['memcached://127.0.0.1:11211', 'memcached://mc1:11211,mc2:11211?timeout=10', 'memcached://mc1:11211?use_ssl=true&ca_cert=/etc/ssl/mc-ca.pem'],
  consistency:
    'Groups are single values updated by compare-and-swap, so concurrent joins and leaves never lose each other. A member is alive while its key exists '
    + '(membership_timeout, renewed by heartbeats); dead members are pruned by whoever reads the group. Reading a group costs two round trips at any '
    + 'size. Locks are added keys with an expiry; release and refresh compare the CAS of the hold (memcached ≥ 1.6.10), so they never free or extend '
    + "another holder's lock. Watchers poll, and re-read a watched group every 0.1 s through the last two seconds of its first member key's TTL "
    + '(memcached ≥ 1.6.10; its whole-second clock can skip a second).',
  hazards: [
    'memcached is a cache: LRU eviction can drop a group, a member key or a lock at any moment, whatever its expiry. Dropped memberships are reported '
    + '(membershipLost) and rejoined; a dropped lock can be taken by another process before the holder notices (lockLost).',
    'A restarted memcached forgets everything; the driver reports the connection as lost on reconnect, so locks and leadership are dropped and groups '
    + 'rejoined.',
    'No fencing: an evicted or restarted server can give one lock to two holders in turn.',
    'A lock holder or leader paused (a SIGSTOP, a long GC or VM pause) past lock_timeout or leader_timeout loses its key on the server while it '
    + 'still believes it holds it, and nothing refuses its writes: in the partition runs (docs/reliability.md, keys of 4 s), a 10.9 s pause of the '
    + 'client holding the lock let 10 grants in while it believed (each overlapping it by up to 1.5 s); in a second full form, pauses of the holder '
    + 'or leader let 14 grants in (overlaps of up to 3.6 s); and a client cut off whose process stalled (it wrote nothing for the 3.6 s of the '
    + 'cut, on a machine running three partition runs) still led 0.86 s into the next term. A holder cut off by the network is told (lockLost, '
    + 'leadershipLost) before its key lapses while it runs: no other overlap in the client cuts and one-way drops of both forms (100 schedules). '
    + 'Keep pauses well under the timeouts, or use a backend with fencing tokens.',
    'Extra hosts in the URL are a fail-over list, not shards; keys live on whichever server answers first, and a fail-over starts from empty.',
    "Expiry has one-second resolution and memcached's clock can skip a second, so a key may lapse up to 2 s early: heartbeats run at half of (shortest "
    + 'timeout − 2 s), and a member key with a timeout under 3 s may lapse between beats. Lock and leader keys are stored with at least 3 s, so that '
    + "they never lapse before their holder's heartbeat deadline: with lock_timeout or leader_timeout under 3 s a crashed holder's key lasts 3 s.",
    'Blocked rollcall acquires queue (keys __ROLLCALL_LQ_<sha1>_*, on servers with meta commands) and get a free lock in order; a queued waiter '
    + 'whose process dies holds the waiters behind it up until its key lapses (up to 3 s), and so does the turn of a holder that died between two '
    + 'acquisitions. Python tooz does not queue: it takes a free lock whenever it polls, ahead of the queue (exclusion is unaffected).',
  ],
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberExpiry',
    'expiryWake',
    'leaderElection',
    'electionWake',
    'getLeader',
    'locks',
    'acrossProcesses',
    'acrossHosts',
  ],
  options: MEMCACHED_OPTIONS,
  validateId(kind: IdKind, id: string): string | undefined {
    if (/[\x00-\x20\x7f]/.test(id)) return 'memcached keys cannot contain spaces or control characters; use "-" or "_" instead'
    const prefix = LONGEST_PREFIX_BYTES[kind]
    const bytes = Buffer.byteLength(id)
    if (prefix + bytes > MAX_KEY_BYTES) {
      return `it is ${bytes} bytes long, and with the ${prefix}-byte key prefix tooz puts before a ${kind} id it exceeds `
        + `memcached's ${MAX_KEY_BYTES}-byte key limit; use at most ${MAX_KEY_BYTES - prefix} bytes`
    }
    return undefined
  },
  translateError(err) {
    if (err instanceof MemcachedConnectionError) return new ConnectionError(err.message, { cause: err })
    if (err instanceof MemcachedTimeoutError) return new OperationTimeoutError(`${err.message} (option timeout)`, { cause: err })
    if (err instanceof MemcachedKeyError) return new InvalidIdError(err.message)
    if (err instanceof MemcachedServerError) {
      const hint = /too large/i.test(err.message) ? "; the value exceeds memcached's item size limit (raise it with memcached -I)" : ''
      return new BackendError(`${err.message}${hint}`, { cause: err, retryable: err.kind === 'SERVER_ERROR' && /memory/i.test(err.message) })
    }
    return undefined
  },
  create: (ctx) => new MemcachedDriver(ctx),
})
