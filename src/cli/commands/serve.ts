/**
 * `rollcall serve`: the status page, the JSON API, Prometheus metrics and /healthz, until
 * SIGTERM or SIGINT.
 *
 * What it shows: services, from the service-group configuration (`--config` or ROLLCALL_CONFIG;
 * with neither and no `--url`, the defaults: the db driver and rollcall.sqlite in the working
 * directory); coordination groups, from `--url` (or ROLLCALL_URL), else from
 * servicegroup_tooz_url when the driver is tooz. Where it listens: `--listen`, else `[api]
 * listen` when set, else 127.0.0.1:7979. Writes need `[api] token` (or ROLLCALL_API_TOKEN).
 */
import { hostname } from 'node:os'
import { connect, InvalidArgumentError, redactUrl, type Coordinator, type Logger } from '../../index.js'
import { openServiceGroup, type ServiceGroup, type ServiceGroupConfig } from '../../servicegroup/index.js'
import { startStatusServer, STATUS_SERVER_DEFAULTS, type StatusServer } from '../../web/index.js'
import { coerce, listenText } from '../../internal/coerce.js'
import { CONNECTION_OPTIONS, secondsOption, type Command, type CommandContext } from '../command.js'
import { waitUntil } from '../connection.js'
import { CONFIG_OPTIONS, commandConfig } from './service.js'

/** Reads `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (host 127.0.0.1). */
export function parseListen(text: string, setting = '--listen'): { host: string; port: number } {
  const { host, port } = coerce(() => listenText(text), (phrase) => new InvalidArgumentError(`${setting} takes ${phrase}, not ${JSON.stringify(text)}`))
  return { host: host || STATUS_SERVER_DEFAULTS.host, port }
}

/** Where to listen: --listen, else [api] listen from the configuration (its default is 127.0.0.1:7979), else 127.0.0.1:7979. */
export function listenAddress(flag: string | undefined, config: ServiceGroupConfig | undefined): { host: string; port: number } {
  if (flag !== undefined) return parseListen(flag)
  return config?.api.listen ?? { host: STATUS_SERVER_DEFAULTS.host, port: STATUS_SERVER_DEFAULTS.port }
}

/** What a running status server holds, to stop it in order. */
export interface RunningStatus {
  server: StatusServer
  serviceGroup: ServiceGroup | undefined
  coordinator: Coordinator | undefined
  close(): Promise<void>
}

/** Options of {@link openStatus}. */
export interface OpenStatusOptions {
  /** Show services from this configuration. */
  config?: ServiceGroupConfig
  /** Show groups from this coordination URL. */
  coordinationUrl?: string
  listen: { host: string; port: number }
  token?: string
  refreshMs?: number
  /** How long one pass over the empty groups takes. */
  emptyRefreshMs?: number
  title?: string
  memberId?: string
  logger: Logger
  /** `[api] allowed_hosts`: Host names answered besides the ones it listens as. */
  allowedHosts?: readonly string[]
}

/** Opens the service group and the observer coordinator, then starts the server; undoes it all on failure. */
export async function openStatus(o: OpenStatusOptions): Promise<RunningStatus> {
  let serviceGroup: ServiceGroup | undefined
  let coordinator: Coordinator | undefined
  try {
    if (o.config) serviceGroup = await openServiceGroup(o.config, { logger: o.logger })
    if (o.coordinationUrl) {
      coordinator = await connect(o.coordinationUrl, { memberId: o.memberId ?? `rollcall-serve-${hostname()}-${process.pid}`, logger: o.logger })
    }
    const server = await startStatusServer({
      serviceGroup,
      coordinator,
      token: o.token,
      host: o.listen.host,
      port: o.listen.port,
      refreshMs: o.refreshMs,
      emptyRefreshMs: o.emptyRefreshMs,
      title: o.title,
      logger: o.logger,
      allowedHosts: o.allowedHosts,
      groupsAreServiceTopics: o.config?.driver === 'tooz' && o.coordinationUrl !== undefined && o.coordinationUrl === o.config.toozUrl,
    })
    let closing: Promise<void> | undefined
    return {
      server,
      serviceGroup,
      coordinator,
      close: () => (closing ??= (async () => {
        await server.close()
        await Promise.allSettled([serviceGroup?.close(), coordinator?.stop()])
      })()),
    }
  } catch (err) {
    await Promise.allSettled([serviceGroup?.close(), coordinator?.stop()])
    throw err
  }
}

/** Prints what the server shows and whether it takes writes. */
export function announce(ctx: CommandContext, running: RunningStatus, token: string | undefined): void {
  const { serviceGroup: sg, coordinator: c } = running
  if (sg) ctx.out.status(`rollcall serve: services from the ${sg.driverName} driver, catalog ${redactUrl(sg.catalog.shownAs)}`, true)
  if (c) ctx.out.status(`rollcall serve: groups from ${redactUrl(c.url)} (${c.driverName})`, true)
  ctx.out.status(
    token === undefined
      ? 'rollcall serve: read-only (no [api] token or ROLLCALL_API_TOKEN is set: PUT and DELETE answer 403)'
      : 'rollcall serve: writes enabled for requests with Authorization: Bearer <[api] token>',
    true,
  )
}

/** The serve command. */
export const serveCommands: Command[] = [
  {
    name: 'serve',
    summary: 'Serve the status page (live), the JSON API (/v1/services, /v1/groups), /metrics and /healthz until interrupted.',
    usage: '[--config FILE] [--set KEY=VALUE]... [--url URL] [--listen HOST:PORT] [--refresh SECONDS] [--empty-refresh SECONDS] [--title TEXT] [--verbose]',
    options: {
      url: CONNECTION_OPTIONS.url!,
      member: CONNECTION_OPTIONS.member!,
      ...CONFIG_OPTIONS,
      listen: { type: 'string' },
      refresh: { type: 'string' },
      'empty-refresh': { type: 'string' },
      title: { type: 'string' },
    },
    optionHelp: {
      listen: 'HOST:PORT, [IPv6]:PORT or PORT to listen on (default: [api] listen, else 127.0.0.1:7979; port 0 picks a free one)',
      refresh: 'how often services, the group list and leaders are re-read, in SECONDS (default 1; at least 0.1); pushed changes show sooner',
      'empty-refresh': 're-read each empty group once per SECONDS (default 60): a first member joining an empty group shows within it',
      title: 'the status page title (default: rollcall)',
      verbose: 'also log info and debug messages to stderr',
    },
    run: async (ctx) => {
      const { config, logger } = await commandConfig(ctx)
      const file = config.file
      const url = (ctx.values.url as string | undefined) ?? (ctx.env.ROLLCALL_URL || undefined)
      const showServices = file !== undefined || url === undefined
      const coordinationUrl = url ?? (showServices && config.driver === 'tooz' ? config.toozUrl : undefined)
      const refreshSeconds = secondsOption(ctx.values.refresh, 'refresh')
      if (refreshSeconds !== undefined && refreshSeconds < 0.1) throw new InvalidArgumentError('--refresh takes at least 0.1 seconds')
      const emptyRefreshSeconds = secondsOption(ctx.values['empty-refresh'], 'empty-refresh')
      if (emptyRefreshSeconds !== undefined && emptyRefreshSeconds < 1) throw new InvalidArgumentError('--empty-refresh takes at least 1 second')
      const running = await openStatus({
        config: showServices ? config : undefined,
        coordinationUrl,
        listen: listenAddress(ctx.values.listen as string | undefined, config),
        token: config.api.token,
        refreshMs: refreshSeconds === undefined ? undefined : refreshSeconds * 1000,
        emptyRefreshMs: emptyRefreshSeconds === undefined ? undefined : emptyRefreshSeconds * 1000,
        title: ctx.values.title as string | undefined,
        memberId: ctx.values.member as string | undefined,
        logger,
        allowedHosts: config.api.allowedHosts,
      })
      try {
        announce(ctx, running, config.api.token)
        ctx.out.line(`rollcall serve: status page at ${running.server.url}`)
        await waitUntil(ctx.signal)
        ctx.out.status('rollcall serve: stopping', true)
      } finally {
        await running.close()
      }
    },
  },
]
