/**
 * One ZooKeeper session across connections: the host list (shuffled with randomize_hosts, then
 * tried in turn), the session id and password that resume it on another server of the ensemble,
 * requests queued while no connection is up, watches re-registered with setWatches (setWatches2
 * when persistent ones exist) on every new connection, credentials re-sent on every connect, and the chroot.
 *
 * Expiry is decided on the wire (zookeeper-wire.ts): the session is presumed expired once
 * `provenSentAt + timeout - margin` has passed, `provenSentAt` being the send time of the latest
 * request the LEADER is proven to have counted (zookeeper-leader-proof.ts: answered syncs prove
 * it; a follower's own answers do not, as a follower cut off from the leader keeps answering).
 * The leader cannot have expired the session earlier, so a holder gives up its locks before
 * anyone else can take them; and a brief cut, shorter than the timeout less the margin, the
 * relay lag and a sync period, never ends the session on this side. A server that reports the
 * session expired, or refuses its credentials, ends it too.
 *
 * That deadline comes about half a session timeout after the last answer, earlier than the Java
 * client's read timeout (2/3 of the session) would notice a silent server. So a connection that
 * stops renewing the session (a sync unanswered for a sync period) is left once less than
 * moveReserveMs() (a quarter of the timeout) remains before the deadline, and the session is
 * resumed (id and password) on the next server, whose handshake answer proves the leader renewed
 * it: a client whose own server is silently cut off, or cut off from the leader, stays in its
 * session while another server is reachable (issue 27).
 */
import type { ConnectionOptions as TlsOptions } from 'node:tls'
import { formatHosts } from '../../coordination/config/url.js'
import { ConnectionError, OperationTimeoutError } from '../../errors.js'
import { keepListenedTo } from '../../internal/linked-signal.js'
import { sessionHex } from './zookeeper-frames.js'
import type { ZkRequest, ZkResponses } from './zookeeper-ops.js'
import { WatchRegistry, type WatchKind, type ZkWatcher } from './zookeeper-watches.js'
import { now, WireOpenError, ZkWire, type WatchPaths } from './zookeeper-wire.js'

/** What a session reports. */
export type ZkSessionEvent = 'connected' | 'disconnected' | 'expired' | 'authFailed'

/** How to open one session. */
export interface ZkSessionOptions {
  servers: readonly { host: string; port: number }[]
  /** Try servers in random order (kazoo's default) or in the order given. */
  randomizeHosts: boolean
  /** The session timeout asked of the server. */
  sessionTimeoutMs: number
  /** Credentials sent on every connect. */
  auth: readonly { scheme: string; auth: Uint8Array }[]
  /** TLS settings, or undefined for plain TCP. */
  tls: TlsOptions | undefined
  /** A path prefixed to every path sent and removed from every path received ('' for none). */
  chroot: string
  /** Resume this session instead of opening a new one (tests: Curator's KillSession). */
  resume?: { id: Buffer; password: Buffer }
}

/** The share of the session timeout kept in hand against timer lateness: a tenth, 100 ms to 1 s. */
export function expiryMarginMs(timeoutMs: number): number {
  return Math.min(1_000, Math.max(100, timeoutMs / 10))
}

/**
 * The share of the session timeout kept, before the session's deadline, for moving to another
 * server when the current one is not renewing the session: a quarter (zookeeper-session.ts's doc).
 */
export function moveReserveMs(timeoutMs: number): number {
  return timeoutMs / 4
}

/** How often the watchdog sends a sync (the proof of leader contact): each twelfth of the session. */
function syncEveryMs(timeoutMs: number): number {
  return timeoutMs / 12
}

interface Queued {
  req: ZkRequest
  resolve(value: unknown): void
  reject(err: Error): void
  /** Runs synchronously with the reply, before any later notification (watch registration). */
  onReply: ((err: Error | undefined, value: unknown) => void) | undefined
  sent: boolean
  timer: NodeJS.Timeout | undefined
}

/** One session. */
export class ZkSession {
  /** 1 for a connection's first session, +1 for each replacement. */
  readonly generation: number
  /** Aborts when this session is abandoned (lost, or the connection stopped). */
  readonly controller = new AbortController()
  readonly watches = new WatchRegistry()
  /** The session id in hex, once a server granted one. */
  id: string | undefined
  connected = false
  /** How many times this session has connected (1 at first, +1 per reconnect within it). */
  connects = 0
  abandoned = false
  /** The last connect failure, for messages ("ECONNREFUSED", a certificate problem). */
  lastSocketError: string | undefined
  /** The server's version answer to multiRead: false once a server said it does not know it. */
  multiRead = true
  /** Connections in a row whose multiRead requests were lost with them, before any multiRead answer. */
  multiReadDrops = 0
  /** The connection (its `connects` number) that last lost a multiRead: several batches lost at once count once. */
  multiReadDroppedOn = 0
  /** Likewise for addWatch (persistent watches): false once a server said it does not know it. */
  persistentWatches = true
  /** addWatch requests in a row whose connection was lost before the answer. */
  addWatchDrops = 0
  readonly #options: ZkSessionOptions
  readonly #onEvent: (session: ZkSession, event: ZkSessionEvent) => void
  readonly #servers: { host: string; port: number }[]
  readonly #queue = new Set<Queued>()
  #next = 0
  #wire: ZkWire | undefined
  #sessionId = 0n
  #password: Buffer = Buffer.alloc(16)
  #timeoutMs: number
  /** The proven send time carried over from closed connections (see `deadline`). */
  #provenSentAt = now()
  #lastZxid = 0n
  #retry: NodeJS.Timeout | undefined
  #closing = false

  /** Starts connecting; `onEvent` hears the state changes. */
  constructor(options: ZkSessionOptions, generation: number, onEvent: (session: ZkSession, event: ZkSessionEvent) => void) {
    this.#options = options
    this.generation = generation
    this.#onEvent = onEvent
    // Every lock wait of this session listens on it for a while.
    keepListenedTo(this.controller.signal)
    this.#timeoutMs = options.sessionTimeoutMs
    this.#servers = options.servers.map((h) => ({ ...h }))
    if (options.randomizeHosts) {
      for (let i = this.#servers.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1))
        ;[this.#servers[i], this.#servers[j]] = [this.#servers[j]!, this.#servers[i]!]
      }
    }
    if (options.resume) {
      this.#sessionId = options.resume.id.readBigInt64BE(0)
      this.#password = Buffer.from(options.resume.password)
      this.id = sessionHex(this.#sessionId)
    }
    this.#attempt(0)
  }

  /** The negotiated session timeout (the requested one until a server answered). */
  get timeoutMs(): number {
    return this.#timeoutMs
  }

  /** When (now(), monotonic ms) this session is presumed expired unless the leader is proven to have renewed it again. */
  get deadline(): number {
    const proven = Math.max(this.#provenSentAt, this.#wire?.proof.provenSentAt ?? 0)
    return proven + this.#timeoutMs - expiryMarginMs(this.#timeoutMs)
  }

  /** The session id and password (8 and 16 bytes). */
  credentials(): { id: Buffer; password: Buffer } {
    const id = Buffer.alloc(8)
    id.writeBigInt64BE(this.#sessionId)
    return { id, password: Buffer.from(this.#password) }
  }

  /**
   * Sends `req` now or, while disconnected, once connected; rejects with OperationTimeoutError
   * after `timeoutMs` (a request still queued is then dropped), or with the session's end.
   */
  request<K extends ZkRequest['op']>(
    req: Extract<ZkRequest, { op: K }>,
    timeoutMs: number,
    what: string,
    onReply?: (err: Error | undefined, value: unknown) => void,
  ): Promise<ZkResponses[K]> {
    if (this.abandoned) return Promise.reject(this.controller.signal.reason)
    return new Promise((resolve, reject) => {
      const q: Queued = { req: this.#rooted(req), resolve: resolve as (v: unknown) => void, reject, onReply, sent: false, timer: undefined }
      q.timer = setTimeout(() => {
        this.#queue.delete(q)
        const state = this.connected ? 'connected, but the server did not answer' : 'not connected'
        reject(new OperationTimeoutError(`Cannot ${what}: ZooKeeper at ${this.hostList()} did not answer within ${timeoutMs / 1000} s (${state})`))
      }, timeoutMs)
      // Not unref'd: someone awaits this answer, and the process must live to give it (cleared on settle).
      this.#queue.add(q)
      if (this.#wire && this.connected) this.#send(q, this.#wire)
    })
  }

  /** Registers a watcher that a successful read of `path` left on the server. */
  watch(kind: WatchKind, path: string, watcher: ZkWatcher): void {
    this.watches.add(kind, path, watcher)
  }

  /**
   * The watchdog step: pings an idle connection, drops a silent one or one that is not renewing
   * the session in time (moveIfStuck); true once the session is presumed expired.
   */
  check(t: number): boolean {
    if (this.abandoned) return false
    const wire = this.#wire
    if (wire?.closed) this.#onWireClosed(new Error('the connection closed'))
    else if (!this.moveIfStuck(t)) {
      // As ZooKeeper's Java client and kazoo: read timeout 2/3 of the session, a ping after half of
      // that idle; and a sync each twelfth of the session (each watchdog tick), whose answers keep the deadline moving.
      wire?.check(this.#timeoutMs / 3, (this.#timeoutMs * 2) / 3, syncEveryMs(this.#timeoutMs))
    }
    return this.id !== undefined && t > this.deadline
  }

  /**
   * When (now() ms) moveIfStuck() will leave the current connection unless it renews the session
   * first: the deadline less moveReserveMs(); undefined while not connected.
   */
  get movePoint(): number | undefined {
    return this.connected && this.#wire && !this.#wire.closed ? this.deadline - moveReserveMs(this.#timeoutMs) : undefined
  }

  /**
   * Leaves the current connection for the next server, resuming the session there, when the
   * session's deadline is less than moveReserveMs() away and a sync on this connection has gone
   * unanswered for a sync period: the server is silent (cut off from this client, packets
   * vanishing) or cannot reach the leader, and waiting longer would leave no time to resume the
   * session elsewhere before it is presumed expired. True if it left.
   */
  moveIfStuck(t: number): boolean {
    const wire = this.#wire
    if (this.abandoned || !this.connected || !wire || wire.closed) return false
    const leftMs = this.deadline - t
    if (leftMs >= moveReserveMs(this.#timeoutMs)) return false
    const waitedMs = wire.syncUnansweredMs(t)
    if (waitedMs < syncEveryMs(this.#timeoutMs)) return false
    wire.close(
      new ConnectionError(
        `ZooKeeper at ${wire.where} left a sync unanswered for ${Math.round(waitedMs)} ms with ${Math.round(leftMs)} ms left before session 0x${this.id} `
          + 'is presumed expired; resuming it on another server',
      ),
    )
    return true
  }

  /** `host:port,...` for messages. */
  hostList(): string {
    return formatHosts(this.#options.servers)
  }

  /** Drops the current connection (the session reconnects unless abandoned). */
  disconnect(cause: Error): void {
    this.#wire?.close(cause)
  }

  /** Closes the session politely (the server deletes its ephemerals at once); gives up after `waitMs`. */
  async close(waitMs: number): Promise<void> {
    // The server closes the connection after answering: that must not start a reconnect.
    this.#closing = true
    if (!this.connected || !this.#wire) return
    await this.request({ op: 'closeSession' }, waitMs, 'close the session').catch(() => {})
  }

  /** Ends this session for good: no reconnect, every request rejected with `cause`. */
  abandon(cause: Error): void {
    if (this.abandoned) return
    this.abandoned = true
    this.connected = false
    clearTimeout(this.#retry)
    this.controller.abort(cause)
    for (const q of [...this.#queue]) this.#settle(q, cause)
    this.watches.clear()
    this.#wire?.close(cause)
  }

  #rooted<R extends ZkRequest>(req: R): R {
    if (!this.#options.chroot) return req
    const r = req as ZkRequest
    if ('path' in r) return { ...r, path: this.#rootedPath(r.path) } as R
    if (r.op === 'multi' || r.op === 'multiRead') return { ...r, ops: r.ops.map((o) => ({ ...o, path: this.#rootedPath(o.path) })) } as unknown as R
    return req
  }

  #rootedPath(path: string): string {
    const chroot = this.#options.chroot
    return !chroot ? path : path === '/' ? chroot : `${chroot}${path}`
  }

  /** The watches to set again on a new connection, under the chroot as every request is. */
  #rootedWatches(): WatchPaths {
    const paths = this.watches.paths()
    return Object.fromEntries(
      Object.entries(paths).map(([kind, list]: [string, string[]]) => [kind, list.map((path) => this.#rootedPath(path))]),
    ) as unknown as WatchPaths
  }

  #unrooted(path: string): string {
    const chroot = this.#options.chroot
    if (!chroot || !path.startsWith(chroot)) return path
    return path.length === chroot.length ? '/' : path.slice(chroot.length)
  }

  /** A create's answer (a path, or a create2's path and Stat) with the chroot taken off the path. */
  #unrootedCreate(created: ZkResponses['create']): ZkResponses['create'] {
    return typeof created === 'string' ? this.#unrooted(created) : { ...created, path: this.#unrooted(created.path) }
  }

  #send(q: Queued, wire: ZkWire): void {
    q.sent = true
    wire.send(q.req, (err, value) => {
      const v = q.req.op === 'create' && value !== undefined ? this.#unrootedCreate(value as ZkResponses['create']) : value
      if (q.onReply && !this.abandoned) q.onReply(err, v)
      this.#settle(q, err, v)
    })
  }

  #settle(q: Queued, err: Error | undefined, value?: unknown): void {
    if (!this.#queue.delete(q)) return
    clearTimeout(q.timer)
    if (err) q.reject(err)
    else q.resolve(value)
  }

  #attempt(tried: number): void {
    if (this.abandoned || this.#closing) return
    const server = this.#servers[this.#next % this.#servers.length]!
    this.#next += 1
    // As the Java client: the session timeout shared among the servers (a TLS handshake with a
    // cold server can take seconds; a third of a short session was seen too little).
    const connectTimeoutMs = Math.round(Math.max(500, this.#options.sessionTimeoutMs / this.#servers.length))
    const watches = this.watches.size > 0 && this.#sessionId !== 0n ? { zxid: this.#lastZxid, paths: this.#rootedWatches() } : undefined
    ZkWire.open({
      host: server.host,
      port: server.port,
      tls: this.#options.tls,
      connectTimeoutMs,
      auth: this.#options.auth,
      watches,
      handshake: {
        lastZxidSeen: this.#lastZxid,
        timeoutMs: this.#options.sessionTimeoutMs,
        sessionId: this.#sessionId,
        password: this.#password,
        readOnly: false,
      },
      onNotification: (ev) => this.watches.fire(ev, this.#unrooted(ev.path)),
      onClose: (err) => this.#onWireClosed(err),
    }).then((wire) => this.#onOpen(wire), (err: WireOpenError) => {
      if (this.abandoned) return
      this.lastSocketError = err.message
      if (err.failure === 'expired') return this.#onEvent(this, 'expired')
      if (err.failure === 'authFailed') return this.#onEvent(this, 'authFailed')
      // Every server tried once: pause before the next round, as the Java client does.
      const round = tried + 1 >= this.#servers.length
      const delayMs = round ? Math.min(500, Math.max(50, this.#options.sessionTimeoutMs / 20)) : 0
      this.#retry = setTimeout(() => this.#attempt(round ? 0 : tried + 1), delayMs)
      this.#retry.unref()
    })
  }

  #onOpen(wire: ZkWire): void {
    if (this.abandoned || this.#closing) return wire.close(new Error('the session was abandoned'))
    // Closed between the handshake and here: its close found no current wire to report.
    if (wire.closed) return this.#attempt(0)
    const res = wire.session
    if (this.#sessionId !== 0n && res.sessionId !== this.#sessionId) {
      // A server may only resume the session it was asked for; anything else is a new session we did not ask for.
      wire.close(new Error('the server answered with another session'))
      return this.#onEvent(this, 'expired')
    }
    this.#wire = wire
    this.#sessionId = res.sessionId
    this.#password = res.password
    this.#timeoutMs = res.timeoutMs
    this.id = sessionHex(res.sessionId)
    this.connected = true
    this.connects += 1
    for (const q of this.#queue) if (!q.sent) this.#send(q, wire)
    this.#onEvent(this, 'connected')
  }

  #onWireClosed(err: Error): void {
    const wire = this.#wire
    if (!wire) return
    this.#wire = undefined
    if (wire.proof.provenSentAt > this.#provenSentAt) this.#provenSentAt = wire.proof.provenSentAt
    if (wire.lastZxid > this.#lastZxid) this.#lastZxid = wire.lastZxid
    // Requests that were in flight failed with CONNECTION_LOSS; those not sent yet wait for the next connection.
    if (this.abandoned) return
    this.lastSocketError = err.message
    const was = this.connected
    this.connected = false
    if (was) this.#onEvent(this, 'disconnected')
    this.#attempt(0)
  }
}
