/**
 * locks: uncontended acquire+release per second (one process, closed loop), and two and eight
 * processes contending for one lock (throughput, fairness as the fewest acquisitions of one process
 * over the most, Jain's index beside it, longest wait). Every process loops acquire (blocking) → release, holding for 0 ms.
 * tooz runs the same loops in Python processes; the floor is the raw client's uncontended cycle.
 */
import { connect } from '../src/index.js'
import { BACKENDS, rollcallUrl, toozUrl, uniq, withQuery, type BenchBackend } from './lib/backends.js'
import { forEachBackend, settleCpu, type BenchContext } from './lib/context.js'
import { endAll, rollcall, tooz, type Agent } from './lib/procs.js'
import { rawBackend } from './lib/raw.js'
import { closedLoop, jain, minOverMax, round, summarize } from './lib/stats.js'

export const SCENARIO = 'locks'
export const TITLE = 'Locks: uncontended and contended acquire+release'

/** Lock TTLs shorter than the default 30 s, so a wedged contender cannot stall the run. */
const QUERY = 'timeout=10'

/**
 * MariaDB also runs without its fencing token (`unfenced*` rows): tooz takes none, so that is the
 * like-for-like comparison; the default rows show what the token costs.
 */
const UNFENCED: ReadonlySet<BenchBackend> = new Set(['mysql'])

/**
 * One process's closed loop of `cycle` (lib/stats.ts) for `warmupMs` uncounted, then `ms` counted: samples of one cycle
 * each, and cycles per second. A failed cycle (a lock found busy) fails the measurement, with that cycle's error.
 */
async function uncontendedLoop(cycle: () => Promise<void>, warmupMs: number, ms: number): Promise<Record<string, unknown>> {
  const r = await closedLoop(1, ms, cycle, warmupMs)
  if (r.errors > 0) throw r.firstError
  return { samples: summarize(r.samples), perSecond: r.perSecond }
}

async function uncontendedRollcall(url: string, warmupMs: number, ms: number): Promise<Record<string, unknown>> {
  const c = await connect(url, { memberId: uniq('lk'), autoWatch: false })
  try {
    const lock = c.getLock(uniq('lock'))
    return await uncontendedLoop(
      async () => {
        if (!(await lock.acquire({ blocking: false }))) throw new Error('uncontended lock was busy')
        await lock.release()
      },
      warmupMs,
      ms,
    )
  } finally {
    await c.stop()
  }
}

/**
 * Seconds every contender loops on the lock, uncounted, before the counted ones: what is measured is
 * the steady state. A Node process that has taken a lock only a few hundred times still runs much of
 * its code unoptimized while V8 compiles it in the background (ZooKeeper, 8 processes: 546-730
 * acquisitions/s counted from a cold start, 871-1,008 after 10 s); CPython has no such phase.
 */
const WARMUP_S = 5

/** The uncontended loops (rollcall, tooz and the raw floor alike) run this long uncounted first, for the same reason. */
const UNCONTENDED_WARMUP_MS = 2_000

async function contended(impl: 'rollcall' | 'tooz', backend: BenchBackend, url: string, procs: number, seconds: number): Promise<Record<string, unknown>> {
  const name = uniq('contended')
  const spawn = impl === 'tooz' ? tooz : rollcall
  const agents: Agent[] = []
  try {
    for (let i = 0; i < procs; i++) {
      agents.push(
        spawn(
          'locks',
          {
            url: impl === 'tooz' ? toozUrl(backend, url) : url,
            name,
            member: `${name}-${i}`,
            prefix: `${name}-${i}`,
            seconds,
            wait: true,
            warmupSeconds: WARMUP_S,
          },
          `${impl} contender ${i}`,
        ),
      )
    }
    await Promise.all(agents.map((a) => a.ready(60_000)))
    for (const a of agents) a.send('go')
    const results = await Promise.all(agents.map((a) => a.result((WARMUP_S + seconds + 60) * 1000)))
    const counts = results.map((r) => r.count as number)
    const total = counts.reduce((a, b) => a + b, 0)
    const longest = Math.max(...results.map((r) => (r.waits as { max?: number }).max ?? 0))
    return {
      processes: procs,
      perSecond: round(total / seconds, 1),
      counts,
      fairness: minOverMax(counts),
      jain: jain(counts),
      longestWaitMs: round(longest, 1),
    }
  } finally {
    await endAll(agents, 3000)
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const uncontendedMs = ctx.quick ? 1000 : 2000
  const uncontendedWarmupMs = ctx.quick ? 500 : UNCONTENDED_WARMUP_MS
  const seconds = ctx.quick ? 2 : 8
  const procCounts = ctx.quick ? [2] : [2, 8]
  await forEachBackend(
    ctx,
    SCENARIO,
    TITLE,
    {
      uncontendedSeconds: uncontendedMs / 1000,
      uncontendedWarmupSeconds: uncontendedWarmupMs / 1000,
      contendedSeconds: seconds,
      warmupSeconds: WARMUP_S,
      processes: procCounts,
      holdMs: 0,
    },
    BACKENDS,
    async (backend, errors) => {
      const url = withQuery(rollcallUrl(backend), backend === 'postgresql' || backend === 'mysql' ? '' : QUERY)
      const out: Record<string, unknown> = {}
      const attempt = async (key: string, fn: () => Promise<Record<string, unknown>>): Promise<void> => {
        try {
          out[key] = await fn()
        } catch (err) {
          errors.push(`${key}: ${(err as Error).message}`)
        }
      }
      await attempt('rollcall', () => uncontendedRollcall(url, uncontendedWarmupMs, uncontendedMs))
      await attempt('tooz', async () => {
        const r = await tooz('locks', {
          url: toozUrl(backend, url),
          name: uniq('lock'),
          prefix: uniq('py'),
          seconds: uncontendedMs / 1000,
          warmupSeconds: uncontendedWarmupMs / 1000,
        }).result(120_000)
        return { samples: r.cycles, perSecond: r.perSecond }
      })
      await attempt('raw', async () => {
        const raw = rawBackend(backend, url)
        try {
          const name = uniq('rawlock')
          return await uncontendedLoop(() => raw.lockCycle(name), uncontendedWarmupMs, uncontendedMs)
        } finally {
          await raw.close()
        }
      })
      // Each contended phase starts on a settled machine: the previous phase's 8 processes take a moment to exit.
      const settled = async (key: string, fn: () => Promise<Record<string, unknown>>): Promise<void> => {
        await settleCpu(ctx.log)
        await attempt(key, fn)
      }
      for (const p of procCounts) {
        await settled(`rollcall${p}`, () => contended('rollcall', backend, url, p, seconds))
        await settled(`tooz${p}`, () => contended('tooz', backend, url, p, seconds))
      }
      if (UNFENCED.has(backend)) {
        const unfenced = withQuery(url, 'fencing=false')
        await settled('unfenced', () => uncontendedRollcall(unfenced, uncontendedWarmupMs, uncontendedMs))
        for (const p of procCounts) await settled(`unfenced${p}`, () => contended('rollcall', backend, unfenced, p, seconds))
      }
      return out
    },
  )
}
