/**
 * heartbeat: (a) capacity: 100 and 1,000 joined members beating in a closed loop for 10 s
 * (beats/s, p50/p99), rollcall and tooz each with one coordinator per member in one process, the
 * floor with one raw connection; (b) the CPU one rollcall process spends keeping 1,000 members
 * alive at their normal interval (timeout=5 s, so a beat every ~2.4 s; the figure at the default
 * timeout is derived from the per-beat cost), with the backend's own counters per beat, on a
 * private server where test/support/servers.ts has one.
 */
import { startEtcd, startRedis, startZookeeper, type PrivateServer } from '../test/support/servers.js'
import { startBigMemcached } from './lib/servers.js'
import { dumps, type Coordinator } from '../src/index.js'
import { BACKENDS, TOOZ_GROUPS, rollcallUrl, toozUrl, uniq, withQuery, type BenchBackend } from './lib/backends.js'
import { capsOf, fleet, forEachBackend, inBatches, memberCap, stopFleet, type BenchContext } from './lib/context.js'
import { diff, readCounters } from './lib/counters.js'
import { tooz, sleep } from './lib/procs.js'
import { rawBackend } from './lib/raw.js'
import { closedLoop, now, round, summarize } from './lib/stats.js'

export const SCENARIO = 'heartbeat'
export const TITLE = 'Heartbeat capacity and the CPU of keeping members alive'

/** Each driver's default liveness timeout in seconds (the beat comes at about half of it). */
export const DEFAULT_TIMEOUT_S: Record<BenchBackend, number> = { redis: 30, memcached: 30, zookeeper: 10, etcd3: 30, postgresql: 30, mysql: 30, file: 10 }

const PRIVATE: Partial<Record<BenchBackend, () => Promise<PrivateServer>>> = {
  redis: startRedis,
  memcached: startBigMemcached,
  zookeeper: startZookeeper,
  etcd3: startEtcd,
}

async function capacity(backend: BenchBackend, n: number, seconds: number, errors: string[]): Promise<Record<string, unknown>> {
  const url = rollcallUrl(backend)
  const out: Record<string, unknown> = { members: n }
  const group = uniq('hb')
  {
    const coords = await fleet(url, uniq('m'), n, { heartbeat: false, autoWatch: false })
    try {
      await coords[0]!.createGroup(group)
      for (const [i, c] of coords.entries()) await c.joinGroup(group, capsOf(i))
      const r = await closedLoop(n, seconds * 1000, (w) => coords[w]!.heartbeat())
      out.rollcall = { samples: summarize(r.samples), perSecond: r.perSecond, errors: r.errors }
    } finally {
      await stopFleet(coords)
    }
  }
  if (TOOZ_GROUPS.has(backend)) {
    try {
      out.tooz = await tooz('heartbeat', { url: toozUrl(backend, url), group: uniq('hb'), prefix: uniq('py'), n, seconds, caps: capsOf(0) }).result(600_000)
    } catch (err) {
      errors.push(`tooz ${n}: ${(err as Error).message}`)
    }
  } else {
    out.tooz = { na: 'tooz 3.1 has no groups or heartbeat on this backend' }
  }
  {
    // One raw client (connection) per member, as each member has its own (file: none).
    const conns = backend === 'file' ? 1 : n
    const raws = await inBatches(Array.from({ length: conns }, (_, i) => i), 50, async () => rawBackend(backend, url))
    const raw = raws[0]!
    const rgroup = uniq('hb')
    const ids = Array.from({ length: n }, (_, i) => `${rgroup}-${i}`)
    try {
      await raw.populate(rgroup, ids.map((id, i) => ({ id, caps: dumps(capsOf(i)) })), 60)
      await inBatches(raws, 50, (r) => r.beat(ids[0]!, 60)) // connected before the clock starts
      // The floor is a reference: half the window is enough for a stable rate.
      const r = await closedLoop(n, (seconds * 1000) / 2, (w) => raws[w % conns]!.beat(ids[w]!, 60))
      out.raw = { samples: summarize(r.samples), perSecond: r.perSecond, errors: r.errors, connections: conns }
    } finally {
      await raw.drop(rgroup, ids).catch(() => {})
      await inBatches(raws, 50, (r) => r.close())
    }
  }
  return out
}

/** CPU and backend work of one process keeping `n` members alive at timeout=5. */
async function upkeep(backend: BenchBackend, n: number, windowMs: number, ctx: BenchContext): Promise<Record<string, unknown>> {
  const server = await PRIVATE[backend]?.()
  try {
    const base = server?.url ?? rollcallUrl(backend)
    const url = withQuery(base, 'timeout=5')
    const group = uniq('upkeep')
    const cpu0 = process.cpuUsage()
    const mem0 = process.memoryUsage()
    const t0 = now()
    const coords: Coordinator[] = await fleet(url, uniq('m'), n)
    try {
      await coords[0]!.createGroup(group)
      for (const [i, c] of coords.entries()) await c.joinGroup(group, capsOf(i))
      const setupCpu = process.cpuUsage(cpu0)
      ctx.log(`heartbeat upkeep ${backend}: ${n} members up in ${round((now() - t0) / 1000, 1)} s`)
      await sleep(3000)
      const last = coords.map((c) => c.health.lastHeartbeatAt?.getTime())
      let beats = 0
      const counters0 = server ? await readCounters(backend, server.url) : undefined
      const c1 = process.cpuUsage()
      const start = now()
      while (now() - start < windowMs) {
        await sleep(200)
        for (const [i, c] of coords.entries()) {
          const t = c.health.lastHeartbeatAt?.getTime()
          if (t !== last[i]) {
            beats++
            last[i] = t
          }
        }
      }
      const elapsed = now() - start
      const used = process.cpuUsage(c1)
      const counters1 = server ? await readCounters(backend, server.url) : undefined
      const cpuMs = (used.user + used.system) / 1000
      const mem1 = process.memoryUsage()
      const perBeat = beats > 0 ? cpuMs / beats : Number.NaN
      const beatPeriodMs = beats > 0 ? (elapsed * n) / beats : Number.NaN
      const defaultPeriodMs = beatPeriodMs * (DEFAULT_TIMEOUT_S[backend] / 5)
      const d = counters0 && counters1 ? diff(counters0, counters1) : undefined
      return {
        members: n,
        windowSeconds: round(elapsed / 1000, 1),
        beats,
        beatPeriodMs: round(beatPeriodMs, 0),
        cpuPercent: round((cpuMs / elapsed) * 100, 2),
        cpuMsPerBeat: round(perBeat, 4),
        cpuPercentAtDefault: round(((perBeat * n) / defaultPeriodMs) * 100, 3),
        defaultTimeoutSeconds: DEFAULT_TIMEOUT_S[backend],
        setupCpuSeconds: round((setupCpu.user + setupCpu.system) / 1e6, 2),
        rssPerMemberKiB: round((mem1.rss - mem0.rss) / n / 1024, 1),
        heapPerMemberKiB: round((mem1.heapUsed - mem0.heapUsed) / n / 1024, 1),
        server: server ? 'private' : 'shared',
        ...(d && beats > 0
          ? {
            perBeat: {
              ops: round(d.ops / beats, 2),
              writes: round(d.writes / beats, 2),
              bytesIn: round(d.bytesIn / beats, 0),
              bytesOut: round(d.bytesOut / beats, 0),
            },
          }
          : {}),
      }
    } finally {
      await stopFleet(coords)
    }
  } finally {
    await server?.stop()
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const sizes = ctx.quick ? [5, 20] : [100, 1000]
  const seconds = ctx.quick ? 2 : 10
  const upkeepMembers = ctx.quick ? 20 : 1000
  await forEachBackend(ctx, SCENARIO, TITLE, { sizes, seconds, upkeepMembers, upkeepTimeoutSeconds: 5 }, BACKENDS, async (backend, errors) => {
    const out: Record<string, unknown> = {}
    for (const size of sizes) {
      const n = memberCap(backend, size)
      try {
        out[`capacity${size}`] = await capacity(backend, n, seconds, errors)
      } catch (err) {
        errors.push(`capacity ${size}: ${(err as Error).message}`)
      }
    }
    try {
      out.upkeep = await upkeep(backend, memberCap(backend, upkeepMembers), ctx.quick ? 5000 : 10_000, ctx)
    } catch (err) {
      errors.push(`upkeep: ${(err as Error).message}`)
    }
    return out
  })
}
