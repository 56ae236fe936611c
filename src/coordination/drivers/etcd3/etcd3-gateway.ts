/**
 * A minimal client for etcd's v3 JSON gateway (grpc-gateway), the protocol tooz's etcd3gw driver
 * speaks: `POST {api}/kv/range|put|txn|deleterange`, `lease/grant|keepalive`,
 * `kv/lease/revoke|timetolive`, `auth/authenticate` and the streaming `watch`. Keys and values
 * travel base64-encoded; int64 fields are JSON strings (kept as strings for lease ids, bigint for
 * revisions). Node's own http/https, no dependency.
 *
 * Several endpoints may be given: a request whose connection cannot even be opened moves on to the
 * next one at once (nothing was sent, so nothing can be applied twice); any other transport
 * failure is thrown and the next request starts at the next endpoint. The requests that keep a
 * member alive (lease keepalives, the reads of a beat) are idempotent and may be hedged instead
 * (etcd3-hedge.ts): sent again to the next endpoint while unanswered, the endpoint that answers
 * first becoming the one later requests go to, and the watches on the one left behind moving too.
 * The streaming watch lives in etcd3-watch.ts, the wire forms in etcd3-wire.ts.
 */
import http from 'node:http'
import https from 'node:https'
import { hedged, type HedgePlan } from './etcd3-hedge.js'
import { b64, big, decodeKv, encodeCompare, encodeOp, type Compare, type Json, type KeyValue, type RequestOp, type TxnResult } from './etcd3-wire.js'

export { b64, big, decodeKv, prefixEnd, type Compare, type Json, type KeyValue, type RequestOp, type TxnResult } from './etcd3-wire.js'

/** One etcd endpoint; `label` (`http://host:port`) is what messages show, never a credential. */
export interface Endpoint {
  readonly protocol: 'http:' | 'https:'
  readonly host: string
  readonly port: number
  readonly label: string
}

/** How the gateway is reached. */
export interface GatewayConfig {
  endpoints: readonly Endpoint[]
  /** Per-request bound, also the bound on opening a watch. */
  timeoutMs: number
  /** TLS material for https endpoints (PEM contents). */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer }
  /** etcd user and password: a token from auth/authenticate goes in the Authorization header. */
  auth?: { user: string; password: string }
  /**
   * Told after every exchange whether the transport worked (true) or failed on every endpoint
   * (false). A failure of an exchange that began before the latest success is not told: it
   * belongs to an outage that is already over.
   */
  onTransport?(ok: boolean, cause?: unknown): void
}

/** The transport failed: refused, reset, or no answer in time. `delivered` false: the request surely never reached etcd. */
export class EtcdTransportError extends Error {
  constructor(readonly endpoint: string, message: string, readonly delivered: boolean, options?: { cause?: unknown }) {
    super(`etcd at ${endpoint}: ${message}`, options)
    this.name = 'EtcdTransportError'
  }
}

/** etcd answered with an error (HTTP status and gRPC code as the gateway reports them). */
export class EtcdApiError extends Error {
  constructor(readonly endpoint: string, readonly status: number, readonly grpcCode: number | undefined, readonly detail: string) {
    super(`etcd at ${endpoint} answered ${status}: ${detail}`)
    this.name = 'EtcdApiError'
  }
}

/** gRPC status codes the driver branches on. */
export const GRPC = { DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, FAILED_PRECONDITION: 9, UNAVAILABLE: 14, UNAUTHENTICATED: 16 } as const

/** etcd refused a request because the lease it names no longer exists (revoked, or lapsed). */
export const isLeaseGone = (err: unknown): boolean => err instanceof EtcdApiError && err.grpcCode === GRPC.NOT_FOUND && /lease not found/.test(err.detail)

/** What the gateway needs of a watch (etcd3-watch.ts). @internal */
export interface RestartableWatch {
  /** The endpoint its stream is open on, while one is. */
  readonly endpoint: Endpoint | undefined
  restart(): void
  close(): void
}

/** How an idempotent request is hedged across the endpoints (etcd3-hedge.ts): a copy every `everyMs` while none answered, all within `withinMs`. */
export type Hedge = Pick<HedgePlan, 'everyMs' | 'withinMs'>

/** A failure after which another endpoint may well answer: the transport's, or etcd's unavailable or timed out (no leader, a leader lost). */
const worthAnotherTry = (err: unknown): boolean =>
  err instanceof EtcdTransportError
  || (err instanceof EtcdApiError
    && (err.status === 503 || err.status === 504 || err.status === 408 || err.grpcCode === GRPC.UNAVAILABLE || err.grpcCode === GRPC.DEADLINE_EXCEEDED))

/** A client of one etcd cluster's JSON gateway. */
export class EtcdGateway {
  readonly #config: GatewayConfig
  readonly #agent: http.Agent
  readonly #watches = new Set<RestartableWatch>()
  #current = 0
  #apiPath = '/v3/'
  #token: string | undefined
  #authenticating: Promise<void> | undefined
  #closed = false
  /** When (performance.now()) an exchange last succeeded. */
  #upAtMs = -Infinity

  constructor(config: GatewayConfig) {
    if (config.endpoints.length === 0) throw new TypeError('at least one etcd endpoint is required')
    this.#config = config
    const tls = config.tls ?? {}
    this.#agent = config.endpoints[0]!.protocol === 'https:' ? new https.Agent({ keepAlive: true, ...tls }) : new http.Agent({ keepAlive: true })
  }

  /** The endpoint requests go to first. */
  get endpoint(): Endpoint {
    return this.#config.endpoints[this.#current]!
  }

  /** Every endpoint, for messages. */
  get endpoints(): string {
    return this.#config.endpoints.map((e) => e.label).join(',')
  }

  /** Sets the API prefix: `v3`, `v3beta` or `v3alpha`. */
  setApiVersion(version: string): void {
    this.#apiPath = `/${version}/`
  }

  /** Asks `GET /version` which API prefix this etcd serves: ≥3.4 → v3, 3.3 → v3beta, older → v3alpha (as etcd3gw does). */
  async discoverApiVersion(signal?: AbortSignal): Promise<string> {
    const answer = await this.#request('GET', '/version', undefined, signal, false)
    const [major = 0, minor = 0] = String(answer.etcdserver ?? '').split('.').map(Number)
    return major > 3 || (major === 3 && minor >= 4) ? 'v3' : major === 3 && minor === 3 ? 'v3beta' : 'v3alpha'
  }

  /** Gets a token when the URL carried a user; a server without auth enabled is fine too. */
  authenticate(signal?: AbortSignal): Promise<void> {
    const auth = this.#config.auth
    if (!auth) return Promise.resolve()
    this.#authenticating ??= (async () => {
      try {
        const answer = await this.#request('POST', `${this.#apiPath}auth/authenticate`, { name: auth.user, password: auth.password }, signal, false)
        this.#token = typeof answer.token === 'string' ? answer.token : undefined
      } catch (err) {
        if (!(err instanceof EtcdApiError && /authentication is not enabled/.test(err.detail))) throw err
        this.#token = undefined
      }
    })().finally(() => {
      this.#authenticating = undefined
    })
    return this.#authenticating
  }

  /** Keys in [key, rangeEnd) (just `key` without rangeEnd), with the store revision they were read at; hedged when `hedge` is given. */
  async range(key: Uint8Array, options: { rangeEnd?: Uint8Array; keysOnly?: boolean; hedge?: Hedge } = {}): Promise<{ kvs: KeyValue[]; revision: bigint }> {
    const body: Json = { key: b64(key), keys_only: options.keysOnly ?? false }
    if (options.rangeEnd) body.range_end = b64(options.rangeEnd)
    const answer = await this.#call('kv/range', body, options.hedge)
    return { kvs: (answer.kvs ?? []).map(decodeKv), revision: big(answer.header?.revision) }
  }

  /** Deletes [key, rangeEnd); resolves to how many keys went. */
  async deleteRange(key: Uint8Array, rangeEnd?: Uint8Array): Promise<number> {
    const body: Json = { key: b64(key) }
    if (rangeEnd) body.range_end = b64(rangeEnd)
    return Number((await this.#api('kv/deleterange', body)).deleted ?? 0)
  }

  /** If every comparison holds, runs `success`, else `failure`, atomically. */
  async txn(compare: Compare[], success: RequestOp[], failure: RequestOp[] = []): Promise<TxnResult> {
    const answer = await this.#api('kv/txn', { compare: compare.map(encodeCompare), success: success.map(encodeOp), failure: failure.map(encodeOp) })
    const responses = ((answer.responses ?? []) as Json[]).map((r) => ((r.response_range?.kvs ?? []) as Json[]).map(decodeKv))
    return { succeeded: answer.succeeded === true, revision: big(answer.header?.revision), responses }
  }

  /** Grants a lease; etcd may raise the TTL to its minimum, so the granted TTL is returned. */
  async leaseGrant(ttlSeconds: number, signal?: AbortSignal): Promise<{ id: string; ttlSeconds: number }> {
    const answer = await this.#api('lease/grant', { TTL: ttlSeconds, ID: 0 }, signal)
    return { id: String(answer.ID), ttlSeconds: Number(answer.TTL) }
  }

  /** Refreshes a lease; resolves to its TTL, or -1 when the lease no longer exists. Hedged when `hedge` is given. */
  async leaseKeepAlive(id: string, hedge?: Hedge): Promise<number> {
    const answer = await this.#call('lease/keepalive', { ID: id }, hedge)
    const ttl = answer.result?.TTL
    return ttl === undefined ? -1 : Number(ttl)
  }

  /** Remaining TTL (-1 when gone) and the keys attached to a lease; hedged when `hedge` is given. */
  async leaseTimeToLive(id: string, hedge?: Hedge): Promise<{ ttlSeconds: number; keys: Buffer[] }> {
    const answer = await this.#call('kv/lease/timetolive', { ID: id, keys: true }, hedge)
    return { ttlSeconds: Number(answer.TTL ?? -1), keys: ((answer.keys ?? []) as string[]).map((k) => Buffer.from(k, 'base64')) }
  }

  /** Revokes a lease, deleting its keys; a lease that is already gone is not an error. */
  async leaseRevoke(id: string): Promise<void> {
    try {
      await this.#api('kv/lease/revoke', { ID: id })
    } catch (err) {
      if (!(err instanceof EtcdApiError && err.grpcCode === GRPC.NOT_FOUND)) throw err
    }
  }

  /** Drops every watch connection and resumes each one (after a transport outage: a silent half-open stream is replaced). */
  restartWatches(): void {
    for (const w of this.#watches) w.restart()
  }

  /** Ends every watch and closes every connection. */
  close(): void {
    this.#closed = true
    for (const w of [...this.#watches]) w.close()
    this.#agent.destroy()
  }

  /** @internal A watch starts or ends (see etcd3-watch.ts). */
  track(w: RestartableWatch, live: boolean): void {
    if (live) this.#watches.add(w)
    else this.#watches.delete(w)
  }

  /** @internal Opens a watch stream on the current endpoint. */
  openStream(body: Json): { req: http.ClientRequest; endpoint: Endpoint } {
    const endpoint = this.endpoint
    const req = this.#send(endpoint, 'POST', `${this.#apiPath}watch`, JSON.stringify(body))
    return { req, endpoint }
  }

  /** @internal */
  get closed(): boolean {
    return this.#closed
  }

  /** @internal */
  get timeoutMs(): number {
    return this.#config.timeoutMs
  }

  /** @internal After a failed stream opened at `startedAtMs`: moves on to the next endpoint, re-authenticates on a token error, reports the transport. */
  async recover(err: unknown, startedAtMs: number): Promise<void> {
    if (err instanceof EtcdTransportError) {
      this.#rotate()
      this.#transportFailed(startedAtMs, err)
    } else if (err instanceof EtcdApiError && err.grpcCode === GRPC.UNAUTHENTICATED && this.#config.auth) {
      await this.authenticate()
    }
  }

  /** @internal A stream answered: the transport works. */
  streamUp(): void {
    this.#transportWorked()
  }

  #transportWorked(): void {
    this.#upAtMs = performance.now()
    this.#config.onTransport?.(true)
  }

  /** A stale failure (the exchange began before the latest success, as one sent during a pause that ends in time) says nothing about now. */
  #transportFailed(startedAtMs: number, cause: unknown): void {
    if (startedAtMs >= this.#upAtMs) this.#config.onTransport?.(false, cause)
  }

  /** @internal */
  streamError(e: Json, endpoint: Endpoint): EtcdApiError {
    return new EtcdApiError(
      endpoint.label,
      Number(e.http_code ?? 500),
      e.grpc_code === undefined ? undefined : Number(e.grpc_code),
      String(e.message ?? 'stream error'),
    )
  }

  #rotate(): void {
    this.#current = (this.#current + 1) % this.#config.endpoints.length
  }

  /**
   * Moves on from `failed` if requests still go to it. A request that hung on a cut-off member
   * fails a request timeout after it was sent; if a hedged request has meanwhile moved the current
   * endpoint to a member that answers, rotating from there could send the next requests back round
   * to the cut-off one (seen in the partition runs: a rejoin's txn went to the cut-off member twice,
   * 4 s each, while the beat waiting for it sent no keepalive and the lease lapsed).
   */
  #moveOff(failed: Endpoint): void {
    if (this.endpoint === failed) this.#rotate()
  }

  /** An API call with a token; a rejected token is renewed once. */
  async #api(path: string, body: Json, signal?: AbortSignal): Promise<Json> {
    try {
      return await this.#request('POST', `${this.#apiPath}${path}`, body, signal, true)
    } catch (err) {
      if (!(err instanceof EtcdApiError && err.grpcCode === GRPC.UNAUTHENTICATED && this.#config.auth)) throw err
      await this.authenticate(signal)
      return this.#request('POST', `${this.#apiPath}${path}`, body, signal, true)
    }
  }

  /** An idempotent API call, hedged when `hedge` is given; an error a streaming call (lease/keepalive) answers with is thrown. */
  async #call(path: string, body: Json, hedge: Hedge | undefined): Promise<Json> {
    if (hedge === undefined) {
      const answer = await this.#api(path, body)
      if (answer.error) throw this.streamError(answer.error, this.endpoint)
      return answer
    }
    const endpoints = this.#config.endpoints
    const first = this.#current
    const text = JSON.stringify(body)
    const startedAtMs = performance.now()
    try {
      const { value, endpoint } = await hedged(
        { endpoints: endpoints.length, first, ...hedge },
        (i, signal) => this.#attempt(endpoints[i]!, `${this.#apiPath}${path}`, text, signal),
        worthAnotherTry,
        () => new EtcdTransportError(this.endpoints, `no answer within ${Math.round(hedge.withinMs)} ms`, true),
      )
      if (endpoint !== first) {
        // The first endpoint did not answer in time: later requests go to the one that did, and so do its watches.
        this.#current = endpoint
        for (const w of this.#watches) if (w.endpoint === endpoints[first]) w.restart()
      }
      this.#transportWorked()
      return value
    } catch (err) {
      if (worthAnotherTry(err) && this.#current === first) this.#rotate()
      if (err instanceof EtcdTransportError) this.#transportFailed(startedAtMs, err)
      throw err
    }
  }

  /** One copy of a hedged call on `endpoint`, with a token (renewed once if rejected); an error a streaming call answers with is thrown. */
  async #attempt(endpoint: Endpoint, path: string, text: string, signal: AbortSignal): Promise<Json> {
    let answer: Json
    try {
      answer = await this.#exchange(endpoint, 'POST', path, text, signal, true)
    } catch (err) {
      if (!(err instanceof EtcdApiError && err.grpcCode === GRPC.UNAUTHENTICATED && this.#config.auth)) throw err
      await this.authenticate(signal)
      answer = await this.#exchange(endpoint, 'POST', path, text, signal, true)
    }
    if (answer.error) throw this.streamError(answer.error, endpoint)
    return answer
  }

  /** One request, moving through the endpoints while connections cannot be opened. */
  async #request(method: string, path: string, body: Json | undefined, signal: AbortSignal | undefined, withToken: boolean): Promise<Json> {
    const text = body === undefined ? undefined : JSON.stringify(body)
    const startedAtMs = performance.now()
    let last: unknown
    for (let tried = 0; tried < this.#config.endpoints.length; tried++) {
      const endpoint = this.endpoint
      try {
        const answer = await this.#exchange(endpoint, method, path, text, signal, withToken)
        this.#transportWorked()
        return answer
      } catch (err) {
        if (!(err instanceof EtcdTransportError)) {
          // This member cannot serve (no leader, say): the next request tries another one.
          if (err instanceof EtcdApiError && (err.status === 503 || err.grpcCode === GRPC.UNAVAILABLE)) this.#moveOff(endpoint)
          throw err
        }
        last = err
        this.#moveOff(endpoint)
        // Only a request that never left is safe to send elsewhere: a txn might have been applied.
        if (err.delivered || signal?.aborted) break
      }
    }
    this.#transportFailed(startedAtMs, last)
    throw last
  }

  #exchange(endpoint: Endpoint, method: string, path: string, body: string | undefined, signal: AbortSignal | undefined, withToken: boolean): Promise<Json> {
    return new Promise((resolve, reject) => {
      if (this.#closed) return reject(new EtcdTransportError(endpoint.label, 'the client is closed', false))
      let connected = false
      let settled = false
      const finish = (err: Error | undefined, value?: Json): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (err) reject(err)
        else resolve(value!)
      }
      const req = this.#send(endpoint, method, path, body, withToken)
      const fail = (message: string, cause?: unknown): void => {
        finish(new EtcdTransportError(endpoint.label, message, connected, { cause }))
        req.destroy()
      }
      const timer = setTimeout(() => fail(`no answer within ${this.#config.timeoutMs} ms`), this.#config.timeoutMs)
      // No cause: the signal's reason is a DOMException, whose read-only message error scrubbing cannot rewrite.
      const onAbort = (): void => fail('no answer before the deadline')
      if (signal?.aborted) return onAbort()
      signal?.addEventListener('abort', onAbort, { once: true })
      req.on('socket', (socket) => {
        if (!socket.connecting) connected = true
        else socket.once('connect', () => (connected = true)).once('secureConnect', () => (connected = true))
      })
      req.on('error', (err: NodeJS.ErrnoException) => fail(err.code ? `${err.code} (${err.message})` : err.message, err))
      req.on('response', (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('error', (err) => fail(err.message, err))
        res.on('end', () => {
          let json: Json
          try {
            json = text === '' ? {} : (JSON.parse(text) as Json)
          } catch {
            // Not the gateway speaking: most often a path this etcd does not serve.
            const hint = res.statusCode === 404 ? ` (${path} does not exist here: check api_version; etcd 3.4+ serves v3, 3.3 v3beta, older v3alpha)` : ''
            return finish(new EtcdApiError(endpoint.label, res.statusCode ?? 0, undefined, `${text.trim().slice(0, 200)}${hint}`))
          }
          if (res.statusCode === 200) return finish(undefined, json)
          const detail = String(json.message ?? json.error ?? text).slice(0, 500)
          finish(new EtcdApiError(endpoint.label, res.statusCode ?? 0, json.code === undefined ? undefined : Number(json.code), detail))
        })
      })
    })
  }

  #send(endpoint: Endpoint, method: string, path: string, body: string | undefined, withToken = true): http.ClientRequest {
    const headers: http.OutgoingHttpHeaders = { accept: 'application/json' }
    if (body !== undefined) {
      headers['content-type'] = 'application/json'
      headers['content-length'] = Buffer.byteLength(body)
    }
    if (withToken && this.#token) headers.authorization = this.#token
    const mod = endpoint.protocol === 'https:' ? https : http
    const req = mod.request({ host: endpoint.host, port: endpoint.port, method, path, headers, agent: this.#agent })
    req.end(body)
    return req
  }
}
