/**
 * One connection to one ZooKeeper server (TCP, or TLS), carrying one session while it lasts:
 * the handshake, auth, setWatches (setWatches2 with persistent watches), requests matched to replies by xid, pings and a read timeout.
 *
 * Session accounting happens here, on the wire: every request records when it was queued for
 * the socket, and `answeredSentAt` is the send time of the latest request the server answered
 * (ping, operation or the handshake). That server may be a follower cut off from the leader,
 * which alone expires sessions, so the session deadline counts from `provenSentAt` instead: the
 * send time of the latest request the leader is proven to have counted (zookeeper-leader-proof.ts),
 * proven by the answers to `sync` requests, which the follower must forward to the leader; the
 * watchdog step sends one every `syncEveryMs`. The session cannot expire on the leader before
 * `provenSentAt + timeout` (ZooKeeper's expiry queue even rounds up to the next tick).
 *
 * Frames that do not parse, oversized frames, replies to nothing and a handshake that does not
 * finish within the connect timeout all close the connection with a typed error; every request
 * in flight then fails with CONNECTION_LOSS (it may or may not have been applied).
 */
import { isIP, connect as tcpConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions as TlsOptions } from 'node:tls'
import { performance } from 'node:perf_hooks'
import { formatHosts } from '../../coordination/config/url.js'
import { ConnectionError } from '../../errors.js'
import { socketHost } from '../../internal/socket-host.js'
import { ZkError, ZkFrameError, ZK_CODES } from './zookeeper-errors.js'
import {
  decodeConnect,
  decodeReply,
  decodeWatchEvent,
  encodeAuth,
  encodeBare,
  encodeConnect,
  encodeSetWatches,
  encodeSetWatches2,
  FrameSplitter,
  OP,
  XID,
  type ConnectRequest,
  type ConnectResponse,
  type WatchEvent,
} from './zookeeper-frames.js'
import { LeaderProof } from './zookeeper-leader-proof.js'
import { decodeResponse, encodeRequest, type ZkRequest } from './zookeeper-ops.js'

/** Watches to re-register on a new connection. */
export interface WatchPaths {
  data: string[]
  exist: string[]
  child: string[]
  /** Persistent watches (addWatch, 3.6+): restored with setWatches2. */
  persistent: string[]
  recursive: string[]
}

/** How to open one connection. */
export interface WireOptions {
  host: string
  port: number
  /** TLS settings, or undefined for plain TCP. */
  tls: TlsOptions | undefined
  handshake: ConnectRequest
  /** Bound on TCP (and TLS) connect plus handshake and auth. */
  connectTimeoutMs: number
  /** Credentials sent right after the handshake, e.g. `{ scheme: 'digest', auth: 'user:password' }`. */
  auth: readonly { scheme: string; auth: Uint8Array }[]
  /** Watches to restore (with the zxid they were current at), or undefined for none. */
  watches: { zxid: bigint; paths: WatchPaths } | undefined
  onNotification(event: WatchEvent): void
  /** The connection ended after open() resolved; `err` says why. */
  onClose(err: Error): void
}

/** Why open() failed. */
export type OpenFailure = 'network' | 'expired' | 'authFailed' | 'readOnly'

/** open()'s rejection. */
export class WireOpenError extends ConnectionError {
  readonly failure: OpenFailure
  constructor(failure: OpenFailure, message: string, cause?: unknown) {
    super(message, { cause, driver: 'zookeeper' })
    this.failure = failure
  }
}

interface Pending {
  req: ZkRequest
  sentAt: number
  done(err: Error | undefined, value?: unknown): void
}

/**
 * Shortest session timeout accepted from a server, in ms. The client keeps at least 100 ms of a
 * session in hand against timer lateness (zookeeper-session.ts) and reads with a timeout of 2/3
 * of it: a shorter grant would be given up as soon as it is made, and a new session opened
 * every few milliseconds. A ZooKeeper server grants two ticks at least (minSessionTimeout).
 */
export const MIN_SESSION_GRANT_MS = 200

/** Largest setWatches frame: Java's client splits them at 128 KiB. */
const SET_WATCHES_BYTES = 128 * 1024

/** Monotonic milliseconds. */
export const now = (): number => performance.now()

/** One open connection. */
export class ZkWire {
  readonly session: ConnectResponse
  /** Send time (now()) of the latest request answered. */
  answeredSentAt: number
  /** What the answers prove the leader counted: `provenSentAt` is what the session deadline runs from. */
  readonly proof: LeaderProof
  /** Highest zxid seen in a reply. */
  lastZxid: bigint
  readonly #socket: Socket
  readonly #options: WireOptions
  readonly #pending = new Map<number, Pending>()
  readonly #pings: number[] = []
  readonly #auths: { sentAt: number; done: (err?: Error) => void }[] = []
  readonly #splitter: FrameSplitter
  #opened = false
  #xid = 1
  #closed: Error | undefined
  #out: Buffer[] = []
  #lastSentAt = now()
  #lastHeardAt = now()
  /** Send time of the last sync the watchdog sent, and whether it is still unanswered. */
  #syncSentAt = now()
  #syncInFlight = false

  private constructor(socket: Socket, o: WireOptions, session: ConnectResponse, sentAt: number, splitter: FrameSplitter) {
    this.#socket = socket
    this.#options = o
    this.session = session
    this.answeredSentAt = sentAt
    this.proof = new LeaderProof(sentAt, session.timeoutMs)
    this.lastZxid = o.handshake.lastZxidSeen
    this.#splitter = splitter
    socket.on('data', (chunk: Buffer) => this.#onData(chunk))
  }

  /** Connects, shakes hands, authenticates and restores watches; rejects with WireOpenError. */
  static open(o: WireOptions): Promise<ZkWire> {
    return new Promise<ZkWire>((resolve, reject) => {
      const where = formatHosts([o])
      const host = socketHost(o.host)
      const socket = o.tls
        ? tlsConnect({ ...o.tls, host, port: o.port, servername: o.tls.servername ?? (isIP(host) || host.includes(':') ? undefined : host) })
        : tcpConnect({ host, port: o.port })
      socket.setNoDelay(true)
      const splitter = new FrameSplitter()
      let sentAt = 0
      let settled = false
      const fail = (failure: OpenFailure, message: string, cause?: unknown): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        socket.destroy()
        reject(new WireOpenError(failure, message, cause))
      }
      const timer = setTimeout(
        () => fail('network', `ZooKeeper at ${where} did not complete the handshake within ${o.connectTimeoutMs} ms`),
        o.connectTimeoutMs,
      )
      timer.unref()
      socket.on('error', (err: NodeJS.ErrnoException) => fail('network', `ZooKeeper at ${where}: ${tlsProblem(err) ?? err.code ?? err.message}`, err))
      socket.on('close', () => fail('network', `ZooKeeper at ${where} closed the connection during the handshake${splitter.cutShort()}`))
      socket.once(o.tls ? 'secureConnect' : 'connect', () => {
        sentAt = now()
        socket.write(encodeConnect(o.handshake))
      })
      const onData = (chunk: Buffer): void => {
        let frames: Buffer[]
        try {
          frames = splitter.push(chunk)
        } catch (err) {
          return fail('network', `ZooKeeper at ${where}: ${(err as Error).message}`, err)
        }
        if (frames.length === 0) return
        let res: ConnectResponse
        try {
          res = decodeConnect(frames[0]!)
        } catch (err) {
          return fail('network', `ZooKeeper at ${where} sent a handshake reply that does not parse: ${(err as Error).message}`, err)
        }
        if (res.timeoutMs <= 0 && o.handshake.sessionId === 0n) {
          // No session to have expired: a server that grants none is broken (try another, after the usual pause).
          return fail('network', `ZooKeeper at ${where} granted a new session a timeout of ${res.timeoutMs} ms; a server must grant a positive one`)
        }
        if (res.timeoutMs <= 0) return fail('expired', `ZooKeeper at ${where} says session 0x${o.handshake.sessionId.toString(16)} has expired`)
        if (res.timeoutMs < MIN_SESSION_GRANT_MS) {
          return fail(
            'network',
            `ZooKeeper at ${where} granted a session timeout of ${res.timeoutMs} ms; at least ${MIN_SESSION_GRANT_MS} ms is needed (check the server's tickTime and minSessionTimeout)`,
          )
        }
        if (res.readOnly) return fail('readOnly', `ZooKeeper at ${where} is in read-only mode (cut off from its quorum); trying another server`)
        socket.removeListener('data', onData)
        socket.removeAllListeners('error')
        socket.removeAllListeners('close')
        const wire = new ZkWire(socket, o, res, sentAt, splitter)
        socket.on('error', (err: NodeJS.ErrnoException) => wire.close(new ConnectionError(`ZooKeeper at ${where}: ${err.code ?? err.message}`, { cause: err })))
        socket.on('close', () => wire.close(new ConnectionError(`ZooKeeper at ${where} closed the connection${splitter.cutShort()}`)))
        for (const frame of frames.slice(1)) wire.#onFrame(frame)
        void wire.#authenticate().then(() => {
          if (wire.#closed) throw wire.#closed
          if (settled) return wire.close(new ConnectionError('the handshake timed out'))
          settled = true
          clearTimeout(timer)
          wire.#opened = true
          wire.#restoreWatches()
          resolve(wire)
        }).catch((err: Error) => {
          wire.close(err)
          fail(err instanceof ZkError && err.code === ZK_CODES.AUTH_FAILED ? 'authFailed' : 'network', `ZooKeeper at ${where}: ${err.message}`, err)
        })
      }
      socket.on('data', onData)
    })
  }

  /** `host:port` of the server, for messages. */
  get where(): string {
    return formatHosts([this.#options])
  }

  /** True once the connection has ended. */
  get closed(): boolean {
    return this.#closed !== undefined
  }

  /** Requests sent and not answered yet. */
  get inFlight(): number {
    return this.#pending.size
  }

  /**
   * Sends `req`; `done` is called, synchronously from the frame that answers it (so that a watch
   * is registered before any later notification is handled), with its decoded reply or a ZkError
   * (the server's code, or CONNECTION_LOSS).
   */
  send(req: ZkRequest, done: (err: Error | undefined, value?: unknown) => void): void {
    if (this.#closed) return done(new ZkError(ZK_CODES.CONNECTION_LOSS, `Cannot ${req.op}: the connection is closed`, { cause: this.#closed }))
    const xid = this.#xid
    this.#xid = this.#xid >= 0x7fffffff ? 1 : this.#xid + 1
    const frame = encodeRequest(xid, req)
    this.#pending.set(xid, { req, sentAt: now(), done })
    this.#write(frame)
  }

  /**
   * The watchdog step: a sync (the proof of leader contact) every `syncEveryMs` while none is
   * unanswered, a ping when nothing was sent for `pingAfterMs`, and the connection closed when
   * nothing was heard for `readTimeoutMs` (a silent or partitioned server).
   */
  check(pingAfterMs: number, readTimeoutMs: number, syncEveryMs: number): void {
    if (this.#closed) return
    const t = now()
    if (t - this.#lastHeardAt > readTimeoutMs) {
      return this.close(
        new ConnectionError(
          `ZooKeeper at ${formatHosts([this.#options])} sent nothing for ${Math.round(t - this.#lastHeardAt)} ms (read timeout ${
            Math.round(readTimeoutMs)
          } ms)`,
        ),
      )
    }
    if (!this.#syncInFlight && t - this.#syncSentAt >= syncEveryMs) {
      this.#syncInFlight = true
      this.#syncSentAt = t
      // Sent without the chroot: a sync's path is only echoed back.
      this.send({ op: 'sync', path: '/' }, () => (this.#syncInFlight = false))
    }
    if (t - this.#lastSentAt >= pingAfterMs) this.ping()
  }

  /** How long (ms, at `t`) the sync in flight has gone unanswered; 0 when none is. */
  syncUnansweredMs(t: number): number {
    return this.#syncInFlight ? t - this.#syncSentAt : 0
  }

  /** Sends a ping now. */
  ping(): void {
    if (this.#closed) return
    this.#pings.push(now())
    this.#write(encodeBare(XID.ping, OP.ping))
  }

  /** Closes the connection (idempotent); requests in flight fail with CONNECTION_LOSS. */
  close(err: Error): void {
    if (this.#closed) return
    this.#closed = err
    this.#socket.destroy()
    const pending = [...this.#pending.values()]
    this.#pending.clear()
    for (const p of pending) p.done(new ZkError(ZK_CODES.CONNECTION_LOSS, `Cannot ${p.req.op}: ${err.message}`, { cause: err }))
    for (const a of this.#auths.splice(0)) a.done(err)
    if (this.#opened) this.#options.onClose(err)
  }

  #write(frame: Buffer): void {
    this.#lastSentAt = now()
    this.#out.push(frame)
    // Requests issued together go out in one write.
    if (this.#out.length === 1) queueMicrotask(() => this.#flush())
  }

  #flush(): void {
    const out = this.#out
    this.#out = []
    if (this.#closed || out.length === 0) return
    this.#socket.write(out.length === 1 ? out[0]! : Buffer.concat(out))
  }

  async #authenticate(): Promise<void> {
    await Promise.all(this.#options.auth.map((a) =>
      new Promise<void>((resolve, reject) => {
        this.#auths.push({ sentAt: now(), done: (err) => (err ? reject(err) : resolve()) })
        this.#write(encodeAuth(a.scheme, a.auth))
      })
    ))
  }

  #restoreWatches(): void {
    const w = this.#options.watches
    if (!w) return
    // setWatches2 only when there are persistent watches: servers before 3.6 know setWatches alone.
    const v2 = w.paths.persistent.length + w.paths.recursive.length > 0
    const kinds = v2 ? (['data', 'exist', 'child', 'persistent', 'recursive'] as const) : (['data', 'exist', 'child'] as const)
    // In chunks, as the Java client does, so that no frame exceeds the server's jute.maxbuffer.
    let chunk: WatchPaths = { data: [], exist: [], child: [], persistent: [], recursive: [] }
    let bytes = 0
    const flush = (): void => {
      if (bytes === 0) return
      this.#write(v2 ? encodeSetWatches2(w.zxid, chunk) : encodeSetWatches(w.zxid, chunk.data, chunk.exist, chunk.child))
      chunk = { data: [], exist: [], child: [], persistent: [], recursive: [] }
      bytes = 0
    }
    for (const kind of kinds) {
      for (const p of w.paths[kind]) {
        const n = Buffer.byteLength(p) + 4
        if (bytes + n > SET_WATCHES_BYTES) flush()
        chunk[kind].push(p)
        bytes += n
      }
    }
    flush()
  }

  #onData(chunk: Buffer): void {
    this.#lastHeardAt = now()
    let frames: Buffer[]
    try {
      frames = this.#splitter.push(chunk)
    } catch (err) {
      return this.close(err as Error)
    }
    for (const f of frames) {
      if (this.#closed) return
      this.#onFrame(f)
    }
  }

  #onFrame(frame: Buffer): void {
    try {
      const reply = decodeReply(frame)
      if (reply.zxid > this.lastZxid) this.lastZxid = reply.zxid
      if (reply.xid === XID.notification) return this.#options.onNotification(decodeWatchEvent(reply.body))
      if (reply.xid === XID.ping) {
        const sentAt = this.#pings.shift()
        if (sentAt === undefined) throw new ZkFrameError('a ZooKeeper server answered a ping that was never sent')
        return this.#answered(sentAt)
      }
      if (reply.xid === XID.auth) {
        const a = this.#auths.shift()
        if (!a) throw new ZkFrameError('a ZooKeeper server answered an auth that was never sent')
        this.#answered(a.sentAt)
        return a.done(reply.err === 0 ? undefined : new ZkError(reply.err, 'The server refused the credentials'))
      }
      if (reply.xid === XID.setWatches) return
      const p = this.#pending.get(reply.xid)
      if (!p) throw new ZkFrameError(`a ZooKeeper server answered xid ${reply.xid}, which is not in flight`)
      this.#pending.delete(reply.xid)
      this.#answered(p.sentAt)
      if (p.req.op === 'sync' && reply.err === 0) this.proof.synced(p.sentAt)
      if (reply.err !== 0) return p.done(new ZkError(reply.err, `Cannot ${p.req.op}${'path' in p.req ? ` ${p.req.path}` : ''}`))
      let value: unknown
      try {
        value = decodeResponse(p.req, reply.body)
        const left = reply.body.remaining
        if (left > 0) throw new ZkFrameError(`a ZooKeeper reply to ${p.req.op} has ${left} bytes left over (a reply of another shape?)`)
      } catch (err) {
        // A rolled-back transaction names its failing operation; anything else is a bad frame,
        // which fails this request with the others in flight (close() below).
        if (err instanceof ZkError) return p.done(err)
        this.#pending.set(reply.xid, p)
        throw err
      }
      p.done(undefined, value)
    } catch (err) {
      this.close(err instanceof ConnectionError ? err : new ZkFrameError(`a ZooKeeper frame does not parse: ${(err as Error).message}`))
    }
  }

  #answered(sentAt: number): void {
    if (sentAt > this.answeredSentAt) this.answeredSentAt = sentAt
    this.proof.answered(sentAt, now())
  }
}

/** A TLS handshake failure in words, naming the certificate problem, or undefined. */
function tlsProblem(err: NodeJS.ErrnoException): string | undefined {
  const code = err.code ?? ''
  if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|SSL|HOSTNAME|ALTNAME/i.test(code) || /certificate|ssl|tls/i.test(err.message)) {
    return `TLS handshake failed (${code || 'TLS'}: ${err.message}); check the ca, certfile and keyfile options, or verify_certs`
  }
  return undefined
}
