/**
 * The status server: one node:http server for the status page, the JSON API, the event stream,
 * Prometheus metrics and a health check. No framework.
 *
 * It shows services when given a ServiceGroup, coordination groups when given a Coordinator (an
 * observer: it joins nothing), or both. It binds to 127.0.0.1 unless told otherwise. Without a
 * token it is read-only (writes answer 403 saying how to enable them); with one, every write
 * needs `Authorization: Bearer <token>`. Nothing it sends contains a credential from a URL.
 *
 * It is not part of the package's exports: users reach it as `rollcall serve` (docs/cli.md), which
 * builds it from the configuration. Inside this package:
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
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { InvalidArgumentError, RollcallError, redactUrl, silentLogger, type Coordinator, type Logger } from '../index.js'
import type { ServiceGroup } from '../servicegroup/index.js'
import { deleteService, getGroup, getService, listGroups, listServices, updateService } from './api.js'
import { GROUP_QUERY_KEYS, GroupListView, MAX_GROUP_PAGE, PAGE_GROUPS, pageOfGroups, parseGroupQuery, type GroupQuery } from './groups.js'
import { HostCheck } from './hosts.js'
import { checkHealth } from './health.js'
import { HttpError, authorizeWrite, baseHeaders, readJson, sendError, sendJson } from './http.js'
import { WebMetrics } from './metrics.js'
import { loadPromClient } from './prom.js'
import { feedCoordinatorMetrics } from './feed.js'
import { pageCsp, renderPage, type PageInfo } from './page.js'
import { parseServiceFilter, SERVICE_FILTER_KEYS, ServiceView } from './services.js'
import { EventHub } from './sse.js'

/** Defaults of {@link startStatusServer}. */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 7979,
  refreshMs: 1000,
  heartbeatProbeMs: 5000,
} as const

/** Options of {@link startStatusServer}. */
export interface StatusServerOptions {
  /** Services to show (the os-services view and API). */
  serviceGroup?: ServiceGroup
  /** A coordinator to read groups through (joins nothing). */
  coordinator?: Coordinator
  /** Bearer token for writes; undefined = read-only. */
  token?: string
  /** Default 127.0.0.1. */
  host?: string
  /** Default 7979; 0 picks a free port. */
  port?: number
  /** How often the views are re-read (default 1000 ms); pushed changes show sooner. */
  refreshMs?: number
  /**
   * How long one pass over the empty groups takes (default 60 000 ms): a first member joining a
   * group that was empty shows within it. Groups with members are watched; see groups.ts.
   */
  emptyRefreshMs?: number
  /** How often the coordinator's heartbeat round trip is measured (default 5000 ms). */
  heartbeatProbeMs?: number
  /**
   * True when `coordinator` reads the backend of the tooz service-group driver: then each group
   * read (what keeps the groups section live) also carries the services' report times into the
   * services table, instead of waiting for the driver's next full read.
   */
  groupsAreServiceTopics?: boolean
  title?: string
  logger?: Logger
  /** Host names answered besides the ones the server listens as (`[api] allowed_hosts`); others get 421. */
  allowedHosts?: readonly string[]
  /** Bytes that may wait on one event stream before it is dropped (default 8 MiB). */
  maxStreamQueueBytes?: number
  /** Event streams open at once (default 200; 503 beyond). */
  maxStreams?: number
  /** Event streams one client (an IPv4 address or an IPv6 /64: see sse.ts) keeps open at once (default 32; 429 beyond). */
  maxStreamsPerClient?: number
  /** How long data may wait unsent on one event stream before it is dropped (default 30 000 ms). */
  streamStallMs?: number
  /** How long one event stream lives before it is ended; browsers reconnect (default 600 000 ms). */
  maxStreamMs?: number
}

/** Tokens shorter than this are accepted, with a warning. */
export const MIN_TOKEN_CHARS = 16

type Handler = (req: IncomingMessage, res: ServerResponse, match: RegExpExecArray, url: URL) => Promise<void>

interface Route {
  name: string
  pattern: RegExp
  methods: Partial<Record<'GET' | 'PUT' | 'DELETE', Handler>>
}

/** A running status server. */
export class StatusServer {
  /** `http://host:port/`. */
  readonly url: string
  readonly address: AddressInfo
  readonly metrics: WebMetrics
  readonly services: ServiceView | undefined
  readonly groups: GroupListView | undefined
  readonly #server: Server
  readonly #hub: EventHub
  readonly #options: StatusServerOptions
  readonly #info: PageInfo
  readonly #routes: Route[]
  #stopFeed: (() => void) | undefined
  readonly #logger: Logger
  readonly #hosts: HostCheck
  #closing: Promise<void> | undefined

  /** @internal Use startStatusServer(). */
  constructor(server: Server, parts: { options: StatusServerOptions; metrics: WebMetrics; hub: EventHub; services?: ServiceView; groups?: GroupListView }) {
    this.#server = server
    this.#options = parts.options
    this.metrics = parts.metrics
    this.#hub = parts.hub
    this.services = parts.services
    this.groups = parts.groups
    this.#logger = parts.options.logger ?? silentLogger
    this.address = server.address() as AddressInfo
    const host = this.address.family === 'IPv6' ? `[${this.address.address}]` : this.address.address
    this.url = `http://${host}:${this.address.port}/`
    this.#hosts = new HostCheck(parts.options.host ?? DEFAULTS.host, parts.options.allowedHosts)
    const sg = parts.options.serviceGroup
    const c = parts.options.coordinator
    this.#info = {
      title: parts.options.title ?? 'rollcall',
      services: sg ? { driver: sg.driverName, catalog: redactUrl(sg.catalog.shownAs) } : undefined,
      coordination: c ? { url: redactUrl(c.url), driver: c.driverName, hasLeader: c.capabilities.has('getLeader') } : undefined,
      readOnly: parts.options.token === undefined,
    }
    this.#routes = this.#table()
    server.on('request', (req, res) => void this.#handle(req, res))
  }

  /** Backend problems to show on the page, credentials redacted. */
  get problems(): string[] {
    const out: string[] = []
    if (this.services?.error) out.push(`Services cannot be read: ${redactUrl(this.services.error.message)}`)
    if (this.groups?.error) out.push(`Groups cannot be read: ${redactUrl(this.groups.error.message)}`)
    return out
  }

  /** Stops: ends every event stream and connection, stops the views and timers. Does not stop the ServiceGroup or Coordinator. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopFeed?.()
      this.#hub.close()
      this.services?.stop()
      await this.groups?.stop()
      await new Promise<void>((resolve) => {
        this.#server.close(() => resolve())
        this.#server.closeAllConnections()
      })
    })()
    return this.#closing
  }

  /** @internal Wires the views to the event stream and starts the probes. */
  start(): void {
    const problems = (): void => this.#hub.send('health', { problems: this.problems })
    this.services?.on('changed', (row) => this.#hub.send('service', row)).on('removed', (e) => this.#hub.send('service-removed', e)).on('health', problems)
    this.groups?.on('changed', (row) => this.#hub.send('group', row)).on('removed', (e) => this.#hub.send('group-removed', e)).on('health', problems)
    const c = this.#options.coordinator
    if (c) this.#stopFeed = feedCoordinatorMetrics(c, this.metrics, this.#options.heartbeatProbeMs ?? DEFAULTS.heartbeatProbeMs)
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
    return [
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
        name: '/metrics',
        pattern: /^\/metrics$/,
        methods: {
          GET: async (_req, res) => {
            const body = await this.metrics.text()
            res.writeHead(200, { ...baseHeaders(), 'content-type': this.metrics.contentType, 'content-length': Buffer.byteLength(body) })
            res.end(body)
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
              refreshMs: this.#options.refreshMs ?? DEFAULTS.refreshMs,
            })
            sendJson(res, health.status === 'ok' ? 200 : 503, health)
          },
        },
      },
    ]
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

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let routeName = 'unknown'
    res.on('finish', () => this.metrics.request(routeName, req.method ?? '', res.statusCode))
    try {
      if (!this.#hosts.allows(req.headers.host)) {
        throw new HttpError(
          421,
          'MISDIRECTED_REQUEST',
          `This server does not answer for the host name in the Host header (${
            JSON.stringify(String(req.headers.host).slice(0, 100))
          }): it answers IP addresses and ${this.#hosts.names.join(', ')}. Add the name to [api] allowed_hosts to reach it by that name.`,
        )
      }
      const url = new URL(req.url ?? '/', 'http://status.invalid')
      const route = this.#routes.find((r) => r.pattern.test(url.pathname))
      if (!route) {
        throw new HttpError(
          404,
          'ROUTE_NOT_FOUND',
          `No route ${url.pathname.slice(0, 200)}; see / for the page and /v1/services, /v1/groups, /v1/events, /metrics, /healthz`,
        )
      }
      routeName = route.name
      const method = req.method === 'HEAD' ? 'GET' : req.method
      const handler = route.methods[method as keyof Route['methods']]
      if (!handler) {
        const allow = Object.keys(route.methods).flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])).join(', ')
        throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${route.name} takes ${allow}`, { allow })
      }
      await handler(req, res, route.pattern.exec(url.pathname)!, url)
    } catch (err) {
      if (!(err instanceof HttpError) && !(err instanceof RollcallError)) {
        this.#logger.error(`Unexpected error serving ${req.method} ${redactUrl(req.url ?? '')}: ${redactUrl((err as Error)?.stack ?? String(err))}`)
      }
      sendError(res, err)
    }
  }
}

/** Starts the status server: first reads of the views, then listening. */
export async function startStatusServer(options: StatusServerOptions): Promise<StatusServer> {
  const metrics = new WebMetrics(await loadPromClient())
  const refreshMs = options.refreshMs ?? DEFAULTS.refreshMs
  const warn = (message: string): void => (options.logger ?? silentLogger).warn(redactUrl(message))
  checkToken(options.token, warn)
  const hub = new EventHub({
    onCount: (n) => metrics.sseClients(n),
    maxQueuedBytes: options.maxStreamQueueBytes,
    maxClients: options.maxStreams,
    maxPerClient: options.maxStreamsPerClient,
    stallMs: options.streamStallMs,
    maxStreamMs: options.maxStreamMs,
  })
  const services = options.serviceGroup ? new ServiceView(options.serviceGroup, { refreshMs, metrics, onWarning: warn }) : undefined
  const groups = options.coordinator ? new GroupListView(options.coordinator, { refreshMs, emptyRefreshMs: options.emptyRefreshMs, metrics }) : undefined
  if (!options.coordinator) metrics.connectionState(undefined)
  if (services && groups && options.groupsAreServiceTopics) groups.on('changed', (g) => services.applyGroupReports(g))
  const server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000, maxHeaderSize: 16 * 1024 })
  try {
    await Promise.all([services?.start(), groups?.start()])
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.port ?? DEFAULTS.port, options.host ?? DEFAULTS.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (err) {
    hub.close()
    services?.stop()
    await groups?.stop()
    throw err
  }
  const s = new StatusServer(server, { options, metrics, hub, services, groups })
  s.start()
  return s
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
