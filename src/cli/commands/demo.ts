/**
 * `rollcall demo` (what `npm start` runs): a few real services and the status page, on the
 * embedded defaults, in a temporary directory; nothing to install.
 *
 * The services are real `rollcall service run` processes (tooz driver) in two topics, with a
 * SQLite catalog and a `file://` coordination backend (or `--url`). Once they are up, one is
 * killed with SIGKILL (a crash: it stays up until the backend's timeout passes) and one stopped
 * with SIGTERM (a graceful stop: it leaves, and is down at once); later the crashed one is
 * restarted. The page shows each change by itself. The demo runs until interrupted (or for
 * `--duration` seconds), then stops its children and removes its directory. Killed in any way
 * (SIGKILL included), it takes its children with it: each is watched (see ../child.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, redactUrl } from '../../index.js'
import { loadConfig, type ServiceGroupConfig } from '../../servicegroup/index.js'
import type { ServiceRow, StatusServer } from '../../web/index.js'
import { CONNECTION_OPTIONS, secondsOption, type Command, type CommandContext } from '../command.js'
import { waitUntil } from '../connection.js'
import { ProgressLine } from '../progress.js'
import { demoServices, serviceStarter, stopChildren, type DemoLog, type DemoService } from './demo-services.js'
import { stderrLogger } from '../command.js'
import { openStatus, parseListen, type RunningStatus } from './serve.js'

/** Timings of the demo, in seconds. */
export const DEMO_TIMING = {
  /** Liveness window of the file:// backend: how long a crashed service stays up. */
  backendTimeoutSeconds: 5,
  reportIntervalSeconds: 2,
  serviceDownTimeSeconds: 6,
  /** After every service is up: SIGKILL one. */
  killAtSeconds: 6,
  /** SIGTERM another. */
  termAtSeconds: 8,
  /** Restart the killed one. */
  restartAtSeconds: 20,
  /** Longest wait for the services to come up. */
  startupSeconds: 30,
} as const

/** Resolves after `ms`, or at once when `signal` aborts; leaves no listener behind. */
function sleep(signal: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = (): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

/** The demo's configuration file: tooz driver over `url`, SQLite catalog beside it. */
function writeConfig(dir: string, url: string): string {
  const file = join(dir, 'rollcall.conf')
  writeFileSync(
    file,
    [
      '# Written by rollcall demo; removed when it stops.',
      '[DEFAULT]',
      'servicegroup_driver = tooz',
      `report_interval = ${DEMO_TIMING.reportIntervalSeconds}`,
      `service_down_time = ${DEMO_TIMING.serviceDownTimeSeconds}`,
      `servicegroup_tooz_url = ${url}`,
      '',
      '[database]',
      'connection = sqlite:///rollcall.sqlite',
      '',
    ].join('\n'),
  )
  return file
}

/** The coordination URL: `--url` with a short timeout added when it names none, else file:// in `dir`. */
function coordinationUrl(dir: string, given: string | undefined): string {
  const timeout = DEMO_TIMING.backendTimeoutSeconds
  if (given === undefined) return `file://${join(dir, 'coordination')}?timeout=${timeout}`
  if (/[?&](timeout|membership_timeout)=/.test(given)) return given
  return `${given}${given.includes('?') ? '&' : '?'}timeout=${timeout}`
}

/** Loads the demo configuration; when the backend does not take `timeout`, retries with the URL as given. */
async function demoConfig(dir: string, given: string | undefined, env: NodeJS.ProcessEnv): Promise<{ file: string; config: ServiceGroupConfig }> {
  // The demo's own file decides; ROLLCALL_* settings of the caller's shell must not override it.
  const clean = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('ROLLCALL_')))
  const url = coordinationUrl(dir, given)
  try {
    const file = writeConfig(dir, url)
    return { file, config: (await loadConfig({ file, env: clean })).config }
  } catch (err) {
    if (given === undefined || url === given || !/option "?timeout/.test((err as Error).message)) throw err
    const file = writeConfig(dir, given)
    return { file, config: (await loadConfig({ file, env: clean })).config }
  }
}

/** Runs the demo until `ctx.signal` aborts or `durationMs` passes. */
async function runDemo(ctx: CommandContext): Promise<void> {
  const progress = new ProgressLine(ctx.out)
  const log = demoLog(ctx, progress)
  const { stop, clear } = demoStopSignal(ctx)
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-demo-'))
  const given = (ctx.values.url as string | undefined) ?? (ctx.env.ROLLCALL_URL || undefined)
  const services = demoServices(given === undefined ? '' : `-demo-${Math.random().toString(36).slice(2, 6)}`)
  let running: RunningStatus | undefined
  const onExit = (): void => {
    for (const s of services) s.child?.kill('SIGKILL')
  }
  process.once('exit', onExit)
  try {
    const { file, config } = await demoConfig(dir, given, ctx.env)
    log(`catalog sqlite in ${dir}; coordination ${redactUrl(config.toozUrl ?? '')}`, { event: 'setup', dir, url: redactUrl(config.toozUrl ?? '') })
    const start = serviceStarter(file, stop, log)
    // The status page first, then the services: it shows them joining, and its URL does not wait
    // behind five processes starting (on a busy 2-core machine that took over 20 s).
    running = await openDemoServer(ctx, config, progress)
    progress.set(`starting ${services.length} services`)
    for (const s of services) start(s)
    await showDemo(running.server, services, stop, start, progress, log)
    log('stopping', { event: 'stopping' })
  } finally {
    clear()
    progress.done()
    await closeDemo(services, given, running)
    process.off('exit', onExit)
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
  }
}

/** The demo's log, above the progress line. */
function demoLog(ctx: CommandContext, progress: ProgressLine): DemoLog {
  const started = Date.now()
  const json = Boolean(ctx.values.json)
  const at = (): string => ((Date.now() - started) / 1000).toFixed(1)
  return (text, fields) =>
    progress.log(() => {
      if (json) ctx.out.json({ t: Number(at()), ...fields })
      else ctx.out.line(`[${at().padStart(5)} s] ${text}`)
    })
}

/** A signal that aborts on Ctrl-C (`ctx.signal`) or once `--duration` has passed; clear() drops the duration timer. */
function demoStopSignal(ctx: CommandContext): { stop: AbortSignal; clear(): void } {
  const durationSeconds = secondsOption(ctx.values.duration, 'duration')
  const deadline = new AbortController()
  const timer = durationSeconds === undefined ? undefined : setTimeout(() => deadline.abort(), durationSeconds * 1000)
  return { stop: AbortSignal.any([ctx.signal, deadline.signal]), clear: () => clearTimeout(timer) }
}

/** With the status page up: waits for every service, plays the scenario, then runs until stopped. */
async function showDemo(
  server: StatusServer,
  services: DemoService[],
  stop: AbortSignal,
  start: (s: DemoService) => void,
  progress: ProgressLine,
  log: DemoLog,
): Promise<void> {
  const url = server.url
  log(`status page: ${url}  (JSON: ${url}v1/services, metrics: ${url}metrics)`, { event: 'listening', url })
  const states = trackStates(server, progress, log)
  const upBy = Date.now() + DEMO_TIMING.startupSeconds * 1000
  while (!allUp(server, services) && Date.now() < upBy && !stop.aborted) await sleep(stop, 200)
  states.ready = true
  if (stop.aborted) return
  if (allUp(server, services)) log(`all ${services.length} services are up`, { event: 'ready' })
  else log(`not every service came up within ${DEMO_TIMING.startupSeconds} s; carrying on`, { event: 'slow-start' })
  await scenario(services, stop, start, (text) => states.next(text), (s, how, signal) => {
    states.mark(s, how)
    stopService(s, signal, log)
  }, (s) => states.mark(s, 'restart'))
  states.next('')
  await waitUntil(stop)
}

/** True when the status server shows every demo service up. */
function allUp(server: StatusServer, services: readonly DemoService[]): boolean {
  return services.every((s) => server.services!.rows.some((r) => r.topic === s.topic && r.host === s.host && r.state === 'up'))
}

/** The status line and the log of state changes, fed by the status server's rows. */
interface StateTracker {
  /** False while the services start: until then, changes are not logged. */
  ready: boolean
  /** Shows the scenario's next step on the status line ('' for none). */
  next(text: string): void
  /** Notes when and how a service was stopped or restarted, so that the change it causes says how long it took. */
  mark(s: DemoService, how: string): void
}

/** Follows the status server's rows: keeps the status line current and logs each change once the demo is ready. */
function trackStates(server: StatusServer, progress: ProgressLine, log: DemoLog): StateTracker {
  const url = server.url
  const states = new Map<number, string>()
  const marks = new Map<string, { at: number; how: string }>()
  let nextStep = ''
  const summarize = (): void => {
    const rows = server.services!.rows
    const up = rows.filter((r) => r.state === 'up').length
    const counts = `${url} · ${rows.length} services: ${up} up, ${rows.length - up} down`
    progress.set(`${counts}${nextStep ? ` · next: ${nextStep}` : ''} · Ctrl-C to stop`, counts)
  }
  const tracker: StateTracker = {
    ready: false,
    next(text) {
      nextStep = text
      summarize()
    },
    mark(s, how) {
      marks.set(`${s.topic}\u0000${s.host}`, { at: Date.now(), how })
    },
  }
  server.services!.on('changed', (row: ServiceRow) => {
    const before = states.get(row.id)
    states.set(row.id, row.state)
    // Rows flip down → up while the services start; the log tells what happens after that.
    if (tracker.ready && before !== undefined && before !== row.state) {
      const mark = marks.get(`${row.topic}\u0000${row.host}`)
      const after = mark ? ` (${((Date.now() - mark.at) / 1000).toFixed(1)} s after ${mark.how})` : ''
      log(`${row.topic} ${row.host}: ${before} → ${row.state}${after}`, {
        event: 'state',
        topic: row.topic,
        host: row.host,
        id: row.id,
        state: row.state,
        previous: before,
      })
    }
    summarize()
  })
  for (const r of server.services!.rows) states.set(r.id, r.state)
  return tracker
}

/** Stops a service on purpose with `signal` (SIGKILL: a crash; SIGTERM: a graceful stop) and logs what to expect. */
function stopService(s: DemoService, signal: NodeJS.Signals, log: DemoLog): void {
  s.stopping = true
  s.child?.kill(signal)
  const expect = signal === 'SIGKILL'
    ? `a crash; down once the backend's ${DEMO_TIMING.backendTimeoutSeconds} s timeout passes`
    : 'a graceful stop; it leaves, down at once'
  log(`${signal} ${s.binary} on ${s.host} (topic ${s.topic}): ${expect}`, {
    event: signal === 'SIGKILL' ? 'killed' : 'terminated',
    topic: s.topic,
    host: s.host,
    signal,
  })
}

/** Stops the children and the status server; on a shared backend (`--url`), deletes the demo's groups too. */
async function closeDemo(services: DemoService[], given: string | undefined, running: RunningStatus | undefined): Promise<void> {
  await stopChildren(services)
  // On a shared backend, leave no empty demo groups behind (its own directory holds the rest).
  if (given !== undefined && running?.coordinator) {
    const c = running.coordinator
    await Promise.allSettled([...new Set(services.map((s) => s.topic))].map((g) => c.deleteGroup(g)))
  }
  await running?.close()
}

/** The status server on --listen, or 127.0.0.1:7979, or (when that is taken and no --listen was given) a free port. */
async function openDemoServer(ctx: CommandContext, config: ServiceGroupConfig, progress: ProgressLine): Promise<RunningStatus> {
  const flag = ctx.values.listen as string | undefined
  const listen = flag === undefined ? { host: '127.0.0.1', port: 7979 } : parseListen(flag)
  const open = (port: number): Promise<RunningStatus> =>
    openStatus({
      config,
      coordinationUrl: config.toozUrl,
      listen: { ...listen, port },
      refreshMs: 500,
      title: 'rollcall demo',
      logger: stderrLogger(ctx.out),
    })
  try {
    return await open(listen.port)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || flag !== undefined) throw err
    progress.log(() => ctx.out.status(`rollcall demo: port ${listen.port} is taken; using a free port`, true))
    return open(0)
  }
}

/** The script: SIGKILL one worker, SIGTERM one api server, restart the worker. */
async function scenario(
  services: DemoService[],
  stop: AbortSignal,
  start: (s: DemoService) => void,
  next: (text: string) => void,
  kill: (s: DemoService, how: string, signal: NodeJS.Signals) => void,
  restarted: (s: DemoService) => void,
): Promise<void> {
  const t0 = Date.now()
  const until = async (seconds: number, text: string): Promise<boolean> => {
    while (!stop.aborted && Date.now() - t0 < seconds * 1000) {
      next(`${text} in ${Math.ceil(seconds - (Date.now() - t0) / 1000)} s`)
      await sleep(stop, 250)
    }
    return !stop.aborted
  }
  const crashed = services.find((s) => s.binary === 'rollcall-worker' && s.host === 'node-2')!
  const stopped = services.find((s) => s.binary === 'rollcall-api' && s.host === 'node-2')!
  if (!(await until(DEMO_TIMING.killAtSeconds, `SIGKILL ${crashed.topic} ${crashed.host}`))) return
  kill(crashed, 'SIGKILL', 'SIGKILL')
  if (!(await until(DEMO_TIMING.termAtSeconds, `SIGTERM ${stopped.topic} ${stopped.host}`))) return
  kill(stopped, 'SIGTERM', 'SIGTERM')
  if (!(await until(DEMO_TIMING.restartAtSeconds, `restart ${crashed.topic} ${crashed.host}`))) return
  restarted(crashed)
  start(crashed)
}

/** The demo command. */
export const demoCommands: Command[] = [
  {
    name: 'demo',
    summary: 'Run a few real services and the live status page in a temporary directory (SQLite + file:// by default; --url for a real backend); one crashes, '
      + 'one stops, one restarts. npm start runs it.',
    usage: '[--url URL] [--listen HOST:PORT] [--duration SECONDS] [--json]',
    options: { url: CONNECTION_OPTIONS.url!, listen: { type: 'string' }, duration: { type: 'string' }, json: { type: 'boolean' } },
    run: async (ctx) => {
      if (ctx.values.listen !== undefined) parseListen(ctx.values.listen as string)
      if (secondsOption(ctx.values.duration, 'duration') === 0) throw new InvalidArgumentError('--duration takes a number of seconds > 0')
      await runDemo(ctx)
    },
  },
]
