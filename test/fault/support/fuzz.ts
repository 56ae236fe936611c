/** Running a fast-check property as a fault scenario: its cases are the runs, a counterexample the failure. */
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import fc from 'fast-check'
import type { ResultsWriter } from './results.js'

/** Runs a property, records it as a scenario (runs = cases), and fails the test on a counterexample. */
export async function property(
  writer: ResultsWriter,
  t: TestContext,
  scenario: string,
  title: string,
  backendName: string,
  numRuns: number,
  prop: fc.IAsyncPropertyWithHooks<any>,
  notes: () => string[] = () => [],
): Promise<void> {
  const started = Date.now()
  const details = await fc.check(prop, { numRuns })
  writer.add({
    scenario,
    title,
    backend: backendName,
    runs: details.numRuns,
    failures: details.failed ? 1 : 0,
    measure: 'whole property (all cases)',
    worstMs: Date.now() - started,
    notes: [...notes(), `seed ${details.seed}`],
    errors: details.failed ? [String(details.errorInstance).split('\n')[0]!.slice(0, 300)] : [],
  })
  t.diagnostic(
    `${backendName} ${scenario}: ${details.numRuns} cases${details.failed ? ', FAILED' : ''} in ${Date.now() - started} ms (seed ${details.seed})${
      notes().map((n) => `; ${n}`).join('')
    }`,
  )
  if (details.failed) {
    assert.fail(
      `counterexample ${fc.stringify(details.counterexample)} (seed ${details.seed}, path ${details.counterexamplePath}): ${String(details.errorInstance)}`,
    )
  }
}

/** Counts of what the cases of a property ended in, for its notes: `answered 21, MemcachedProtocolError (value size) 9, ...`. */
export class Outcomes {
  readonly #counts = new Map<string, number>()

  add(outcome: string): void {
    this.#counts.set(outcome, (this.#counts.get(outcome) ?? 0) + 1)
  }

  toString(): string {
    return [...this.#counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k, n]) => `${k} ${n}`).join(', ')
  }
}
