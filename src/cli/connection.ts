/**
 * How coordination commands reach a backend: `--url` or ROLLCALL_URL, `--member` or
 * ROLLCALL_MEMBER, parsed by the same code as the library (connect()).
 */
import { hostname } from 'node:os'
import { connect, type Coordinator } from '../index.js'
import { InvalidArgumentError } from '../errors.js'
import type { CommandContext } from './command.js'

/** The backend URL from `--url` or ROLLCALL_URL. */
export function backendUrl(ctx: CommandContext): string {
  const url = (ctx.values.url as string | undefined) ?? ctx.env.ROLLCALL_URL
  if (!url) throw new InvalidArgumentError('No backend URL: pass --url URL or set ROLLCALL_URL (e.g. redis://127.0.0.1:6379)')
  return url
}

/** Connects as `--member` (or ROLLCALL_MEMBER, or a per-process default). */
export async function openCoordinator(ctx: CommandContext, options: { autoWatch?: boolean } = {}): Promise<Coordinator> {
  const memberId = (ctx.values.member as string | undefined) ?? ctx.env.ROLLCALL_MEMBER ?? `rollcall-cli-${hostname()}-${process.pid}`
  return connect(backendUrl(ctx), { memberId, autoWatch: options.autoWatch ?? true })
}

/** Runs `fn` with a connected coordinator and always stops it. */
export async function withCoordinator<T>(ctx: CommandContext, fn: (c: Coordinator) => Promise<T>): Promise<T> {
  const c = await openCoordinator(ctx)
  try {
    return await fn(c)
  } finally {
    await c.stop()
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
