/**
 * The full form of the partition runs (issue 27), `npm run test:partitions`: for each backend,
 * PARTITION_SCHEDULES seeded schedules (default 50) of PARTITION_FAULTS faults each (default 1),
 * PARTITION_PER_RUN of them (default 10) back to back on each fresh cluster, every run's history
 * checked by test/fault/support/partition-checker.ts. Writes test/partition/results/partitions.json
 * and the "Partitions" section of docs/reliability.md (between its partitions markers; the rest of
 * the file is scripts/faults-report.ts's), and exits 1 if any finding is not explained by a known
 * bug (test/fault/support/known.ts).
 *
 *   npm run test:partitions                                    every backend
 *   npm run test:partitions -- --backend zookeeper             one backend (repeatable)
 *   PARTITION_SEED=N npm run test:partitions -- --backend etcd3   replay one schedule (no report written)
 *   npm run test:partitions -- --render                       write the section again from the last results file
 */
import { execFileSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { renderPartitionReport } from '../test/fault/support/partition-checker.js'
import { KNOWN_BUGS } from '../test/fault/support/known.js'
import { positiveInt } from '../test/fault/support/results.js'
import { describeSchedule, FAULT_KINDS, makeSchedule, type Schedule } from '../test/partition/support/nemesis.js'
import { PARTITION_BACKENDS, partitionRun, seedAt, type PartitionBackend, type PartitionRunResult } from '../test/partition/support/run.js'
import { verdict } from '../test/partition/support/verdict.js'

const REPORT = join(process.cwd(), 'docs', 'reliability.md')
const RESULTS = join(process.cwd(), 'test', 'partition', 'results', 'partitions.json')
const BEGIN = '<!-- partitions:begin -->'
const END = '<!-- partitions:end -->'

/** One backend's figures over all its runs. */
interface BackendFigures {
  backend: string
  title: string
  runs: number
  schedules: number
  faults: Record<string, number>
  records: number
  registerAccepted: number
  registerRejected: number
  beliefOverlaps: number
  overlapMaxMs: number | null
  dualLeaders: number
  fencingViolations: number
  falseDowns: number
  falseDownMaxMs: number | null
  detections: number
  detectionMaxMs: number | null
  detectionMedianMs: number | null
  missed: number
  late: number
  recoveries: number
  recoveryMaxMs: number | null
  recoveryLate: number
  lost: number
  /** Stretches of an observer's isUp and watch views of a member disagreeing; those beyond the bounds; the longest. */
  disagreements: number
  disagreementsBeyond: number
  disagreementMaxMs: number | null
  /** Stretches without a leader on the served side, and the longest (clusters that elect; absent in results from before it was measured). */
  leaderless?: number
  leaderlessMaxMs?: number | null
  known: Record<string, number>
  unknown: string[]
  /** The worst finding (or, with none, the slowest detection), with the seed of its schedule. */
  worst: { what: string; seed: number | undefined; ms: number } | null
  startupMaxMs: number
  durationMs: number
  /** The commit the runs ran (with `+` when the checkout had changes). */
  commit?: string
}

/** The checkout's commit, with `+` when it has changes (besides the report this script writes). */
function checkoutCommit(): string {
  const git = (...args: string[]): string => execFileSync('git', args, { encoding: 'utf8' }).trim()
  const changed = git('status', '--porcelain', '--untracked-files=no', '--', '.', ':!docs/reliability.md')
  return `${git('rev-parse', '--short', 'HEAD')}${changed ? '+' : ''}`
}

const max = (xs: number[]): number | null => (xs.length ? Math.round(Math.max(...xs)) : null)
const median = (xs: number[]): number | null => (xs.length ? Math.round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!) : null)

function figures(b: PartitionBackend, results: PartitionRunResult[]): BackendFigures {
  const all = <T>(f: (r: PartitionRunResult) => T[]): T[] => results.flatMap(f)
  const known: Record<string, number> = {}
  const unknown: string[] = []
  let worst: BackendFigures['worst'] = null
  const consider = (what: string, r: PartitionRunResult, at: number, ms: number | undefined): void => {
    if (ms !== undefined && (!worst || ms > worst.ms)) worst = { what, seed: seedAt(r, at), ms: Math.round(ms) }
  }
  for (const r of results) {
    const v = verdict(b.name, r.report, r.history)
    for (const [bug, n] of v.known) known[bug] = (known[bug] ?? 0) + n
    unknown.push(...v.unknown.map((u) => `${u} (history ${r.historyPath})`))
    for (const o of r.report.beliefOverlaps.items) consider(`${o.kind} belief overlap`, r, o.granted.at, o.ms)
    for (const f of r.report.falseDowns.items) consider(`false down (${f.via})`, r, f.at, f.ms)
  }
  if (!worst) {
    for (const r of results) {
      for (const d of r.report.detection.items) {
        const cut = r.history.find((e) => e.id === d.cutId)
        consider('slowest detection of a cut member', r, cut?.at ?? 0, d.ms)
      }
    }
  }
  const faults: Record<string, number> = {}
  for (const p of all((r) => r.played)) faults[p.fault.kind] = (faults[p.fault.kind] ?? 0) + 1
  const detections = all((r) => r.report.detection.items.map((d) => d.ms!))
  return {
    backend: b.name,
    title: b.title,
    runs: results.length,
    schedules: results.reduce((n, r) => n + r.schedules.length, 0),
    faults,
    records: results.reduce((n, r) => n + r.report.records, 0),
    registerAccepted: results.reduce((n, r) => n + r.writes.accepted, 0),
    registerRejected: results.reduce((n, r) => n + r.writes.rejected, 0),
    beliefOverlaps: all((r) => r.report.beliefOverlaps.items).length,
    overlapMaxMs: max(all((r) => r.report.beliefOverlaps.items.map((o) => o.ms))),
    dualLeaders: all((r) => r.report.dualLeaders.items).length,
    fencingViolations: all((r) => r.report.fencingViolations.items).length,
    falseDowns: all((r) => r.report.falseDowns.items).length,
    falseDownMaxMs: max(all((r) => r.report.falseDowns.items.map((f) => f.ms))),
    detections: detections.length,
    detectionMaxMs: max(detections),
    detectionMedianMs: median(detections),
    missed: all((r) => r.report.detection.missed).length,
    late: all((r) => r.report.detection.late).length,
    recoveries: all((r) => r.report.recovery.items).length,
    recoveryMaxMs: max(all((r) => r.report.recovery.items.map((x) => x.ms))),
    recoveryLate: all((r) => r.report.recovery.late).length,
    lost: all((r) => r.report.lost).length,
    disagreements: all((r) => r.report.disagreements.items).length,
    disagreementsBeyond: all((r) => r.report.disagreements.beyond).length,
    disagreementMaxMs: max(all((r) => r.report.disagreements.items.map((d) => d.ms))),
    leaderless: all((r) => r.report.leaderless.items).length,
    leaderlessMaxMs: max(all((r) => r.report.leaderless.items.map((o) => o.ms))),
    known,
    unknown,
    worst,
    startupMaxMs: Math.max(...results.map((r) => r.startupMs)),
    durationMs: results.reduce((n, r) => n + r.durationMs, 0),
    commit: checkoutCommit(),
  }
}

const ms = (n: number | null): string => (n === null ? '—' : `${n} ms`)

/** The "Partitions" section, markers included. */
export function renderSection(all: BackendFigures[], meta: { finishedAt: string; faultsPerSchedule: number; perRun: number }): string {
  const out = [
    BEGIN,
    '## Partitions',
    '',
    '<!-- Generated by scripts/partitions-report.ts from its last full run (npm run test:partitions). Do not edit. -->',
    '',
    'Real clusters split by the test: servers n1-n3 and clients c1-c3 are network namespaces on one bridge, cuts are silent drops (test/partition/). '
    + `Each schedule is ${meta.faultsPerSchedule} seeded fault(s) (isolate a node with or without its client, isolate the leader or master, a random `
    + 'minority split, one-way drops, a flapping link, SIGSTOP of a server); a single server (PostgreSQL, MariaDB, memcached) runs on n1 alone, and '
    + 'its faults cut, drop one way, flap or pause the server (with or without some clients on its side), or cut, drop one way or pause one client; '
    + `${meta.perRun} schedules run back to back on each fresh cluster. Three client processes (each on a host of its own, given every server's address) `
    + 'loop on one lock with writes to a fenced register, run for leader of one group, join and watch one group, and run the service-group API '
    + "(tooz driver, report_interval 10 s) for a service of their own, asking isUp() of every client's service every 250-500 ms; the liveness of "
    + "each backend (its title says it) outlasts that cluster's own failover (test/partition/support/run.ts says why). The checker "
    + '(test/fault/support/partition-checker.ts) reads the history on one clock; isUp is held to the membership bounds, and to the '
    + "observer's own watch (disagreements: n, max, beyond the bounds). A cluster that elects is asked four times a second who leads: while "
    + 'the served side has no leader nothing can be renewed, expired or granted there, so that time is added to the bounds of detection and '
    + 'recovery, and what a member reports in it is not a false down. '
    + `Last run finished ${meta.finishedAt}. Replay a schedule: \`PARTITION_SEED=<seed> npm run test:partitions -- --backend <backend>\`.`,
    '',
    '| backend | runs | schedules | belief overlaps (max) | dual leaders | fencing violations | false downs (max) | detection: n, median, max | missed / late | recovery: n, max | lost | isUp vs watch: disagreements, max, beyond | register accepted / rejected |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const f of all) {
    out.push(
      `| ${f.backend} | ${f.runs} | ${f.schedules} | ${f.beliefOverlaps} (${
        ms(f.overlapMaxMs)
      }) | ${f.dualLeaders} | ${f.fencingViolations} | ${f.falseDowns} (${ms(f.falseDownMaxMs)}) | ${f.detections}, ${ms(f.detectionMedianMs)}, ${
        ms(f.detectionMaxMs)
      } | ${f.missed} / ${f.late} | ${f.recoveries}, ${ms(f.recoveryMaxMs)} | ${f.lost} | ${f.disagreements}, ${
        ms(f.disagreementMaxMs)
      }, ${f.disagreementsBeyond} | ${f.registerAccepted} / ${f.registerRejected} |`,
    )
  }
  out.push('')
  for (const f of all) {
    out.push(
      `- **${f.backend}** (${f.title}): faults ${Object.entries(f.faults).map(([k, n]) => `${k} ${n}`).join(', ')}; ${f.records} history records; commit ${
        f.commit ?? 'unknown'
      }; slowest start ${f.startupMaxMs} ms; ${Math.round(f.durationMs / 1000)} s in all.${
        f.leaderless ? ` Without a leader on the served side: ${f.leaderless} stretches, longest ${ms(f.leaderlessMaxMs ?? null)} (allowed).` : ''
      } Worst case: ${f.worst ? `${f.worst.what}, ${f.worst.ms} ms, seed ${f.worst.seed ?? '(after the last schedule)'}` : 'none'}. Known bugs: ${
        Object.keys(f.known).length ? Object.entries(f.known).map(([b, n]) => `${b} (${n} findings)`).join(', ') : 'none hit'
      }. Unexplained findings: ${f.unknown.length}${f.unknown.length ? ` (${f.unknown.slice(0, 3).join('; ')})` : ''}.`,
    )
  }
  const bugs = [...new Set(all.flatMap((f) => Object.keys(f.known)))]
  if (bugs.length) {
    out.push('', 'The known bugs hit (test/fault/support/known.ts):', '')
    for (const b of bugs) out.push(`- **${b}**: ${KNOWN_BUGS[b as keyof typeof KNOWN_BUGS]}`)
  }
  out.push(END)
  return `${out.join('\n')}\n`
}

/** Replaces (or appends) the section in docs/reliability.md. */
function writeSection(section: string): void {
  const text = readFileSync(REPORT, 'utf8')
  const i = text.indexOf(BEGIN)
  const j = text.indexOf(END)
  const next = i >= 0 && j > i ? `${text.slice(0, i)}${section}${text.slice(j + END.length).replace(/^\n/, '')}` : `${text.trimEnd()}\n\n${section}`
  writeFileSync(REPORT, next)
}

async function main(): Promise<number> {
  const args = process.argv.slice(2)
  if (args.includes('--render')) {
    const last = JSON.parse(readFileSync(RESULTS, 'utf8')) as { finishedAt: string; faultsPerSchedule: number; perRun: number; backends: BackendFigures[] }
    writeSection(renderSection(last.backends, last))
    return 0
  }
  const names = args.flatMap((a, i) => (args[i - 1] === '--backend' ? [a] : []))
  for (const n of names) if (!(n in PARTITION_BACKENDS)) throw new Error(`--backend ${n}: use one of ${Object.keys(PARTITION_BACKENDS).join(', ')}`)
  const backends = (names.length ? names : Object.keys(PARTITION_BACKENDS)).map((n) => PARTITION_BACKENDS[n as PartitionBackend['name']])
  const replay = process.env.PARTITION_SEED === undefined ? undefined : Number(process.env.PARTITION_SEED)
  const count = positiveInt(process.env.PARTITION_FAULTS, 1)
  const total = replay === undefined ? positiveInt(process.env.PARTITION_SCHEDULES, 50) : 1
  const perRun = positiveInt(process.env.PARTITION_PER_RUN, 10)
  const base = randomInt(1, 2 ** 31 - total)
  const log = (line: string): void => console.log(`${new Date().toISOString()} ${line}`)
  const out: BackendFigures[] = []
  let unexplained = 0
  for (const b of backends) {
    const seeds = replay === undefined ? [...Array(total).keys()].map((i) => base + i) : [replay]
    const results: PartitionRunResult[] = []
    for (let i = 0; i < seeds.length; i += perRun) {
      const schedules: Schedule[] = seeds.slice(i, i + perRun).map((seed) => makeSchedule(seed, { size: 3, count, kinds: FAULT_KINDS, ...b.schedule }))
      for (const s of schedules) log(`${b.name} seed ${s.seed}: ${describeSchedule(s)}`)
      const r = await partitionRun(b, schedules, log)
      log(`${b.name}: ${renderPartitionReport(r.report)}`)
      results.push(r)
    }
    const f = figures(b, results)
    unexplained += f.unknown.length
    for (const u of f.unknown) log(`${b.name} UNEXPLAINED: ${u}`)
    out.push(f)
  }
  if (replay === undefined) {
    const meta = { finishedAt: new Date().toISOString(), faultsPerSchedule: count, perRun }
    // Backends not run this time keep their figures from the last results file.
    const before = existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as { backends: BackendFigures[] }).backends : []
    const merged = Object.keys(PARTITION_BACKENDS).flatMap((n) =>
      out.filter((f) => f.backend === n).concat(out.some((f) => f.backend === n) ? [] : before.filter((f) => f.backend === n))
    )
    mkdirSync(join(RESULTS, '..'), { recursive: true })
    writeFileSync(RESULTS, `${JSON.stringify({ ...meta, backends: merged }, null, 2)}\n`)
    writeSection(renderSection(merged, meta))
    log(`wrote ${REPORT} (Partitions) and ${RESULTS}`)
  }
  return unexplained === 0 ? 0 : 1
}

process.exitCode = await main()
