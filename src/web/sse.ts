/**
 * Server-sent events (`GET /v1/events`): what the status page listens to so that rows change by
 * themselves. Each stream opens with a `snapshot` (everything, so a reconnecting page resyncs),
 * then carries one event per change: `service`, `service-removed`, `group`, `group-removed` and
 * `health` (a backend stopped or resumed answering). A comment every `keepAliveMs` keeps proxies
 * from closing an idle stream. close() ends every stream, so the server can stop.
 */
import type { ServerResponse } from 'node:http'
import { baseHeaders, HttpError } from './http.js'

/** Streams one server keeps open at most (503 beyond). */
export const MAX_SSE_CLIENTS = 200

/** A set of open event streams. */
export class EventHub {
  readonly #clients = new Set<ServerResponse>()
  readonly #keepAlive: NodeJS.Timeout
  readonly #onCount: (n: number) => void
  #closed = false

  constructor(options: { keepAliveMs?: number; onCount?: (n: number) => void } = {}) {
    this.#onCount = options.onCount ?? (() => {})
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
    if (this.#clients.size >= MAX_SSE_CLIENTS) throw new HttpError(503, 'TOO_MANY_STREAMS', `This server keeps at most ${MAX_SSE_CLIENTS} event streams open; try again later`)
    res.writeHead(200, { ...baseHeaders(), 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    res.write(`retry: 1000\n\n${frame('snapshot', snapshot)}`)
    this.#clients.add(res)
    this.#onCount(this.#clients.size)
    res.on('close', () => {
      this.#clients.delete(res)
      this.#onCount(this.#clients.size)
    })
  }

  /** Sends one event to every stream. */
  send(event: string, data: unknown): void {
    if (this.#clients.size > 0) this.#write(frame(event, data))
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
    for (const res of this.#clients) res.write(text)
  }
}

/** One SSE frame; JSON has no raw newlines, so one `data:` line carries it. */
function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`
}
