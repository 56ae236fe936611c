/**
 * A small memcached client for the text protocol, classic and meta commands, over node:net or
 * node:tls. It exists because no npm client exposes what tooz's layout needs all at once: raw
 * client flags (1 = bytes, 2 = msgpack), `gets`/`cas`, multi-key `get`, and the meta commands
 * (`ms`/`md`/`mg`, memcached ≥ 1.6.10) that make compare-and-delete possible.
 *
 * - One connection, pipelined: requests are written as they come (those of one tick in one write)
 *   and replies matched in order.
 * - Hosts are a fail-over list: the first that connects and answers `stats` is used, and every
 *   reconnect starts again from the first. Keys are never sharded over hosts.
 * - A request without a reply within `requestTimeoutMs` fails with MemcachedTimeoutError and the
 *   connection is closed (later replies could no longer be matched). The next request reconnects.
 * - ERROR and CLIENT_ERROR replies close the connection too (memcached may be out of step with
 *   us after one); SERVER_ERROR (e.g. "object too large for cache") does not.
 * - So does a reply that does not parse (memcached-protocol.ts reads strictly, values up to
 *   MAX_VALUE_BYTES), and any byte that arrives with no request awaiting it: the request fails
 *   with MemcachedProtocolError, the others pending with MemcachedConnectionError.
 */
import { isIP, connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'
import { formatHosts } from '../../coordination/config/url.js'
import { socketHost } from '../../internal/socket-host.js'
import {
  CRLF,
  checkKey,
  exptime,
  parseKeys,
  parseMeta,
  parseTtls,
  parseStats,
  parseValues,
  parseVersion,
  preview,
  simple,
  type MemcachedItem,
  type MetaReply,
  type Parser,
  type ServerStats,
  type StoreResult,
} from './memcached-protocol.js'
import { newConn, settle, type Conn } from './memcached-conn.js'
import { MemcachedConnectionError, MemcachedProtocolError, MemcachedServerError, MemcachedTimeoutError } from './memcached-errors.js'

export { MAX_KEY_BYTES, MAX_VALUE_BYTES, exptime, keyProblem, type MemcachedItem, type MetaReply, type StoreResult } from './memcached-protocol.js'
export { MemcachedConnectionError, MemcachedKeyError, MemcachedProtocolError, MemcachedServerError, MemcachedTimeoutError } from './memcached-errors.js'

/** The server the client is connected to. */
export interface MemcachedServer extends ServerStats {
  host: string
  port: number
}

/** A `host:port` to connect to. */
export interface MemcachedHost {
  host: string
  port: number
}

/** How the client connects and how long it waits. */
export interface MemcachedClientOptions {
  /** Fail-over list: the first host that answers is used. */
  hosts: readonly MemcachedHost[]
  /** Bound on connecting plus the `stats` handshake, per host. */
  connectTimeoutMs: number
  /** Bound on each reply. */
  requestTimeoutMs: number
  /** TLS options (node:tls), or undefined for plain TCP. */
  tls?: ConnectionOptions
  /** A connection was made (`reconnect` after a previous one closed) or broke. */
  onConnected?(server: MemcachedServer, reconnect: boolean): void
  onDisconnected?(cause: Error): void
}

const STORE_REPLIES = { STORED: 'stored', NOT_STORED: 'notStored', EXISTS: 'exists', NOT_FOUND: 'notFound' } as const
// One-line and meta replies carry no state between requests: one parser per command serves all.
const STORE_PARSERS = {
  set: simple('set', STORE_REPLIES),
  add: simple('add', STORE_REPLIES),
  replace: simple('replace', STORE_REPLIES),
  cas: simple('cas', STORE_REPLIES),
}
const DELETE_PARSER = simple('delete', { DELETED: true, NOT_FOUND: false })
const TOUCH_PARSER = simple('touch', { TOUCHED: true, NOT_FOUND: false })
const META_PARSERS = { mg: parseMeta('mg'), ms: parseMeta('ms'), md: parseMeta('md'), ma: parseMeta('ma') }

/** A pipelined connection to one memcached server (of a fail-over list). */
export class MemcachedClient {
  readonly #options: MemcachedClientOptions
  readonly #sockets = new Set<Socket>()
  #conn: Conn | undefined
  #connecting: Promise<Conn> | undefined
  #server: MemcachedServer | undefined
  #everConnected = false
  #closed = false
  #requests = 0

  constructor(options: MemcachedClientOptions) {
    if (options.hosts.length === 0) throw new TypeError('MemcachedClient needs at least one host')
    this.#options = options
  }

  /** Commands sent so far (each get, gets, set, ... counts one, however many keys it names). */
  get requestCount(): number {
    return this.#requests
  }

  /** The server in use, once connected. */
  get server(): MemcachedServer | undefined {
    return this.#server
  }

  /** Connects now (requests otherwise connect on demand). */
  async connect(): Promise<MemcachedServer> {
    await this.#ensure()
    return this.#server!
  }

  /** Closes the connection for good; pending requests fail. */
  async close(): Promise<void> {
    this.#closed = true
    this.#conn = undefined
    await Promise.all([...this.#sockets].map((socket) =>
      new Promise<void>((resolve) => {
        socket.once('close', () => resolve())
        socket.destroy()
      })
    ))
  }

  /** Multi-get: one `get` (or `gets`, with `cas`) naming every key; missing keys are absent from the map. */
  get(keys: readonly string[], withCas = false): Promise<Map<string, MemcachedItem>> {
    if (keys.length === 0) return Promise.resolve(new Map())
    keys.forEach(checkKey)
    const command = withCas ? 'gets' : 'get'
    return this.#request(`${command} ${keys.join(' ')}\r\n`, undefined, parseValues(command, keys), command)
  }

  /** Which of `keys` exist: one `get` naming them all, whose values are skipped unread. */
  present(keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return Promise.resolve(new Set())
    keys.forEach(checkKey)
    return this.#request(`get ${keys.join(' ')}\r\n`, undefined, parseKeys(keys), 'get')
  }

  /**
   * The remaining lifetime of each of `keys` that exists, in whole seconds as memcached counts it
   * (-1: no expiry), in one round trip: `mg <key> t` per key, then `mn` to mark the end
   * (memcached ≥ 1.6.10). A key reported with n seconds lapses between n − 1 and n seconds later.
   */
  ttls(keys: readonly string[]): Promise<Map<string, number>> {
    if (keys.length === 0) return Promise.resolve(new Map())
    keys.forEach(checkKey)
    return this.#request(`${keys.map((k) => `mg ${k} t\r\n`).join('')}mn\r\n`, undefined, parseTtls(keys), 'mg')
  }

  /** One key with its CAS value, or undefined when it is absent. */
  async gets(key: string): Promise<MemcachedItem | undefined> {
    return (await this.get([key], true)).get(key)
  }

  /** set/add/replace/cas: stores `value` with client `flags` and an expiry in seconds (0 = never). */
  store(command: 'set' | 'add' | 'replace' | 'cas', key: string, value: Uint8Array, flags: number, exptimeSeconds: number, cas?: bigint): Promise<StoreResult> {
    checkKey(key)
    if (command === 'cas' && cas === undefined) throw new TypeError('cas needs a CAS value')
    const head = `${command} ${key} ${flags >>> 0} ${exptime(exptimeSeconds)} ${value.length}${command === 'cas' ? ` ${cas}` : ''}\r\n`
    return this.#request(head, value, STORE_PARSERS[command], command)
  }

  /** Deletes a key; false when it was absent. */
  delete(key: string): Promise<boolean> {
    checkKey(key)
    return this.#request(`delete ${key}\r\n`, undefined, DELETE_PARSER, 'delete')
  }

  /** Sets a new expiry (seconds) without changing the value or its CAS; false when the key is absent. */
  touch(key: string, exptimeSeconds: number): Promise<boolean> {
    checkKey(key)
    return this.#request(`touch ${key} ${exptime(exptimeSeconds)}\r\n`, undefined, TOUCH_PARSER, 'touch')
  }

  /** The server's version string. */
  version(): Promise<string> {
    return this.#request('version\r\n', undefined, parseVersion, 'version')
  }

  /**
   * A meta command (`mg`, `ms`, `md`, `ma`; memcached ≥ 1.6.10) with its flags, e.g.
   * `meta('ms', key, ['ME', 'F1', 'T30', 'c'], value)` adds a key and returns its CAS, and
   * `meta('ma', key, ['N0', 'J0', 'v'])` increments a counter (created at 0) and returns its value.
   */
  meta(command: 'mg' | 'ms' | 'md' | 'ma', key: string, flags: readonly string[], value?: Uint8Array): Promise<MetaReply> {
    checkKey(key)
    const head = `${command} ${key}${command === 'ms' ? ` ${value?.length ?? 0}` : ''}${flags.map((f) => ` ${f}`).join('')}\r\n`
    return this.#request(head, command === 'ms' ? value ?? new Uint8Array() : undefined, META_PARSERS[command], command)
  }

  #request<T>(head: string, data: Uint8Array | undefined, parse: Parser<T>, command: string): Promise<T> {
    const payload = data === undefined ? Buffer.from(head) : Buffer.concat([Buffer.from(head), data, CRLF])
    // Write at once when connected, so that requests leave in the order they were made.
    if (this.#conn) return this.#write(this.#conn, payload, parse, command, this.#options.requestTimeoutMs)
    return this.#ensure().then((conn) => this.#write(conn, payload, parse, command, this.#options.requestTimeoutMs))
  }

  #write<T>(conn: Conn, payload: Buffer, parse: Parser<T>, command: string, timeoutMs: number): Promise<T> {
    this.#requests += 1
    return new Promise<T>((resolve, reject) => {
      const deadline = performance.now() + timeoutMs
      conn.pending.push({ command, parse, resolve: resolve as (v: unknown) => void, reject, timeoutMs, deadline })
      this.#arm(conn, deadline)
      // Requests made in one tick (a heartbeat's set, lock refreshes and probes) leave in one write.
      if (!conn.corked) {
        conn.corked = true
        conn.socket.cork()
        process.nextTick(() => {
          conn.corked = false
          conn.socket.uncork()
        })
      }
      conn.socket.write(payload)
    })
  }

  /** Makes sure the connection's timer fires by `at`. */
  #arm(conn: Conn, at: number): void {
    if (conn.timer !== undefined && conn.timerAt <= at) return
    clearTimeout(conn.timer)
    conn.timerAt = at
    conn.timer = setTimeout(() => this.#expire(conn), Math.max(1, Math.ceil(at - performance.now())))
    conn.timer.unref()
  }

  /** The connection timer fired: fail an overdue request, or wait for the earliest next deadline. */
  #expire(conn: Conn): void {
    conn.timer = undefined
    const now = performance.now()
    let next = Number.POSITIVE_INFINITY
    for (const entry of conn.pending) {
      if (entry.deadline <= now) {
        const err = new MemcachedTimeoutError(`memcached sent no reply to ${entry.command} within ${entry.timeoutMs} ms`)
        settle(conn, entry, err)
        // Replies are matched by position: once one is skipped, the connection is unusable.
        this.#drop(conn, err)
        return
      }
      next = Math.min(next, entry.deadline)
    }
    if (next < Number.POSITIVE_INFINITY) this.#arm(conn, next)
  }

  /** Stops using a connection (new requests reconnect) and closes it. */
  #drop(conn: Conn, cause?: Error): void {
    if (this.#conn === conn) this.#conn = undefined
    conn.socket.destroy(cause)
  }

  #onData(conn: Conn, chunk: Buffer): void {
    if (conn.pending.length === 0) return this.#unasked(conn, chunk)
    if (!conn.reader.push(chunk)) return
    while (conn.pending.length > 0) {
      const entry = conn.pending[0]!
      let result: { value: unknown } | undefined
      try {
        result = entry.parse(conn.reader)
      } catch (thrown) {
        const err = thrown instanceof MemcachedServerError || thrown instanceof MemcachedProtocolError
          ? thrown
          : new MemcachedProtocolError(`a reply that does not parse (${(thrown as Error).message})`, entry.command)
        settle(conn, entry, err)
        if (err instanceof MemcachedServerError && err.kind === 'SERVER_ERROR') continue
        this.#drop(conn, err)
        return
      }
      if (result === undefined) return
      settle(conn, entry, undefined, result.value)
    }
    if (conn.reader.unread > 0) this.#unasked(conn, conn.reader.buf.subarray(conn.reader.pos, conn.reader.pos + conn.reader.unread))
  }

  /**
   * Bytes came that no request asked for: they are not kept (they would be taken for the next
   * request's reply), and the connection is dropped.
   */
  #unasked(conn: Conn, bytes: Buffer): void {
    this.#drop(conn, new MemcachedProtocolError(`${bytes.length} bytes that no request asked for (${preview(bytes)})`, undefined))
  }

  #ensure(): Promise<Conn> {
    if (this.#closed) return Promise.reject(new MemcachedConnectionError('The memcached client is closed'))
    if (this.#conn) return Promise.resolve(this.#conn)
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = undefined
    })
    return this.#connecting
  }

  async #open(): Promise<Conn> {
    const failures: string[] = []
    for (const h of this.#options.hosts) {
      const at = formatHosts([h])
      let conn: Conn | undefined
      try {
        conn = this.#attach(await this.#dial(h))
        // "Answers" means a stats reply, not just an accepted TCP connection.
        const server = await this.#write(conn, Buffer.from('stats\r\n'), parseStats(), 'stats', this.#options.connectTimeoutMs)
        if (this.#closed) throw new MemcachedConnectionError('The memcached client is closed')
        // Dropped as the handshake ended (bytes after the stats reply that nothing asked for).
        if (conn.socket.destroyed) throw new MemcachedConnectionError('the connection was dropped right after the stats reply')
        this.#server = { host: h.host, port: h.port, ...server }
        conn.established = true
        this.#conn = conn
        const reconnect = this.#everConnected
        this.#everConnected = true
        this.#options.onConnected?.(this.#server, reconnect)
        return conn
      } catch (err) {
        if (conn) this.#drop(conn)
        if (this.#closed) throw new MemcachedConnectionError('The memcached client is closed')
        failures.push(`${at} (${(err as Error).message})`)
      }
    }
    throw new MemcachedConnectionError(`Cannot connect to memcached at ${failures.join(', ')}`)
  }

  #dial(h: MemcachedHost): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const tls = this.#options.tls
      const host = socketHost(h.host)
      const socket = tls
        ? tlsConnect({ ...tls, host, port: h.port, servername: isIP(host) || host.includes(':') ? undefined : host })
        : netConnect({ host, port: h.port })
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
      let settled = false
      const done = (err?: Error): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        socket.off('error', done)
        if (!err && this.#closed) err = new MemcachedConnectionError('The memcached client is closed')
        if (err) {
          socket.destroy()
          reject(err)
        } else resolve(socket)
      }
      const timer = setTimeout(
        () => done(new MemcachedTimeoutError(`no connection within ${this.#options.connectTimeoutMs} ms`)),
        this.#options.connectTimeoutMs,
      )
      timer.unref()
      socket.once(tls ? 'secureConnect' : 'connect', () => done())
      socket.once('error', done)
      socket.once('close', () => done(new MemcachedConnectionError('the connection closed while connecting')))
    })
  }

  #attach(socket: Socket): Conn {
    const conn = newConn(socket)
    socket.setNoDelay(true)
    socket.setKeepAlive(true)
    let cause: Error | undefined
    socket.on('data', (chunk: Buffer) => this.#onData(conn, chunk))
    socket.on('error', (err) => (cause ??= err))
    socket.on('close', () => {
      clearTimeout(conn.timer)
      conn.timer = undefined
      if (this.#conn === conn) this.#conn = undefined
      const err = new MemcachedConnectionError(`The connection to memcached closed${cause ? ` (${cause.message})` : ''}`, { cause })
      for (const entry of [...conn.pending]) settle(conn, entry, err)
      if (conn.established && !this.#closed) this.#options.onDisconnected?.(err)
    })
    return conn
  }
}
