/**
 * Hand-written statistics for the benchmarks: nearest-rank percentiles over recorded samples,
 * and a monotonic clock in milliseconds (node:perf_hooks).
 */
import { performance } from 'node:perf_hooks'

/** Milliseconds on the monotonic clock. */
export const now = (): number => performance.now()

/** A distribution of samples, in the samples' unit (ms unless named otherwise). */
export interface Summary {
  n: number
  min: number
  p50: number
  p99: number
  max: number
  mean: number
}

/** Nearest-rank percentile (p in 0..100) of ascending-sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

/** min / p50 / p99 / max / mean of `samples`, rounded to 3 decimals. */
export function summarize(samples: readonly number[]): Summary {
  const s = [...samples].sort((a, b) => a - b)
  const r = (x: number): number => Math.round(x * 1000) / 1000
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1)
  return { n: s.length, min: r(s[0] ?? Number.NaN), p50: r(percentile(s, 50)), p99: r(percentile(s, 99)), max: r(s.at(-1) ?? Number.NaN), mean: r(mean) }
}

/** Median of `values` (NaN when empty). */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50)
}

/** Jain's fairness index of per-participant counts: 1 is perfectly fair, 1/n is one takes all. */
export function jain(counts: readonly number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0)
  const squares = counts.reduce((a, b) => a + b * b, 0)
  return squares === 0 ? Number.NaN : Math.round(((sum * sum) / (counts.length * squares)) * 1000) / 1000
}

/** The fewest of per-participant counts over the most (the lock issue's fairness): 1 is even, 0 is one starved. */
export function minOverMax(counts: readonly number[]): number {
  const most = Math.max(...counts)
  return counts.length === 0 || most === 0 ? Number.NaN : Math.round((Math.min(...counts) / most) * 1000) / 1000
}

/** Rounds to `digits` significant-ish decimals for reports. */
export function round(x: number, digits = 3): number {
  const f = 10 ** digits
  return Math.round(x * f) / f
}

/**
 * Runs `op` repeatedly, one call at a time, until `maxRuns` calls or `budgetMs` elapsed (at least
 * `minRuns`), and returns each call's latency in ms.
 */
export async function repeat(op: () => Promise<unknown>, opts: { minRuns?: number; maxRuns: number; budgetMs: number; warmup?: number }): Promise<number[]> {
  for (let i = 0; i < (opts.warmup ?? 0); i++) await op()
  const samples: number[] = []
  const start = now()
  while (samples.length < opts.maxRuns && (samples.length < (opts.minRuns ?? 1) || now() - start < opts.budgetMs)) {
    const t = now()
    await op()
    samples.push(now() - t)
  }
  return samples
}

/**
 * Closed loop: `workers` concurrent loops each calling `op(worker)` back to back for `durationMs`,
 * after `warmupMs` of the same loops uncounted. Returns every counted call's latency, the achieved
 * rate per second, and the failed calls (all of them, warm-up included) with the first one's error.
 */
export async function closedLoop(
  workers: number,
  durationMs: number,
  op: (worker: number) => Promise<unknown>,
  warmupMs = 0,
): Promise<{ samples: number[]; perSecond: number; errors: number; firstError?: unknown }> {
  let errors = 0
  let firstError: unknown
  const loops = (ms: number, samples?: number[]): Promise<unknown> => {
    const end = now() + ms
    return Promise.all(Array.from({ length: workers }, async (_, w) => {
      while (now() < end) {
        const t = now()
        try {
          await op(w)
          samples?.push(now() - t)
        } catch (err) {
          if (errors++ === 0) firstError = err
        }
      }
    }))
  }
  if (warmupMs > 0) await loops(warmupMs)
  const samples: number[] = []
  const start = now()
  await loops(durationMs, samples)
  const elapsed = now() - start
  return { samples, perSecond: round((samples.length / elapsed) * 1000, 1), errors, firstError }
}
