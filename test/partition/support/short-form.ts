/**
 * The short form of the partition runs that `npm test` runs (issue 27): per backend, one schedule
 * of two faults on a fresh cluster, checked by test/fault/support/partition-checker.ts. Findings
 * that a known, unfixed bug explains (verdict.ts, test/fault/support/known.ts) make the test a
 * `todo` (reported, not failing CI); any other finding fails it. PARTITION_SEED=N replays seed N
 * (its schedule is printed with the test's name). Needs root and `ip netns`; skipped otherwise.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { renderPartitionReport } from '../../fault/support/partition-checker.js'
import { describeSchedule, makeSchedule, scheduleBoundMs } from './nemesis.js'
import { PARTITION_BACKENDS, partitionRun, type PartitionBackend } from './run.js'
import { verdict } from './verdict.js'

/** Faults per schedule in the short form. */
export const SHORT_FAULTS = 2

/** Why partition runs cannot run here, or undefined when they can (root, ip netns). */
export function cannotPartition(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces)'
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' })
  } catch {
    return 'needs `ip netns` (iproute2)'
  }
  return undefined
}

/**
 * Declares the short-form test of `name`, with `seed` unless PARTITION_SEED is set. With `offBecause`
 * it is skipped (saying why) unless PARTITION_SHORT=1. scripts/run-tests.mjs runs these files alone,
 * one at a time, after the rest of the suite.
 */
export function shortFormTest(name: PartitionBackend['name'], seed: number, { offBecause }: { offBecause?: string } = {}): void {
  const backend = PARTITION_BACKENDS[name]
  const s = makeSchedule(Number(process.env.PARTITION_SEED ?? seed), { size: 3, count: SHORT_FAULTS, ...backend.schedule })
  const off = offBecause === undefined || process.env.PARTITION_SHORT === '1' ? undefined : `${offBecause}; PARTITION_SHORT=1 runs it`
  describe(`partitions: ${backend.title}`, { skip: cannotPartition() ?? off ?? false }, () => {
    it(`seed ${s.seed}: ${describeSchedule(s)}`, { timeout: 180_000 + scheduleBoundMs(s) }, async (t) => {
      const r = await partitionRun(backend, [s])
      t.diagnostic(renderPartitionReport(r.report))
      t.diagnostic(
        `startup ${r.startupMs} ms, run ${r.durationMs} ms, ${r.history.length} records, register ${r.writes.accepted} accepted / ${r.writes.rejected} rejected`,
      )
      const v = verdict(name, r.report, r.history)
      assert.deepEqual(v.unknown, [], `seed ${s.seed} on ${name}: findings no known bug explains (history kept at ${r.historyPath})`)
      if (v.known.size > 0) {
        const bugs = [...v.known].map(([bug, n]) => `${bug} (${n})`).join(', ')
        t.todo(`known bugs ${bugs} (test/fault/support/known.ts); FAULT_STRICT=1 fails on them`)
        assert.fail(`seed ${s.seed} on ${name}: ${bugs}; history at ${r.historyPath}`)
      }
      // The run must have exercised something: the lock was granted, the register took writes (where grants carry a fencing token: not
      // on memcached) and the nemesis cut.
      const grants = r.history.filter((e) => e.type === 'op' && e.op === 'acquire' && e.phase === 'ok')
      assert.ok(grants.length > 0, 'the lock was never granted: the lock workload did not run')
      if (grants.some((e) => e.type === 'op' && e.token !== undefined)) assert.ok(r.writes.accepted > 0, 'the register accepted no write')
      assert.ok(r.report.cuts >= SHORT_FAULTS, `${r.report.cuts} cuts recorded`)
    })
  })
}
