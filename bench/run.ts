/**
 * `npm run bench`: every scenario, rollcall side by side with Python tooz and the raw-client floor,
 * on the shared test servers (private ones for anything that needs clean counters). Writes
 * bench/results/<scenario>.json, the plots, docs/performance.md and docs/scale.md.
 *
 *   npm run bench                                    everything (about 20 minutes on 2 cores)
 *   npm run bench -- --backend redis --scenario group-read
 *   npm run bench -- --quick                         small N, to check the scripts
 *   npm run bench -- --docs-only                     regenerate plots and docs from the results
 *
 * --backend and --scenario take comma-separated lists and may repeat. A filtered run replaces
 * only the rows it measures; the docs are always regenerated from every result file.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { BACKENDS, removeFileDir, type BenchBackend } from './lib/backends.js'
import { BENCH_DIR, QUIET_LOAD, RESULTS_DIR, load1, type BenchContext } from './lib/context.js'
import { sleep } from './lib/procs.js'
import { machineInfo } from './lib/machine.js'
import { generateDocs } from './lib/report.js'

const SCENARIOS = ['join', 'heartbeat', 'group-read', 'detection', 'locks', 'failover', 'scale', 'servicegroup'] as const
type Scenario = (typeof SCENARIOS)[number]

function parseArgs(argv: string[]): { backends: BenchBackend[]; scenarios: Scenario[]; quick: boolean; docsOnly: boolean } {
  const backends: string[] = []
  const scenarios: string[] = []
  let quick = false
  let docsOnly = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = (): string[] => (argv[++i] ?? '').split(',').filter(Boolean)
    if (a === '--backend' || a === '-b') backends.push(...value())
    else if (a === '--scenario' || a === '-s') scenarios.push(...value())
    else if (a === '--quick') quick = true
    else if (a === '--docs-only') docsOnly = true
    else throw new Error(`unknown argument ${a}; use --backend a,b --scenario x,y --quick --docs-only`)
  }
  for (const b of backends) if (!(BACKENDS as readonly string[]).includes(b)) throw new Error(`unknown backend ${b}; known: ${BACKENDS.join(', ')}`)
  for (const s of scenarios) if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`unknown scenario ${s}; known: ${SCENARIOS.join(', ')}`)
  return {
    backends: backends.length ? BACKENDS.filter((b) => backends.includes(b)) : [...BACKENDS],
    scenarios: scenarios.length ? SCENARIOS.filter((s) => scenarios.includes(s)) : [...SCENARIOS],
    quick,
    docsOnly,
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const t0 = Date.now()
  const log = (m: string): void => console.log(`[bench ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${m}`)
  mkdirSync(RESULTS_DIR, { recursive: true })
  if (!args.docsOnly) {
    await waitForQuiet(log)
    const command = process.argv.length > 2 ? `npm run bench -- ${process.argv.slice(2).join(' ')}` : 'npm run bench'
    recordRun(command, args.backends.length < BACKENDS.length || args.scenarios.length < SCENARIOS.length)
    log(`load average at start ${loadavg().map((l) => l.toFixed(2)).join(' ')}${load1() > QUIET_LOAD ? ` (above ${QUIET_LOAD}: figures are provisional)` : ''}`)
    const ctx: BenchContext = { backends: args.backends, quick: args.quick, log }
    for (const s of args.scenarios) {
      if (s === 'servicegroup') {
        runServicegroup(log)
        continue
      }
      const mod = (await import(`./${s}.bench.ts`)) as { run(ctx: BenchContext): Promise<void> }
      log(`scenario ${s}`)
      await mod.run(ctx)
    }
    removeFileDir()
  }
  await generateDocs(log)
  log('done')
  process.exit(0)
}

/** How long a run waits for the load to settle (the previous run's, say) before it starts anyway. */
const QUIET_WAIT_MS = 180_000

async function waitForQuiet(log: (m: string) => void): Promise<void> {
  const until = Date.now() + QUIET_WAIT_MS
  if (load1() > QUIET_LOAD) log(`load ${load1()}: waiting up to ${QUIET_WAIT_MS / 1000} s for it to fall to ${QUIET_LOAD}`)
  while (load1() > QUIET_LOAD && Date.now() < until) await sleep(5_000)
}

/**
 * Writes bench/results/machine.json. A full run starts it afresh; a filtered run keeps the full
 * run's record and appends itself to `reruns`, so the docs can say which figures were retaken when.
 */
function recordRun(command: string, filtered: boolean): void {
  const file = join(RESULTS_DIR, 'machine.json')
  const run = { command, takenAt: new Date().toISOString(), load1AtStart: load1() }
  const previous = filtered && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : undefined
  const machine = previous
    ? { ...previous, reruns: [...((previous.reruns as unknown[] | undefined) ?? []), run] }
    : { ...machineInfo(), ...run, reruns: [] }
  writeFileSync(file, `${JSON.stringify(machine, null, 2)}\n`)
}

/** bench/servicegroup.bench.ts belongs to the service-group engineer: run it as it is, if present. */
function runServicegroup(log: (m: string) => void): void {
  const file = join(BENCH_DIR, 'servicegroup.bench.ts')
  if (!existsSync(file)) {
    log('servicegroup: bench/servicegroup.bench.ts does not exist yet; skipped')
    return
  }
  log('scenario servicegroup (bench/servicegroup.bench.ts)')
  const r = spawnSync(process.execPath, ['--import', 'tsx', file], { stdio: 'inherit', timeout: 15 * 60_000 })
  if (r.status !== 0) log(`servicegroup: bench/servicegroup.bench.ts exited with ${r.status ?? r.signal}`)
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
