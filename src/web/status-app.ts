/**
 * The status server's routes (status page, JSON API, event stream, Prometheus metrics, health
 * check) as one request handler, apart from any listening socket: `rollcall serve` runs it in a
 * node:http server of its own (server.ts), and an application mounts it in its own server, under
 * a `basePath`, through createStatusHandler().
 *
 * It shows services when given a ServiceGroup, coordination groups when given a Coordinator (an
 * observer: it joins nothing), or both. Without a token it is read-only (writes answer 403 saying
 * how to enable them); with one, every write needs `Authorization: Bearer <token>`. Nothing it
 * sends contains a credential from a URL.
 */
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { InvalidArgumentError, MetricsUnavailableError, RollcallError, redactUrl, silentLogger, type Logger } from '../index.js'
import { deleteService, getGroup, getService, listGroups, listServices, updateService } from './api.js'
import { feedCoordinatorMetrics } from './feed.js'
import { GROUP_QUERY_KEYS, GroupListView, MAX_GROUP_PAGE, PAGE_GROUPS, pageOfGroups, parseGroupQuery, type GroupQuery } from './groups.js'
import { checkHealth } from './health.js'
import { HttpError, authorizeWrite, baseHeaders, readJson, sendError, sendJson } from './http.js'
import type { WebMetrics } from './metrics.js'
import { pageCsp, renderPage, type PageInfo } from './page.js'
import { parseServiceFilter, SERVICE_FILTER_KEYS, ServiceView } from './services.js'
import { EventHub } from './sse.js'
import type { StatusAppOptions } from './status-options.js'

export type { StatusAppOptions } from './status-options.js'

/** Defaults shared by the status server and createStatusHandler(). */
export const STATUS_DEFAULTS = {
  refreshMs: 1000,
  heartbeatProbeMs: 5000,
} as const

type Handler = (req: IncomingMessage, res: ServerResponse, match: RegExpExecArray, url: URL) => Promise<void>

interface Route {
  name: string
  pattern: RegExp
  methods: Partial<Record<'GET' | 'PUT' | 'DELETE', Handler>>
}

/** Called by a framework (express, connect) for requests the handler leaves to the next one. */
export type NextHandler = (err?: unknown) => void

/**
 * `metrics` of a StatusApp: the metrics to serve at `metrics`, the error to answer there when
 * prom-client is missing, or undefined for no such route.
 */
export type StatusAppMetrics = WebMetrics | MetricsUnavailableError | undefined

/** The status routes with their views and event stream, answering requests under `basePath`. */
export class StatusApp {
  readonly services: ServiceView | undefined
  readonly groups: GroupListView | undefined
  readonly metrics: WebMetrics | undefined
  /** The path the routes are under ('' at the root, else `/status`: no trailing slash). */
  readonly basePath: string
  readonly #metricsError: MetricsUnavailableError | undefined
  readonly #hub: EventHub
  readonly #options: StatusAppOptions
  readonly #info: PageInfo
  readonly #routes: Route[]
  readonly #logger: Logger
  #stopFeed: (() => void) | undefined
  #closing: Promise<void> | undefined

  constructor(
    options: StatusAppOptions,
    parts: { basePath: string; metrics: StatusAppMetrics; hub: EventHub; services?: ServiceView; groups?: GroupListView },
  ) {
    this.#options = options
    this.basePath = parts.basePath
    this.metrics = parts.metrics instanceof MetricsUnavailableError ? undefined : parts.metrics
    this.#metricsError = parts.metrics instanceof MetricsUnavailableError ? parts.metrics : undefined
    this.#hub = parts.hub
    this.services = parts.services
    this.groups = parts.groups
    this.#logger = options.logger ?? silentLogger
    const sg = options.serviceGroup
    const c = options.coordinator
    this.#info = {
      title: options.title ?? 'rollcall',
      services: sg ? { driver: sg.driverName, catalog: redactUrl(sg.catalog.shownAs) } : undefined,
      coordination: c ? { url: redactUrl(c.url), driver: c.driverName, hasLeader: c.capabilities.has('getLeader') } : undefined,
      readOnly: options.token === undefined,
      metrics: parts.metrics !== undefined,
    }
    this.#routes = this.#table()
  }

  /** Backend problems to show on the page, credentials redacted. */
  get problems(): string[] {
    const out: string[] = []
    if (this.services?.error) out.push(`Services cannot be read: ${redactUrl(this.services.error.message)}`)
    if (this.groups?.error) out.push(`Groups cannot be read: ${redactUrl(this.groups.error.message)}`)
    return out
  }

  /** Wires the views to the event stream and starts the coordinator's metrics. */
  start(): void {
    const problems = (): void => this.#hub.send('health', { problems: this.problems })
    this.services?.on('changed', (row) => this.#hub.send('service', row)).on('removed', (e) => this.#hub.send('service-removed', e)).on('health', problems)
    this.groups?.on('changed', (row) => this.#hub.send('group', row)).on('removed', (e) => this.#hub.send('group-removed', e)).on('health', problems)
    const c = this.#options.coordinator
    if (c && this.metrics) this.#stopFeed = feedCoordinatorMetrics(c, this.metrics, this.#options.heartbeatProbeMs ?? STATUS_DEFAULTS.heartbeatProbeMs)
  }

  /** Ends every event stream, stops the views and the metrics feed. Stops neither the ServiceGroup nor the Coordinator. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopFeed?.()
      this.#hub.close()
      this.services?.stop()
      await this.groups?.stop()
    })()
    return this.#closing
  }

  /**
   * Answers one request. A path outside `basePath`, or under it with no route, goes to `next` when
   * given (express, connect) and is answered 404 otherwise; `basePath` itself is redirected to
   * `basePath/`, where the page is (its links are relative to it).
   */
  async handle(req: IncomingMessage, res: ServerResponse, next?: NextHandler): Promise<void> {
    let routeName: string | undefined
    const metrics = this.metrics
    if (metrics) res.once('finish', () => routeName !== undefined && metrics.request(routeName, req.method ?? '', res.statusCode))
    try {
      const url = new URL(req.url ?? '/', 'http://status.invalid')
      let path = url.pathname
      if (this.basePath !== '') {
        if (path === this.basePath) {
          res.writeHead(308, { ...baseHeaders(), location: `${this.basePath}/${url.search}` })
          res.end()
          return
        }
        if (!path.startsWith(`${this.basePath}/`)) {
          if (next) return next()
          throw this.#notFound(path)
        }
        path = path.slice(this.basePath.length)
      }
      const route = this.#routes.find((r) => r.pattern.test(path))
      if (!route) {
        if (next) return next()
        routeName = 'unknown'
        throw this.#notFound(path)
      }
      routeName = route.name
      const method = req.method === 'HEAD' ? 'GET' : req.method
      const handler = route.methods[method as keyof Route['methods']]
      if (!handler) {
        const allow = Object.keys(route.methods).flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])).join(', ')
        throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${route.name} takes ${allow}`, { allow })
      }
      await handler(req, res, route.pattern.exec(path)!, url)
    } catch (err) {
      if (!(err instanceof HttpError) && !(err instanceof RollcallError)) {
        this.#logger.error(`Unexpected error serving ${req.method} ${redactUrl(req.url ?? '')}: ${redactUrl((err as Error)?.stack ?? String(err))}`)
      }
      sendError(res, err)
    }
  }

  #notFound(path: string): HttpError {
    const b = this.basePath
    const routes = ['/v1/services', '/v1/groups', '/v1/events', ...(this.#info.metrics ? ['/metrics'] : []), '/healthz'].map((r) => b + r)
    return new HttpError(404, 'ROUTE_NOT_FOUND', `No route ${path.slice(0, 200)}; see ${b}/ for the page and ${routes.join(', ')}`)
  }

  #table(): Route[] {
    const json = (fn: (req: IncomingMessage, m: RegExpExecArray, url: URL) => Promise<unknown>, status = 200): Handler => async (req, res, m, url) =>
      sendJson(res, status, await fn(req, m, url))
    const write = (fn: (req: IncomingMessage, m: RegExpExecArray) => Promise<unknown>): Handler => async (req, res, m) => {
      authorizeWrite(req, this.#options.token)
      const out = await fn(req, m)
      if (out === undefined) {
        res.writeHead(204, baseHeaders())
        res.end()
      } else {
        sendJson(res, 200, out)
      }
    }
    const routes: Route[] = [
      { name: '/', pattern: /^\/$/, methods: { GET: (req, res, _m, url) => this.#page(res, url) } },
      { name: '/v1/services', pattern: /^\/v1\/services$/, methods: { GET: json((_r, _m, url) => listServices(this.services, url.searchParams)) } },
      {
        name: '/v1/services/{id}',
        pattern: /^\/v1\/services\/([^/]+)$/,
        methods: {
          GET: json((_r, m) => getService(this.services, m[1]!)),
          PUT: write(async (req, m) => updateService(this.services, m[1]!, await readJson(req))),
          DELETE: write(async (_r, m) => deleteService(this.services, m[1]!)),
        },
      },
      { name: '/v1/groups', pattern: /^\/v1\/groups$/, methods: { GET: json((_r, _m, url) => listGroups(this.groups, url.searchParams)) } },
      { name: '/v1/groups/{group}', pattern: /^\/v1\/groups\/([^/]+)$/, methods: { GET: json((_r, m) => getGroup(this.groups, m[1]!)) } },
      {
        name: '/v1/events',
        pattern: /^\/v1\/events$/,
        methods: {
          GET: async (req, res, _m, url) => {
            if (req.method !== 'HEAD') return this.#hub.open(res, this.#snapshot(this.#groupQuery(url, MAX_GROUP_PAGE)), req.socket.remoteAddress)
            res.writeHead(200, { ...baseHeaders(), 'content-type': 'text/event-stream; charset=utf-8' })
            res.end()
          },
        },
      },
      {
        name: '/healthz',
        pattern: /^\/healthz$/,
        methods: {
          GET: async (_req, res) => {
            const health = await checkHealth({
              serviceGroup: this.#options.serviceGroup,
              services: this.services,
              coordinator: this.#options.coordinator,
              refreshMs: this.#options.refreshMs ?? STATUS_DEFAULTS.refreshMs,
            })
            sendJson(res, health.status === 'ok' ? 200 : 503, health)
          },
        },
      },
    ]
    if (this.#info.metrics) {
      routes.push({
        name: '/metrics',
        pattern: /^\/metrics$/,
        methods: {
          GET: async (_req, res) => {
            if (!this.metrics) throw this.#metricsError
            const body = await this.metrics.text()
            res.writeHead(200, { ...baseHeaders(), 'content-type': this.metrics.contentType, 'content-length': Buffer.byteLength(body) })
            res.end(body)
          },
        },
      })
    }
    return routes
  }

  /** What a new stream starts with: every service, and the page of groups its query asks for (as /v1/groups: with members unless empty=1). */
  #snapshot(groupQuery: GroupQuery): unknown {
    return { services: this.services?.rows, groups: pageOfGroups(this.groups?.rows ?? [], groupQuery).groups, problems: this.problems }
  }

  /** The group parameters of a page or stream address (its service filter aside), `limit` defaulting to `defaultLimit`. */
  #groupQuery(url: URL, defaultLimit: number): GroupQuery {
    const q = parseGroupQuery(url.searchParams, SERVICE_FILTER_KEYS)
    if (!url.searchParams.has('limit')) q.limit = defaultLimit
    return q
  }

  async #page(res: ServerResponse, url: URL): Promise<void> {
    const filter = parseServiceFilter(new URLSearchParams([...url.searchParams].filter(([k]) => !(GROUP_QUERY_KEYS as readonly string[]).includes(k))))
    const groupQuery = this.#groupQuery(url, PAGE_GROUPS)
    const groups = pageOfGroups(this.groups?.rows ?? [], groupQuery)
    const nonce = randomBytes(16).toString('base64')
    const html = renderPage({
      info: this.#info,
      services: this.services?.rows ?? [],
      groups: groups.groups,
      groupQuery,
      nextGroups: groups.next_cursor,
      filter,
      problems: this.problems,
      nonce,
      now: new Date(),
    })
    res.writeHead(200, {
      ...baseHeaders(),
      'content-type': 'text/html; charset=utf-8',
      'content-length': Buffer.byteLength(html),
      'content-security-policy': pageCsp(nonce),
    })
    res.end(html)
  }
}

/** `basePath` normalised: '' for the root, else `/a/b` (leading slash, no trailing one); InvalidArgumentError for anything else. */
export function normaliseBasePath(basePath: string | undefined): string {
  if (basePath === undefined || basePath === '' || basePath === '/') return ''
  if (typeof basePath !== 'string' || !/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(basePath) || basePath.includes('//')) {
    throw new InvalidArgumentError(
      `basePath must be a URL path such as '/status' (a leading slash, no query or fragment), not ${JSON.stringify(String(basePath)).slice(0, 100)}`,
    )
  }
  return basePath.endsWith('/') ? basePath.slice(0, -1) : basePath
}

/** Builds the views and event stream for `options`, reads them once, and returns the app, started. */
export async function createStatusApp(options: StatusAppOptions, basePath: string, metrics: StatusAppMetrics): Promise<StatusApp> {
  const refreshMs = options.refreshMs ?? STATUS_DEFAULTS.refreshMs
  const warn = (message: string): void => (options.logger ?? silentLogger).warn(redactUrl(message))
  const live = metrics instanceof MetricsUnavailableError ? undefined : metrics
  const hub = new EventHub({
    onCount: (n) => live?.sseClients(n),
    maxQueuedBytes: options.maxStreamQueueBytes,
    maxClients: options.maxStreams,
    maxPerClient: options.maxStreamsPerClient,
    stallMs: options.streamStallMs,
    maxStreamMs: options.maxStreamMs,
  })
  const services = options.serviceGroup ? new ServiceView(options.serviceGroup, { refreshMs, metrics: live, onWarning: warn }) : undefined
  const groups = options.coordinator
    ? new GroupListView(options.coordinator, { refreshMs, emptyRefreshMs: options.emptyRefreshMs, metrics: live })
    : undefined
  if (!options.coordinator) live?.connectionState(undefined)
  if (services && groups && options.groupsAreServiceTopics) groups.on('changed', (g) => services.applyGroupReports(g))
  const app = new StatusApp(options, { basePath, metrics, hub, services, groups })
  try {
    await Promise.all([services?.start(), groups?.start()])
  } catch (err) {
    await app.close()
    throw err
  }
  app.start()
  return app
}
