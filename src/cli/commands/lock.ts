/** `rollcall lock NAME -- COMMAND...`: run a command while holding a lock, like flock(1). */
import { spawn } from 'node:child_process'
import { InvalidArgumentError, LockAcquireFailedError } from '../../errors.js'
import { CONNECTION_OPTIONS, secondsOption, type Command } from '../command.js'
import { withCoordinator } from '../connection.js'
import { EXIT } from '../exit-codes.js'
import { ProgressLine } from '../progress.js'

/** The lock command. */
export const lockCommands: Command[] = [
  {
    name: 'lock',
    summary: 'Run COMMAND while holding lock NAME; its exit status becomes ours. If the lock is lost meanwhile, COMMAND gets SIGTERM and the status is 9.',
    usage: 'NAME [--timeout SECONDS | --nonblock] [--url URL] -- COMMAND [ARGS...]',
    positionals: ['NAME'],
    takesCommand: true,
    options: { ...CONNECTION_OPTIONS, timeout: { type: 'string' }, nonblock: { type: 'boolean' } },
    run: (ctx) => withCoordinator(ctx, async (c) => {
      const name = ctx.positionals[0]!
      const [cmd, ...args] = ctx.rest
      if (!cmd) throw new InvalidArgumentError('rollcall lock needs a command after "--", e.g. rollcall lock nightly -- ./report.sh')
      const timeoutSeconds = secondsOption(ctx.values.timeout, 'timeout')
      const lock = c.getLock(name)
      const progress = new ProgressLine(ctx.out)
      const started = Date.now()
      const tick = setInterval(() => progress.set(`waiting for lock ${name} (${Math.round((Date.now() - started) / 1000)} s)`, 'waiting'), 1000)
      if (!ctx.values.nonblock) progress.set(`waiting for lock ${name}`, 'waiting')
      let got: boolean
      try {
        got = await lock.acquire({ blocking: !ctx.values.nonblock, timeoutMs: timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000, signal: ctx.signal })
      } finally {
        clearInterval(tick)
        progress.done()
      }
      if (!got) throw new LockAcquireFailedError(name, ctx.values.nonblock ? 'it is held by someone else' : `not acquired within ${timeoutSeconds} s`)
      ctx.out.status(`acquired lock ${name}${lock.fencingToken !== undefined ? ` (fencing token ${lock.fencingToken})` : ''}`)
      const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, ...(lock.fencingToken !== undefined ? { ROLLCALL_FENCING_TOKEN: String(lock.fencingToken) } : {}) } })
      let lost = false
      lock.signal.addEventListener('abort', () => {
        if (!lock.acquired && child.exitCode === null) {
          lost = true
          ctx.out.error(`rollcall: lock ${name} was lost; stopping the command`)
          child.kill('SIGTERM')
        }
      })
      const forward = (sig: NodeJS.Signals): void => void child.kill(sig)
      process.on('SIGINT', forward).on('SIGTERM', forward)
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
        child.once('error', (err) => reject(new InvalidArgumentError(`Cannot run ${cmd}: ${err.message}`)))
        child.once('exit', (code, sig) => resolve([code, sig]))
      }).finally(() => process.off('SIGINT', forward).off('SIGTERM', forward))
      await lock.release()
      if (lost) return EXIT.lockLost
      return code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGINT' ? 2 : 15)
    }),
  },
]
