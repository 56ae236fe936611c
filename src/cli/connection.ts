/**
 * How coordination commands reach a backend: `--url` or ROLLCALL_URL, `--member` or
 * ROLLCALL_MEMBER, parsed by the same code as the library (connect()), within --dial-timeout;
 * then each command within --command-timeout.
 */
import { hostname } from 'node:os'
import { connect, type Coordinator } from '../index.js'
import { ConnectionError, InvalidArgumentError, OperationTimeoutError } from '../errors.js'
import { redactUrl } from '../index.js'
import { secondsOption, type CommandContext } from './command.js'
import { ProgressLine } from './progress.js'

/** The backend URL from `--url` or ROLLCALL_URL. */
export function backendUrl(ctx: CommandContext): string {
  const url = (ctx.values.url as string | undefined) ?? ctx.env.ROLLCALL_URL
  if (!url) throw new InvalidArgumentError('No backend URL: pass --url URL or set ROLLCALL_URL (e.g. redis://127.0.0.1:6379)')
  return url
}

/** The interactive default of --dial-timeout and --command-timeout, in seconds (etcdctl: 2 s and 5 s). */
export const DEFAULT_TIMEOUT_SECONDS = 5

/** How long the CLI waits in silence before it says what it is waiting for (on a terminal). */
const QUIET_MS = 1000

function timeoutMs(ctx: CommandContext, name: 'dial-timeout' | 'command-timeout'): number {
  return (secondsOption(ctx.values[name], name) ?? DEFAULT_TIMEOUT_SECONDS) * 1000
}

/**
 * Connects as `--member` (or ROLLCALL_MEMBER, or a per-process default), giving up after
 * --dial-timeout (ConnectionError, status 7). On a terminal a wait longer than a second shows
 * what it waits for.
 */
export async function openCoordinator(ctx: CommandContext, options: { autoWatch?: boolean } = {}): Promise<Coordinator> {
  const memberId = (ctx.values.member as string | undefined) ?? ctx.env.ROLLCALL_MEMBER ?? `rollcall-cli-${hostname()}-${process.pid}`
  const url = backendUrl(ctx)
  const dialMs = timeoutMs(ctx, 'dial-timeout')
  const dial = AbortSignal.timeout(dialMs)
  const progress = new ProgressLine(ctx.out, { quiet: true })
  const started = Date.now()
  const tick = setInterval(() => {
    if (Date.now() - started >= QUIET_MS) progress.set(`connecting to ${redactUrl(url)} (${Math.round((Date.now() - started) / 1000)} s)`, 'connecting')
  }, 250)
  try {
    return await connect(url, { memberId, autoWatch: options.autoWatch ?? true, signal: AbortSignal.any([ctx.signal, dial]) })
  } catch (err) {
    if (dial.aborted && !ctx.signal.aborted) {
      throw new ConnectionError(`Cannot connect to ${redactUrl(url)}: no answer within ${dialMs / 1000} s (--dial-timeout)`)
    }
    throw err
  } finally {
    clearInterval(tick)
    progress.done()
  }
}

/**
 * Runs `fn` with a connected coordinator and always stops it. `bounded` (the default) gives
 * `fn` --command-timeout to finish (OperationTimeoutError, status 7): for commands that ask and
 * answer; commands that wait by design (watch, join, lock, elect) pass false.
 */
export async function withCoordinator<T>(ctx: CommandContext, fn: (c: Coordinator) => Promise<T>, options: { bounded?: boolean } = {}): Promise<T> {
  const c = await openCoordinator(ctx)
  let timer: NodeJS.Timeout | undefined
  let timedOut = false
  try {
    if (options.bounded === false) return await fn(c)
    const limitMs = timeoutMs(ctx, 'command-timeout')
    const progress = new ProgressLine(ctx.out, { quiet: true })
    const started = Date.now()
    const tick = setInterval(
      () =>
        Date.now() - started >= QUIET_MS
        && progress.set(`waiting for ${redactUrl(backendUrl(ctx))} (${Math.round((Date.now() - started) / 1000)} s)`, 'waiting'),
      250,
    )
    const expired = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        timedOut = true
        reject(new OperationTimeoutError(`${redactUrl(backendUrl(ctx))} did not answer within ${limitMs / 1000} s (--command-timeout)`))
      }, limitMs)
    })
    try {
      return await Promise.race([fn(c), expired])
    } finally {
      clearInterval(tick)
      progress.done()
    }
  } finally {
    clearTimeout(timer)
    // A backend that did not answer in time would not answer stop()'s clean-up either (a driver
    // waits seconds for it): the answer is due now, and the process exits without it.
    if (timedOut) void c.stop().catch(() => {})
    else await c.stop()
  }
}

/**
 * Resolves when `signal` aborts or `ms` passes (never, when ms is undefined). Keeps the process
 * alive meanwhile: the library's timers are unref'd and a file:// backend holds no socket, so
 * without this a command waiting for Ctrl-C would simply exit.
 */
export function waitUntil(signal: AbortSignal, ms?: number): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const keepAlive = setInterval(() => {}, 1 << 30)
    const done = (): void => {
      clearInterval(keepAlive)
      clearTimeout(timer)
      resolve()
    }
    const timer = ms === undefined ? undefined : setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}
