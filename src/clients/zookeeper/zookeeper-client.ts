/**
 * The ZooKeeper connection of one driver: the current session (zookeeper-session.ts), its
 * replacement once it is lost, and promise-returning operations that always go to the current
 * session (shared/reference/ecosystem.md §1.3).
 *
 * - Every operation rejects after `opTimeoutMs`; one still queued then is dropped, one sent may
 *   still have been applied, so callers that create nodes treat a timeout as "maybe done".
 * - A session is lost when a server says it expired, when it refuses the credentials, or when no
 *   server answered for the session timeout (less a margin) counted from the send time of the
 *   last answered request: client-side expiry (ZOOKEEPER-4508), decided on the wire. The owner
 *   hears `lost`; then onNewSession() at the new session's connect, before any answer on it is
 *   read; then `reconnected` once onNewSession() has settled.
 * - Nodes this process could not delete because the connection broke are deleted when the same
 *   session reconnects (deleteWhenConnected); a lost session takes them with it.
 */
import { formatHosts } from '../../coordination/config/url.js'
import { ConnectionError } from '../../errors.js'
import { STOP_GRACE_MS } from '../../internal/deadline.js'
import { zkCode, ZK_CODES } from './zookeeper-errors.js'
import type { ZkAcl, ZkStat } from './zookeeper-frames.js'
import { ensurePath, multiReadData, readEach, readMany } from './zookeeper-bulk.js'
import { OrphanNodes } from './zookeeper-orphans.js'
import type { ZkCreated, ZkCreateMode, ZkRequest, ZkResponses, ZkWatchMode } from './zookeeper-ops.js'
import { addPersistentWatch, removePersistentWatch } from './zookeeper-persistent.js'
import { expiryMarginMs, ZkSession, type ZkSessionEvent } from './zookeeper-session.js'
import type { WatchKind, ZkWatcher } from './zookeeper-watches.js'
import type { ZkConnectionOptions } from './zookeeper-settings.js'
import { now } from './zookeeper-wire.js'

export { isConnectionProblem, ZK_CODES, zkCode, ZkError } from './zookeeper-errors.js'
export { OPEN_ACL, PERM, type ZkAcl, type ZkStat } from './zookeeper-frames.js'
export type { ZkCreated, ZkCreateMode, ZkWatchMode } from './zookeeper-ops.js'
export type { ZkWatcher, ZkWatchEvent } from './zookeeper-watches.js'
export type { ZkConnectionOptions, ZkSessionState } from './zookeeper-settings.js'

const SESSION_ID_NONE = '0000000000000000'

/**
 * The ZooKeeper connection of one driver: the current session, its replacement after expiry, and
 * promise-returning operations that always go to the current session.
 */
export class ZkConnection {
  readonly #options: ZkConnectionOptions
  #current: ZkSession | undefined
  readonly #deadSessions = new Set<string>()
  readonly #waiters = new Set<{ resolve: () => void; reject: (err: unknown) => void }>()
  readonly #orphans = new OrphanNodes(this)
  #tick: NodeJS.Timeout | undefined
  #expiry: NodeJS.Timeout | undefined
  #stopped = false
  #starting: { resolve: () => void; reject: (err: Error) => void } | undefined

  constructor(options: ZkConnectionOptions) {
    this.#options = options
  }

  /** The current session's number: 1 for the first, +1 for each replacement. */
  get generation(): number {
    return this.#current?.generation ?? 0
  }

  /** Aborts when the current session is declared lost. */
  get sessionSignal(): AbortSignal {
    return this.#session().controller.signal
  }

  /** The negotiated session timeout (the requested one until a server answered). */
  get sessionTimeoutMs(): number {
    return this.#current?.timeoutMs ?? this.#options.sessionTimeoutMs
  }

  /**
   * When (performance.now() ms) the current session is presumed expired unless a server answers
   * again: the send time of the last answered request plus the timeout, less a margin.
   */
  get sessionDeadline(): number {
    return this.#current?.deadline ?? now() + this.#options.sessionTimeoutMs
  }

  /** The current session id as 16 hex digits (zeros before the first connect). */
  get sessionId(): string {
    return this.#current?.id ?? SESSION_ID_NONE
  }

  /** True once stop() was called: nothing will connect again. */
  get stopped(): boolean {
    return this.#stopped
  }

  /** True while the current session has a live connection. */
  get isConnected(): boolean {
    return this.#current?.connected ?? false
  }

  /**
   * The current session's id and password, for tests that end the session from another client
   * (Curator's KillSession). @internal
   */
  sessionCredentials(): { id: Buffer; password: Buffer } | undefined {
    const s = this.#current
    return s?.id ? s.credentials() : undefined
  }

  /** True when `owner` (a stat's ephemeralOwner, hex) is a session of this connection that was lost. */
  isDeadSession(owner: string): boolean {
    return this.#deadSessions.has(owner)
  }

  /** Opens the first session; rejects with ConnectionError if none is up within connectTimeoutMs. */
  async start(): Promise<void> {
    const s = this.#open(1)
    this.#tick = setInterval(() => this.#onTick(), Math.max(50, Math.min(500, this.#options.sessionTimeoutMs / 10)))
    this.#tick.unref()
    this.#armExpiry()
    let timer: NodeJS.Timeout | undefined
    try {
      await new Promise<void>((resolve, reject) => {
        this.#starting = { resolve, reject }
        timer = setTimeout(() => {
          const seconds = this.#options.connectTimeoutMs / 1000
          const last = s.lastSocketError ? `; last error: ${s.lastSocketError}` : ''
          reject(
            new ConnectionError(`Cannot connect to ZooKeeper at ${this.#hostList()}: no server answered within ${seconds} s (${this.#options.shownAs})${last}`),
          )
        }, this.#options.connectTimeoutMs)
      })
    } catch (err) {
      await this.stop()
      throw err
    } finally {
      clearTimeout(timer)
      this.#starting = undefined
    }
  }

  /** Closes the session (the server then deletes its ephemeral nodes) and ends every timer. */
  async stop(): Promise<void> {
    if (this.#stopped) return
    this.#stopped = true
    clearInterval(this.#tick)
    clearTimeout(this.#expiry)
    const stopped = new ConnectionError(`The ZooKeeper connection to ${this.#options.shownAs} was closed`)
    for (const w of this.#waiters) w.reject(stopped)
    this.#waiters.clear()
    const s = this.#current
    if (!s) return
    // A CLOSE_SESSION the server answers deletes our ephemerals at once, not after the timeout.
    await s.close(Math.min(STOP_GRACE_MS, this.#options.opTimeoutMs))
    s.abandon(stopped)
  }

  /** Resolves once the current session is connected; rejects with the signal's reason on abort. */
  whenConnected(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.#stopped) return Promise.reject(new ConnectionError(`The ZooKeeper connection to ${this.#options.shownAs} is closed`))
    if (this.#current?.connected) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        },
        reject,
      }
      const onAbort = (): void => {
        this.#waiters.delete(waiter)
        reject(signal!.reason)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.add(waiter)
    })
  }

  /**
   * Deletes, once connected again within the same session, the children of `parent` that `match`
   * selects: nodes this process created (or may have created) and could not delete because the
   * connection broke. If the session expires on the server instead, they go with it; if it is
   * presumed expired here, they are deleted from the next session while it still owns them
   * (zookeeper-orphans.ts). With `deadOwner` (a session this client presumed expired): from now on,
   * those of its nodes it still owns. With `maybe` (a create that failed with the connection): the
   * nodes it may yet make, looked for again at every reconnect, at every listing of `parent` and
   * whenever its children change.
   */
  deleteWhenConnected(parent: string, match: (child: string) => boolean, options: { deadOwner?: string; maybe?: boolean } = {}): void {
    this.#orphans.add(this.generation, parent, match, options)
    if (this.isConnected) void this.#orphans.deleteNow()
  }

  /** Creates a node; resolves to its path (with the sequence number for a sequential mode). */
  create(path: string, data: Uint8Array | undefined, mode: ZkCreateMode): Promise<string> {
    const req = { op: 'create', path, data: data ?? EMPTY, acl: this.#options.acl, mode, withStat: false } as const
    return this.#op('create', `create ${path}`, req) as Promise<string>
  }

  /** Creates a node (create2, ZooKeeper 3.5+); resolves to its path and Stat, whose czxid is the zxid of this create. */
  createWithStat(path: string, data: Uint8Array | undefined, mode: ZkCreateMode): Promise<ZkCreated> {
    const req = { op: 'create', path, data: data ?? EMPTY, acl: this.#options.acl, mode, withStat: true } as const
    return this.#op('create', `create ${path}`, req) as Promise<ZkCreated>
  }

  remove(path: string, version = -1): Promise<void> {
    return this.#op('delete', `delete ${path}`, { op: 'delete', path, version })
  }

  /** The node's data and stat; a watcher fires once when it changes or is deleted. */
  getData(path: string, watcher?: ZkWatcher): Promise<{ data: Buffer; stat: ZkStat }> {
    return this.#op('getData', `read ${path}`, { op: 'getData', path, watch: !!watcher }, armOnSuccess('data', path, watcher))
  }

  setData(path: string, data: Uint8Array, version = -1): Promise<ZkStat> {
    return this.#op('setData', `write ${path}`, { op: 'setData', path, data, version })
  }

  /** The node's children (getChildren2); a watcher fires once when they change or the node is deleted. */
  async getChildren(path: string, watcher?: ZkWatcher): Promise<string[]> {
    const r = await this.#op('getChildren', `list ${path}`, { op: 'getChildren', path, watch: !!watcher }, armOnSuccess('child', path, watcher))
    // A node a failed create made late, now listed: deleted (zookeeper-orphans.ts).
    if (this.#orphans.dueAmong(this.generation, path, r.children)) void this.#orphans.deleteNow(path)
    return r.children
  }

  /** The node's stat, or null when it does not exist (a watcher then waits for its creation). */
  exists(path: string, watcher?: ZkWatcher): Promise<ZkStat | null> {
    return this.#op(
      'exists',
      `check ${path}`,
      { op: 'exists', path, watch: !!watcher },
      watcher && ((s, err) => {
        if (!err) s.watch('data', path, watcher)
        else if (zkCode(err) === ZK_CODES.NO_NODE) s.watch('exist', path, watcher)
      }),
    ).catch((err: unknown) => {
      if (zkCode(err) === ZK_CODES.NO_NODE) return null
      throw err
    })
  }

  /** Sets a persistent watch until removeWatch() or the session's end; false, none set, on a server without them (zookeeper-persistent.ts). */
  addWatch(path: string, mode: ZkWatchMode, watcher: ZkWatcher): Promise<boolean> {
    return addPersistentWatch(this.#session(), this.#options.opTimeoutMs, path, mode, watcher)
  }

  /** Removes a watcher set by addWatch() (the server's watch goes with the path's last one). */
  removeWatch(path: string, mode: ZkWatchMode, watcher: ZkWatcher): Promise<void> {
    return removePersistentWatch(this.#session(), this.#options.opTimeoutMs, path, mode, watcher)
  }

  /** The node's ACL. */
  async getAcl(path: string): Promise<ZkAcl[]> {
    return (await this.#op('getACL', `read the ACL of ${path}`, { op: 'getACL', path })).acl
  }

  /** Deletes several nodes atomically (a multi); rejects with the first failing operation's error. */
  async removeAll(paths: readonly string[]): Promise<void> {
    await this.#op('multi', `delete ${paths.join(', ')}`, { op: 'multi', ops: paths.map((p) => ({ op: 'delete' as const, path: p, version: -1 })) })
  }

  /**
   * The data of many nodes, in order (undefined for a node that does not exist): multiRead
   * batches (ZooKeeper 3.6+) within the server's jute.maxbuffer, or one getData per node on a
   * server without multiRead (a few hundred out at once); a few batches at a time (zookeeper-bulk.ts). Rejects once
   * `signal` aborts, and with CONNECTION_LOSS when the connection breaks during a multiRead (the
   * caller reads again): never a getData per node in its place, which for a large group was a
   * storm of single reads after every connection loss.
   */
  getDataMany(paths: readonly string[], signal?: AbortSignal): Promise<(Buffer | undefined)[]> {
    return readMany(paths, (batch) => this.#readBatch(batch), signal)
  }

  async #readBatch(paths: readonly string[]): Promise<(Buffer | undefined)[]> {
    const s = this.#session()
    if (s.multiRead && paths.length > 1) {
      try {
        const results = await this.#op('multiRead', `read ${paths.length} nodes`, {
          op: 'multiRead',
          ops: paths.map((p) => ({ op: 'getData' as const, path: p })),
        })
        s.multiReadDrops = 0
        return multiReadData(results)
      } catch (err) {
        const code = zkCode(err)
        if (code === ZK_CODES.UNIMPLEMENTED || code === ZK_CODES.MARSHALLING_ERROR) s.multiRead = false
        else if (code === ZK_CODES.CONNECTION_LOSS && s.multiRead) {
          // A server before 3.6 may drop the connection on an OpCode it does not know instead of answering: two connections
          // in a row lost during a multiRead (several batches lost with one count once: they are failed as it closes, before
          // the next connection is counted) count as such a server.
          if (s.multiReadDroppedOn !== s.connects) {
            s.multiReadDroppedOn = s.connects
            s.multiReadDrops += 1
          }
          if (s.multiReadDrops >= 2) s.multiRead = false
          else throw err
        } else if (code !== ZK_CODES.CONNECTION_LOSS) throw err
        // Here multiRead is given up (by this error or by a batch lost with this one): one getData per node of this batch.
      }
    }
    return readEach(paths, (p) => this.getData(p))
  }

  /** Creates `path` and its missing ancestors (persistent, with the ACL), as kazoo's ensure_path. */
  ensurePath(path: string): Promise<void> {
    return ensurePath(this, path)
  }

  #session(): ZkSession {
    if (!this.#current) throw new ConnectionError(`The ZooKeeper connection to ${this.#options.shownAs} was never started`)
    return this.#current
  }

  #hostList(): string {
    return formatHosts(this.#options.servers)
  }

  /** Sends one request on the current session, with the operation timeout. */
  #op<K extends ZkRequest['op']>(
    kind: K,
    what: string,
    req: Extract<ZkRequest, { op: K }>,
    onReply?: (s: ZkSession, err: Error | undefined) => void,
  ): Promise<ZkResponses[K]> {
    if (this.#stopped) return Promise.reject(new ConnectionError(`Cannot ${what}: the ZooKeeper connection to ${this.#options.shownAs} is closed`))
    const s = this.#session()
    void kind
    return s.request(req, this.#options.opTimeoutMs, what, onReply && ((err) => onReply(s, err)))
  }

  #open(generation: number): ZkSession {
    const { servers, randomizeHosts, sessionTimeoutMs, digestAuth, tls, chroot } = this.#options
    const auth = digestAuth === undefined ? [] : [{ scheme: 'digest', auth: Buffer.from(digestAuth, 'utf8') }]
    const s = new ZkSession(
      { servers, randomizeHosts, sessionTimeoutMs, auth, tls, chroot: chroot ?? '' },
      generation,
      (session, event) => this.#onEvent(session, event),
    )
    this.#current = s
    return s
  }

  #onEvent(s: ZkSession, event: ZkSessionEvent): void {
    if (s !== this.#current || s.abandoned || this.#stopped) return
    if (event === 'connected') {
      for (const w of this.#waiters) w.resolve()
      this.#waiters.clear()
      if (this.#starting) return this.#starting.resolve()
      // What this session (reconnected) or one presumed expired (a replacement session) left behind goes.
      void this.#orphans.deleteNow()
      if (s.connects > 1) return this.#options.onState('reconnected')
      // A replacement session: let the owner re-arm watches before saying we are back.
      void this.#options.onNewSession().catch(() => {}).then(() => {
        if (s === this.#current && !this.#stopped) this.#options.onState('reconnected')
      })
    } else if (event === 'disconnected') {
      this.#options.onState('suspended')
    } else if (event === 'expired') {
      this.#lose(s, new ConnectionError(`The ZooKeeper server expired session 0x${s.id ?? '?'}`))
    } else {
      const err = new ConnectionError(`ZooKeeper at ${this.#hostList()} rejected the credentials of ${this.#options.shownAs}`)
      if (this.#starting) return this.#starting.reject(err)
      this.#lose(s, err)
    }
  }

  /**
   * The watchdog, run after this turn's I/O: timers fire before the event loop reads sockets, so
   * after a stall (a busy machine, a long synchronous task) answers that arrived in time would
   * still be unread when a timer judged the session, and a live session would be called lost.
   */
  #onTick(): void {
    setImmediate(() => {
      const s = this.#current
      if (!s || this.#stopped || !s.check(now())) return
      this.#presumeExpired(s)
    })
  }

  /**
   * A timer at the current session's move point (ZkSession.moveIfStuck) while connected and
   * before it, else at its deadline; re-armed while answers keep moving them. The watchdog tick
   * checks both too, but a tick late would leave less time to move.
   */
  #armExpiry(): void {
    clearTimeout(this.#expiry)
    const s = this.#current
    if (!s || this.#stopped) return
    const t = now()
    const move = s.movePoint
    const at = move !== undefined && move > t ? move : s.deadline
    // Judged after this turn's I/O, as in #onTick().
    this.#expiry = setTimeout(() =>
      setImmediate(() => {
        if (s !== this.#current || this.#stopped) return
        const t = now()
        if (s.id !== undefined && t > s.deadline) return this.#presumeExpired(s)
        s.moveIfStuck(t)
        this.#armExpiry()
      }), Math.max(1, at - t + 1))
    this.#expiry.unref()
  }

  #presumeExpired(s: ZkSession): void {
    // A connection still up but silent is dropped first: the owner hears `suspended`, then `lost`.
    s.disconnect(new ConnectionError('no answer within the session timeout'))
    const margin = expiryMarginMs(s.timeoutMs)
    this.#lose(
      s,
      new ConnectionError(
        `No ZooKeeper server answered within the ${s.timeoutMs} ms session timeout (less a ${margin} ms margin) of the last answered request; `
          + `session 0x${s.id} is presumed expired`,
      ),
    )
  }

  /** The session is gone: report it, abandon its client and open a new one. */
  #lose(s: ZkSession, cause: ConnectionError): void {
    if (s !== this.#current || this.#stopped) return
    if (s.id) this.#deadSessions.add(s.id)
    s.abandon(cause)
    if (s.id) this.#orphans.retire(s.generation, s.id)
    this.#open(s.generation + 1)
    this.#armExpiry()
    this.#options.onState('lost', cause)
  }
}

const EMPTY = new Uint8Array(0)

/** For a read that sets a watch: arms `watcher` on the session once the server accepted the read (none without a watcher). */
function armOnSuccess(kind: WatchKind, path: string, watcher: ZkWatcher | undefined): ((s: ZkSession, err: Error | undefined) => void) | undefined {
  return watcher && ((s, err) => {
    if (!err) s.watch(kind, path, watcher)
  })
}
