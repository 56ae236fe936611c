/** `rollcall lock NAME -- COMMAND...`: run a command while holding a lock, like flock(1). */
import { InvalidArgumentError, LockAcquireFailedError } from '../../errors.js'
import { startCommand } from '../child.js'
import { DIAL_OPTIONS, secondsOption, type Command } from '../command.js'
import { withCoordinator } from '../connection.js'
import { EXIT } from '../exit-codes.js'
import { ProgressLine } from '../progress.js'

/** The lock command. */
export const lockCommands: Command[] = [
  {
    name: 'lock',
    summary: 'Run COMMAND while holding lock NAME; its exit status becomes ours (128+N if a signal N killed it). If the lock is lost meanwhile, COMMAND gets '
      + 'SIGTERM and the status is 9.',
    usage: 'NAME [--timeout SECONDS | --nonblock] [--url URL] -- COMMAND [ARGS...]',
    positionals: ['NAME'],
    takesCommand: true,
    options: { ...DIAL_OPTIONS, timeout: { type: 'string' }, nonblock: { type: 'boolean' } },
    optionHelp: { timeout: 'give up (status 5) after SECONDS of waiting', nonblock: 'do not wait: status 5 at once if the lock is held' },
    run: (ctx) =>
      withCoordinator(ctx, async (c) => {
        const name = ctx.positionals[0]!
        if (ctx.rest.length === 0) throw new InvalidArgumentError('rollcall lock needs a command after "--", e.g. rollcall lock nightly -- ./report.sh')
        const timeoutSeconds = secondsOption(ctx.values.timeout, 'timeout')
        const lock = c.getLock(name)
        // One attempt first: "waiting" is shown only when there is something to wait for.
        let got = await lock.acquire({ blocking: false })
        if (!got && !ctx.values.nonblock) {
          const progress = new ProgressLine(ctx.out)
          const started = Date.now()
          progress.set(`waiting for lock ${name}`, 'waiting')
          const tick = setInterval(() => progress.set(`waiting for lock ${name} (${Math.round((Date.now() - started) / 1000)} s)`, 'waiting'), 1000)
          try {
            got = await lock.acquire({
              timeoutMs: timeoutSeconds === undefined ? undefined : Math.max(0, timeoutSeconds * 1000 - (Date.now() - started)),
              signal: ctx.signal,
            })
          } finally {
            clearInterval(tick)
            progress.done()
          }
        }
        if (!got) throw new LockAcquireFailedError(name, ctx.values.nonblock ? 'it is held by someone else' : `not acquired within ${timeoutSeconds} s`)
        ctx.out.status(`acquired lock ${name}${lock.fencingToken !== undefined ? ` (fencing token ${lock.fencingToken})` : ''}`)
        const env = { ...process.env, ...(lock.fencingToken !== undefined ? { ROLLCALL_FENCING_TOKEN: String(lock.fencingToken) } : {}) }
        const running = await startCommand(ctx.rest, ctx.out, env)
        let lost = false
        const onLost = (): void => {
          // Only a loss while the command runs: release() below aborts the signal too.
          if (running.exited) return
          lost = true
          ctx.out.error(`rollcall: lock ${name} was lost; stopping the command`)
          running.kill('SIGTERM')
        }
        lock.signal.addEventListener('abort', onLost, { once: true })
        const status = await running.status
        lock.signal.removeEventListener('abort', onLost)
        await lock.release()
        return lost ? EXIT.lockLost : status
      }, { bounded: false }),
  },
]
