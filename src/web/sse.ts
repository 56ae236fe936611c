/**
 * Server-sent events (`GET /v1/events`): what the status page listens to so that rows change by
 * themselves. Each stream opens with a `snapshot` (so a reconnecting page resyncs), then carries
 * one event per change: `service`, `service-removed`, `group`, `group-removed` and `health` (a
 * backend stopped or resumed answering). A comment every `keepAliveMs` keeps proxies from closing
 * an idle stream. close() ends every stream, so the server can stop.
 *
 * Streams are slots, and nothing authenticates who takes one (issue 28.11: 200 idle connections
 * took every slot for good). So:
 *
 * - One client takes at most `maxPerClient` slots. The remote address is the only identity an
 *   unauthenticated client has: a client is an IPv4 address, or an IPv6 /64 (one host's share).
 *   Clients behind one proxy, or on one machine's loopback, count as one.
 * - A stream whose client does not take what is sent is dropped: once more than `maxQueuedBytes`
 *   wait for it, or once data has waited unsent (the socket not draining) for `stallMs`.
 * - Every stream ends after `maxStreamMs`, so that a client that never reads (its kernel buffers
 *   take the little an idle stream sends) holds its slot for a bounded time. The browser's
 *   EventSource reconnects by itself (after the `retry` the stream gave, sending Last-Event-ID)
 *   and, like any new stream, starts again from a fresh snapshot.
 */
import type { ServerResponse } from 'node:http'
import { isIPv6 } from 'node:net'
import { baseHeaders, HttpError } from './http.js'

/** The limits of an {@link EventHub}: streams at once, per client, and how long a stream may lag or live. */
export const SSE_DEFAULTS = {
  /** Streams one server keeps open at most (503 beyond). */
  maxClients: 200,
  /** Streams one client (an IPv4 address or an IPv6 /64) keeps open at most (429 beyond). */
  maxPerClient: 32,
  /** Bytes that may wait to be sent on one stream before it is dropped. */
  maxQueuedBytes: 8 * 1024 * 1024,
  /** How long data may wait unsent on one stream (its socket not draining) before it is dropped. */
  stallMs: 30_000,
  /** How long one stream lives before it is ended (the browser reconnects to a fresh snapshot). */
  maxStreamMs: 10 * 60_000,
  keepAliveMs: 15_000,
} as const

/** Options of an {@link EventHub}; each defaults to its {@link SSE_DEFAULTS} entry. */
export interface EventHubOptions {
  keepAliveMs?: number
  onCount?: (n: number) => void
  maxClients?: number
  maxPerClient?: number
  maxQueuedBytes?: number
  stallMs?: number
  maxStreamMs?: number
}

interface Stream {
  res: ServerResponse
  client: string
  /** Since when data has waited unsent (performance.now() ms); undefined while the socket keeps up. */
  stalledSince: number | undefined
  ends: NodeJS.Timeout
}

/**
 * Who a remote address is, for the per-client limit: the IPv4 address (an IPv4-mapped IPv6 one
 * included), or the first 64 bits of an IPv6 address, which one host usually holds whole.
 */
export function clientOf(address: string | undefined): string {
  if (address === undefined) return 'unknown'
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]!
  if (!isIPv6(address)) return address
  // Expand "::" so that the first four groups can be read.
  const [head = '', tail = ''] = address.split('%')[0]!.split('::')
  const h = head ? head.split(':') : []
  const t = address.includes('::') ? (tail ? tail.split(':') : []) : []
  const groups = [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t]
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '').toLowerCase()).join(':')}::/64`
}

/** A set of open event streams. */
export class EventHub {
  readonly #streams = new Map<ServerResponse, Stream>()
  readonly #perClient = new Map<string, number>()
  readonly #timers: NodeJS.Timeout[]
  readonly #onCount: (n: number) => void
  readonly #o: Required<Omit<EventHubOptions, 'onCount'>>
  #closed = false
  #lastId = 0

  constructor(options: EventHubOptions = {}) {
    this.#onCount = options.onCount ?? (() => {})
    const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined))
    this.#o = { ...SSE_DEFAULTS, ...given } as Required<Omit<EventHubOptions, 'onCount'>>
    const keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), this.#o.keepAliveMs)
    const sweep = setInterval(() => this.#sweep(), Math.max(100, Math.min(this.#o.stallMs / 4, 5000)))
    this.#timers = [keepAlive, sweep]
    for (const t of this.#timers) t.unref()
  }

  /** Open streams. */
  get size(): number {
    return this.#streams.size
  }

  /** Turns `res` into an event stream that starts with `snapshot`; `remoteAddress` is who asks (see clientOf). */
  open(res: ServerResponse, snapshot: unknown, remoteAddress?: string): void {
    if (this.#closed) throw new HttpError(503, 'SHUTTING_DOWN', 'The server is stopping')
    if (this.#streams.size >= this.#o.maxClients) {
      throw new HttpError(503, 'TOO_MANY_STREAMS', `This server keeps at most ${this.#o.maxClients} event streams open; try again later`, {
        'retry-after': '10',
      })
    }
    const client = clientOf(remoteAddress)
    const held = this.#perClient.get(client) ?? 0
    if (held >= this.#o.maxPerClient) {
      throw new HttpError(
        429,
        'TOO_MANY_STREAMS_FROM_CLIENT',
        `This client (${client}) already has ${held} event streams open, the most one client may; close one (a status page tab) and try again`,
        { 'retry-after': '10' },
      )
    }
    res.writeHead(200, { ...baseHeaders(), 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    const stream: Stream = {
      res,
      client,
      stalledSince: undefined,
      // Ends cleanly (not destroyed): the client reconnects after `retry`.
      ends: setTimeout(() => res.end(), this.#o.maxStreamMs),
    }
    stream.ends.unref()
    this.#streams.set(res, stream)
    this.#perClient.set(client, held + 1)
    this.#onCount(this.#streams.size)
    res.on('close', () => this.#forget(stream))
    this.#send(stream, `retry: 1000\n\n${frame('snapshot', snapshot, this.#lastId)}`)
  }

  /** Sends one event to every stream. */
  send(event: string, data: unknown): void {
    if (this.#streams.size > 0) this.#write(frame(event, data, ++this.#lastId))
  }

  /** Ends every stream and accepts no more. */
  close(): void {
    this.#closed = true
    for (const t of this.#timers) clearInterval(t)
    for (const s of [...this.#streams.values()]) {
      this.#forget(s)
      s.res.end()
    }
  }

  #write(text: string): void {
    for (const s of [...this.#streams.values()]) this.#send(s, text)
  }

  #send(s: Stream, text: string): void {
    const { res } = s
    if (res.writableLength + text.length > this.#o.maxQueuedBytes) return this.#drop(s)
    res.write(text, () => {
      if (res.writableLength === 0) s.stalledSince = undefined
    })
    // Not all taken by the socket at once: waiting starts now, until a write's callback finds nothing left.
    if (res.writableLength > 0) s.stalledSince ??= performance.now()
  }

  /** Drops the streams whose data has waited unsent for `stallMs`. */
  #sweep(): void {
    const now = performance.now()
    for (const s of [...this.#streams.values()]) {
      if (s.stalledSince !== undefined && s.res.writableLength > 0 && now - s.stalledSince >= this.#o.stallMs) this.#drop(s)
    }
  }

  /** Too far behind: destroyed (its slot is free at once); a browser reconnects to a fresh snapshot. */
  #drop(s: Stream): void {
    this.#forget(s)
    s.res.destroy()
  }

  #forget(s: Stream): void {
    if (this.#streams.get(s.res) !== s) return
    this.#streams.delete(s.res)
    clearTimeout(s.ends)
    const left = (this.#perClient.get(s.client) ?? 1) - 1
    if (left > 0) this.#perClient.set(s.client, left)
    else this.#perClient.delete(s.client)
    this.#onCount(this.#streams.size)
  }
}

/** One SSE frame; JSON has no raw newlines, so one `data:` line carries it. */
function frame(event: string, data: unknown, id: number): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`
}
