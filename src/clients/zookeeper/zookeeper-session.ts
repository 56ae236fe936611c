/**
 * One ZooKeeper session: a node-zookeeper-client 1.1.3 Client and what the library does not track
 * about it (shared/reference/ecosystem.md §1.3).
 *
 * - When a server last answered, so that the session can be presumed expired on the client side
 *   once no server has answered for longer than the negotiated session timeout. The library only
 *   reports EXPIRED when a server says so, which never happens while none answers.
 * - A read timeout. The library has none: a paused or partitioned server keeps it "connected"
 *   forever. check() closes a socket that has heard nothing for 2/3 of the session timeout
 *   (timeout / number of hosts during the handshake), as the Java client does; the library then
 *   reconnects within the session.
 * - Abandoning. A dead session's client is shut for good: its socket destroyed, a connect it had
 *   under way dropped, its pending operations rejected.
 * - A clean slate per socket. The library carries the bytes of a frame cut off by a broken
 *   connection over to the next one; they are dropped when the socket closes.
 *
 * The library's ConnectionManager is reached through four internal methods (socket data, connect,
 * close and error), wrapped per instance, and its pending-frame buffer. This is the one place that
 * depends on the library's internals, and it is pinned to 1.1.3.
 */
import type { Socket } from 'node:net'
import type * as Zk from 'node-zookeeper-client'

/** The node-zookeeper-client module, loaded lazily by the driver. */
export type ZkLib = typeof Zk

/** What a session reports, in the library's terms. */
export type ZkSessionEvent = 'connected' | 'disconnected' | 'expired' | 'authFailed'

/** How to open one session. */
export interface ZkSessionOptions {
  lib: ZkLib
  servers: readonly { host: string; port: number }[]
  /** Try servers in random order (the library's only behaviour) or in the order given. */
  randomizeHosts: boolean
  /** The session timeout asked of the server. */
  sessionTimeoutMs: number
  /** Digest credentials (`user:password`) sent on every connect, or undefined. */
  digestAuth: string | undefined
}

/** The library's ConnectionManager internals used here (node-zookeeper-client 1.1.3). */
interface ConnectionManagerInternals {
  socket: Socket | undefined
  connectTimeoutHandler: NodeJS.Timeout | null
  /** Bytes of a frame not yet complete. */
  pendingBuffer: Buffer | null
  servers: { host: string; port: number | string }[]
  onSocketData(this: ConnectionManagerInternals, buffer: Buffer): void
  onSocketConnected(this: ConnectionManagerInternals): void
  onSocketClosed(this: ConnectionManagerInternals, hadError: boolean): void
  onSocketError(this: ConnectionManagerInternals, err: Error): void
}

/** One library client, i.e. one ZooKeeper session. */
export class ZkSession {
  /** 1 for a connection's first session, +1 for each replacement. */
  readonly generation: number
  readonly client: Zk.Client
  /** Aborts when this session is abandoned (lost, or the connection stopped). */
  readonly controller = new AbortController()
  /** Rejecters of operations in flight on this client. */
  readonly pending = new Set<(err: Error) => void>()
  /** The session id in hex, once a server granted one. */
  id: string | undefined
  connected = false
  /** How many times this session has connected (1 at first, +1 per reconnect within it). */
  connects = 0
  abandoned = false
  /** The last socket error, for messages ("ECONNREFUSED"). */
  lastSocketError: string | undefined
  readonly #cm: ConnectionManagerInternals
  readonly #o: ZkSessionOptions
  /** Last time a server answered within this session: what the server's expiry clock counts from. */
  #heardAt = Date.now()
  /** Last byte (or the TCP connect) on the current socket: what the read timeout counts from. */
  #socketHeardAt = Date.now()
  #socketOpen = false

  /** Creates the client and starts connecting; `onEvent` hears its state changes. */
  constructor(options: ZkSessionOptions, generation: number, onEvent: (session: ZkSession, event: ZkSessionEvent) => void) {
    const { lib } = options
    this.#o = options
    this.generation = generation
    this.client = lib.createClient(options.servers.map((h) => `${h.host}:${h.port}`).join(','), {
      sessionTimeout: options.sessionTimeoutMs,
      spinDelay: Math.min(1_000, Math.max(50, options.sessionTimeoutMs / 10)),
      retries: 0,
    })
    const cm = (this.client as unknown as { connectionManager: ConnectionManagerInternals }).connectionManager
    this.#cm = cm
    if (!options.randomizeHosts) cm.servers = options.servers.map((h) => ({ ...h }))
    this.#hook(cm)
    this.client.on('state', (state) => {
      const { State } = lib
      if (state === State.SYNC_CONNECTED) {
        this.connected = true
        this.connects += 1
        this.#heardAt = Date.now()
        this.id = this.client.getSessionId().toString('hex')
        onEvent(this, 'connected')
      } else if (state === State.DISCONNECTED) {
        if (!this.connected) return
        this.connected = false
        onEvent(this, 'disconnected')
      } else if (state === State.EXPIRED) {
        onEvent(this, 'expired')
      } else if (state === State.AUTH_FAILED) {
        onEvent(this, 'authFailed')
      }
    })
    if (options.digestAuth !== undefined) this.client.addAuthInfo('digest', Buffer.from(options.digestAuth))
    this.client.connect()
  }

  /** The negotiated session timeout (the requested one until a server answered). */
  get timeoutMs(): number {
    return this.id ? this.client.getSessionTimeout() : this.#o.sessionTimeoutMs
  }

  /**
   * The watchdog step: closes a silent socket (the library then reconnects) and returns true when
   * the session must be presumed expired (no server answered for longer than the session timeout).
   */
  check(now: number): boolean {
    if (this.abandoned) return false
    const timeoutMs = this.timeoutMs
    if (this.#socketOpen) {
      // Connected, the server answers our pings (sent after a third of the timeout idle) at once:
      // silence for 2/3 means it is gone. A handshake gets the Java client's connect timeout.
      const limit = this.connected ? (timeoutMs * 2) / 3 : timeoutMs / this.#o.servers.length
      if (now - this.#socketHeardAt > limit) this.#cm.socket?.destroy()
    }
    return this.id !== undefined && !this.connected && now - this.#heardAt > timeoutMs
  }

  /** Closes the session politely (the server deletes its ephemerals at once); gives up after `waitMs`. */
  async close(waitMs: number): Promise<void> {
    if (this.connected) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs)
        timer.unref()
        this.client.once('disconnected', () => {
          clearTimeout(timer)
          resolve()
        })
        this.client.close()
      })
    }
  }

  /** Shuts this client for good: no reconnect, pending operations rejected with `cause`. */
  abandon(cause: Error): void {
    if (this.abandoned) return
    this.abandoned = true
    this.connected = false
    this.controller.abort(cause)
    for (const fail of [...this.pending]) fail(cause)
    try {
      this.client.close()
    } catch {
      // Already closed.
    }
    this.#cm.socket?.destroy()
  }

  /** Wraps the ConnectionManager's socket handlers to see traffic, errors and late connects. */
  #hook(cm: ConnectionManagerInternals): void {
    const { onSocketData, onSocketConnected, onSocketClosed, onSocketError } = cm
    const session = this
    cm.onSocketData = function (buffer) {
      session.#socketHeardAt = Date.now()
      if (session.id) session.#heardAt = session.#socketHeardAt
      onSocketData.call(this, buffer)
    }
    cm.onSocketConnected = function () {
      // An abandoned client may still finish a connect it had started: drop it, never resume the session.
      if (session.abandoned) {
        if (this.connectTimeoutHandler) clearTimeout(this.connectTimeoutHandler)
        return void this.socket?.destroy()
      }
      session.#socketOpen = true
      session.#socketHeardAt = Date.now()
      onSocketConnected.call(this)
    }
    cm.onSocketClosed = function (hadError) {
      session.#socketOpen = false
      // The library keeps an unfinished frame across connections and glues it to the next connect
      // response, parsing garbage (a handshake that hangs, or a bogus session): it dies here.
      this.pendingBuffer = null
      onSocketClosed.call(this, hadError)
    }
    cm.onSocketError = function (err) {
      session.lastSocketError = (err as NodeJS.ErrnoException).code ?? err.message
      onSocketError.call(this, err)
    }
  }
}
