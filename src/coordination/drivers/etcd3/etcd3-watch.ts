/**
 * etcd's streaming watch over the JSON gateway: `POST {api}/watch` with a `create_request`, then
 * one JSON message per line for as long as the connection lasts.
 *
 * A watch is kept open until close(): after a break it reconnects (with backoff, through the
 * gateway's endpoints) from the revision after the last event it delivered, so a change made
 * meanwhile is still reported, in order. Only a compaction of that history loses events, and
 * `onGap` says so.
 */
import type http from 'node:http'
import { b64, big, decodeKv, EtcdApiError, EtcdTransportError, type Endpoint, type EtcdGateway, type Json, type KeyValue } from './etcd3-gateway.js'

/** A watch event. A PUT without a `type` field is how the gateway writes PUT. */
export interface EtcdWatchEvent {
  type: 'PUT' | 'DELETE'
  kv: KeyValue
}

/** What a watch reports. */
export interface WatchHandlers {
  onEvents(events: EtcdWatchEvent[]): void
  /** History was compacted past the resume point: some events are gone; re-read the state. */
  onGap?(): void
}

/** What a watch is on. */
export interface WatchRequest {
  key: Uint8Array
  rangeEnd?: Uint8Array
  /** First revision to report; default: changes after the watch is created. */
  startRevision?: bigint
  filters?: ('NOPUT' | 'NODELETE')[]
}

/** One connection of a watch, as its readers see it. */
interface Stream {
  readonly endpoint: Endpoint
  /** etcd confirmed the watch. */
  created: boolean
  /** The connection is over (broken() ran). */
  done: boolean
  /** Ends the connection for `err`, reconnecting unless the watch was closed. */
  broken(err: Error): void
  /** etcd confirmed the watch at `revision`. */
  onCreated(revision: unknown): void
}

const WATCH_RETRY_FIRST_MS = 100
const WATCH_RETRY_MAX_MS = 2_000

/** One watch; see the file comment. Build it with openWatch(). */
export class Watch {
  readonly #gw: EtcdGateway
  readonly #request: WatchRequest
  readonly #handlers: WatchHandlers
  /** The first revision not yet delivered; undefined until etcd told us where the watch started. */
  #next: bigint | undefined
  #req: http.ClientRequest | undefined
  #retry: NodeJS.Timeout | undefined
  #failures = 0
  #closed = false
  /** The current connection is being dropped on purpose (restart): no endpoint change, no outage report. */
  #planned = false
  /** The endpoint of the stream while it is up (etcd confirmed it, and it has not broken). */
  #upOn: Endpoint | undefined

  constructor(gw: EtcdGateway, request: WatchRequest, handlers: WatchHandlers) {
    this.#gw = gw
    this.#request = request
    this.#handlers = handlers
    this.#next = request.startRevision
    gw.track(this, true)
  }

  /** Opens the stream; rejects if the first attempt fails. */
  open(): Promise<void> {
    return this.#connect()
  }

  /** The endpoint the watch's stream is up on; undefined while it is opening or reconnecting. */
  get endpoint(): Endpoint | undefined {
    return this.#upOn
  }

  /** Replaces the connection now, resuming where it left off (on the gateway's current endpoint). */
  restart(): void {
    if (this.#closed || !this.#req) return
    this.#planned = true
    this.#req.destroy()
  }

  /** Ends the watch for good. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#retry)
    this.#req?.destroy()
    this.#req = undefined
    this.#gw.track(this, false)
  }

  #connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const startedAtMs = performance.now()
      const { req, endpoint } = this.#gw.openStream({ create_request: this.#createRequest() })
      this.#req = req
      const stream: Stream = { endpoint, created: false, done: false, broken: () => {}, onCreated: () => {} }
      const timer = setTimeout(
        () => req.destroy(new EtcdTransportError(endpoint.label, `the watch was not confirmed within ${this.#gw.timeoutMs} ms`, false)),
        this.#gw.timeoutMs,
      )
      stream.broken = (err: Error): void => {
        if (stream.done) return
        stream.done = true
        clearTimeout(timer)
        req.destroy()
        if (this.#req === req) {
          this.#req = undefined
          this.#upOn = undefined
        }
        if (!stream.created) reject(err)
        if (this.#closed) return
        const planned = this.#planned
        this.#planned = false
        if (planned) this.#failures = 0
        // A stream that was up breaks now; one still opening may have been sent during an outage already over.
        const recovering = planned ? Promise.resolve() : this.#gw.recover(err, stream.created ? performance.now() : startedAtMs).catch(() => {})
        if (stream.created || planned) void recovering.then(() => this.#reconnectLater())
      }
      stream.onCreated = (revision: unknown): void => {
        stream.created = true
        if (this.#req === req) this.#upOn = endpoint
        clearTimeout(timer)
        this.#failures = 0
        this.#gw.streamUp()
        // Without a start revision the watch reports changes after the creation revision.
        this.#next ??= big(revision) + 1n
        resolve()
      }
      req.on(
        'error',
        (err: NodeJS.ErrnoException) =>
          stream.broken(err instanceof EtcdTransportError ? err : new EtcdTransportError(endpoint.label, err.code ?? err.message, true, { cause: err })),
      )
      req.on('close', () => stream.broken(new EtcdTransportError(endpoint.label, 'the watch stream closed', true)))
      req.on('response', (res) => this.#read(res, stream))
    })
  }

  /** The create_request: resuming after the last delivered revision once there is one. */
  #createRequest(): Json {
    const create: Json = { key: b64(this.#request.key) }
    if (this.#request.rangeEnd) create.range_end = b64(this.#request.rangeEnd)
    if (this.#next !== undefined) create.start_revision = String(this.#next)
    if (this.#request.filters) create.filters = this.#request.filters
    return create
  }

  /** Reads the stream's JSON lines; anything malformed, an error or a refusal breaks the stream. */
  #read(res: http.IncomingMessage, stream: Stream): void {
    let buffer = ''
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => {
      buffer += chunk
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = buffer.slice(0, nl).trim()
        buffer = buffer.slice(nl + 1)
        if (line === '' || stream.done) continue
        let msg: Json
        try {
          msg = JSON.parse(line) as Json
        } catch {
          return stream.broken(new EtcdApiError(stream.endpoint.label, res.statusCode ?? 0, undefined, `not JSON: ${line.slice(0, 200)}`))
        }
        if (msg.error) return stream.broken(this.#gw.streamError(msg.error, stream.endpoint))
        const ended = this.#onResult((msg.result ?? {}) as Json, stream)
        if (ended) return stream.broken(ended)
      }
    })
    res.on('error', (err) => stream.broken(new EtcdTransportError(stream.endpoint.label, err.message, true, { cause: err })))
    if (res.statusCode !== 200) stream.broken(new EtcdApiError(stream.endpoint.label, res.statusCode ?? 0, undefined, 'the watch was refused'))
  }

  /** One watch response: its creation, events or progress; a cancellation comes back as the error that ends the stream. */
  #onResult(r: Json, stream: Stream): Error | undefined {
    if (r.created) stream.onCreated(r.header?.revision)
    if (r.canceled) {
      const compacted = big(r.compact_revision)
      if (compacted > 0n) {
        // The history we wanted is gone: resume from the oldest kept revision and re-read.
        this.#next = compacted
        this.#handlers.onGap?.()
      }
      return new EtcdApiError(stream.endpoint.label, 200, undefined, `watch canceled${r.cancel_reason ? `: ${r.cancel_reason}` : ''}`)
    }
    const events = ((r.events ?? []) as Json[]).map((e): EtcdWatchEvent => ({ type: e.type === 'DELETE' ? 'DELETE' : 'PUT', kv: decodeKv(e.kv ?? {}) }))
    if (events.length > 0) {
      const last = events.reduce((m, e) => (e.kv.modRevision > m ? e.kv.modRevision : m), 0n)
      if (this.#next === undefined || last + 1n > this.#next) this.#next = last + 1n
      this.#handlers.onEvents(events)
    } else if (!r.created && r.header?.revision !== undefined && this.#next !== undefined) {
      // A progress notification: everything up to this revision was delivered.
      const rev = big(r.header.revision) + 1n
      if (rev > this.#next) this.#next = rev
    }
    return undefined
  }

  #reconnectLater(): void {
    if (this.#closed || this.#gw.closed) return
    const delay = this.#failures === 0 ? 0 : Math.min(WATCH_RETRY_MAX_MS, WATCH_RETRY_FIRST_MS * 2 ** (this.#failures - 1))
    this.#failures += 1
    clearTimeout(this.#retry)
    this.#retry = setTimeout(() => {
      if (this.#closed) return
      this.#connect().catch(() => {
        // broken() already scheduled nothing for a stream that never opened: try again.
        this.#reconnectLater()
      })
    }, delay)
    this.#retry.unref()
  }
}

/** Opens a watch; resolves once etcd confirmed it, so that every later change is reported. */
export async function openWatch(gw: EtcdGateway, request: WatchRequest, handlers: WatchHandlers): Promise<Watch> {
  const w = new Watch(gw, request, handlers)
  try {
    await w.open()
  } catch (err) {
    w.close()
    throw err
  }
  return w
}
