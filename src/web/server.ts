/**
 * The status server: one node:http server running the status routes (status-app.ts: page, JSON
 * API, event stream, Prometheus metrics, health check). No framework. It binds to 127.0.0.1
 * unless told otherwise, and answers only Host names it listens as (421 otherwise: DNS rebinding).
 *
 * It is not part of the package's exports: users reach it as `rollcall serve` (docs/cli.md), which
 * builds it from the configuration; applications mount the same routes in their own server with
 * createStatusHandler() (`rollcall/web`). Inside this package:
 *
 * @example
 * ```ts
 * const coordinator = await connect('redis://127.0.0.1:6379')
 * const server = await startStatusServer({ coordinator, port: 7979 })
 * console.log(`status page: ${server.url}`)
 * // ...
 * await server.close()
 * ```
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { InvalidArgumentError, redactUrl, silentLogger, type MetricsUnavailableError } from '../index.js'
import type { GroupListView } from './groups.js'
import { HostCheck } from './hosts.js'
import { HttpError, sendError } from './http.js'
import { WebMetrics } from './metrics.js'
import { loadPromClient } from './prom.js'
import type { ServiceView } from './services.js'
import { createStatusApp, STATUS_DEFAULTS, StatusApp, type StatusAppOptions } from './status-app.js'

/** Defaults of {@link startStatusServer}. */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 7979,
  ...STATUS_DEFAULTS,
} as const

/** Options of {@link startStatusServer}: what to show (StatusAppOptions) and where to listen. */
export interface StatusServerOptions extends StatusAppOptions {
  /** Default 127.0.0.1. */
  host?: string
  /** Default 7979; 0 picks a free port. */
  port?: number
  /** Host names answered besides the ones the server listens as (`[api] allowed_hosts`); others get 421. */
  allowedHosts?: readonly string[]
}

/** Tokens shorter than this are accepted, with a warning. */
export const MIN_TOKEN_CHARS = 16

/** A running status server. */
export class StatusServer {
  /** `http://host:port/`. */
  readonly url: string
  readonly address: AddressInfo
  /** The routes, views and metrics. */
  readonly app: StatusApp
  readonly #server: Server
  readonly #hosts: HostCheck
  #closing: Promise<void> | undefined

  /** @internal Use startStatusServer(). */
  constructor(server: Server, app: StatusApp, options: StatusServerOptions) {
    this.#server = server
    this.app = app
    this.address = server.address() as AddressInfo
    const host = this.address.family === 'IPv6' ? `[${this.address.address}]` : this.address.address
    this.url = `http://${host}:${this.address.port}/`
    this.#hosts = new HostCheck(options.host ?? DEFAULTS.host, options.allowedHosts)
    server.on('request', (req, res) => void this.#handle(req, res))
  }

  /** The metrics served at /metrics (undefined when prom-client is not installed: /metrics then answers 501 naming the fix). */
  get metrics(): WebMetrics | undefined {
    return this.app.metrics
  }

  get services(): ServiceView | undefined {
    return this.app.services
  }

  get groups(): GroupListView | undefined {
    return this.app.groups
  }

  /** Backend problems to show on the page, credentials redacted. */
  get problems(): string[] {
    return this.app.problems
  }

  /** Stops: ends every event stream and connection, stops the views and timers. Does not stop the ServiceGroup or Coordinator. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.app.close()
      await new Promise<void>((resolve) => {
        this.#server.close(() => resolve())
        this.#server.closeAllConnections()
      })
    })()
    return this.#closing
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.#hosts.allows(req.headers.host)) {
      this.app.metrics?.request('unknown', req.method ?? '', 421)
      return sendError(
        res,
        new HttpError(
          421,
          'MISDIRECTED_REQUEST',
          `This server does not answer for the host name in the Host header (${
            JSON.stringify(String(req.headers.host).slice(0, 100))
          }): it answers IP addresses and ${this.#hosts.names.join(', ')}. Add the name to [api] allowed_hosts to reach it by that name.`,
        ),
      )
    }
    await this.app.handle(req, res)
  }
}

/**
 * Starts the status server: first reads of the views, then listening. Without prom-client
 * installed it still starts; /metrics then answers 501 METRICS_UNAVAILABLE naming the fix, and
 * the logger is told once.
 */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const warn = (message: string): void => (options.logger ?? silentLogger).warn(redactUrl(message))
  checkToken(options.token, warn)
  const metrics = await loadPromClient().then((prom) => new WebMetrics(prom), (err: MetricsUnavailableError) => {
    warn(`${err.message}; /metrics answers 501 until then`)
    return err
  })
  const app = await createStatusApp(options, '', metrics)
  const server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000, maxHeaderSize: 16 * 1024 })
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port ?? DEFAULTS.port, options.host ?? DEFAULTS.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (err) {
    await app.close()
    throw err
  }
  return new StatusServer(server, app, options)
}

/** Refuses a token that no client could send in an Authorization header; warns about a short one. Never shows it. */
function checkToken(token: string | undefined, warn: (message: string) => void): void {
  if (token === undefined) return
  if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
    throw new InvalidArgumentError(
      'The API token (ROLLCALL_API_TOKEN or [api] token) must be visible ASCII without spaces: it travels in an Authorization header (the value is not '
        + 'shown); e.g. openssl rand -hex 16',
    )
  }
  if (token.length < MIN_TOKEN_CHARS) warn(`The API token has ${token.length} characters; use at least ${MIN_TOKEN_CHARS} random ones (openssl rand -hex 16)`)
}
