/**
 * join: N members join one group, one after another (members/s, p50/p99 per join). Each member is
 * its own coordinator, connected beforehand (connecting is not timed). tooz does the same in one
 * Python process; the floor is one raw join per member on one connection.
 */
import { BACKENDS, TOOZ_GROUPS, rollcallUrl, toozUrl, uniq } from './lib/backends.js'
import { capsOf, fleet, forEachBackend, memberCap, stopFleet, type BenchContext } from './lib/context.js'
import { tooz } from './lib/procs.js'
import { rawBackend } from './lib/raw.js'
import { dumps } from '../src/index.js'
import { now, round, summarize } from './lib/stats.js'

export const SCENARIO = 'join'
export const TITLE = 'Join: N members joining one group'

export async function run(ctx: BenchContext): Promise<void> {
  const N = ctx.quick ? 20 : 500
  await forEachBackend(ctx, SCENARIO, TITLE, { members: N }, BACKENDS, async (backend, errors) => {
    const n = memberCap(backend, N)
    const url = rollcallUrl(backend)
    const out: Record<string, unknown> = { members: n }

    // rollcall
    {
      const group = uniq('join')
      const t0 = now()
      const coords = await fleet(url, uniq('m'), n, { heartbeat: false, autoWatch: false })
      const connectSeconds = round((now() - t0) / 1000)
      try {
        await coords[0]!.createGroup(group)
        const samples: number[] = []
        const start = now()
        for (const [i, c] of coords.entries()) {
          const t = now()
          await c.joinGroup(group, capsOf(i))
          samples.push(now() - t)
        }
        const total = now() - start
        out.rollcall = { samples: summarize(samples), perSecond: round((n / total) * 1000, 1), connectSeconds }
      } finally {
        await stopFleet(coords)
      }
    }

    // Python tooz
    if (TOOZ_GROUPS.has(backend)) {
      try {
        const agent = tooz('join', { url: toozUrl(backend, url), group: uniq('join'), prefix: uniq('py'), n, caps: capsOf(0) })
        out.tooz = await agent.result(600_000)
      } catch (err) {
        errors.push(`tooz: ${(err as Error).message}`)
      }
    } else {
      out.tooz = { na: 'tooz 3.1 has no groups on this backend (locks only)' }
    }

    // raw floor
    {
      const raw = rawBackend(backend, url)
      const group = uniq('join')
      const ids = Array.from({ length: n }, (_, i) => `${group}-raw-${i}`)
      try {
        await raw.populate(group, [], 60)
        const samples: number[] = []
        const start = now()
        for (const [i, id] of ids.entries()) {
          const t = now()
          await raw.join(group, { id, caps: dumps(capsOf(i)) }, 60)
          samples.push(now() - t)
        }
        const total = now() - start
        out.raw = { samples: summarize(samples), perSecond: round((n / total) * 1000, 1) }
      } finally {
        await raw.drop(group, ids).catch(() => {})
        await raw.close()
      }
    }
    return out
  })
}
