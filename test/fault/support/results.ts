/**
 * Results of fault scenarios: each test file records, per scenario and backend, how many runs it
 * made, how many failed, and the worst time it observed, in test/fault/results/<file>.json (a
 * gitignored scratch directory). scripts/faults-report.ts turns the last run's files into
 * docs/reliability.md.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Where results go. */
export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results')

/** One scenario on one backend. */
export interface ScenarioResult {
  /** Stable id, e.g. `member.kill`. */
  scenario: string
  /** One line saying what the scenario does and checks. */
  title: string
  backend: string
  runs: number
  failures: number
  /** What `worstMs` measures. */
  measure: string
  worstMs: number | undefined
  /** Short facts from the runs (counts of holds, kills...). */
  notes: string[]
  /** First line of each failure. */
  errors: string[]
  /** A known, unfixed bug this scenario exposes (test/fault/support/known.ts); its test runs as a todo. */
  knownBug?: string
}

/** The JSON a test file writes. */
export interface ResultsFile {
  file: string
  faultRuns: number
  finishedAt: string
  results: ScenarioResult[]
}

/** Repetitions per scenario: FAULT_RUNS (default 2, the short form npm test runs). */
export const FAULT_RUNS = positiveInt(process.env.FAULT_RUNS, 2)

/** True for the full suite (npm run test:faults sets FAULT_FULL=1). */
export const FAULT_FULL = process.env.FAULT_FULL === '1'

/** Reads a positive integer from the environment, or the default. */
export function positiveInt(text: string | undefined, fallback: number): number {
  const n = Number(text)
  return Number.isInteger(n) && n > 0 ? n : fallback
}

/** Collects one test file's results and rewrites its JSON after every scenario. */
export class ResultsWriter {
  readonly #path: string
  readonly #file: string
  readonly #results: ScenarioResult[] = []

  /** `testFileUrl` is the test file's import.meta.url. */
  constructor(testFileUrl: string) {
    this.#file = basename(fileURLToPath(testFileUrl))
    this.#path = join(RESULTS_DIR, this.#file.replace(/\.test\.ts$/, '.json'))
  }

  add(result: ScenarioResult): void {
    const i = this.#results.findIndex((r) => r.scenario === result.scenario && r.backend === result.backend)
    if (i >= 0) this.#results[i] = result
    else this.#results.push(result)
    mkdirSync(RESULTS_DIR, { recursive: true })
    const out: ResultsFile = { file: this.#file, faultRuns: FAULT_RUNS, finishedAt: new Date().toISOString(), results: this.#results }
    writeFileSync(this.#path, `${JSON.stringify(out, null, 2)}\n`)
  }
}

/** Reads every results file (for the report). */
export function readResults(paths: readonly string[]): ResultsFile[] {
  return paths.map((p) => JSON.parse(readFileSync(p, 'utf8')) as ResultsFile)
}
