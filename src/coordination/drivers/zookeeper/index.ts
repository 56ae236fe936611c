/**
 * zookeeper:// (alias kazoo://): groups, members, locks and leaders in Apache ZooKeeper, laid out
 * exactly as tooz's kazoo driver lays them out, so Python tooz and rollcall share one backend.
 *
 * URL: `zookeeper://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/CHROOT][?timeout=10&namespace=tooz&hosts=H:P]`.
 * Hosts are the URL's plus every `hosts=` value (default `localhost:2181`). With USER:PASSWORD, every
 * node is created with tooz's digest ACL (`digest:USER:base64(sha1("USER:PASSWORD"))`, all
 * permissions) and the session authenticates as USER, so Python clients using the same URL can
 * still read and write them.
 *
 * Layout (tooz.md §3.3): `/<ns>` persistent; group `/<ns>/<group>` persistent; member
 * `/<ns>/<group>/<member>` EPHEMERAL holding msgpack capabilities; lock
 * `/<ns>/locks/<name>/<uuid4hex>__lock__<seq>` EPHEMERAL_SEQUENTIAL holding the member id (kazoo's
 * lock recipe, zookeeper-lock.ts), `…__rlock__<seq>` for a shared hold (kazoo's ReadLock); leader =
 * the same recipe at `/<ns>/<group>/leader`.
 *
 * TLS (`use_ssl=true`, with kazoo's `ca`, `certfile`, `keyfile`, `keyfile_password` and
 * `verify_certs`) reaches a server's secureClientPort; IPv6 literals are written `[::1]:2181`.
 *
 * Consistency and hazards (hidden `locks`/`leader` names, the chroot, ASCII ids, %-decoded
 * passwords, session loss, readers and tooz's plain Lock) are declared in defineDriver below,
 * from which docs/drivers.md is made.
 */
import { performance } from 'node:perf_hooks'
import {
  ConnectionError,
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  InvalidOptionError,
  MemberExistsError,
  MemberNotJoinedError,
} from '../../../errors.js'
import { defineDriver, type CoordinationDriver, type DriverContext, type DriverLock, type DriverMemberInfo, type HeartbeatResult } from '../../driver.js'
import { OPEN_ACL, PERM, ZK_CODES, zkCode, ZkConnection, type ZkSessionState } from '../../../clients/zookeeper/zookeeper-client.js'
import { GroupWatches } from './zookeeper-group-watch.js'
import { readHolder, ZkLock } from './zookeeper-lock.js'
import { asBackendError, checkSize, translateZkError } from './zookeeper-translate.js'
import { checkPath, digestCredential, idProblem, LEADER_NODE, LOCKS_NODE, ZOOKEEPER_OPTIONS, serversOf, tlsOptionsOf,
  type ResolvedZookeeperOptions } from './zookeeper-options.js'

/** The ZooKeeper driver of one Coordinator. */
class ZookeeperDriver implements CoordinationDriver {
  readonly #ctx: DriverContext<ResolvedZookeeperOptions>
  readonly #base: string
  readonly #servers: { host: string; port: number }[]
  readonly #credential: { auth: string; acl: string } | undefined
  #conn: ZkConnection | undefined
  readonly #watches: GroupWatches
  /** The session state last told to the Coordinator (`reconnected` once a new session was told by sessionReplaced). */
  #told: ZkSessionState | undefined
  /** Why the last session was lost, for the sessionReplaced() that follows. */
  #lostBecause: string | undefined

  constructor(ctx: DriverContext<ResolvedZookeeperOptions>) {
    this.#ctx = ctx
    this.#watches = new GroupWatches(() => this.#connection(), ctx)
    const { url, options } = ctx
    this.#servers = serversOf(url, options.hosts)
    const chroot = checkPath(url.path, 'chroot')
    // kazoo paths.join('/', namespace): a namespace starting with '/' is absolute, otherwise under '/'.
    this.#base = `${chroot}${checkPath(options.namespace, 'namespace')}`
    if (this.#base === '') throw new InvalidOptionError(`The namespace "${options.namespace}" names no ZooKeeper node; use a name such as "tooz"`)
    // tooz sets digest auth only when both are present.
    if (url.username && url.password) {
      this.#credential = { auth: `${url.username}:${url.password}`, acl: digestCredential(url.username, url.password) }
    }
  }

  #connection(): ZkConnection {
    if (!this.#conn) throw new ConnectionError(`The zookeeper driver for ${this.#ctx.url.redacted} is not started`)
    return this.#conn
  }

  #group(g: string): string {
    return `${this.#base}/${g}`
  }

  #member(g: string, m: string = this.#ctx.memberId): string {
    return `${this.#base}/${g}/${m}`
  }

  async start(): Promise<void> {
    const { url, options } = this.#ctx
    // tooz's default_acl with credentials; otherwise ZooKeeper's OPEN_ACL_UNSAFE (world:anyone, all), as kazoo.
    const acl = this.#credential ? [{ perms: PERM.all, scheme: 'digest', id: this.#credential.acl }] : OPEN_ACL
    const conn = new ZkConnection({
      servers: this.#servers,
      tls: tlsOptionsOf(options, url.redacted),
      randomizeHosts: options.randomizeHosts,
      sessionTimeoutMs: options.sessionTimeoutMs,
      connectTimeoutMs: options.sessionTimeoutMs,
      opTimeoutMs: options.sessionTimeoutMs,
      digestAuth: this.#credential?.auth,
      acl,
      shownAs: url.redacted,
      onState: (state, cause) => this.#onState(state, cause),
      onNewSession: () => this.#onNewSession(),
    })
    this.#conn = conn
    await conn.start()
    try {
      await conn.ensurePath(this.#base)
    } catch (err) {
      await conn.stop()
      throw err
    }
  }

  async stop(): Promise<void> {
    this.#watches.stopAll()
    await this.#conn?.stop()
  }

  /** tooz's heartbeat (`get /<ns>`), plus a check that our member nodes still exist. */
  async heartbeat(joined: ReadonlyMap<string, Uint8Array>): Promise<HeartbeatResult> {
    const conn = this.#connection()
    const startedAt = performance.now()
    await conn.exists(this.#base)
    const lostGroups: string[] = []
    await Promise.all([...joined.keys()].map(async (g) => {
      const stat = await conn.exists(this.#member(g))
      // Missing, or left over from a session of ours that was lost: either way not a live membership.
      if (!stat || conn.isDeadSession(stat.ephemeralOwner)) lostGroups.push(g)
    }))
    return { nextBeatMs: Math.max(1, this.#backstopAt() - startedAt), lostGroups, locks: { refreshed: false } }
  }

  /**
   * Liveness is the session's. It lapses at the wire deadline (the send time of the last answered
   * request plus the timeout, less a margin), which pings and reconnects keep moving between beats
   * and which the connection itself acts on. The Coordinator's deadline is a backstop a third of
   * the timeout behind that one as it stands when judged: frozen at the last good beat, it fell
   * ahead of a session the server was still answering.
   */
  livenessDeadline(): number {
    return Date.now() + (this.#backstopAt() - performance.now())
  }

  /** That backstop deadline, in performance.now() ms (the session's clock). */
  #backstopAt(): number {
    const conn = this.#connection()
    return conn.sessionDeadline + conn.sessionTimeoutMs / 3
  }

  async createGroup(group: string): Promise<void> {
    const conn = this.#connection()
    for (let attempt = 0;; attempt++) {
      try {
        await conn.create(this.#group(group), undefined, 'PERSISTENT')
        return
      } catch (err) {
        if (zkCode(err) === ZK_CODES.NODE_EXISTS) throw new GroupExistsError(group, { cause: err })
        if (zkCode(err) !== ZK_CODES.NO_NODE || attempt > 0) throw err
      }
      // Someone deleted the namespace: put it back, as start() does, and try once more.
      await conn.ensurePath(this.#base)
    }
  }

  async deleteGroup(group: string): Promise<void> {
    const conn = this.#connection()
    const path = this.#group(group)
    try {
      await conn.remove(path)
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) throw new GroupNotFoundError(group, { cause: err })
      if (zkCode(err) !== ZK_CODES.NOT_EMPTY) throw err
      // tooz leaves an empty `leader` node behind after any election; it must not pin the group forever.
      const children = await conn.getChildren(path).catch(() => [] as string[])
      if (children.length !== 1 || children[0] !== LEADER_NODE) throw new GroupNotEmptyError(group, { cause: err })
      try {
        await conn.removeAll([`${path}/${LEADER_NODE}`, path])
      } catch (err2) {
        if (zkCode(err2) === ZK_CODES.NOT_EMPTY) throw new GroupNotEmptyError(group, { cause: err2 })
        if (zkCode(err2) === ZK_CODES.NO_NODE) throw new GroupNotFoundError(group, { cause: err2 })
        throw err2
      }
    }
  }

  async listGroups(): Promise<string[]> {
    try {
      return (await this.#connection().getChildren(this.#base)).filter((g) => g !== LOCKS_NODE)
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return []
      throw err
    }
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    checkSize(capabilities)
    const conn = this.#connection()
    const path = this.#member(group)
    for (let attempt = 0;; attempt++) {
      try {
        await conn.create(path, capabilities, 'EPHEMERAL')
        return
      } catch (err) {
        if (zkCode(err) === ZK_CODES.NO_NODE) throw new GroupNotFoundError(group, { cause: err })
        if (zkCode(err) !== ZK_CODES.NODE_EXISTS) throw err
        // Our own node from a session we already gave up (the server has not expired it yet): replace it.
        const stat = await conn.exists(path)
        if (attempt >= 2 || (stat && !conn.isDeadSession(stat.ephemeralOwner))) {
          throw new MemberExistsError(group, this.#ctx.memberId, { cause: err })
        }
        if (stat) {
          await conn.remove(path, stat.version).catch((e: unknown) => {
            if (zkCode(e) !== ZK_CODES.NO_NODE && zkCode(e) !== ZK_CODES.BAD_VERSION) throw e
          })
        }
      }
    }
  }

  async leaveGroup(group: string): Promise<void> {
    try {
      await this.#connection().remove(this.#member(group))
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) throw new MemberNotJoinedError(group, this.#ctx.memberId, { cause: err })
      throw err
    }
  }

  async listMemberIds(group: string): Promise<string[]> {
    try {
      return (await this.#connection().getChildren(this.#group(group))).filter((m) => m !== LEADER_NODE)
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) throw new GroupNotFoundError(group, { cause: err })
      throw err
    }
  }

  async listMembers(group: string): Promise<Map<string, Uint8Array>> {
    const conn = this.#connection()
    const ids = await this.listMemberIds(group)
    // multiRead batches (one getData per member pipelined on servers before 3.6), a few at a time; stop() ends a long read.
    // Each value is already a copy.
    const values = await conn.getDataMany(ids.map((m) => this.#member(group, m)), this.#ctx.signal)
    const out = new Map<string, Uint8Array>()
    ids.forEach((m, i) => {
      const v = values[i]
      if (v !== undefined) out.set(m, new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
    })
    return out
  }

  async getMemberCapabilities(group: string, member: string): Promise<Uint8Array> {
    return (await this.getMemberInfo(group, member)).capabilities
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    checkSize(capabilities)
    try {
      await this.#connection().setData(this.#member(group), capabilities)
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) throw new MemberNotJoinedError(group, this.#ctx.memberId, { cause: err })
      throw err
    }
  }

  async getMemberInfo(group: string, member: string): Promise<DriverMemberInfo> {
    try {
      const { data, stat } = await this.#connection().getData(this.#member(group, member))
      return { capabilities: new Uint8Array(data), createdAt: new Date(stat.ctime), updatedAt: new Date(stat.mtime) }
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) throw new MemberNotJoinedError(group, member, { cause: err })
      throw err
    }
  }

  createLock(name: string): DriverLock {
    return new ZkLock(this.#connection(), `${this.#base}/${LOCKS_NODE}/${name}`, this.#ctx.memberId)
  }

  leaderLock(group: string): DriverLock {
    return new ZkLock(this.#connection(), `${this.#group(group)}/${LEADER_NODE}`, this.#ctx.memberId)
  }

  /** The first contender's member id; unlike tooz, reading never creates nodes. */
  getLeader(group: string): Promise<string | null> {
    return readHolder(this.#connection(), `${this.#group(group)}/${LEADER_NODE}`)
  }

  watchGroup(group: string, onChange: () => void): Promise<() => Promise<void>> {
    return this.#watches.watch(group, this.#group(group), onChange)
  }

  /**
   * The client's session states, told to the Coordinator when they are news. `lost` is told at
   * once (memberships, locks and leadership are gone the moment the session is); the return on a
   * new session is told by sessionReplaced() (#onNewSession), so the client's `reconnected` that
   * follows it, once the watches are re-armed, says nothing new.
   */
  #onState(state: ZkSessionState, cause?: Error): void {
    if (state === 'lost') this.#lostBecause = cause?.message
    if (state === this.#told) return
    this.#told = state
    this.#ctx.events.connectionState(state, cause)
  }

  /**
   * A replacement session is up: say so at once (the client calls this at the connect, before any
   * answer on the new session is read, so nothing was gained on it that the report could take
   * away), then restore the namespace, re-arm every watch and have the watchers re-read.
   */
  async #onNewSession(): Promise<void> {
    const conn = this.#connection()
    this.#told = 'reconnected'
    const why = this.#lostBecause === undefined ? 'the ZooKeeper session was lost' : `the ZooKeeper session was lost (${this.#lostBecause})`
    this.#ctx.events.sessionReplaced(`${why}; session 0x${conn.sessionId} replaced it`)
    await conn.ensurePath(this.#base).catch((err: unknown) =>
      this.#ctx.events.warning(asBackendError(err, 'Restoring the namespace after a new ZooKeeper session'))
    )
    await this.#watches.onNewSession()
  }
}

export default defineDriver({
  name: 'zookeeper',
  summary: "Apache ZooKeeper, laid out as tooz's kazoo driver lays it out: members are ephemeral nodes that vanish with their session, "
    + "membership changes are pushed by watches, and locks and elections use kazoo's lock recipe, so Python tooz processes share groups, "
    + 'locks and leaders.',
  urlForms: [
    'zookeeper://127.0.0.1:2181',
    'kazoo://127.0.0.1:2181?timeout=5',
    'zookeeper://zk1:2181,zk2:2181,zk3:2181/chroot?namespace=tooz',
    'zookeeper://127.0.0.1:2181?hosts=10.0.0.2:2181&hosts=10.0.0.3:2181',
    'zookeeper://user:password@127.0.0.1:2181',
    'zookeeper://[::1]:2181',
    'zookeeper://zk1:2281?use_ssl=true&ca=/etc/zk/ca.pem&certfile=/etc/zk/client.pem&keyfile=/etc/zk/client.key',
  ],
  consistency: 'Writes are linearizable (ordered by the ZooKeeper leader); reads are sequentially consistent per session and may briefly lag '
    + 'writes made through other servers. A member is alive while its session is: a crashed or partitioned member disappears after the '
    + 'session timeout (`timeout`, 10 s), removed by the server. Membership changes reach watchers by push (one persistent watch per '
    + 'watched group on ZooKeeper 3.6+, one-shot child watches before); lock waiters '
    + 'queue in ZooKeeper and are woken by watches. Lock tokens are the czxid of the contender node (the zxid of its create), which only grows for the life of the ensemble, '
    + "even when an operator deletes a lock's node between holders; a shared hold has none.",
  hazards: [
    'tooz lists `locks` as a group and `leader` as a member once locks or elections were used; rollcall hides them when reading and '
    + 'refuses them as group and member ids.',
    'tooz ignores the URL path; rollcall uses it as a chroot. A Python peer reaches the same nodes with `namespace=<chroot>/<namespace>` and no path.',
    'Ids must be ASCII without `/`, control characters, `.` or `..` (tooz encodes ids as ASCII; ZooKeeper refuses the rest).',
    'A password in the URL is %-decoded by rollcall but not by tooz: with %-escapes, Python and Node would use different credentials.',
    'Client-side expiry counts only what the ZooKeeper leader is proven to have seen: a follower cut off from the leader keeps answering pings until '
    + 'syncLimit × tickTime, so the client sends a `sync` every twelfth of the session (a follower must forward it to the leader) and presumes the '
    + 'session expired at the send time of the latest request answered at least a quarter of the timeout (and a sixth more) before an answered sync, '
    + "plus the timeout, less a margin. This relies on the server's tickTime being at most half the negotiated timeout (ZooKeeper's default "
    + 'minSessionTimeout). A server that stops renewing the session (silent, or cut off from the leader) is left for the next one, resuming '
    + 'the session there, a quarter of the timeout before that deadline; a brief cut from every server longer than about half the '
    + 'timeout ends the session on the client. So does a cut of the leader: no server can renew a session until the leader is back or '
    + 'another is elected (after syncLimit × tickTime), and although the new leader keeps the sessions, a session timeout shorter than '
    + 'that is presumed expired on the client meanwhile. About half the session is left when a cut comes, so size it at least twice '
    + 'syncLimit × tickTime plus an election: the partition runs (test/partition/) use 12 s against tickTime 500 ms and syncLimit 5; '
    + 'with 4 s, members on the majority side lost their sessions at cuts of the leader.',
    'After a session is lost (expired by the server, or no server answered for longer than the session timeout) a new session is opened '
    + 'and memberships are restored. A session the client presumed expired may live on at the server for up to a timeout more (a new leader '
    + "restarts every session's clock): the new session deletes the old one's member nodes as it rejoins, and its lock nodes (holds, queued "
    + 'contenders, deletes that failed) once it is up, each only while the old session still owns it, so a lock is not held for nobody '
    + 'meanwhile. A contender whose create failed with the connection may still be committed seconds later (a server cut off from the '
    + "leader holds it until the cut heals), in either session: the client watches that queue's children and deletes the node when it appears.",
    'On a server before 3.6, the first group watch of each session asks for a persistent watch, which the server refuses and then '
    + 'closes the connection: one `suspended`/`reconnected` per session, after which one-shot watches are used.',
    'getLeader() of a group in which nobody ever ran is null (tooz creates the group and its `leader` node when asked).',
    "Shared locks are kazoo's ReadLock (`__rlock__` nodes) and exclusive locks its WriteLock, so kazoo's ReadLock and WriteLock "
    + "interoperate with them. tooz's own exclusive lock is kazoo's plain Lock, which ignores `__rlock__` nodes: **a Python tooz lock is "
    + 'granted while rollcall readers hold the lock** (it does exclude readers that queue after it, and rollcall writers). Do not mix '
    + 'rollcall readers with Python tooz lock holders on one name.',
    "kazoo 2.8's ReadLock (Debian bookworm's) waits on every WriteLock node, even one queued after its own: a Python reader and a "
    + 'rollcall writer that queue at the same moment can each wait for the other until one gives up (a non-blocking Python reader just '
    + 'fails).',
  ],
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberInfo',
    'sessionExpiry',
    'pushWatch',
    'leaderElection',
    'getLeader',
    'locks',
    'lockWaitQueue',
    'sharedLocks',
    'fencing',
    'acrossProcesses',
    'acrossHosts',
  ],
  options: ZOOKEEPER_OPTIONS,
  validateId: idProblem,
  translateError: translateZkError,
  create: (ctx) => new ZookeeperDriver(ctx),
})
