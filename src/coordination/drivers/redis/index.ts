/**
 * redis:// and rediss:// — groups, members, leaders and locks in one Redis server (or the master
 * a Redis Sentinel names), laid out exactly as tooz lays them out (redis-keys.ts), so Python tooz
 * processes and rollcall processes share groups, locks and elections.
 *
 * URL forms: `redis://[user:pass@]host[:port][?options]`, `rediss://...` (TLS),
 * `redis:///path/to/redis.sock`, and Sentinel:
 * `redis://SENTINEL_HOST:PORT?sentinel=<master>&sentinel_fallback=host:port&...`.
 * Options keep tooz's spellings and units (redis-options.ts).
 *
 * Consistency: every check-and-act is one Lua script (the read with capabilities: a script and an
 * HGETALL in one MULTI), so it is atomic on the server. A member is alive while its beat key
 * `<ns>_beats:<member>` exists: the heartbeat re-sets it with a TTL of membership_timeout and, in
 * the same round trip, checks that this member is still in every group it joined (the
 * Coordinator rejoins where it is not). Dead members are removed lazily, by whoever lists the
 * group (tooz's garbage collection), and are never reported meanwhile. Watchers poll: Redis
 * offers no membership notifications that cover expiry without server configuration.
 *
 * Hazards (data loss on restart, locks as leases, lock key styles, getLeader on tooz 3.1, no
 * Redis Cluster) are declared in defineDriver below, from which docs/drivers.md is made.
 */
import { BackendError, DriverUnavailableError, GroupExistsError, GroupNotEmptyError, GroupNotFoundError, ConnectionError, MemberExistsError,
  MemberNotJoinedError, SerializationError } from '../../../errors.js'
import type { Redis } from 'ioredis'
import { defineDriver, type CoordinationDriver, type DriverContext, type DriverLock, type HeartbeatResult } from '../../driver.js'
import { FirstExpiries } from '../kit/expiries.js'
import { describeTarget, ioredisOptions, readTlsMaterial, redisTarget, sentinelClientOptions, translateRedisError,
  type RedisTarget } from './redis-connection.js'
import { askSentinelFirst, isNamedMaster, MASTER_CHECK_MS, SentinelAsker, serverIdentity, type MasterView, type ServerIdentity } from './redis-fencing.js'
import { decodeId, GROUP_EXISTS_FIELD, holderOfToken, RedisKeys, STILL_ALIVE } from './redis-keys.js'
import { RedisLock } from './redis-lock.js'
import { REDIS_OPTIONS, type ResolvedRedisOptions } from './redis-options.js'
import { RedisWakeups } from './redis-wakeups.js'
import { REFUSED, scriptRunner, SCRIPTS, type ScriptArg, type ScriptName, type ScriptReply } from './redis-scripts.js'
import { utf8Ids } from '../kit/ids.js'
import { BreakLatch } from '../kit/break-latch.js'
import { redisClientProblem } from './redis-own-client.js'
import { DeadlineError, withDeadline, withinStopGrace } from '../../../internal/deadline.js'
import { sleep } from '../../../internal/sleep.js'

/** How long a lock attempt waits for the sentinels to confirm its server as the master (a failover settles within seconds). */
const CONFIRM_WITHIN_MS = 10_000
/** How often it asks again meanwhile. */
const CONFIRM_RETRY_MS = 200

/**
 * Reconnect delays once started: 100 ms more per attempt, capped at 1 s, plus up to 100 ms of
 * jitter. Short, because liveness is at stake: a member is back at most about a second after the
 * server is, at the cost of one connection attempt per second per member while it is down.
 */
function backoffMs(attempt: number): number {
  return Math.min(100 * attempt, 1_000) + Math.floor(Math.random() * 100)
}

type Runner = (name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]) => Promise<ScriptReply>

/** The redis driver: one ioredis connection per coordinator (its own, or the application's). */
class RedisDriver implements CoordinationDriver {
  readonly #ctx: DriverContext<ResolvedRedisOptions>
  readonly #options: ResolvedRedisOptions
  readonly #keys: RedisKeys
  /** Where rollcall's own client connects; undefined with the application's client. */
  readonly #target: RedisTarget | undefined
  /** The application's client (connect(url, { client })): never closed nor reconfigured here. */
  readonly #appClient: Redis | undefined
  #client: Redis | undefined
  /** Listeners put on the client, taken off at stop() (the application's client outlives this driver). */
  readonly #listeners: [event: string, listener: (...args: any[]) => void][] = []
  /** The subscriber connection for lock wake-ups, opened on the first contended wait. */
  #wakeups: RedisWakeups | undefined
  #runner: Runner | undefined
  #started = false
  #stopping = false
  readonly #breaks: BreakLatch
  #lastError: Error | undefined
  /** Locks whose last release left their turn open (redis-lock.ts): stop() closes those turns, waking the next waiters. */
  readonly #openTurns = new Set<RedisLock>()
  /** Locks taken and not given up: while there are any (or joined groups), a Sentinel client checks its master (#checkMaster). */
  readonly #holders = new Set<RedisLock>()
  /** Groups the last heartbeat kept this member in. */
  #joinedGroups = 0
  /** When the first member of each group's latest listMemberIds() expires. */
  readonly #expiries = new FirstExpiries()
  #healthTimer: NodeJS.Timeout | undefined
  /** With Sentinel: asks the sentinels which master they name, at which config epoch (redis-fencing.ts). */
  #sentinels: SentinelAsker | undefined
  /** Counts the connection's closes: an epoch confirmed for one connection is not used on the next. */
  #generation = 0
  /** The server of connection `generation` (its run id and address), read once per connection: the same socket reaches the same server. */
  #server: { generation: number; identity: ServerIdentity } | undefined
  /** The Sentinel config epoch confirmed for the server of connection `generation`. */
  #confirmed: { generation: number; epoch: number } | undefined
  /** The confirmation under way, shared by whoever needs it meanwhile. */
  #confirming: Promise<void> | undefined
  #masterTimer: NodeJS.Timeout | undefined

  constructor(ctx: DriverContext<ResolvedRedisOptions>, target: RedisTarget | undefined) {
    this.#ctx = ctx
    this.#options = ctx.options
    this.#target = target
    this.#appClient = ctx.client as Redis | undefined
    this.#keys = new RedisKeys(ctx.options.namespace, ctx.options.lockKeyStyle)
    this.#breaks = new BreakLatch(ctx.events)
  }

  async start(): Promise<void> {
    const client = this.#appClient ?? await this.#ownClient()
    this.#listen(client, 'error', (err: Error) => {
      this.#lastError = err
    })
    this.#client = client
    this.#runner = scriptRunner(client)
    const target = this.#target
    if (!this.#appClient && target?.kind === 'sentinel') {
      // The fencing epoch's questions to the sentinels (redis-fencing.ts), on connections of rollcall's own.
      const { Redis: RedisClient } = await import('ioredis')
      const tls = readTlsMaterial(this.#options)
      this.#sentinels = new SentinelAsker(target.sentinels, target.master, (s) => new RedisClient(sentinelClientOptions(s, this.#options, tls)))
    }
    // The subscriber connection is derived from the client (same server, credentials, TLS and
    // Sentinel settings) and is rollcall's own, closed by stop().
    const subName = `${this.#appClient ? `rollcall:${this.#ctx.memberId.replace(/[^!-~]/g, '_')}` : client.options.connectionName}:sub`.slice(0, 128)
    this.#wakeups = new RedisWakeups(() => client.duplicate({ autoResubscribe: true, lazyConnect: false, connectionName: subName }))
    if (this.#appClient) await this.#readyWithin(this.#appClient, this.#options.socketConnectTimeoutMs)
    else await this.#connectWithin(client, this.#options.socketConnectTimeoutMs)
    this.#started = true
    this.#listen(client, 'close', () => {
      this.#generation++
      this.#confirmed = undefined
      this.#onDown()
    })
    this.#listen(client, 'reconnecting', () => this.#onDown())
    this.#listen(client, 'ready', () => this.#onReady())
    if (this.#options.healthCheckIntervalMs > 0) {
      this.#healthTimer = setInterval(() => void client.ping().catch(() => {}), this.#options.healthCheckIntervalMs)
      this.#healthTimer.unref()
    }
    if (this.#sentinels) {
      this.#masterTimer = setInterval(() => this.#checkMaster(), MASTER_CHECK_MS)
      this.#masterTimer.unref()
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true
    clearInterval(this.#healthTimer)
    clearInterval(this.#masterTimer)
    this.#sentinels?.stop()
    this.#wakeups?.stop()
    // A lock released just before stop() may have left its turn open: waiters would wait for it to lapse.
    if (this.#client?.status === 'ready') await withinStopGrace(Promise.all([...this.#openTurns].map((l) => l.endTurn())))
    const client = this.#client
    this.#client = undefined
    if (!client) return
    // As tooz's _stop: delete the beat key, so that others see this member gone at once.
    if (this.#started && client.status === 'ready') await withinStopGrace(client.del(this.#keys.beat(this.#ctx.memberId)))
    for (const [event, listener] of this.#listeners.splice(0)) client.off(event, listener)
    // The application's client stays open and usable: it is the application's to close.
    if (client !== this.#appClient) client.disconnect()
  }

  /** rollcall's own client, configured from the URL (not connected yet). */
  async #ownClient(): Promise<Redis> {
    const { Redis: RedisClient } = await import('ioredis').catch((err: unknown) => {
      throw new DriverUnavailableError('redis', 'ioredis', { cause: err })
    })
    const tls = readTlsMaterial(this.#options)
    // Until start() succeeds ioredis must not retry: a wrong port fails start() instead of
    // reconnecting forever. Afterwards a dropped connection is retried with backoff.
    const retry = (attempt: number): number | null => (this.#started && !this.#stopping ? backoffMs(attempt) : null)
    return new RedisClient(ioredisOptions(this.#ctx.url, this.#target!, this.#options, tls, { redis: retry, sentinel: retry }, this.#ctx.memberId))
  }

  #listen(client: Redis, event: string, listener: (...args: any[]) => void): void {
    client.on(event, listener)
    this.#listeners.push([event, listener])
  }

  async heartbeat(joined: ReadonlyMap<string, Uint8Array>): Promise<HeartbeatResult> {
    this.#joinedGroups = joined.size
    const lostGroups = await this.#beat([...joined.keys()])
    return { nextBeatMs: Math.min(this.#options.membershipTimeoutMs, this.#options.lockTimeoutMs), lostGroups, locks: { refreshed: false } }
  }

  async createGroup(group: string): Promise<void> {
    const r = await this.#run('rollcallCreateGroup', [this.#keys.group(group), this.#keys.groups], [group])
    if (r === 0) throw new GroupExistsError(group)
  }

  async deleteGroup(group: string): Promise<void> {
    const r = await this.#run('rollcallDeleteGroup', [this.#keys.group(group), this.#keys.groups], [group, this.#keys.beat(), this.#ctx.memberId])
    if (r === REFUSED.noGroup || r === REFUSED.groupUnlisted) throw new GroupNotFoundError(group)
    if (r === REFUSED.groupNotEmpty) throw new GroupNotEmptyError(group)
    if (r !== 1) {
      throw new BackendError(`Cannot delete group ${JSON.stringify(group)}: removing it from ${this.#keys.groups} failed (script answered ${String(r)})`)
    }
  }

  async listGroups(): Promise<string[]> {
    const raw = await this.#redis().smembersBuffer(this.#keys.groups)
    return raw.flatMap((bytes) => this.#decodeOrWarn(bytes, `an entry of ${this.#keys.groups}`) ?? [])
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    const r = await this.#run('rollcallJoin', [this.#keys.group(group)], [this.#ctx.memberId, capabilities])
    if (r === REFUSED.noGroup) throw new GroupNotFoundError(group)
    if (r === REFUSED.alreadyMember) throw new MemberExistsError(group, this.#ctx.memberId)
  }

  async leaveGroup(group: string): Promise<void> {
    const r = await this.#run('rollcallLeave', [this.#keys.group(group)], [this.#ctx.memberId])
    if (r === REFUSED.noGroup) throw new GroupNotFoundError(group)
    if (r === REFUSED.notMember) throw new MemberNotJoinedError(group, this.#ctx.memberId)
  }

  /**
   * Live members with their capabilities, in one round trip and one transaction: MULTI, the
   * collection script (dead members removed; is this member dead itself?), HGETALL, EXEC. The
   * script goes as EVAL, not EVALSHA: inside MULTI a NOSCRIPT error could not be retried without
   * leaving the transaction.
   */
  async listMembers(group: string): Promise<Map<string, Uint8Array>> {
    const key = this.#keys.group(group)
    // callBuffer('HGETALL') rather than hgetallBuffer(): ioredis turns the latter's reply into an
    // object keyed by lossily decoded strings; this keeps the flat array of exact field bytes.
    const replies = await this.#redis().multi()
      .eval(SCRIPTS.rollcallCollectDead, 1, key, this.#keys.beat(), this.#ctx.memberId)
      .callBuffer('HGETALL', key)
      .exec()
    const [[collectErr, selfDead] = [], [hgetallErr, all] = []] = replies ?? []
    if (collectErr ?? hgetallErr) throw collectErr ?? hgetallErr
    if (selfDead === REFUSED.noGroup) throw new GroupNotFoundError(group)
    if (!Array.isArray(all)) throw new BackendError(`Unexpected answer listing the members of ${JSON.stringify(group)}`)
    const out = new Map<string, Uint8Array>()
    for (let i = 0; i + 1 < all.length; i += 2) {
      const field: unknown = all[i]
      const caps: unknown = all[i + 1]
      if (!Buffer.isBuffer(field) || !Buffer.isBuffer(caps)) continue
      const member = this.#decodeOrWarn(field, `a member of group ${JSON.stringify(group)}`)
      if (member === undefined || member === GROUP_EXISTS_FIELD || (selfDead === 1 && member === this.#ctx.memberId)) continue
      // The reply's own bytes, not a copy: ioredis hands out views of socket chunks that nothing
      // writes to again, and the codec copies whatever it keeps. The Coordinator decodes them, so
      // a corrupt value fails for its member alone.
      out.set(member, caps)
    }
    return out
  }

  /** Live member ids, without their capabilities (HKEYS in the script); dead ones are collected. */
  async listMemberIds(group: string): Promise<string[]> {
    const r = await this.#run('rollcallListMemberIds', [this.#keys.group(group)], [this.#keys.beat(), this.#ctx.memberId])
    if (r === REFUSED.noGroup) {
      this.#expiries.note(group, Infinity)
      throw new GroupNotFoundError(group)
    }
    const [ids, soonestMs] = Array.isArray(r) ? (r as unknown[]) : []
    if (!Array.isArray(ids) || typeof soonestMs !== 'number') throw new BackendError(`Unexpected answer listing the members of ${JSON.stringify(group)}`)
    this.#expiries.note(group, soonestMs >= 0 ? soonestMs : Infinity)
    const out: string[] = []
    for (const field of ids) {
      const member = Buffer.isBuffer(field) ? this.#decodeOrWarn(field, `a member of group ${JSON.stringify(group)}`) : undefined
      if (member !== undefined) out.push(member)
    }
    return out
  }

  nextExpiryAt(group: string): number | undefined {
    return this.#expiries.get(group)
  }

  /** Unlike tooz, a member whose beat key is gone is not joined (tooz returns stale capabilities, §6.3). */
  async getMemberCapabilities(group: string, member: string): Promise<Uint8Array> {
    const r = await this.#run('rollcallMemberCapabilities', [this.#keys.group(group)], [member, this.#keys.beat(), this.#ctx.memberId])
    if (r === REFUSED.noGroup) throw new GroupNotFoundError(group)
    if (!Buffer.isBuffer(r)) throw new MemberNotJoinedError(group, member)
    return r
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    const r = await this.#run('rollcallUpdateCapabilities', [this.#keys.group(group)], [this.#ctx.memberId, capabilities])
    if (r === REFUSED.noGroup) throw new GroupNotFoundError(group)
    if (r === REFUSED.notMember) throw new MemberNotJoinedError(group, this.#ctx.memberId)
  }

  createLock(name: string): DriverLock {
    return this.#lock(this.#keys.lock(name))
  }

  /** tooz's leader lock: the lock named `leader_of_<group>`. */
  leaderLock(group: string): DriverLock {
    return this.#lock(this.#keys.leaderLock(group))
  }

  /** The leader lock's holder: a rollcall member id, `tooz:<token>` for a Python holder, or null. */
  async getLeader(group: string): Promise<string | null> {
    const token = await this.#redis().getBuffer(this.#keys.leaderLock(group))
    return token === null ? null : holderOfToken(token)
  }

  #lock(key: string): RedisLock {
    const wakeups = (): RedisWakeups | undefined => (this.#client ? this.#wakeups : undefined)
    return new RedisLock(
      {
        client: () => this.#redis(),
        run: (name, keys, args) => this.#run(name, keys, args),
        acquire: (keys, args) => this.#acquire(keys, args),
        lockTimeoutMs: this.#options.lockTimeoutMs,
        memberId: this.#ctx.memberId,
        turnOpen: (lock, open) => (open ? this.#openTurns.add(lock) : this.#openTurns.delete(lock)),
        holding: (lock, held) => (held ? this.#holders.add(lock) : this.#holders.delete(lock)),
        get wakeups() {
          return wakeups()
        },
      },
      key,
      this.#keys.fence(key),
    )
  }

  /** Sets the beat key and returns the joined groups that no longer list this member. */
  async #beat(groups: readonly string[]): Promise<string[]> {
    const keys = [this.#keys.beat(this.#ctx.memberId), ...groups.map((g) => this.#keys.group(g))]
    const r = await this.#run('rollcallHeartbeat', keys, [this.#options.membershipTimeoutMs, STILL_ALIVE, this.#ctx.memberId])
    return Array.isArray(r) ? r.flatMap((i) => (typeof i === 'number' && groups[i - 1] !== undefined ? [groups[i - 1]!] : [])) : []
  }

  async #connectWithin(client: Redis, timeoutMs: number): Promise<void> {
    try {
      await withDeadline(client.connect(), timeoutMs)
    } catch (err) {
      client.disconnect()
      throw this.#connectError(err)
    }
  }

  /**
   * Waits until the application's client is ready: a lazy one (status `wait`) is connected, as its
   * first command would connect it; one that is connecting or reconnecting is waited for. On
   * failure the client is left as it is (it is the application's, and may still come up).
   */
  async #readyWithin(client: Redis, timeoutMs: number): Promise<void> {
    if (client.status === 'ready') return
    if (client.status === 'end' || client.status === 'close') {
      throw new ConnectionError("The application's Redis client is closed (quit() or disconnect() was called); pass an open client", { retryable: false })
    }
    let onReady!: () => void
    let onEnd!: () => void
    const ready = new Promise<void>((resolve, reject) => {
      onReady = resolve
      onEnd = () => reject(new Error('the client was closed'))
      client.once('ready', onReady)
      client.once('end', onEnd)
    })
    try {
      if (client.status === 'wait') void client.connect().catch(() => {})
      await withDeadline(ready, timeoutMs)
    } catch (err) {
      throw this.#connectError(err)
    } finally {
      client.off('ready', onReady)
      client.off('end', onEnd)
      ready.catch(() => {})
    }
  }

  #connectError(err: unknown): ConnectionError {
    const detail = err instanceof DeadlineError
      ? `${err.message}${this.#lastError ? ` (last error: ${this.#lastError.message})` : ''}`
      : (this.#lastError ?? (err as Error)).message
    return new ConnectionError(`Cannot connect to Redis at ${this.#where()}: ${detail}`, { cause: this.#lastError ?? err })
  }

  /** Where the driver connects, for messages (never with credentials). */
  #where(): string {
    if (this.#target) return `${describeTarget(this.#target)} (${this.#ctx.url.redacted})`
    const o = this.#appClient!.options
    const at = o.sentinels?.length
      ? `master "${o.name ?? ''}" via Sentinel`
      : o.path
      ? `the Unix socket ${o.path}`
      : `${o.host ?? 'localhost'}:${o.port ?? 6379}`
    return `${at}, through the application's client`
  }

  /** The transport broke: report `suspended` once; members and locks may still be valid on the server. */
  #onDown(): void {
    if (!this.#stopping) this.#breaks.down(this.#lastError)
  }

  /**
   * Back after a break: report `reconnected`, and only that. Recovery is the Coordinator's: it
   * beats at once (the beat names the groups the server lost, restarted empty or failed over) and
   * refreshes every held lock (one whose key is gone or taken is reported lost).
   */
  #onReady(): void {
    if (!this.#stopping) this.#breaks.up()
  }

  /**
   * rollcallLockAcquire with the epoch confirmed for the current connection appended (0 without
   * Sentinel). The epoch is checked in the same tick as the send: a script queued for a connection
   * that is not up yet could reach another server than the one the epoch was confirmed for.
   */
  async #acquire(keys: readonly string[], args: readonly ScriptArg[]): Promise<ScriptReply> {
    if (!this.#sentinels) return this.#run('rollcallLockAcquire', keys, [...args, 0])
    // While the sentinels fail the master over, nobody can say at which epoch a server masters: no grant until they settle.
    const until = performance.now() + CONFIRM_WITHIN_MS
    let failure: unknown
    for (let attempt = 0; attempt < 3 || performance.now() < until; attempt++) {
      const epoch = this.#currentEpoch()
      if (epoch !== undefined) return this.#run('rollcallLockAcquire', keys, [...args, epoch])
      failure = await this.#confirm().then(() => undefined, (err: unknown) => err)
      if (failure !== undefined && performance.now() < until) await sleep(CONFIRM_RETRY_MS)
    }
    throw failure ?? new ConnectionError(
      `Cannot acquire a lock: the connection to the master of ${describeTarget(this.#target!)} kept changing while it was being confirmed`,
    )
  }

  /**
   * Every MASTER_CHECK_MS, while this member is in a group or holds a lock: is its server still the
   * master the sentinels name? A failover deposes a master whose clients may hear nothing from it
   * (it is cut off): without the check, a member's beats hang on it until socket_timeout, and its
   * keys lapse on the new master meanwhile (issue 27: members on the majority side lapsed 8-10 s
   * after a cut of the master); a holder would keep a lock another is granted. One SENTINEL MASTER
   * a second per such client, on a connection kept to one sentinel; the server's identity is read
   * once per connection. (ioredis's failoverDetector pushes +switch-master instead, but holds a
   * subscription to every sentinel per connection, ours and the wake-up subscriber's, that a silent
   * cut ends unnoticed, and reconnects on a switch of any master the sentinels monitor.)
   */
  #checkMaster(): void {
    if (this.#holders.size === 0 && this.#joinedGroups === 0) return
    this.#confirm().catch((err: unknown) => this.#ctx.log.debug('master check failed', { error: String(err) }))
  }

  /** The epoch confirmed for the connection now up and writable, if any. */
  #currentEpoch(): number | undefined {
    const client = this.#client
    const stream = (client as unknown as { stream?: { writable?: boolean } } | undefined)?.stream
    if (client?.status !== 'ready' || !stream?.writable || this.#confirmed?.generation !== this.#generation) return undefined
    return this.#confirmed.epoch
  }

  /**
   * Asks a sentinel for the master (address, run id, config epoch) and this connection's server for
   * its run id (once per connection); when they match, that epoch is confirmed for this connection. When they do not, and
   * the newest view of all sentinels does not name it either, the server is no longer the master
   * the sentinels name: reconnect (ioredis asks the sentinels again),
   * after which the coordinator re-checks every held lock on the master (its recovery on `reconnected`). Rejects with ConnectionError then.
   */
  #confirm(): Promise<void> {
    this.#confirming ??= (async () => {
      const client = this.#redis()
      const generation = this.#generation
      const [first, server] = await Promise.all([this.#sentinels!.ask(), this.#serverOf(client, generation)])
      if (generation !== this.#generation) return
      // One sentinel may not have heard of a failover yet: before reconnecting, take the newest view of them all, unless this
      // one's epoch is above the one confirmed for this server (epochs only rise: a master it names other than this server has
      // deposed it).
      const newer = first.settled && this.#confirmed?.generation === generation && first.configEpoch > this.#confirmed.epoch
      const view = first.settled && (newer || isNamedMaster(first, server)) ? first : await this.#sentinels!.newest()
      if (generation !== this.#generation) return
      if (!isNamedMaster(view, server)) {
        this.#notMaster(client, view)
        throw new ConnectionError(
          `The Redis server this client is connected to (${server.host}:${server.port}) is no longer the master "${view.host}:${view.port}" that sentinel ${view.sentinel.host}:${view.sentinel.port} names: reconnecting`,
        )
      }
      this.#confirmed = { generation, epoch: view.configEpoch }
    })().finally(() => {
      this.#confirming = undefined
    })
    return this.#confirming
  }

  /** The identity of the server behind connection `generation`, asked of it only the first time. */
  async #serverOf(client: Redis, generation: number): Promise<ServerIdentity> {
    if (this.#server?.generation === generation) return this.#server.identity
    const identity = await serverIdentity(client)
    if (generation === this.#generation) this.#server = { generation, identity }
    return identity
  }

  #notMaster(client: Redis, view: MasterView): void {
    this.#ctx.log.warn('the sentinels name another master: reconnecting', { master: `${view.host}:${view.port}`, epoch: view.configEpoch })
    if (this.#client !== client || this.#stopping) return
    // The sentinel that named the new master is reachable: ioredis asks it first, not whichever comes next in its list.
    askSentinelFirst(client, view.sentinel)
    client.disconnect(true)
  }

  #decodeOrWarn(bytes: Buffer, what: string): string | undefined {
    const id = decodeId(bytes)
    if (id === undefined) {
      this.#ctx.events.warning(new SerializationError(`Skipped ${what}: its id is not UTF-8 (hex ${bytes.toString('hex')}), so rollcall cannot name it`))
    }
    return id
  }

  #redis(): Redis {
    if (!this.#client) throw new ConnectionError('The redis driver is not connected', { retryable: false })
    return this.#client
  }

  #run(name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]): Promise<ScriptReply> {
    this.#redis()
    return this.#runner!(name, keys, args)
  }
}

export default defineDriver({
  name: 'redis',
  summary: "Redis (or a Redis Sentinel master): groups, member expiry, leader election and locks with fencing tokens, wire-compatible with Python tooz's redis "
    + 'driver.',
  urlForms: [
    'redis://[user:pass@]host[:port][?options]',
    'rediss://[user:pass@]host[:port][?options]',
    'redis:///path/to/redis.sock[?options]',
    'redis://SENTINEL_HOST:PORT?sentinel=MASTER&sentinel_fallback=HOST:PORT',
  ],
  consistency:
    'Every check-and-act is one atomic Lua script on a single server. A member is alive while its beat key (TTL membership_timeout) exists; dead members '
    + 'are collected lazily by readers and never reported. Watchers poll. Locks are leases (SET NX PX lock_timeout) extended by the heartbeat, with '
    + 'fencing tokens. Rollcall waiters queue beside the lock key and are woken by the release over pub/sub (one subscriber connection per '
    + 'coordinator, opened on the first contended wait), polling as a fallback; a holder that takes the lock from the queue gets a turn, its share of '
    + '1024 acquisitions with the waiters behind it (at least 32, within 100 ms), then hands over to the first waiter; a holder that releases within '
    + 'its turn and does not take the lock back at once ends its turn, waking that waiter.',
  hazards: [
    'Data lives in Redis memory: a restart without persistence or a failover to a lagging replica loses groups, members and locks. Members rejoin by '
    + "themselves, but a lock may be held twice until the old holder's next refresh tells it the lock is gone.",
    'Locks are leases: a holder paused longer than lock_timeout loses its lock while still running. Fencing tokens (an INCR counter beside each lock '
    + 'key) guard against that, but on a single server are only as durable as Redis persistence; counters are never deleted.',
    'Sentinel failover: replication is asynchronous, so a promoted replica may lack the last grants, and an old master cut off from the sentinels '
    + 'but not from its clients keeps granting locks until the cut heals: two holders at once. Fencing still holds through the sentinels: a token is '
    + '`epoch · 2^40 + counter`, the epoch being the sentinel config epoch at which the granting server was confirmed the master (asked of a '
    + 'sentinel before the first acquisition on each connection), so every token a promoted master grants exceeds every token its predecessor '
    + 'granted, even during the cut (test/fault/redis-sentinel-fencing.test.ts, 3 runs on loopback, failover 2.4-2.9 s after the cut with down-after 1 s: the cut-off master granted 66-115 tokens of epoch 0 during the cut, the new master granted from epoch 1, and the fenced register rejected every one of the 130-455 stale writes that followed, where before the epoch tokens repeated). A client that has joined a group or holds a '
    + 'lock also asks a sentinel every second whether its server is still the master they name (one SENTINEL MASTER a second per such client, '
    + "on a connection kept to one sentinel, each sentinel given 1 s to answer; the server's run id is read once per connection), and if not "
    + 'reconnects, beats and re-checks its locks on the new master: a holder cut off with the old master but reaching a sentinel was told '
    + '0.27-1.3 s after the failover, 0.12-0.82 s after the new master granted its lock to another (before: not until the heal, 13-14 s of '
    + 'overlap for a 7.3 s cut), and a member holding no lock moves as promptly (before, only holders asked, and a '
    + "member's beats hung on a silent "
    + 'cut-off master until socket_timeout: members on the majority side lapsed 8-10 s after a cut of the master). Partition short form, '
    + 'keys of 10 s: members on the majority side moved 3.5-4.2 s after a cut of the master, none lapsing (before: 6.9-7.1 s, as ioredis '
    + 'waited 2 s for the silent master to close and every sentinel was waited for; in one run of three members lapsed). A client cut off '
    + 'with the old master, reaching only the sentinel cut off with it, moves 0.6-1.6 s after the heal, once that sentinel hears of the '
    + "failover; until then it sees the old master's data, its own membership included. A holder that reaches no "
    + 'sentinel during the cut is told only after the heal, as promptly. A client that asks no sentinel, one connected to a sentinel-managed '
    + "master directly or the application's own client (connect(url, { client })), is not told: cut off with the old master it learns nothing "
    + 'until the sentinels demote that master (10.3-11.5 s after the heal), and on the majority side its beats hang until socket_timeout. The '
    + 'first also gets tokens of the epoch the master stores, which a promoted master keeps from its predecessor until a client that asked the sentinels '
    + "acquires there: such tokens can repeat an old master's. Tokens of rollcall versions before the epoch (a counter alone) are below every "
    + 'token of an epoch above 0: upgrade a fleet before its first failover, or all at once.',
    'Measured under partitions (docs/reliability.md, two full forms of 50 seeded schedules each on a master, two replicas and three sentinels '
    + 'in network namespaces, keys of 10 s): 154 lock or leadership belief overlaps of up to 2.9 s and 55 dual leaders, each across a failover '
    + 'with a client cut off with the old master; tokens went backwards 52 times at those failovers, and the fenced register refused all 330 '
    + 'stale writes it was sent (it accepted 12,724). The served side had no master 48 times, for up to 15.5 s. One member, cut off with the '
    + 'old master, was seen gone for 3.9 s by a member on the majority side after it was back (first form only; not seen again, nor on a '
    + 'replay of its schedule). Where two holders must not act at once, check the fencing token.',
    'tooz changed its lock keys in 9.0: processes using different lock_key_style values (e.g. tooz 3.1 and tooz 9) do not exclude each other.',
    'Not Redis Cluster-safe, like tooz: the scripts touch keys in different hash slots.',
    "A rollcall waiter queues only once its wake channel's SUBSCRIBE is confirmed, and a release (or an attempt that finds the lock free) that "
    + 'PUBLISHes to a head waiter nobody listens for drops it: a waiter killed while first in line keeps a freed lock from the others only until the '
    + "next such release or attempt, not for its 1 s liveness. A monitoring client's PSUBSCRIBE on `<key>:wake*` counts as a listener and masks such "
    + 'a dead waiter until its liveness lapses.',
  ],
  clientPackage: 'ioredis',
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberExpiry',
    'expiryWake',
    'leaderElection',
    'electionWake',
    'getLeader',
    'locks',
    'fencing',
    'acrossProcesses',
    'acrossHosts',
  ],
  options: REDIS_OPTIONS,
  validateId: utf8Ids((kind, id) => {
    if (kind === 'member' && id === GROUP_EXISTS_FIELD) {
      return `"${GROUP_EXISTS_FIELD}" is the hash field tooz uses to mark that a group exists; choose another member id`
    }
    return undefined
  }),
  translateError: translateRedisError,
  client: {
    expects: 'an ioredis Redis instance (one server, or a master through Sentinel)',
    doc: 'Not a Cluster, and without keyPrefix (use namespace). rollcall runs its scripts with EVAL/EVALSHA (no defineCommand), adds listeners '
      + 'that stop() removes, connects a lazyConnect client as its first command would, and never closes it. The pub/sub connection for lock '
      + 'wake-ups is client.duplicate() (same server, credentials, TLS and Sentinel settings), opened on the first contended wait and closed by '
      + "stop(). The client's own settings apply: maxRetriesPerRequest null makes a command wait for the connection to come back (heartbeats "
      + 'stall until the membership is presumed lost), and autoResendUnfulfilledCommands (on by default) sends a command in flight during a '
      + "break again (a join may then answer MemberExistsError); rollcall's own client uses 0 and false.",
    check: redisClientProblem,
    connectionOptions: [
      'db',
      'socketTimeoutMs',
      'socketConnectTimeoutMs',
      'socketKeepalive',
      'ssl',
      'sslCertfile',
      'sslKeyfile',
      'sslCaCerts',
      'sentinel',
      'sentinelFallback',
      'sentinelUsername',
      'sentinelPassword',
      'sentinelSsl',
    ],
    urlProblem: (url) => (url.scheme === 'rediss' ? 'asks for TLS (rediss://), which the client decides; write redis://' : undefined),
  },
  create(ctx) {
    const target = ctx.client === undefined ? redisTarget(ctx.url, ctx.options, (message) => ctx.log.warn(message)) : undefined
    return new RedisDriver(ctx, target)
  },
})
