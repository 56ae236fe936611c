/**
 * What every scenario gets: the backends selected, the quick switch (small N, for building and
 * debugging), logging, rollcall coordinator fleets, and result files that merge per backend so a
 * filtered run (`--backend redis`) refreshes only its own rows.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect, type Coordinator, type ConnectOptions } from '../../src/index.js'
import type { BenchBackend } from './backends.js'

export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')
export const RESULTS_DIR = join(BENCH_DIR, 'results')

export interface BenchContext {
  backends: readonly BenchBackend[]
  quick: boolean
  log(message: string): void
}

/** The capabilities every benchmark member carries (a Nova-like service record). */
export function capsOf(i: number): Record<string, unknown> {
  return { host: `compute-${String(i).padStart(6, '0')}`, binary: 'nova-compute', zone: `az${i % 3}`, version: '29.0.0', enabled: true }
}

/** One scenario's result file: per-backend entries plus the conditions they were taken under. */
export interface ResultFile {
  scenario: string
  title: string
  params: Record<string, unknown>
  backends: Record<string, BackendEntry>
}

export interface BackendEntry {
  takenAt: string
  /** /proc/loadavg 1-minute figure when this backend's run started. */
  load1: number
  quick: boolean
  data: Record<string, unknown>
  errors?: string[]
}

/** Reads a scenario's result file, or an empty one. */
export function readResult(scenario: string, title: string, params: Record<string, unknown>): ResultFile {
  const file = join(RESULTS_DIR, `${scenario}.json`)
  if (existsSync(file)) {
    try {
      const r = JSON.parse(readFileSync(file, 'utf8')) as ResultFile
      return { ...r, title, params }
    } catch { /* rewritten below */ }
  }
  return { scenario, title, params, backends: {} }
}

export function writeResult(r: ResultFile): void {
  mkdirSync(RESULTS_DIR, { recursive: true })
  writeFileSync(join(RESULTS_DIR, `${r.scenario}.json`), `${JSON.stringify(r, null, 2)}\n`)
}

/** The 1-minute load average above which a run counts as taken while other work was running (its figures provisional). */
export const QUIET_LOAD = 1.5

export const load1 = (): number => Math.round(loadavg()[0]! * 100) / 100

/** The share of CPU time both cores spent idle over `sampleMs`, 0-1. */
async function idleShare(sampleMs: number): Promise<number> {
  const times = (): { idle: number; total: number } =>
    cpus().reduce((a, c) => ({ idle: a.idle + c.times.idle, total: a.total + Object.values(c.times).reduce((x, y) => x + y, 0) }), { idle: 0, total: 0 })
  const before = times()
  await new Promise((r) => setTimeout(r, sampleMs))
  const after = times()
  return after.total > before.total ? (after.idle - before.idle) / (after.total - before.total) : 1
}

/** The idle share of CPU below which a measurement waits for the machine to settle. */
const SETTLED_IDLE = 0.85
/** How long it waits at most. */
const SETTLE_MAX_MS = 30_000

/**
 * Waits (up to SETTLE_MAX_MS) until the CPU is at least SETTLED_IDLE idle over half a second, so that
 * a measurement does not start while the previous one's processes and servers are still busy
 * (exiting agents, a server's background flush). The load average cannot tell: it lags by a minute.
 * Returns the idle share it started on.
 */
export async function settleCpu(log: (m: string) => void): Promise<number> {
  const until = Date.now() + SETTLE_MAX_MS
  let idle = await idleShare(500)
  while (idle < SETTLED_IDLE && Date.now() < until) idle = await idleShare(500)
  if (idle < SETTLED_IDLE) log(`CPU only ${Math.round(idle * 100)} % idle after ${SETTLE_MAX_MS / 1000} s: measuring anyway`)
  return Math.round(idle * 100) / 100
}

/**
 * Runs `fn` for each selected backend it applies to and stores each outcome (or its error) in the
 * scenario's result file as soon as it is known.
 */
export async function forEachBackend(
  ctx: BenchContext,
  scenario: string,
  title: string,
  params: Record<string, unknown>,
  applies: readonly BenchBackend[],
  fn: (backend: BenchBackend, errors: string[]) => Promise<Record<string, unknown>>,
): Promise<void> {
  for (const backend of ctx.backends) {
    if (!applies.includes(backend)) continue
    const idle = await settleCpu(ctx.log)
    const takenAt = new Date().toISOString()
    const l = load1()
    ctx.log(`${scenario}: ${backend} (load ${l}, CPU ${Math.round(idle * 100)} % idle)`)
    const errors: string[] = []
    let data: Record<string, unknown> = {}
    try {
      data = await fn(backend, errors)
    } catch (err) {
      errors.push(`${(err as Error).message}`.slice(0, 600))
      ctx.log(`${scenario}: ${backend} failed: ${(err as Error).message}`)
    }
    const r = readResult(scenario, title, params)
    r.backends[backend] = { takenAt, load1: l, quick: ctx.quick, data, ...(errors.length ? { errors } : {}) }
    writeResult(r)
  }
}

/** Runs `fn` on each item with at most `limit` at a time. */
export async function inBatches<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!, i)
    }
  }))
  return out
}

/** `n` started coordinators with member ids `<prefix>-<i>`, connected 20 at a time. */
export async function fleet(url: string, prefix: string, n: number, options: ConnectOptions = {}): Promise<Coordinator[]> {
  const coords: Coordinator[] = []
  try {
    await inBatches(Array.from({ length: n }, (_, i) => i), 20, async (i) => {
      coords[i] = await connect(url, { memberId: `${prefix}-${i}`, ...options })
    })
  } catch (err) {
    await stopFleet(coords.filter(Boolean))
    throw err
  }
  return coords
}

export async function stopFleet(coords: readonly Coordinator[]): Promise<void> {
  await inBatches(coords, 50, (c) => c.stop().catch(() => {}))
}

/**
 * How many members (one rollcall coordinator, so one server connection, each) a scenario may
 * start: PostgreSQL's and MariaDB's connection limits (100 and 151 by default, less the superuser
 * reserve and the bench's own observers and raw clients) cap them.
 */
export function memberCap(backend: BenchBackend, wanted: number): number {
  if (backend === 'postgresql') return Math.min(wanted, 80)
  if (backend === 'mysql') return Math.min(wanted, 130)
  return wanted
}

/**
 * A row's conditions: the 1-minute load average when it started. That average includes the bench's
 * own previous scenario (closed loops keep both cores busy), so it does not mark a row provisional;
 * only the load before the run began says whether other work shared the machine.
 */
export function conditions(e: { load1: number; quick?: boolean } | undefined): string {
  return e ? `load ${e.load1}${e.quick ? ', quick' : ''}` : ''
}
