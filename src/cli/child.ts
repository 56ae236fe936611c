/**
 * Running the COMMAND after `--` (lock, elect, service run) as flock(1) and shells do: its exit
 * status becomes rollcall's, a command killed by signal N gives 128+N, a command that cannot be
 * found gives 127 and one that cannot be executed 126. SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
 * and SIGUSR2 sent to rollcall are passed on to it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { constants } from 'node:os'
import type { Output } from './command.js'

/** Exit statuses of a command that never ran, as sh and flock(1) give them. */
export const CANNOT_RUN = { notFound: 127, notExecutable: 126 } as const

const FORWARDED: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2']

/** A started command. */
export interface RunningCommand {
  readonly child: ChildProcess
  /** Resolves to the exit status (never rejects); see the file's header. */
  readonly status: Promise<number>
  /** True once the command has exited (or failed to start). */
  readonly exited: boolean
}

/** The shell's status for an exit: the code, or 128 + the signal's number. */
export function exitStatusOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0)
}

/**
 * Starts `argv` with inherited stdio and resolves once it has started (or failed to: then the
 * status is already settled, and an error line names the command and why).
 */
export async function startCommand(argv: readonly string[], out: Output, env: NodeJS.ProcessEnv = process.env): Promise<RunningCommand> {
  const [cmd, ...args] = argv
  const child = spawn(cmd!, args, { stdio: 'inherit', env })
  const forward = (signal: NodeJS.Signals): void => void child.kill(signal)
  for (const s of FORWARDED) process.on(s, forward)
  let exited = false
  const status = new Promise<number>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      exited = true
      const notFound = err.code === 'ENOENT'
      out.error(`rollcall: cannot run ${JSON.stringify(cmd)}: ${notFound ? 'command not found' : err.code === 'EACCES' ? 'permission denied' : err.message}`)
      resolve(notFound ? CANNOT_RUN.notFound : CANNOT_RUN.notExecutable)
    })
    child.once('exit', (code, signal) => {
      exited = true
      resolve(exitStatusOf(code, signal))
    })
  }).finally(() => {
    for (const s of FORWARDED) process.off(s, forward)
  })
  await Promise.race([new Promise<void>((resolve) => child.once('spawn', () => resolve())), status])
  return {
    child,
    status,
    get exited() {
      return exited
    },
  }
}
