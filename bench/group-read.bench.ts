/**
 * group-read: getMembers and getMembersWithCapabilities on groups of 100, 1,000 and 5,000 members
 * (p50/p99). The members are written in tooz's layout by the raw thin client (one connection, many
 * members), so every reader sees the same group. tooz 3.1 reads capabilities one member at a time
 * (all requests submitted before the first is awaited: its best case); on memcached each of those
 * reads re-reads the whole group, so past 1,000 members it is extrapolated, not run.
 */
import { connect, dumps } from '../src/index.js'
import { BACKENDS, TOOZ_GROUPS, rollcallUrl, toozUrl, uniq, withQuery, type BenchBackend } from './lib/backends.js'
import { capsOf, forEachBackend, type BenchContext } from './lib/context.js'
import { tooz } from './lib/procs.js'
import { rawBackend } from './lib/raw.js'
import { repeat, round, summarize } from './lib/stats.js'

export const SCENARIO = 'group-read'
export const TITLE = 'Group read: members, and members with capabilities'

/** Populated members stay alive this long (file: the liveness window, so the URL says it too). */
const TTL_S = 600

/** Largest size at which tooz's memcached read with capabilities (O(N²) round trips) is run. */
const TOOZ_MEMCACHED_CAPS_MAX = 1000

function readerUrl(backend: BenchBackend): string {
  const url = rollcallUrl(backend)
  return backend === 'file' ? withQuery(url, `timeout=${TTL_S}`) : url
}

export async function run(ctx: BenchContext): Promise<void> {
  const sizes = ctx.quick ? [10, 50] : [100, 1000, 5000]
  const budgetMs = ctx.quick ? 300 : 1500
  const maxRuns = ctx.quick ? 5 : 30
  await forEachBackend(ctx, SCENARIO, TITLE, { sizes, budgetMs, maxRuns }, BACKENDS, async (backend, errors) => {
    const out: Record<string, unknown> = {}
    const url = readerUrl(backend)
    const raw = rawBackend(backend, url)
    const reader = await connect(url, { memberId: uniq('reader'), autoWatch: false })
    try {
      for (const size of sizes) {
        const group = uniq('read')
        const ids = Array.from({ length: size }, (_, i) => `${group}-${i}`)
        const entry: Record<string, unknown> = {}
        out[`size${size}`] = entry
        try {
          await raw.populate(group, ids.map((id, i) => ({ id, caps: dumps(capsOf(i)) })), TTL_S)
          const opts = { minRuns: 3, maxRuns, budgetMs, warmup: 1 }
          const got = (await reader.getMembersWithCapabilities(group)).size
          if (got !== size) errors.push(`size ${size}: rollcall read ${got} members`)
          entry.rollcall = {
            ids: summarize(await repeat(() => reader.getMembers(group), opts)),
            caps: summarize(await repeat(() => reader.getMembersWithCapabilities(group), opts)),
          }
          entry.raw = {
            ids: summarize(await repeat(() => raw.readIds(group), opts)),
            caps: summarize(await repeat(() => raw.readWithCaps(group), opts)),
          }
          if (!TOOZ_GROUPS.has(backend)) {
            entry.tooz = { na: 'tooz 3.1 has no groups on this backend (locks only)' }
          } else {
            const skipCaps = backend === 'memcached' && size > TOOZ_MEMCACHED_CAPS_MAX
            const kinds = skipCaps ? ['ids'] : ['ids', 'caps']
            const capsRuns = backend === 'memcached' && size >= 1000 ? 1 : maxRuns
            const r = await tooz('read', { url: toozUrl(backend, url), group, prefix: uniq('py'), kinds, maxRuns: capsRuns, budgetMs }).result(900_000)
            entry.tooz = {
              ids: (r.ids as { samples: unknown }).samples,
              ...(r.caps ? { caps: (r.caps as { samples: unknown }).samples } : {}),
              ...(skipCaps
                ? { capsSkipped: `not run: O(N²) round trips (about ${size * size} gets); extrapolated from ${TOOZ_MEMCACHED_CAPS_MAX} members` }
                : {}),
            }
          }
        } catch (err) {
          errors.push(`size ${size}: ${(err as Error).message}`)
        } finally {
          await raw.drop(group, ids).catch(() => {})
        }
      }
      // Extrapolate tooz memcached caps past the measured size (quadratic: N reads of N keys).
      if (backend === 'memcached') {
        const measured = out[`size${TOOZ_MEMCACHED_CAPS_MAX}`] as { tooz?: { caps?: { p50: number } } } | undefined
        for (const size of sizes.filter((s) => s > TOOZ_MEMCACHED_CAPS_MAX)) {
          const e = out[`size${size}`] as { tooz?: Record<string, unknown> }
          if (e?.tooz && measured?.tooz?.caps) e.tooz.capsExtrapolatedP50 = round(measured.tooz.caps.p50 * (size / TOOZ_MEMCACHED_CAPS_MAX) ** 2, 0)
        }
      }
    } finally {
      await reader.stop()
      await raw.close()
    }
    return out
  })
}
