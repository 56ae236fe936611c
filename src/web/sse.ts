/**
 * Server-sent events (`GET /v1/events`): what the status page listens to so that rows change by
 * themselves. Each stream opens with a `snapshot` (everything, so a reconnecting page resyncs),
 * then carries one event per change: `service`, `service-removed`, `group`, `group-removed` and
 * `health` (a backend stopped or resumed answering). A comment every `keepAliveMs` keeps proxies
 * from closing an idle stream. close() ends every stream, so the server can stop.
 *
 * A client that stops reading is dropped once more than `maxQueuedBytes` wait for it: its queue
 * would otherwise grow with every change. The browser's EventSource reconnects by itself (sending
 * Last-Event-ID) and, like any new stream, starts again from a fresh snapshot.
 */
import type { ServerResponse } from 'node:http'
import { baseHeaders, HttpError } from './http.js'

/** Streams one server keeps open at most (503 beyond). */
export const MAX_SSE_CLIENTS = 200

/** Bytes that may wait to be sent on one stream before it is dropped (default of `maxQueuedBytes`). */
export const MAX_SSE_QUEUED_BYTES = 8 * 1024 * 1024

/** A set of open event streams. */
export class EventHub {
  readonly #clients = new Set<ServerResponse>()
  readonly #keepAlive: NodeJS.Timeout
  readonly #onCount: (n: number) => void
  readonly #maxQueuedBytes: number
  #closed = false
  #lastId = 0

  constructor(options: { keepAliveMs?: number; onCount?: (n: number) => void; maxQueuedBytes?: number } = {}) {
    this.#onCount = options.onCount ?? (() => {})
    this.#maxQueuedBytes = options.maxQueuedBytes ?? MAX_SSE_QUEUED_BYTES
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), options.keepAliveMs ?? 15_000)
    this.#keepAlive.unref()
  }

  /** Open streams. */
  get size(): number {
    return this.#clients.size
  }

  /** Turns `res` into an event stream that starts with `snapshot`. */
  open(res: ServerResponse, snapshot: unknown): void {
    if (this.#closed) throw new HttpError(503, 'SHUTTING_DOWN', 'The server is stopping')
    if (this.#clients.size >= MAX_SSE_CLIENTS) {
      throw new HttpError(503, 'TOO_MANY_STREAMS', `This server keeps at most ${MAX_SSE_CLIENTS} event streams open; try again later`)
    }
    res.writeHead(200, { ...baseHeaders(), 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    res.write(`retry: 1000\n\n${frame('snapshot', snapshot, this.#lastId)}`)
    this.#clients.add(res)
    this.#onCount(this.#clients.size)
    res.on('close', () => {
      this.#clients.delete(res)
      this.#onCount(this.#clients.size)
    })
  }

  /** Sends one event to every stream. */
  send(event: string, data: unknown): void {
    if (this.#clients.size > 0) this.#write(frame(event, data, ++this.#lastId))
  }

  /** Ends every stream and accepts no more. */
  close(): void {
    this.#closed = true
    clearInterval(this.#keepAlive)
    for (const res of this.#clients) res.end()
    this.#clients.clear()
    this.#onCount(0)
  }

  #write(text: string): void {
    const before = this.#clients.size
    for (const res of this.#clients) {
      if (res.writableLength + text.length > this.#maxQueuedBytes) {
        // Too far behind: drop it (its 'close' handler forgets it); it reconnects to a fresh snapshot.
        this.#clients.delete(res)
        res.destroy()
        continue
      }
      res.write(text)
    }
    if (this.#clients.size !== before) this.#onCount(this.#clients.size)
  }
}

/** One SSE frame; JSON has no raw newlines, so one `data:` line carries it. */
function frame(event: string, data: unknown, id: number): string {
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`
}
