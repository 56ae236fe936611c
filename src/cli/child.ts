/**
 * Running the COMMAND after `--` (lock, elect, service run) as flock(1) and shells do: its exit
 * status becomes rollcall's, a command killed by signal N gives 128+N, a command that cannot be
 * found gives 127 and one that cannot be executed 126. SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
 * SIGUSR2 and SIGWINCH sent to rollcall are passed on to its whole process group; SIGTSTP
 * (Ctrl-Z) stops the group and rollcall, SIGCONT continues them.
 *
 * The command's life is bound to rollcall's: it runs in a process group (a session) of its own,
 * watched by a small /bin/sh watchdog holding a pipe to rollcall. When the pipe ends (rollcall
 * exited in any way, SIGKILL included: the kernel closes it), the watchdog ends the command's
 * whole group: SIGTERM, then SIGKILL after GROUP_KILL_GRACE_MS. When the command exits,
 * rollcall ends the pipe itself, so whatever the command left running in its group goes too,
 * before the status is reported (and the lock or leadership given up).
 *
 * spawnWatched() is that binding alone, for children rollcall starts and stops itself (the
 * demo's services): their life is bound to rollcall's in the same way.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { constants } from 'node:os'
import type { Output } from './command.js'

/** Exit statuses of a command that never ran, as sh and flock(1) give them. */
export const CANNOT_RUN = { notFound: 127, notExecutable: 126 } as const

/**
 * How long the command's process group has between SIGTERM and SIGKILL once it must go. Short,
 * so that the group is gone well within a second: the lock or leadership it ran under expires
 * (and another member may be granted it) seconds after rollcall dies.
 */
export const GROUP_KILL_GRACE_MS = 250

const FORWARDED: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH']

/** Process groups and /bin/sh: everywhere but Windows, where the command runs unwatched. */
const WATCHED = process.platform !== 'win32'

/** Grace polls of the watchdog (every 50 ms) before SIGKILL. */
const GRACE_POLLS = Math.ceil(GROUP_KILL_GRACE_MS / 50)

/**
 * The watchdog: reads the group's id, waits for end of input, then ends the group. It exits at
 * once when the group is already empty (the command and all it started have exited).
 */
const WATCHDOG_SCRIPT = [
  'read -r pgid || exit 0',
  'while read -r _; do :; done',
  'kill -TERM -"$pgid" 2>/dev/null || exit 0',
  'kill -CONT -"$pgid" 2>/dev/null',
  'n=0',
  `while [ "$n" -lt ${GRACE_POLLS} ] && kill -0 -"$pgid" 2>/dev/null; do sleep 0.05; n=$((n + 1)); done`,
  'kill -KILL -"$pgid" 2>/dev/null',
  'exit 0',
].join('\n')

/** A started command. */
export interface RunningCommand {
  /** The command's process id (also its process group's), undefined if it never started. */
  readonly pid: number | undefined
  /**
   * Resolves to the exit status (never rejects) once the command has exited and nothing it
   * started is left in its process group; see the file's header.
   */
  readonly status: Promise<number>
  /** True once the command has exited (or failed to start). */
  readonly exited: boolean
  /** Sends `signal` to the command's whole process group (nothing once it is gone). */
  kill(signal: NodeJS.Signals): void
}

/** The shell's status for an exit: the code, or 128 + the signal's number. */
export function exitStatusOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0)
}

/** A watchdog process, started before the command so that no command ever runs unwatched. */
interface Watchdog {
  /** Tells it which group to end. */
  watch(pgid: number): void
  /** Ends its input: it ends the group (if anything is left in it) and exits. */
  release(): Promise<void>
}

function startWatchdog(): Watchdog | undefined {
  const sh = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, 'rollcall-watchdog'], { stdio: ['pipe', 'ignore', 'ignore'], detached: true })
  // Spawning is synchronous on POSIX: no pid means it failed ('error' follows, and is ignored here).
  sh.once('error', () => {})
  if (sh.pid === undefined) return undefined
  const gone = new Promise<void>((resolve) => sh.once('exit', () => resolve()))
  // Never an EPIPE crash: a watchdog that died early simply watches nothing.
  sh.stdin!.on('error', () => {})
  return {
    watch: (pgid) => void sh.stdin!.write(`${pgid}\n`),
    release: () => {
      sh.stdin!.end()
      return gone
    },
  }
}

/** A child process whose life is bound to rollcall's (see the file's header). */
export interface WatchedChild {
  /** The child, leading a process group of its own (on Windows: unwatched, in rollcall's group). */
  readonly child: ChildProcess
  /**
   * Ends the watchdog's input: it ends whatever is left in the child's group and exits; resolves
   * once it has. Done by itself when the child exits; calling it again does nothing more.
   */
  release(): Promise<void>
}

/**
 * Spawns `cmd` with `options` (but `detached`: it always gets a process group of its own) under a
 * watchdog started first, so that it lives no longer than rollcall, SIGKILL included. When the
 * child exits, whatever it left in its group is ended and the watchdog exits. Undefined when the
 * watchdog (/bin/sh) cannot be started: then nothing is spawned.
 */
export function spawnWatched(cmd: string, args: readonly string[], options: Omit<SpawnOptions, 'detached'>): WatchedChild | undefined {
  const watchdog = WATCHED ? startWatchdog() : undefined
  if (WATCHED && !watchdog) return undefined
  const child = spawn(cmd, args, { ...options, detached: WATCHED })
  let released: Promise<void> | undefined
  const release = (): Promise<void> => (released ??= watchdog?.release() ?? Promise.resolve())
  if (child.pid === undefined) void release()
  else {
    watchdog?.watch(child.pid)
    child.once('exit', () => void release())
  }
  return { child, release }
}

/**
 * Starts `argv` with inherited stdio in a process group of its own, watched (see the file's
 * header), and resolves once it has started (or failed to: then the status is already settled,
 * and an error line names the command and why).
 */
export async function startCommand(argv: readonly string[], out: Output, env: NodeJS.ProcessEnv = process.env): Promise<RunningCommand> {
  const [cmd, ...args] = argv
  const watched = spawnWatched(cmd!, args, { stdio: 'inherit', env })
  if (!watched) {
    out.error(`rollcall: cannot run ${JSON.stringify(cmd)}: /bin/sh, which watches it, cannot be started`)
    return { pid: undefined, status: Promise.resolve(CANNOT_RUN.notExecutable), exited: true, kill: () => {} }
  }
  const { child } = watched
  let groupGone = false
  const kill = (signal: NodeJS.Signals): void => {
    if (child.pid === undefined || groupGone) return
    try {
      if (WATCHED) process.kill(-child.pid, signal)
      else child.kill(signal)
    } catch {
      // The group is already empty.
    }
  }
  // Ctrl-Z stops rollcall and its command together, and `fg` continues both, as when they shared
  // a process group. SIGSTOP, not SIGTSTP: the command's group is orphaned (its parent is in
  // another session), and the kernel drops SIGTSTP sent to an orphaned group.
  const suspend = (): void => {
    kill('SIGSTOP')
    process.kill(process.pid, 'SIGSTOP')
  }
  const resume = (): void => kill('SIGCONT')
  const listeners: [NodeJS.Signals, (signal: NodeJS.Signals) => void][] = FORWARDED.map((s) => [s, kill])
  if (WATCHED) listeners.push(['SIGTSTP', suspend], ['SIGCONT', resume])
  for (const [s, l] of listeners) process.on(s, l)
  let exited = false
  const exitStatus = new Promise<number>((resolve) => {
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
  })
  const status = exitStatus.then(async (s) => {
    await watched.release()
    return s
  }).finally(() => {
    groupGone = true
    for (const [s, l] of listeners) process.off(s, l)
  })
  await Promise.race([new Promise<void>((resolve) => child.once('spawn', () => resolve())), exitStatus])
  return {
    pid: child.pid,
    status,
    get exited() {
      return exited
    },
    kill,
  }
}
