/**
 * A small promise adapter over node-zookeeper-client 1.1.3, and the connection that outlives a
 * session: when one is lost, the next is opened (shared/reference/ecosystem.md §1.3).
 *
 * - Every operation rejects after `opTimeoutMs`. The library queues requests for as long as it is
 *   disconnected, forever; here a timed-out request may still run later, so callers that create
 *   nodes treat a timeout as "maybe done" (the library sends requests in order, so a later read
 *   on the same session sees such a node).
 * - A session is lost when a server says it expired, or when none answered for longer than the
 *   negotiated session timeout (client-side expiry, ZOOKEEPER-4508; see zookeeper-session.ts).
 *   Its client is abandoned and a new one opened, since the library's client stays dead after
 *   expiry. The owner hears `lost`, then `reconnected` once the new session is up.
 * - Nodes this process could not delete because the connection broke are deleted when the same
 *   session reconnects (deleteWhenConnected); a lost session takes them with it.
 */
import type * as Zk from 'node-zookeeper-client'
import { ConnectionError, OperationTimeoutError } from '../../errors.js'
import { ZkSession, type ZkLib, type ZkSessionEvent } from './zookeeper-session.js'

export type { ZkLib } from './zookeeper-session.js'

/** A znode's metadata as the library returns it. */
export type ZkStat = Zk.Stat

/** How a node is created. */
export type ZkCreateMode = 'PERSISTENT' | 'EPHEMERAL' | 'EPHEMERAL_SEQUENTIAL'

/** A one-shot watcher, as the library calls it. */
export type ZkWatcher = (event: Zk.Event) => void

/** What a connection reports to its owner. `connected` is implicit in start() resolving. */
export type ZkSessionState = 'suspended' | 'reconnected' | 'lost'

/** The library's error codes this code branches on (lib/Exception.js). */
export const ZK_CODES = {
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  NO_NODE: -101,
  NO_AUTH: -102,
  BAD_VERSION: -103,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  INVALID_ACL: -114,
  AUTH_FAILED: -115,
} as const

/** The library's error code of `err`, or undefined when it is not one of its errors. */
export function zkCode(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined
  const code = (err as { code?: unknown }).code
  return typeof code === 'number' ? code : undefined
}

/** True for failures after which the same call may work once the connection is back. */
export function isConnectionProblem(err: unknown): boolean {
  const code = zkCode(err)
  return err instanceof ConnectionError || err instanceof OperationTimeoutError ||
    code === ZK_CODES.CONNECTION_LOSS || code === ZK_CODES.SESSION_EXPIRED || code === ZK_CODES.OPERATION_TIMEOUT
}

/** Settings of one ZkConnection. */
export interface ZkConnectionOptions {
  lib: ZkLib
  servers: readonly { host: string; port: number }[]
  /** Try servers in random order (the library's only behaviour) or in the order given. */
  randomizeHosts: boolean
  /** The session timeout asked of the server; the server may negotiate it into its own bounds. */
  sessionTimeoutMs: number
  /** How long start() waits for a first session. */
  connectTimeoutMs: number
  /** How long any one operation may take, queueing included. */
  opTimeoutMs: number
  /** Digest credentials (`user:password`) sent on every connect, or undefined. */
  digestAuth: string | undefined
  /** The ACL of every node created. */
  acl: Zk.ACL[]
  /** The backend as messages name it (redacted URL). */
  shownAs: string
  /** A transport or session change, after the initial connect. */
  onState(state: ZkSessionState, cause?: Error): void
  /** A replacement session is up; runs before `reconnected` is reported. Must not reject. */
  onNewSession(): Promise<void>
}

const SESSION_ID_NONE = '0000000000000000'

/**
 * The ZooKeeper connection of one driver: the current session, its replacement after expiry, and
 * promise-returning operations that always go to the current session.
 */
export class ZkConnection {
  readonly #o: ZkConnectionOptions
  #s: ZkSession | undefined
  readonly #deadSessions = new Set<string>()
  readonly #waiters = new Set<{ resolve: () => void; reject: (err: unknown) => void }>()
  readonly #orphans: { generation: number; parent: string; match: (child: string) => boolean }[] = []
  #tick: NodeJS.Timeout | undefined
  #stopped = false
  #starting: { resolve: () => void; reject: (err: Error) => void } | undefined

  constructor(options: ZkConnectionOptions) {
    this.#o = options
  }

  /** The current session's number: 1 for the first, +1 for each replacement. */
  get generation(): number {
    return this.#s?.generation ?? 0
  }

  /** Aborts when the current session is declared lost. */
  get sessionSignal(): AbortSignal {
    return this.#session().controller.signal
  }

  /** The negotiated session timeout (the requested one until a server answered). */
  get sessionTimeoutMs(): number {
    return this.#s?.timeoutMs ?? this.#o.sessionTimeoutMs
  }

  /** The current session id as 16 hex digits (zeros before the first connect). */
  get sessionId(): string {
    return this.#s?.id ?? SESSION_ID_NONE
  }

  /** True while the current session has a live connection. */
  get isConnected(): boolean {
    return this.#s?.connected ?? false
  }

  /**
   * The current session's id and password, for tests that end the session from another client
   * (Curator's KillSession). @internal
   */
  sessionCredentials(): { id: Buffer; password: Buffer } | undefined {
    const s = this.#s
    return s?.id ? { id: s.client.getSessionId(), password: s.client.getSessionPassword() } : undefined
  }

  /** True when `owner` (a stat's ephemeralOwner, hex) is a session of this connection that was lost. */
  isDeadSession(owner: string): boolean {
    return this.#deadSessions.has(owner)
  }

  /** Opens the first session; rejects with ConnectionError if none is up within connectTimeoutMs. */
  async start(): Promise<void> {
    const s = this.#open(1)
    this.#tick = setInterval(() => this.#onTick(), Math.max(50, Math.min(500, this.#o.sessionTimeoutMs / 10)))
    this.#tick.unref()
    let timer: NodeJS.Timeout | undefined
    try {
      await new Promise<void>((resolve, reject) => {
        this.#starting = { resolve, reject }
        timer = setTimeout(() => {
          const seconds = this.#o.connectTimeoutMs / 1000
          const last = s.lastSocketError ? `; last error: ${s.lastSocketError}` : ''
          reject(new ConnectionError(`Cannot connect to ZooKeeper at ${this.#hostList()}: no server answered within ${seconds} s (${this.#o.shownAs})${last}`))
        }, this.#o.connectTimeoutMs)
        timer.unref()
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
    const stopped = new ConnectionError(`The ZooKeeper connection to ${this.#o.shownAs} was closed`)
    for (const w of this.#waiters) w.reject(stopped)
    this.#waiters.clear()
    const s = this.#s
    if (!s) return
    // A CLOSE_SESSION the server answers deletes our ephemerals at once, not after the timeout.
    await s.close(Math.min(2_000, this.#o.opTimeoutMs))
    s.abandon(stopped)
  }

  /** Resolves once the current session is connected; rejects with the signal's reason on abort. */
  whenConnected(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason)
    if (this.#stopped) return Promise.reject(new ConnectionError(`The ZooKeeper connection to ${this.#o.shownAs} is closed`))
    if (this.#s?.connected) return Promise.resolve()
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
   * connection broke. If the session is lost instead, the server deletes them with it.
   */
  deleteWhenConnected(parent: string, match: (child: string) => boolean): void {
    this.#orphans.push({ generation: this.generation, parent, match })
    if (this.isConnected) void this.#deleteOrphans()
  }

  create(path: string, data: Uint8Array | undefined, mode: ZkCreateMode): Promise<string> {
    const buffer = data ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.alloc(0)
    return this.#op<string>(`create ${path}`, (c, cb) => c.create(path, buffer, this.#o.acl, this.#o.lib.CreateMode[mode], cb))
  }

  remove(path: string, version = -1): Promise<void> {
    return this.#op<void>(`delete ${path}`, (c, cb) => c.remove(path, version, cb))
  }

  getData(path: string, watcher?: ZkWatcher): Promise<{ data: Buffer; stat: ZkStat }> {
    return this.#op<[Buffer | undefined, ZkStat]>(`read ${path}`, (c, cb) => (watcher ? c.getData(path, watcher, cb2(cb)) : c.getData(path, cb2(cb))))
      .then(([data, stat]) => ({ data: data ?? Buffer.alloc(0), stat }))
  }

  setData(path: string, data: Uint8Array, version = -1): Promise<ZkStat> {
    const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    return this.#op<ZkStat>(`write ${path}`, (c, cb) => c.setData(path, buffer, version, cb))
  }

  getChildren(path: string, watcher?: ZkWatcher): Promise<string[]> {
    return this.#op<string[]>(`list ${path}`, (c, cb) => (watcher ? c.getChildren(path, watcher, cb) : c.getChildren(path, cb)))
  }

  /** The node's stat, or null when it does not exist (a watcher then waits for its creation). */
  exists(path: string, watcher?: ZkWatcher): Promise<ZkStat | null> {
    return this.#op<ZkStat | null>(`check ${path}`, (c, cb) => (watcher ? c.exists(path, watcher, cb) : c.exists(path, cb)))
      .then((stat) => stat ?? null)
  }

  /** Deletes several nodes atomically (a multi); rejects with the first failing operation's error. */
  removeAll(paths: readonly string[]): Promise<void> {
    return this.#op<void>(`delete ${paths.join(', ')}`, (c, cb) => {
      const tx = c.transaction()
      for (const p of paths) tx.remove(p, -1)
      tx.commit((err) => cb(err))
    })
  }

  /** Creates `path` and its missing ancestors (persistent, with the ACL), as kazoo's ensure_path. */
  async ensurePath(path: string): Promise<void> {
    const parts = path.split('/').filter((p) => p !== '')
    for (let i = 1; i <= parts.length; i++) {
      const p = `/${parts.slice(0, i).join('/')}`
      // Check first: creating under a parent we may not write answers NO_AUTH even when p exists.
      if (await this.exists(p)) continue
      await this.create(p, undefined, 'PERSISTENT').catch((err: unknown) => {
        if (zkCode(err) !== ZK_CODES.NODE_EXISTS) throw err
      })
    }
  }

  #session(): ZkSession {
    if (!this.#s) throw new ConnectionError(`The ZooKeeper connection to ${this.#o.shownAs} was never started`)
    return this.#s
  }

  #hostList(): string {
    return this.#o.servers.map((h) => `${h.host}:${h.port}`).join(',')
  }

  /** Runs one library call on the current session, with a timeout; rejected if the session is abandoned. */
  #op<T>(what: string, run: (client: Zk.Client, cb: (err: unknown, value?: T) => void) => void): Promise<T> {
    if (this.#stopped) return Promise.reject(new ConnectionError(`Cannot ${what}: the ZooKeeper connection to ${this.#o.shownAs} is closed`))
    const s = this.#session()
    return new Promise<T>((resolve, reject) => {
      const fail = (err: Error): void => {
        settle()
        reject(err)
      }
      const timer = setTimeout(() => {
        const state = s.connected ? 'connected, but the server did not answer' : 'not connected'
        fail(new OperationTimeoutError(`Cannot ${what}: ZooKeeper at ${this.#hostList()} did not answer within ${this.#o.opTimeoutMs / 1000} s (${state})`))
      }, this.#o.opTimeoutMs)
      timer.unref()
      const settle = (): void => {
        clearTimeout(timer)
        s.pending.delete(fail)
      }
      s.pending.add(fail)
      try {
        run(s.client, (err, value) => {
          settle()
          if (err) reject(err)
          else resolve(value as T)
        })
      } catch (err) {
        // The library validates paths and sizes with synchronous asserts.
        fail(err as Error)
      }
    })
  }

  #open(generation: number): ZkSession {
    const { lib, servers, randomizeHosts, sessionTimeoutMs, digestAuth } = this.#o
    const s = new ZkSession({ lib, servers, randomizeHosts, sessionTimeoutMs, digestAuth }, generation, (session, event) => this.#onEvent(session, event))
    this.#s = s
    return s
  }

  #onEvent(s: ZkSession, event: ZkSessionEvent): void {
    if (s !== this.#s || s.abandoned || this.#stopped) return
    if (event === 'connected') {
      for (const w of this.#waiters) w.resolve()
      this.#waiters.clear()
      if (this.#starting) return this.#starting.resolve()
      if (s.connects > 1) {
        void this.#deleteOrphans()
        return this.#o.onState('reconnected')
      }
      // A replacement session: let the owner re-arm watches before saying we are back.
      void this.#o.onNewSession().catch(() => {}).then(() => {
        if (s === this.#s && !this.#stopped) this.#o.onState('reconnected')
      })
    } else if (event === 'disconnected') {
      this.#o.onState('suspended')
    } else if (event === 'expired') {
      this.#lose(s, new ConnectionError(`The ZooKeeper server expired session 0x${s.id ?? '?'}`))
    } else {
      const err = new ConnectionError(`ZooKeeper at ${this.#hostList()} rejected the credentials of ${this.#o.shownAs}`)
      if (this.#starting) return this.#starting.reject(err)
      this.#lose(s, err)
    }
  }

  #onTick(): void {
    const s = this.#s
    if (!s || this.#stopped || !s.check(Date.now())) return
    this.#lose(s, new ConnectionError(`No ZooKeeper server answered for longer than the ${s.timeoutMs} ms session timeout; session 0x${s.id} is presumed expired`))
  }

  /** The session is gone: report it, abandon its client and open a new one. */
  #lose(s: ZkSession, cause: ConnectionError): void {
    if (s !== this.#s || this.#stopped) return
    if (s.id) this.#deadSessions.add(s.id)
    s.abandon(cause)
    this.#orphans.length = 0
    this.#open(s.generation + 1)
    this.#o.onState('lost', cause)
  }

  async #deleteOrphans(): Promise<void> {
    const generation = this.generation
    const due = this.#orphans.filter((o) => o.generation === generation)
    this.#orphans.length = 0
    for (const o of due) {
      try {
        const children = await this.getChildren(o.parent)
        await Promise.all(children.filter(o.match).map((c) => this.remove(`${o.parent}/${c}`).catch((err: unknown) => {
          if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
        })))
      } catch (err) {
        if (zkCode(err) === ZK_CODES.NO_NODE) continue
        // Try again at the next reconnect (or the nodes die with the session).
        if (generation === this.generation) this.#orphans.push(o)
      }
    }
  }
}

/** Adapts the library's (err, data, stat) callbacks to one (err, [data, stat]) value. */
function cb2<A, B>(cb: (err: unknown, value?: [A, B]) => void): (err: unknown, a: A, b: B) => void {
  return (err, a, b) => cb(err, [a, b])
}
