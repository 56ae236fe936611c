/**
 * etcd v3 through its JSON gateway, wire-compatible with tooz's `etcd3+http://` (etcd3gw) driver.
 *
 * URL: `etcd3+http://[user:password@]host[:port][,host[:port]...][?options]`, `etcd3+https://...`
 * (with ca_cert, cert_key, cert_cert) and `etcd3://` (= http); options in etcd3-options.ts. With
 * several hosts, a request whose connection cannot be opened moves on to the next one, and a beat's
 * requests (the lease keepalives, the reads that check what the leases still carry) are sent again
 * to the next host every twentieth of the TTL while unanswered (etcd3-hedge.ts): a host that is cut
 * off, paused, or holding the keepalive for a leader it lost cannot make a healthy member lapse.
 * A path is ignored, as tooz ignores it (one warning).
 * Consistency and hazards: the declaration at the end of this file (docs/drivers.md).
 *
 * Layout (tooz 3.1, exactly):
 * - group `tooz/groups/<g>/`, value = the key's own bytes, no lease;
 * - member `tooz/groups/<g>/<m>`, value = msgpack capabilities, on the coordinator's membership
 *   lease (TTL membership_timeout);
 * - lock `/tooz/locks<name>` (no separator), value = 16 random bytes per lock object, on a lease
 *   of its own (TTL lock_timeout), taken by a txn `CREATE(key) == 0`;
 * - leader of `<g>` (tooz has no etcd election): the lock `leader_of_<g>`, whose value is
 *   msgpack `{member, nonce}` so that getLeader() can name the holder;
 * - rollcall only, beside it (tooz never reads them): the wait queue and turn of each lock under
 *   `/rollcall/locks/<base64url name>/` (etcd3-lock-queue.ts).
 *
 * Ids: keys are the UTF-8 bytes of the ids, so NUL and any Unicode are fine. Refused: a "/" in a
 * group id (`tooz/groups/a/b/` would read as group `a` with member `b/`, and tooz's get_groups
 * would list it wrongly), and lone UTF-16 surrogates (no UTF-8 form). "/" in member ids and lock
 * names is harmless. Keys with non-UTF-8 ids written by someone else are skipped with a warning.
 */
import { randomBytes } from 'node:crypto'
import {
  BackendError,
  ConnectionError,
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  MemberExistsError,
  MemberNotJoinedError,
  OperationTimeoutError,
  SerializationError,
} from '../../../errors.js'
import { dumps, loads } from '../../codec/index.js'
import { defineDriver, type CoordinationDriver, type DriverContext, type HeartbeatResult } from '../../driver.js'
import { OPTIONS, readTls, ttlSeconds, type ResolvedEtcd3Options } from './etcd3-options.js'
import { EtcdApiError, EtcdGateway, EtcdTransportError, GRPC, isLeaseGone, prefixEnd, type Compare, type Endpoint, type Hedge } from './etcd3-gateway.js'
import { hedgeForTtl } from './etcd3-hedge.js'
import { Etcd3Lock, lockKey, type Etcd3LockHost } from './etcd3-lock.js'
import { WaiterLease } from './etcd3-waiter-lease.js'
import { absent, exists, GROUP_PREFIX, groupIds, groupKey, groupMembers, key, memberKey, type SkipWarning } from './etcd3-layout.js'
import { openWatch } from './etcd3-watch.js'
import { utf8Ids } from '../kit/ids.js'
import { BreakLatch } from '../kit/break-latch.js'
import { warnIgnoredPath } from '../kit/ignored-path.js'

const DEFAULT_PORT = 2379

class Etcd3Driver implements CoordinationDriver<Etcd3Lock> {
  /** The beat checks the held locks' keys beside the lease keepalive (heartbeat()). */
  readonly beatRefreshesLocks = true
  readonly #ctx: DriverContext<ResolvedEtcd3Options>
  readonly #endpoints: Endpoint[]
  readonly #holding = new Set<Etcd3Lock>()
  readonly #waiters = new WaiterLease(() => this.#client)
  #gw: EtcdGateway | undefined
  #lease: string | undefined
  #leaseTtlSeconds: number
  #renewing: Promise<void> | undefined
  /** Set while the lease is being checked after an outage; writes on the lease wait for it. */
  #outageCheck: Promise<void> | undefined
  #started = false
  readonly #breaks: BreakLatch
  /** performance.now() when the latest heartbeat began (a lock may reuse only a lease renewed since). */
  #beatStartedAt = 0
  /** Lease revokes under way in the background; stop() waits for them. */
  readonly #background = new Set<Promise<void>>()
  /** Warns of a key skipped because its id is not UTF-8. */
  readonly #skipped: SkipWarning = (err) => this.#ctx.events.warning(err)

  constructor(ctx: DriverContext<ResolvedEtcd3Options>) {
    this.#ctx = ctx
    const protocol = ctx.url.scheme === 'etcd3+https' ? 'https:' : 'http:'
    const hosts = ctx.url.hosts.length > 0 ? ctx.url.hosts : [{ host: '', port: undefined }]
    this.#endpoints = hosts.map((h) => {
      const host = h.host === '' ? 'localhost' : h.host
      const port = h.port ?? DEFAULT_PORT
      return { protocol, host, port, label: `${protocol}//${host.includes(':') ? `[${host}]` : host}:${port}` }
    })
    this.#leaseTtlSeconds = ttlSeconds(ctx.options.membershipTimeoutMs)
    this.#breaks = new BreakLatch(ctx.events)
  }

  get #client(): EtcdGateway {
    if (!this.#gw) throw new ConnectionError('The etcd3 driver is not started')
    return this.#gw
  }

  async start(): Promise<void> {
    const { options, url } = this.#ctx
    const gw = new EtcdGateway({
      endpoints: this.#endpoints,
      timeoutMs: options.timeoutMs,
      tls: url.scheme === 'etcd3+https' ? readTls(options) : undefined,
      auth: url.username === undefined ? undefined : { user: url.username, password: url.password ?? '' },
      onTransport: (ok, cause) => this.#onTransport(ok, cause),
    })
    this.#gw = gw
    // One deadline for the whole start, whatever the number of endpoints and round trips.
    const deadline = AbortSignal.timeout(options.timeoutMs)
    try {
      gw.setApiVersion(options.apiVersion ?? (await gw.discoverApiVersion(deadline)))
      await gw.authenticate(deadline)
      const granted = await gw.leaseGrant(this.#leaseTtlSeconds, deadline)
      this.#lease = granted.id
      this.#leaseTtlSeconds = granted.ttlSeconds
    } catch (err) {
      if (err instanceof EtcdTransportError) {
        throw new ConnectionError(`Cannot connect to etcd at ${gw.endpoints} (${url.redacted}): ${err.message}`, { cause: err })
      }
      throw err
    }
    this.#started = true
  }

  async stop(): Promise<void> {
    this.#started = false
    const gw = this.#gw
    if (!gw) return
    // tooz leaves its leases to expire; revoking frees member keys and locks at once.
    const lease = this.#lease
    this.#lease = undefined
    await Promise.allSettled([
      lease ? gw.leaseRevoke(lease) : undefined,
      this.#waiters.revoke(),
      ...[...this.#holding].map((l) => l.abandon()),
      ...this.#background,
    ])
    gw.close()
  }

  /**
   * The membership lease's keepalive, the read of the keys still on it, and each held lock's
   * refresh, all sent at once and each hedged across the hosts (etcd3-hedge.ts): the beat ends one
   * answer after a host that can answer has one, which after a leader loss is soon after the
   * election, within the lease.
   */
  async heartbeat(joined: ReadonlyMap<string, Uint8Array>, heldLocks: ReadonlySet<Etcd3Lock>): Promise<HeartbeatResult<Etcd3Lock>> {
    this.#beatStartedAt = performance.now()
    const gw = this.#client
    const lease = this.#lease!
    const locks = [...heldLocks]
    // Promise.all observes every rejection: one that loses the race is not unhandled.
    const [ttl, onLease, refreshed] = await Promise.all([
      gw.leaseKeepAlive(lease, this.#hedge()),
      joined.size === 0 ? undefined : gw.leaseTimeToLive(lease, this.#hedge()),
      Promise.allSettled(locks.map((l) => l.refresh())),
    ])
    if (ttl <= 0) {
      // Every hold went with the lease: the Coordinator's refresh finds them abandoned.
      await this.#replaceLease(lease, 'the membership lease expired')
      return { nextBeatMs: this.#nextBeatMs(), locks: { refreshed: false } }
    }
    const failed = refreshed.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
    const lost = locks.filter((_l, i) => !(refreshed[i] as PromiseFulfilledResult<boolean>).value)
    if (onLease === undefined) return { nextBeatMs: this.#nextBeatMs(), locks: { refreshed: true, lost } }
    // The keys still attached to the lease are exactly the memberships etcd still holds.
    const attached = new Set(onLease.keys.map((k) => k.toString('latin1')))
    const lostGroups = [...joined.keys()].filter((g) => !attached.has(memberKey(g, this.#ctx.memberId).toString('latin1')))
    return { nextBeatMs: this.#nextBeatMs(), lostGroups, locks: { refreshed: true, lost } }
  }

  async createGroup(group: string): Promise<void> {
    const k = groupKey(group)
    // tooz compares VERSION == 0 and stores the key as its own value ("etcd3gw needs a value").
    const r = await this.#client.txn([{ key: k, target: 'VERSION', result: 'EQUAL', operand: 0n }], [{ put: { key: k, value: k } }])
    if (!r.succeeded) throw new GroupExistsError(group)
  }

  async deleteGroup(group: string): Promise<void> {
    const k = groupKey(group)
    // One txn: the group key exists and no key sorts after it under its prefix (no member).
    const noMembers: Compare = { key: Buffer.concat([k, Buffer.from([0])]), rangeEnd: prefixEnd(k), target: 'CREATE', result: 'EQUAL', operand: 0n }
    const r = await this.#client.txn([exists(k), noMembers], [{ deleteRange: { key: k } }], [{ range: { key: k, keysOnly: true } }])
    if (!r.succeeded) throw r.responses[0]?.length ? new GroupNotEmptyError(group) : new GroupNotFoundError(group)
  }

  async listGroups(): Promise<string[]> {
    const prefix = key(GROUP_PREFIX)
    const { kvs } = await this.#client.range(prefix, { rangeEnd: prefixEnd(prefix), keysOnly: true })
    return groupIds(kvs, this.#skipped)
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    const g = groupKey(group)
    const m = memberKey(group, this.#ctx.memberId)
    const r = await this.#withLease((lease) =>
      this.#client.txn([exists(g), absent(m)], [{ put: { key: m, value: capabilities, lease } }], [{ range: { key: g, keysOnly: true } }])
    )
    if (!r.succeeded && !r.responses[0]?.length) throw new GroupNotFoundError(group)
    // Joined now, or already (a rejoin counts that as success).
    if (!r.succeeded) throw new MemberExistsError(group, this.#ctx.memberId)
  }

  async leaveGroup(group: string): Promise<void> {
    const m = memberKey(group, this.#ctx.memberId)
    const r = await this.#client.txn([exists(m)], [{ deleteRange: { key: m } }])
    if (!r.succeeded) throw new MemberNotJoinedError(group, this.#ctx.memberId)
  }

  async listMembers(group: string): Promise<Map<string, Uint8Array>> {
    // The decoded values themselves, not copies: nothing writes to them again, and the codec copies what it keeps.
    return this.#members(group, false)
  }

  async listMemberIds(group: string): Promise<string[]> {
    return [...(await this.#members(group, true)).keys()]
  }

  async getMemberCapabilities(group: string, member: string): Promise<Uint8Array> {
    const r = await this.#client.txn([exists(groupKey(group))], [{ range: { key: memberKey(group, member) } }])
    if (!r.succeeded) throw new GroupNotFoundError(group)
    const kv = r.responses[0]?.[0]
    if (!kv) throw new MemberNotJoinedError(group, member)
    return new Uint8Array(kv.value)
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    const m = memberKey(group, this.#ctx.memberId)
    // Only while joined: tooz's get-then-put could resurrect a member that just left or expired.
    const r = await this.#withLease((lease) => this.#client.txn([exists(m)], [{ put: { key: m, value: capabilities, lease } }]))
    if (!r.succeeded) throw new MemberNotJoinedError(group, this.#ctx.memberId)
  }

  createLock(name: string): Etcd3Lock {
    return new Etcd3Lock(this.#lockHost(), name, randomBytes(16))
  }

  async watchGroup(group: string, onChange: () => void): Promise<() => Promise<void>> {
    const k = groupKey(group)
    const watch = await openWatch(this.#client, { key: k, rangeEnd: prefixEnd(k) }, { onEvents: () => onChange(), onGap: () => onChange() })
    return async () => watch.close()
  }

  leaderLock(group: string): Etcd3Lock {
    return new Etcd3Lock(this.#lockHost(), `leader_of_${group}`, dumps({ member: this.#ctx.memberId, nonce: randomBytes(16) }))
  }

  async getLeader(group: string): Promise<string | null> {
    const kv = (await this.#client.range(lockKey(`leader_of_${group}`))).kvs[0]
    if (!kv) return null
    try {
      const value = loads(kv.value) as { member?: unknown } | null
      if (value && typeof value.member === 'string') return value.member
    } catch {
      // Not ours: a plain tooz lock of that name (16 random bytes) holds the key.
    }
    this.#ctx.events.warning(
      new SerializationError(
        `The leader lock of group ${JSON.stringify(group)} is held by a lock that does not name a member (a plain tooz lock named "leader_of_${group}"?)`,
      ),
    )
    return null
  }

  #lockHost(): Etcd3LockHost {
    return {
      gw: this.#client,
      lockTtlSeconds: ttlSeconds(this.#ctx.options.lockTimeoutMs),
      holding: this.#holding,
      lastBeatAt: () => this.#beatStartedAt,
      background: (what, task) => this.#inBackground(what, task),
      waiters: this.#waiters,
    }
  }

  /** Lets `task` run on; stop() waits for it, and its failure is reported as a warning. */
  #inBackground(what: string, task: Promise<unknown>): void {
    const done: Promise<void> = task.then(() => {}, (err: unknown) => {
      this.#ctx.events.warning(new BackendError(`Could not ${what}; it lapses by itself after lock_timeout: ${(err as Error).message}`, { cause: err }))
    }).finally(() => this.#background.delete(done))
    this.#background.add(done)
  }

  async #members(group: string, keysOnly: boolean): Promise<Map<string, Buffer>> {
    const g = groupKey(group)
    const { kvs } = await this.#client.range(g, { rangeEnd: prefixEnd(g), keysOnly })
    const { found, members } = groupMembers(kvs, g, this.#skipped)
    if (!found) throw new GroupNotFoundError(group)
    return members
  }

  /** Runs a write on the membership lease; a lease found gone is replaced once (reporting it) and the write retried. */
  async #withLease<T>(write: (lease: string) => Promise<T>): Promise<T> {
    // Right after an outage the lease may have lapsed without etcd having revoked it yet: a write
    // on it now would succeed and then vanish with it.
    await this.#outageCheck
    const lease = this.#lease!
    try {
      return await write(lease)
    } catch (err) {
      if (!isLeaseGone(err)) throw err
      await this.#replaceLease(lease, 'the membership lease expired')
      return write(this.#lease!)
    }
  }

  /**
   * The membership lease lapsed, so etcd deleted every member key on it: grant a new one, abandon
   * the locks (their holders are told they are gone), and report the session replaced (the
   * Coordinator reports memberships and locks lost, then rejoins every group on the new lease).
   */
  #replaceLease(old: string, reason: string): Promise<void> {
    this.#renewing ??= (async () => {
      if (this.#lease !== old) return
      const granted = await this.#client.leaseGrant(ttlSeconds(this.#ctx.options.membershipTimeoutMs))
      this.#lease = granted.id
      this.#leaseTtlSeconds = granted.ttlSeconds
      this.#ctx.log.warn('etcd membership lease lost; granted a new one', { old, lease: granted.id })
      await Promise.allSettled([...this.#holding].map((l) => l.abandon()))
      this.#ctx.events.sessionReplaced(reason)
    })().finally(() => {
      this.#renewing = undefined
    })
    return this.#renewing
  }

  /** How a request that keeps the membership lease alive is hedged across the hosts. */
  #hedge(): Hedge {
    return hedgeForTtl(this.#leaseTtlSeconds * 1000, this.#client.timeoutMs)
  }

  #nextBeatMs(): number {
    return Math.min(this.#leaseTtlSeconds, ttlSeconds(this.#ctx.options.lockTimeoutMs)) * 1000
  }

  #onTransport(ok: boolean, cause?: unknown): void {
    if (!this.#started) return
    if (!ok) this.#breaks.down(cause)
    else if (this.#breaks.endBreak()) {
      // A stream that hung through the outage may be half-open: replace it (it resumes, losing nothing).
      this.#gw?.restartWatches()
      this.#outageCheck ??= this.#afterOutage().finally(() => {
        this.#outageCheck = undefined
      })
    }
  }

  /** Back from an outage: `reconnected` if the lease outlived it, else `lost` then `reconnected` on a new one. */
  async #afterOutage(): Promise<void> {
    const lease = this.#lease
    try {
      if (lease === undefined || (await this.#client.leaseKeepAlive(lease, this.#hedge())) > 0) this.#ctx.events.connectionState('reconnected')
      else await this.#replaceLease(lease, 'the membership lease expired during a connection outage')
    } catch {
      // The transport failed again (reported as suspended); the next success retries this.
    }
  }
}

export default defineDriver({
  name: 'etcd3',
  summary: "etcd v3 through its JSON gateway (no client library), laid out exactly as tooz's etcd3gw driver lays it out; membership by lease, pushed watches, "
    + 'locks with fencing and a native wait.',
  urlForms: [
    'etcd3+http://127.0.0.1:2379',
    'etcd3+https://etcd1:2379,etcd2:2379?ca_cert=/etc/ssl/etcd-ca.pem',
    'etcd3://user:password@127.0.0.1:2379?membership_timeout=10',
  ],
  consistency:
    'Linearizable reads and writes; every check-and-act is one etcd txn. A member lives as long as its lease: etcd deletes the keys of a member that '
    + "stops heartbeating after membership_timeout and the watch pushes that deletion. Lock fencing tokens are the key's create revision, which grows "
    + 'with every holder.',
  hazards: [
    'A process paused longer than membership_timeout loses its lease, its memberships and its locks; the next heartbeat reports it (lost), takes a new '
    + 'lease and rejoins (reconnected).',
    'Leases are timed by the etcd leader: while the etcd cluster itself is stalled nothing expires.',
    "List every host of the cluster in the URL: a beat's requests (the lease keepalives, the reads of what the leases still carry) go again to the next "
    + 'host every twentieth of the TTL while unanswered, so one host that is cut off, paused, or holding keepalives for a leader it lost does not make '
    + 'a member lapse. A member whose only host is stuck lapses. The member counts its lease from its last answered beat, so a leaderless cluster '
    + 'for longer than about half the TTL (an election on an overloaded machine) still reports it lost, then rejoined, although etcd kept the lease. '
    + 'Followers call an election one to two election timeouts after the leader falls silent, so size membership_timeout and lock_timeout at least '
    + 'twice that plus a round trip: the partition runs (test/partition/) use 10 s against an election timeout of 2 s; with 4 s members on the '
    + 'majority side were lost at most cuts of the leader.',
    'Group ids cannot contain "/" (tooz\'s layout would make them ambiguous).',
    'A user lock named "leader_of_<group>" is the leader lock of that group.',
    'Python tooz 3.1 leaves its locks to expire after stop() (up to lock_timeout); rollcall revokes its leases.',
    'Blocked rollcall acquires queue (keys under /rollcall/locks/, on a 2 s lease) and get a free lock in order; a queued waiter whose process dies '
    + 'holds the waiters behind it up for about 2.5 s (its lease lapsing), and a turn left by a holder that died between two acquisitions for 1 s. '
    + 'Python tooz does not queue: it takes a free lock whenever it polls, ahead of the queue (exclusion is unaffected).',
  ],
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberExpiry',
    'sessionExpiry',
    'pushWatch',
    'leaderElection',
    'getLeader',
    'locks',
    'lockWaitQueue',
    'fencing',
    'acrossProcesses',
    'acrossHosts',
  ],
  options: OPTIONS,
  validateId: utf8Ids((kind, id) => {
    if (kind === 'group' && id.includes('/')) {
      return 'group ids cannot contain "/": tooz\'s etcd layout (tooz/groups/<group>/<member>) would make it ambiguous; use another separator such as '
        + '":" or "."'
    }
    return undefined
  }),
  translateError(err) {
    if (err instanceof EtcdTransportError) return new ConnectionError(err.message, { cause: err })
    if (!(err instanceof EtcdApiError)) return undefined
    if (err.grpcCode === GRPC.UNAVAILABLE || err.status === 503) return new ConnectionError(`${err.message} (etcd is unavailable)`, { cause: err })
    if (err.grpcCode === GRPC.DEADLINE_EXCEEDED || err.status === 408 || err.status === 504) return new OperationTimeoutError(err.message, { cause: err })
    return new BackendError(err.message, { cause: err })
  },
  create(ctx) {
    warnIgnoredPath(ctx.url, (message) => ctx.log.warn(message), 'the gateway API prefix is chosen with ?api_version=v3 (or found from GET /version)')
    return new Etcd3Driver(ctx)
  },
})
