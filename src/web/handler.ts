/**
 * createStatusHandler(): the status page, JSON API, event stream and health check (and, when
 * asked, Prometheus metrics) as a `(req, res, next?)` request handler for the application's own
 * node:http server, and so for express, connect, fastify (through its raw request and response)
 * or koa (`ctx.respond = false`).
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createStatusHandler } from 'rollcall/web'
 * const status = await createStatusHandler({ coordinator, basePath: '/status' })
 * createServer((req, res) => {
 *   if (req.url?.startsWith('/status')) return status(req, res)
 *   res.end('the app')
 * }).listen(8080)
 * ```
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { WebMetrics } from './metrics.js'
import { loadPromClient } from './prom.js'
import { createStatusApp, normaliseBasePath, type NextHandler } from './status-app.js'
import type { StatusAppOptions } from './status-options.js'

/** Options of {@link createStatusHandler}. */
export interface StatusHandlerOptions extends StatusAppOptions {
  /**
   * The path the handler answers under, e.g. `/status` (default: the root). The page is at
   * `/status/` (`/status` redirects there), the API at `/status/v1/...`, the health check at
   * `/status/healthz`. Leave it out when the framework strips the mount path itself (express's
   * `app.use('/status', handler)`).
   */
  basePath?: string
  /**
   * True to serve rollcall's Prometheus metrics at `<basePath>/metrics`, from a registry of the
   * handler's own (loads prom-client: MetricsUnavailableError when it is not installed). Default
   * false. To put them in the application's registry instead, use registerMetrics().
   */
  metrics?: boolean
}

/**
 * A request handler for the status routes. Requests outside its `basePath`, or to no route of
 * it, go to `next` when given (express, connect) and are answered 404 otherwise.
 */
export interface StatusHandler {
  (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void
  /** The path it answers under ('' for the root, else e.g. `/status`). */
  readonly basePath: string
  /** Ends its event streams and stops its reads. Stops neither the coordinator nor the service group. */
  close(): Promise<void>
}

/**
 * Builds the status handler for `options` (a coordinator's groups, a service group's services, or
 * both): reads them once, then keeps them live until close(). Writes (PUT/DELETE on services)
 * need `token`; without one the handler is read-only. It does not check the Host header: that is
 * the application server's business (`rollcall serve` answers only the names it listens as).
 */
export async function createStatusHandler(options: StatusHandlerOptions): Promise<StatusHandler> {
  const basePath = normaliseBasePath(options.basePath)
  const metrics = options.metrics === true ? new WebMetrics(await loadPromClient()) : undefined
  const app = await createStatusApp(options, basePath, metrics)
  const handler = ((req: IncomingMessage, res: ServerResponse, next?: NextHandler): void => void app.handle(req, res, next)) as StatusHandler
  return Object.assign(handler, { basePath, close: () => app.close() })
}
