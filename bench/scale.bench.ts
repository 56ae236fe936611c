/**
 * scale: one group of 100,000 members on Redis and on etcd, each on a private server so that its
 * counters are ours alone. 98,000 members are written in tooz's layout by the raw thin client
 * (many members over one connection); 2,000 are real rollcall coordinators, in two processes of
 * 1,000, beating at timeout=5. Measured: the time to read the group with capabilities (target
 * under 1 s) next to the raw floor, the server's memory per member, the backend writes, operations
 * and bytes per member per heartbeat interval (target: exactly one write), and the memory one
 * member costs in the rollcall process. docs/scale.md extrapolates from these.
 */
import { startEtcd, startRedis, type PrivateServer } from '../test/support/servers.js'
import { connect, dumps } from '../src/index.js'
import { uniq, withQuery, type BenchBackend } from './lib/backends.js'
import { capsOf, forEachBackend, type BenchContext } from './lib/context.js'
import { diff, readCounters } from './lib/counters.js'
import { endAll, rollcall, sleep, type Agent } from './lib/procs.js'
import { rawBackend } from './lib/raw.js'
import { now, repeat, round, summarize } from './lib/stats.js'

export const SCENARIO = 'scale'
export const TITLE = 'Scale: one group of 100,000 members'

const SERVERS: Partial<Record<BenchBackend, () => Promise<PrivateServer>>> = { redis: startRedis, etcd3: startEtcd }

export async function run(ctx: BenchContext): Promise<void> {
  const total = ctx.quick ? 5000 : 100_000
  const perProcess = ctx.quick ? 100 : 1000
  const processes = 2
  const windowMs = ctx.quick ? 6000 : 12_000
  await forEachBackend(
    ctx,
    SCENARIO,
    TITLE,
    { members: total, realMembers: perProcess * processes, processes, timeoutSeconds: 5, windowSeconds: windowMs / 1000 },
    ['redis', 'etcd3'],
    async (backend, errors) => {
      const server = await SERVERS[backend]!()
      const out: Record<string, unknown> = { members: total }
      const agents: Agent[] = []
      const raw = rawBackend(backend, server.url)
      try {
        const group = uniq('scale')
        // Liveness at 5 s, but requests may take longer on a loaded 2-core machine with 100,000 keys
        // (on etcd `timeout` also bounds each HTTP request, so membership_timeout carries the 5 s).
        const url = withQuery(server.url, backend === 'etcd3' ? 'timeout=60&membership_timeout=5&lock_timeout=5' : 'timeout=5')
        const before = (await readCounters(backend, server.url))!
        // Thin members first.
        const thin = total - perProcess * processes
        const t0 = now()
        const members = Array.from({ length: thin }, (_, i) => ({ id: `${group}-thin-${i}`, caps: dumps(capsOf(i)) }))
        await raw.populate(group, members, 900)
        const populateSeconds = (now() - t0) / 1000
        const afterPopulate = (await readCounters(backend, server.url))!
        out.populate = {
          thinMembers: thin,
          seconds: round(populateSeconds, 1),
          membersPerSecond: round(thin / populateSeconds, 0),
          serverBytesPerMember: round((afterPopulate.memory - before.memory) / thin, 0),
        }
        ctx.log(`scale ${backend}: ${thin} thin members in ${round(populateSeconds, 1)} s`)
        // Real members.
        for (let p = 0; p < processes; p++) agents.push(rollcall('fleet', { url, group, member: `${group}-p${p}`, n: perProcess, windowMs }, `fleet ${p}`))
        const ready = await Promise.all(agents.map((a) => a.next((l) => l.ready === true || l.error !== undefined, 600_000)))
        for (const r of ready) if (r.error) throw new Error(`fleet: ${r.error}: ${r.message}`)
        out.processMemory = {
          heapPerMemberKiB: round(ready.reduce((s, r) => s + (r.heapPerMemberKiB as number), 0) / ready.length, 1),
          rssPerMemberKiB: round(ready.reduce((s, r) => s + (r.rssPerMemberKiB as number), 0) / ready.length, 1),
          externalPerMemberKiB: round(ready.reduce((s, r) => s + (r.externalPerMemberKiB as number), 0) / ready.length, 1),
        }
        ctx.log(`scale ${backend}: ${perProcess * processes} rollcall members up`)
        await sleep(3000)
        // Heartbeat window: server counters against the beats the members report.
        const c0 = (await readCounters(backend, server.url))!
        for (const a of agents) a.send('go')
        const windows = await Promise.all(agents.map((a) => a.next((l) => l.beats !== undefined, windowMs + 60_000)))
        const c1 = (await readCounters(backend, server.url))!
        const beats = windows.reduce((s, w) => s + (w.beats as number), 0)
        const d = diff(c0, c1)
        const real = perProcess * processes
        out.heartbeat = {
          realMembers: real,
          beats,
          beatPeriodMs: round((windowMs * real) / beats, 0),
          perMemberPerBeat: {
            writes: round(d.writes / beats, 3),
            ops: round(d.ops / beats, 3),
            bytesIn: round(d.bytesIn / beats, 0),
            bytesOut: round(d.bytesOut / beats, 0),
          },
          cpuMsPerBeat: round(windows.reduce((s, w) => s + (w.cpuMs as number), 0) / beats, 4),
        }
        // Reads of the whole group (100,000 members), rollcall and the floor.
        const reader = await connect(withQuery(server.url, 'timeout=120'), { memberId: uniq('reader'), autoWatch: false })
        try {
          const n = (await reader.getMembersWithCapabilities(group)).size
          if (n !== total) errors.push(`rollcall read ${n} members, expected ${total}`)
          const opts = { minRuns: 3, maxRuns: 10, budgetMs: 15_000 }
          const r0 = (await readCounters(backend, server.url))!
          const caps = await repeat(() => reader.getMembersWithCapabilities(group), opts)
          const r1 = (await readCounters(backend, server.url))!
          const ids = await repeat(() => reader.getMembers(group), opts)
          const r2 = (await readCounters(backend, server.url))!
          out.read = {
            rollcall: {
              caps: summarize(caps),
              ids: summarize(ids),
              bytesOutPerCapsRead: round((r1.bytesOut - r0.bytesOut) / caps.length, 0),
              bytesOutPerIdsRead: round((r2.bytesOut - r1.bytesOut) / ids.length, 0),
            },
            raw: { caps: summarize(await repeat(() => raw.readWithCaps(group), opts)), ids: summarize(await repeat(() => raw.readIds(group), opts)) },
          }
        } finally {
          await reader.stop()
        }
        const last = (await readCounters(backend, server.url))!
        out.serverMemoryBytes = last.memory
        for (const a of agents) a.send('stop')
      } finally {
        await endAll(agents, 30_000)
        await raw.close()
        await server.stop()
      }
      return out
    },
  )
}
