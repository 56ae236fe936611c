/**
 * `rollcall service list|show|enable|disable|force-down|delete|run`: the services table and
 * liveness, as `openstack compute service ...` shows them. Every command reads the configuration
 * from `--config FILE` (or ROLLCALL_CONFIG), then ROLLCALL_* variables, then `--set KEY=VALUE`.
 * Uses only the public APIs (`rollcall`, `rollcall/servicegroup`).
 */
import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import { InvalidArgumentError, InvalidConfigError, type Logger } from '../../index.js'
import { DEFAULT_SQLITE_FILE, ServiceNotFoundError, loadConfig, openServiceGroup, type ServiceGroup, type ServiceGroupConfig, type ServiceRecord,
  type ServiceStatus } from '../../servicegroup/index.js'
import { oneOf } from '../../internal/coerce.js'
import { startCommand } from '../child.js'
import { flagValue, stderrLogger, table, type Command, type CommandContext, type OptionsConfig } from '../command.js'
import { waitUntil } from '../connection.js'
import { ProgressLine } from '../progress.js'
import { EXIT } from '../exit-codes.js'

/** Options every service command takes. */
export const CONFIG_OPTIONS: OptionsConfig = {
  // multiple, so that a repeated --config is reported instead of the last one silently winning.
  config: { type: 'string', multiple: true },
  'config-file': { type: 'string', multiple: true },
  // multiple: each directory is read in turn, as oslo.config reads a repeated --config-dir.
  'config-dir': { type: 'string', multiple: true },
  set: { type: 'string', multiple: true },
  verbose: { type: 'boolean' },
}

const CONFIG_USAGE = '[--config FILE | --config-file FILE...] [--config-dir DIR]... [--set KEY=VALUE]...'

/** Loads the configuration the way every service command does, printing its warnings. */
export async function commandConfig(ctx: CommandContext): Promise<{ config: ServiceGroupConfig; logger: Logger }> {
  const logger = stderrLogger(ctx.out, Boolean(ctx.values.verbose))
  const overrides: Record<string, string> = {}
  for (const pair of (ctx.values.set as string[] | undefined) ?? []) {
    const eq = pair.indexOf('=')
    if (eq <= 0) {
      throw new InvalidArgumentError(`--set takes KEY=VALUE (e.g. report_interval=5 or database.connection=sqlite:///x.db), not ${JSON.stringify(pair)}`)
    }
    overrides[pair.slice(0, eq).trim()] = pair.slice(eq + 1)
  }
  const once = (ctx.values.config as string[] | undefined) ?? []
  if (once.length > 1) {
    throw new InvalidArgumentError(
      `--config was given ${once.length} times, and only one file is read with it; to layer files, repeat --config-file (later files override earlier `
        + `ones, as in oslo.config)`,
    )
  }
  const files = [...once, ...((ctx.values['config-file'] as string[] | undefined) ?? [])]
  const { config, warnings } = await loadConfig({
    files: files.length ? files : undefined,
    dirs: ctx.values['config-dir'] as string[] | undefined,
    env: ctx.env,
    overrides,
  })
  for (const w of warnings) logger.warn(w.message)
  return { config, logger }
}

/**
 * The SQLite file a configuration-less command would use, when nothing names a catalog: no
 * file, and no [database] connection from the environment or --set. undefined otherwise.
 */
function implicitCatalog(ctx: CommandContext, config: ServiceGroupConfig): string | undefined {
  if (config.file !== undefined || ctx.env.ROLLCALL_DATABASE_CONNECTION !== undefined) return undefined
  if (((ctx.values.set as string[] | undefined) ?? []).some((pair) => /^\s*database\.connection\s*=/.test(pair))) return undefined
  return resolve(DEFAULT_SQLITE_FILE)
}

/**
 * Runs `fn` with a ServiceGroup opened from the configuration, and always closes it (without
 * leaving). Refuses to run without any configuration when that would create ./rollcall.sqlite.
 */
async function withServiceGroup<T>(ctx: CommandContext, fn: (sg: ServiceGroup) => Promise<T>): Promise<T> {
  const { config, logger } = await commandConfig(ctx)
  const implicit = implicitCatalog(ctx, config)
  if (implicit !== undefined && !existsSync(implicit)) {
    throw new InvalidConfigError(
      '--config',
      `No configuration found (no --config, ROLLCALL_CONFIG or [database] connection), and there is no ${implicit} to read: pass --config `
        + `/etc/rollcall/rollcall.conf (or your nova.conf), or set ROLLCALL_CONFIG`,
    )
  }
  const sg = await openServiceGroup(config, { logger })
  try {
    return await fn(sg)
  } finally {
    await sg.close({ leave: false })
  }
}

/** Finds a record by `ID` or `HOST/BINARY`. */
async function findService(sg: ServiceGroup, which: string): Promise<ServiceRecord> {
  if (/^\d+$/.test(which)) return sg.catalog.get(Number(which))
  const slash = which.lastIndexOf('/')
  if (slash <= 0 || slash === which.length - 1) {
    throw new InvalidArgumentError(`SERVICE is an id or HOST/BINARY (e.g. 12 or node-1/rollcall-worker), not ${JSON.stringify(which)}`)
  }
  const record = await sg.catalog.find(which.slice(0, slash), which.slice(slash + 1))
  if (!record) throw new ServiceNotFoundError(`${which.slice(slash + 1)} on host ${which.slice(0, slash)}`)
  return record
}

const time = (d: Date | null): string => (d ? d.toISOString() : '-')

/** One service as `--json` prints it (os-services field names). */
function serviceJson(s: ServiceStatus): Record<string, unknown> {
  const r = s.record
  return {
    id: r.id,
    binary: r.binary,
    host: r.host,
    zone: r.availabilityZone,
    status: s.status,
    state: s.state,
    updated_at: s.updatedAt?.toISOString() ?? null,
    disabled_reason: r.disabledReason,
    forced_down: r.forcedDown,
    topic: r.topic,
    version: r.version,
    report_count: r.reportCount,
    last_seen_up: r.lastSeenUp?.toISOString() ?? null,
    created_at: r.createdAt.toISOString(),
  }
}

function printShow(ctx: CommandContext, s: ServiceStatus): void {
  const j = serviceJson(s)
  if (ctx.values.json) return ctx.out.json(j)
  ctx.out.line(table(['Field', 'Value'], Object.entries(j).map(([k, v]) => [k, v === null ? '-' : String(v)])))
}

const SERVICE_ARG = ['SERVICE']

/** The columns of `service list`: heading and snake_case key; the last two only with --long (or -c). */
const LIST_COLUMNS: readonly (readonly [string, string])[] = [
  ['ID', 'id'],
  ['Binary', 'binary'],
  ['Host', 'host'],
  ['Zone', 'zone'],
  ['Status', 'status'],
  ['State', 'state'],
  ['Updated At', 'updated_at'],
  ['Disabled Reason', 'disabled_reason'],
  ['Forced Down', 'forced_down'],
]
const FORMATS = ['table', 'json', 'csv', 'value'] as const
type ListFormat = (typeof FORMATS)[number]

function listFormat(ctx: CommandContext): ListFormat {
  const f = flagValue(ctx.values.format ?? 'table', '-f/--format', (v) => oneOf(v, FORMATS))!
  if (ctx.values.json && ctx.values.format !== undefined) {
    throw new InvalidArgumentError("--json and -f/--format do not go together: --json prints the API's records, -f json the listed columns")
  }
  return f
}

/** Indexes into LIST_COLUMNS: -c's, in the order given, else the default (or --long) set. */
function listColumns(ctx: CommandContext): number[] {
  const asked = (ctx.values.column as string[] | undefined) ?? []
  if (asked.length === 0) return LIST_COLUMNS.map((_c, i) => i).slice(0, ctx.values.long ? LIST_COLUMNS.length : 7)
  return asked.map((name) => {
    const i = LIST_COLUMNS.findIndex(([heading, key]) => heading.toLowerCase() === name.toLowerCase() || key === name.toLowerCase())
    if (i < 0) throw new InvalidArgumentError(`No column ${JSON.stringify(name)}; columns: ${LIST_COLUMNS.map(([h]) => `"${h}"`).join(', ')}`)
    return i
  })
}

const csvCell = (v: string): string => `"${v.replace(/"/g, '""')}"`

/** Prints rows (every column, in LIST_COLUMNS order) as `format`, keeping `columns`. */
function printRows(ctx: CommandContext, format: ListFormat, columns: number[], rows: string[][]): void {
  const headings = columns.map((i) => LIST_COLUMNS[i]![0])
  const picked = rows.map((r) => columns.map((i) => r[i]!))
  if (format === 'json') return ctx.out.json(picked.map((r) => Object.fromEntries(r.map((v, j) => [headings[j]!, v]))))
  // cliff's csv: a heading line, every field quoted; value: the values alone, space-separated.
  if (format === 'csv') return ctx.out.line([headings, ...picked].map((r) => r.map(csvCell).join(',')).join('\n'))
  if (format === 'value') return picked.forEach((r) => ctx.out.line(r.join(' ')))
  ctx.out.line(table(headings, picked))
}

/** Changes one record's admin fields, then shows it with --json. */
function adminCommand(
  name: string,
  summary: string,
  usage: string,
  options: OptionsConfig,
  changes: (ctx: CommandContext) => Parameters<ServiceGroup['catalog']['update']>[1],
): Command {
  return {
    name,
    summary,
    usage: `SERVICE ${usage}${usage ? ' ' : ''}[--json] ${CONFIG_USAGE}`,
    positionals: SERVICE_ARG,
    options: { ...CONFIG_OPTIONS, ...options, json: { type: 'boolean' } },
    run: (ctx) =>
      withServiceGroup(ctx, async (sg) => {
        const record = await findService(sg, ctx.positionals[0]!)
        const updated = await sg.catalog.update(record.id, changes(ctx))
        const [status] = await sg.statuses([updated])
        if (ctx.values.json) printShow(ctx, status!)
        else ctx.out.status(`${updated.binary} on ${updated.host}: ${status!.status}, ${status!.state}${updated.forcedDown ? ' (forced down)' : ''}`, true)
      }),
  }
}

/** The service commands. */
export const serviceCommands: Command[] = [
  {
    name: 'service list',
    summary: 'List services: ID, Binary, Host, Zone, Status (enabled/disabled), State (up/down), Updated At.',
    usage: `[--long] [--json | -f table|json|csv|value] [-c COLUMN]... [--topic T] [--host H] [--binary B] ${CONFIG_USAGE}`,
    options: {
      ...CONFIG_OPTIONS,
      long: { type: 'boolean' },
      json: { type: 'boolean' },
      format: { type: 'string', short: 'f' },
      column: { type: 'string', short: 'c', multiple: true },
      topic: { type: 'string' },
      host: { type: 'string' },
      binary: { type: 'string' },
    },
    optionHelp: {
      long: 'add Disabled Reason and Forced Down',
      json: "print the os-services API's records (snake_case keys, every field)",
      format: 'table (default), json (rows keyed by column heading), csv or value, as openstack compute service list',
      column: 'show only this column (a heading such as "Updated At", or its snake_case key); repeatable',
      topic: 'only this topic',
      host: 'only this host',
      binary: 'only this binary',
    },
    run: async (ctx) => {
      const format = listFormat(ctx)
      const columns = listColumns(ctx)
      return withServiceGroup(ctx, async (sg) => {
        const statuses = await sg.list({
          topic: ctx.values.topic as string | undefined,
          host: ctx.values.host as string | undefined,
          binary: ctx.values.binary as string | undefined,
        })
        if (ctx.values.json) return ctx.out.json(statuses.map(serviceJson))
        printRows(
          ctx,
          format,
          columns,
          statuses.map((s) => {
            const r = s.record
            return [
              String(r.id),
              r.binary,
              r.host,
              r.availabilityZone ?? '-',
              s.status,
              s.state,
              time(s.updatedAt),
              r.disabledReason ?? '-',
              String(r.forcedDown),
            ]
          }),
        )
      })
    },
  },
  {
    name: 'service show',
    summary: 'Show one service (by ID or HOST/BINARY) with its state.',
    usage: `SERVICE [--json] ${CONFIG_USAGE}`,
    positionals: SERVICE_ARG,
    options: { ...CONFIG_OPTIONS, json: { type: 'boolean' } },
    run: (ctx) =>
      withServiceGroup(ctx, async (sg) => {
        const [status] = await sg.statuses([await findService(sg, ctx.positionals[0]!)])
        printShow(ctx, status!)
      }),
  },
  adminCommand('service enable', 'Enable a service (Status enabled; State is unaffected).', '', {}, () => ({ disabled: false, disabledReason: null })),
  adminCommand(
    'service disable',
    'Disable a service, optionally saying why (State is unaffected).',
    '[--reason TEXT]',
    { reason: { type: 'string' } },
    (ctx) => ({ disabled: true, disabledReason: (ctx.values.reason as string | undefined) ?? null }),
  ),
  adminCommand(
    'service force-down',
    'Force a service down whatever its driver says (fencing); --unset lifts it.',
    '[--unset]',
    { unset: { type: 'boolean' } },
    (ctx) => ({ forcedDown: !ctx.values.unset }),
  ),
  {
    name: 'service delete',
    summary: 'Delete a service: its driver forgets it (leave), then its record is deleted.',
    usage: `SERVICE ${CONFIG_USAGE}`,
    positionals: SERVICE_ARG,
    options: CONFIG_OPTIONS,
    run: (ctx) =>
      withServiceGroup(ctx, async (sg) => {
        const record = await findService(sg, ctx.positionals[0]!)
        await sg.leave(record.host, record.topic)
        await sg.catalog.delete(record.id)
        ctx.out.status(`deleted ${record.binary} on ${record.host} (id ${record.id})`, true)
      }),
  },
  {
    name: 'service run',
    summary: 'Register and join a service, report until SIGTERM, then leave; with "-- COMMAND", be up exactly while COMMAND runs and exit with its status.',
    usage: `--binary B [--host H] [--topic T] [--zone Z] ${CONFIG_USAGE} [-- COMMAND [ARG...]]`,
    options: { ...CONFIG_OPTIONS, binary: { type: 'string' }, host: { type: 'string' }, topic: { type: 'string' }, zone: { type: 'string' } },
    takesCommand: true,
    run: runService,
  },
]

async function runService(ctx: CommandContext): Promise<number> {
  const binary = ctx.values.binary as string | undefined
  if (!binary) throw new InvalidArgumentError("service run needs --binary B (the service's name, e.g. rollcall-worker)")
  const host = (ctx.values.host as string | undefined) ?? hostname()
  const topic = (ctx.values.topic as string | undefined) ?? binary
  const { config, logger } = await commandConfig(ctx)
  const implicit = implicitCatalog(ctx, config)
  if (implicit !== undefined) ctx.out.status(`rollcall: no configuration file (--config FILE or ROLLCALL_CONFIG); using the SQLite catalog ${implicit}`, true)
  const sg = await openServiceGroup(config, { logger })
  // While reports fail, say so and keep saying for how long; say when they recover.
  const progress = new ProgressLine(ctx.out)
  let lostSince: number | undefined
  const tick = setInterval(() => {
    if (lostSince !== undefined) progress.set(`reports to ${sg.driverName} failing for ${Math.round((Date.now() - lostSince) / 1000)} s; reconnecting`, 'lost')
  }, 1000)
  tick.unref()
  sg.on('reportLost', (e) => {
    lostSince ??= Date.now()
    progress.log(() => ctx.out.status(`rollcall: reports of ${e.binary} on ${e.host} to ${e.driver} failing (${e.error.message}); reconnecting`, true))
  })
  sg.on('reportRecovered', (e) => {
    lostSince = undefined
    progress.set('', 'recovered')
    progress.log(() => ctx.out.status(`rollcall: reports of ${e.binary} on ${e.host} to ${e.driver} recovered`, true))
  })
  try {
    const record = await sg.register({ host, binary, topic, availabilityZone: (ctx.values.zone as string | undefined) ?? null })
    if (ctx.rest.length === 0) {
      await sg.join(host, topic, record, { reportImmediately: true })
      ctx.out.status(`rollcall: ${binary} on ${host} (id ${record.id}) joined ${topic} with the ${sg.driverName} driver; Ctrl-C or SIGTERM to leave`, true)
      await waitUntil(ctx.signal)
      return EXIT.ok
    }
    return await superviseCommand(ctx, sg, record)
  } finally {
    clearInterval(tick)
    progress.done()
    // Leaves every joined service: the service reads down at once.
    await sg.close()
  }
}

/** Runs the command as a child, joined exactly while it lives; resolves to its exit status. */
async function superviseCommand(ctx: CommandContext, sg: ServiceGroup, record: ServiceRecord): Promise<number> {
  const running = await startCommand(ctx.rest, ctx.out)
  // A command that could not start was never up.
  if (running.exited) return await running.status
  {
    const joined = sg.join(record.host, record.topic, record, { reportImmediately: true })
    ctx.out.status(`rollcall: ${record.binary} on ${record.host} (id ${record.id}) is up while pid ${running.pid} runs`, true)
    const status = await running.status
    await joined
    // Down at once: leave before anything else.
    await sg.leave(record.host, record.topic)
    return status
  }
}
