/**
 * The fault suite's harness: repeated, bounded runs of one scenario with a rate and a worst time
 * (recorded for docs/reliability.md), per-run cleanup scopes, event recording for in-process
 * coordinators and for members in child processes, the event-order checks every scenario shares,
 * and unhandled-rejection tracking (any one fails the run).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { connect, type Coordinator } from '../../../src/index.js'
import { waitFor } from '../../support/wait.js'
import type { ContenderSpec } from './contender.js'
import type { MemberSpec } from './member.js'
import { FAULT_RUNS, type ResultsWriter } from './results.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const REPO = join(HERE, '..', '..', '..')

// ---------------------------------------------------------------------------------------------
// Unhandled rejections: none is allowed, anywhere in the test process.

const rejections: string[] = []
process.on('unhandledRejection', (reason) => {
  rejections.push(reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason))
})

// ---------------------------------------------------------------------------------------------
// Scopes: what one run started, undone when the run ends, pass or fail.

/** Cleanup for one run, run in reverse order; each step bounded, failures ignored. */
export class Scope {
  readonly #steps: (() => unknown)[] = []

  defer(step: () => unknown): void {
    this.#steps.push(step)
  }

  async close(): Promise<void> {
    for (const step of this.#steps.splice(0).reverse()) {
      await withTimeout(Promise.resolve().then(step), 20_000, 'a cleanup step').catch(() => {})
    }
  }
}

/** Rejects with `what timed out` when `p` has not settled within `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

// ---------------------------------------------------------------------------------------------
// Scenarios: N bounded runs, a rate, a worst time.

/** A test's own bound: every run at its bound, plus set-up. */
export function testTimeout(runTimeoutMs: number, runs = FAULT_RUNS): number {
  return runs * (runTimeoutMs + 30_000) + 120_000
}

/** What one run returns. */
export interface RunOutcome {
  /** The scenario's measure for this run (see ScenarioSpec.measure). */
  ms?: number
  /** Counts summed over the runs, for the report's notes. */
  counts?: Record<string, number>
}

/** One scenario on one backend. */
export interface ScenarioSpec {
  writer: ResultsWriter
  scenario: string
  title: string
  backend: string
  /** What the run's `ms` measures, e.g. "SIGKILL → seen leaving". */
  measure: string
  /** Bound on one run (its cleanup not included). */
  runTimeoutMs: number
  runs?: number
  /** A known, unfixed bug the scenario exposes (its test runs as a todo). */
  knownBug?: string
}

/**
 * Runs a scenario `runs` times (FAULT_RUNS by default), each in a fresh Scope and bounded in
 * time; records runs, failures and the worst measure; then fails the test if any run failed.
 */
export async function repeat(t: TestContext, spec: ScenarioSpec, run: (scope: Scope, n: number) => Promise<RunOutcome | void>): Promise<void> {
  const runs = spec.runs ?? FAULT_RUNS
  const errors: string[] = []
  const counts: Record<string, number> = {}
  let worst: number | undefined
  for (let n = 1; n <= runs; n++) {
    const scope = new Scope()
    const before = rejections.length
    try {
      const out = (await withTimeout(run(scope, n), spec.runTimeoutMs, `run ${n}`)) ?? {}
      const fresh = rejections.slice(before)
      if (fresh.length > 0) throw new Error(`unhandled rejection(s): ${fresh.join('; ')}`)
      if (out.ms !== undefined) worst = Math.max(worst ?? 0, Math.round(out.ms))
      for (const [k, v] of Object.entries(out.counts ?? {})) counts[k] = (counts[k] ?? 0) + v
    } catch (err) {
      errors.push(`run ${n}: ${err instanceof Error ? err.message : String(err)}`)
    } finally {
      await scope.close()
    }
  }
  const notes = Object.entries(counts).map(([k, v]) => `${k}: ${v}`)
  spec.writer.add({
    scenario: spec.scenario,
    title: spec.title,
    backend: spec.backend,
    runs,
    failures: errors.length,
    measure: spec.measure,
    worstMs: worst,
    notes,
    errors: errors.map((e) => e.split('\n')[0]!.slice(0, 300)),
    ...(spec.knownBug ? { knownBug: spec.knownBug } : {}),
  })
  t.diagnostic(
    `${spec.backend} ${spec.scenario}: ${runs - errors.length}/${runs} passed; worst ${spec.measure}: ${worst ?? '-'} ms${
      notes.length ? `; ${notes.join(', ')}` : ''
    }`,
  )
  assert.equal(errors.length, 0, `${errors.length} of ${runs} runs failed:\n${errors.join('\n')}`)
}

// ---------------------------------------------------------------------------------------------
// Events.

/** One recorded event: `state:suspended`, `membershipLost:<g>`, `rejoined:<g>`, `lockLost:<name>`, ... */
export interface Ev {
  what: string
  at: number
}

/** Records a coordinator's fault-related events, with times. */
export function recordEvents(c: Coordinator): Ev[] {
  const log: Ev[] = []
  const add = (what: string): void => void log.push({ what, at: Date.now() })
  c.on('connectionStateChanged', (e) => add(`state:${e.state}`))
  c.on('membershipLost', (e) => add(`membershipLost:${e.group}`))
  c.on('rejoined', (e) => add(`rejoined:${e.group}`))
  c.on('lockLost', (e) => add(`lockLost:${e.name}`))
  c.on('leadershipLost', (e) => add(`leadershipLost:${e.group}`))
  c.on('leaderElected', (e) => add(`leaderElected:${e.group}`))
  c.on('heartbeatFailed', (e) => add(`heartbeatFailed:${e.reason}`))
  return log
}

/** The connection states in a log, in order. */
export function states(log: readonly Ev[]): string[] {
  return log.filter((e) => e.what.startsWith('state:')).map((e) => e.what.slice(6))
}

/** True when the log has an event `what`. */
export function has(log: readonly Ev[], what: string): boolean {
  return log.some((e) => e.what === what)
}

/**
 * The order every fault must respect; returns what is wrong (empty when right):
 * - connection states form cycles `suspended → [lost →] reconnected` or `lost → reconnected`,
 *   and the last cycle is closed (the member is connected again at the end);
 * - every membershipLost of `group` is followed by a rejoined of it, with none in between;
 * - a lock is reported lost at most once.
 */
export function orderProblems(log: readonly Ev[], who: string, group: string, lock?: string): string[] {
  const problems: string[] = []
  const seq = states(log).join(' ')
  const cycle = '(?:(?:suspended )?(?:lost )?reconnected)'
  if (!new RegExp(`^(?:${cycle}(?: ${cycle})*)?$`).test(seq)) problems.push(`${who}: connection states out of order: ${seq || '(none)'}`)
  let pending = false
  for (const e of log) {
    if (e.what === `membershipLost:${group}`) {
      if (pending) problems.push(`${who}: membershipLost twice without rejoined in between`)
      pending = true
    } else if (e.what === `rejoined:${group}`) {
      if (!pending) problems.push(`${who}: rejoined without membershipLost`)
      pending = false
    }
  }
  if (pending) problems.push(`${who}: membershipLost was never followed by rejoined`)
  if (lock !== undefined && log.filter((e) => e.what === `lockLost:${lock}`).length > 1) problems.push(`${who}: lockLost reported more than once`)
  return problems
}

/** Formats a log for messages. */
export function show(log: readonly Ev[]): string {
  const t0 = log[0]?.at ?? 0
  return log.map((e) => `${e.what}@${e.at - t0}`).join(', ') || '(no events)'
}

// ---------------------------------------------------------------------------------------------
// Child processes.

/** A member in a child process (test/fault/support/member.ts). */
export interface MemberChild {
  readonly pid: number
  readonly memberId: string
  /** Events it reported, as `what` strings like recordEvents() makes. */
  readonly events: Ev[]
  /** Exit code or signal, once it exited. */
  exited(): string | undefined
  /** Asks it for its view of itself. */
  status(): Promise<Record<string, unknown>>
  signal(sig: NodeJS.Signals): void
}

function spawnTsx(script: string, arg: unknown): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', join(HERE, script), JSON.stringify(arg)], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] })
}

/**
 * Freezes a child (SIGSTOP) and resolves once the kernel reports it stopped (state T in
 * /proc/<pid>/stat) or gone, so that it writes nothing more: a signal sent to a process running on
 * the other core, or in the middle of a write, takes effect a little later than kill() returns.
 */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGSTOP')
  await waitFor(
    `pid ${child.pid} stopped`,
    () => {
      if (child.exitCode !== null || child.signalCode !== null) return true
      let stat: string
      try {
        stat = readFileSync(`/proc/${child.pid}/stat`, 'latin1')
      } catch {
        return true // gone
      }
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      return state === 'T' || state === 'Z'
    },
    10_000,
    1,
  )
}

/**
 * Ends a child for good and waits for it. SIGKILL ends a stopped process too; SIGCONT goes after it, never
 * before, so that a frozen child (stopChild) cannot run another instruction.
 */
export async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const gone = new Promise((r) => child.once('exit', r))
  child.kill('SIGKILL')
  child.kill('SIGCONT')
  await gone
}

/** Starts a member process and waits until it has joined (and taken its lock). Killed with the scope. */
export async function spawnMember(scope: Scope, spec: MemberSpec): Promise<MemberChild> {
  const child = spawnTsx('member.ts', spec)
  scope.defer(() => killChild(child))
  const events: Ev[] = []
  const waiting = new Set<(fields: Record<string, unknown>) => void>()
  let stderr = ''
  let ready!: () => void
  const readyP = new Promise<void>((r) => (ready = r))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2_000)))
  let buf = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      let msg: Record<string, unknown>
      try {
        msg = JSON.parse(line) as Record<string, unknown>
      } catch {
        continue
      }
      const at = Number(msg.at)
      switch (msg.ev) {
        case 'ready':
          ready()
          break
        case 'state':
          events.push({ what: `state:${String(msg.state)}`, at })
          break
        case 'membershipLost':
          events.push({ what: `membershipLost:${String(msg.group)}`, at })
          break
        case 'rejoined':
          events.push({ what: `rejoined:${String(msg.group)}`, at })
          break
        case 'lockLost':
          events.push({ what: `lockLost:${String(msg.name)}`, at })
          break
        case 'heartbeatFailed':
          events.push({ what: `heartbeatFailed:${String(msg.reason)}`, at })
          break
        case 'status':
          for (const w of waiting) w(msg)
          waiting.clear()
          break
      }
    }
  })
  const exit = new Promise<never>((_, reject) =>
    child.once('exit', (code, sig) => reject(new Error(`member process exited (${sig ?? code}) before it was ready: ${stderr.trim()}`)))
  )
  exit.catch(() => {})
  await withTimeout(Promise.race([readyP, exit]), 60_000, `member ${spec.memberId} starting`)
  return {
    pid: child.pid!,
    memberId: spec.memberId,
    events,
    exited: () => (child.exitCode !== null || child.signalCode !== null
      ? `${child.signalCode ?? child.exitCode}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`
      : undefined),
    status: () =>
      withTimeout(
        new Promise((resolve) => {
          waiting.add(resolve)
          child.stdin!.write('status\n')
        }),
        15_000,
        `status of member ${spec.memberId}`,
      ),
    signal: (sig) => void child.kill(sig),
  }
}

/** A contender process (test/fault/support/contender.ts), ready to contend. */
export async function spawnContender(spec: ContenderSpec): Promise<ChildProcess> {
  const child = spawnTsx('contender.ts', spec)
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2_000)))
  child.stdout!.setEncoding('utf8')
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: string) => d.includes('ready') && resolve())
        child.once('exit', (code, sig) => reject(new Error(`contender exited (${sig ?? code}) before it was ready: ${stderr.trim()}`)))
      }),
      60_000,
      `contender ${spec.memberId} starting`,
    )
  } catch (err) {
    await killChild(child)
    throw err
  }
  return child
}

/** Polls until `check` holds, or throws naming `what` after `ms` (test/support/wait.ts, polling every 50 ms by default). */
export function until<T>(what: string, check: () => T | Promise<T>, ms: number, everyMs = 50): Promise<NonNullable<T>> {
  return waitFor(what, check, ms, everyMs)
}

/** A started coordinator, stopped when the scope closes. */
export async function open(scope: Scope, url: string, options: Record<string, unknown> = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: `m-${Math.random().toString(36).slice(2, 10)}`, watchIntervalMs: 200, ...options })
  scope.defer(() => c.stop())
  return c
}

/** Membership events a watcher saw, with times. */
export function recordMembers(c: Coordinator): { joined: Ev[]; left: Ev[] } {
  const out = { joined: [] as Ev[], left: [] as Ev[] }
  c.on('memberJoined', (e) => void out.joined.push({ what: `${e.group}/${e.member}`, at: Date.now() }))
  c.on('memberLeft', (e) => void out.left.push({ what: `${e.group}/${e.member}`, at: Date.now() }))
  return out
}

/**
 * Another member contending for a lock someone holds, retrying until granted or the scope ends;
 * `takenAt` is when its acquire resolved, `token` the fencing token it got.
 */
export function contend(scope: Scope, c: Coordinator, name: string): { takenAt: () => number | undefined; token: () => bigint | undefined } {
  const lock = c.getLock(name)
  const stop = new AbortController()
  scope.defer(() => stop.abort())
  let takenAt: number | undefined
  let token: bigint | undefined
  void (async () => {
    while (!stop.signal.aborted && takenAt === undefined) {
      try {
        if (await lock.acquire({ timeoutMs: 2_000, signal: stop.signal })) {
          takenAt = Date.now()
          token = lock.fencingToken
        }
      } catch {
        await sleep(100)
      }
    }
  })()
  return { takenAt: () => takenAt, token: () => token }
}
