/**
 * failover: the leader of a group killed with SIGKILL (timeout 5 s): time until another candidate
 * is elected (its leaderElected / tooz's elected callback) and until a third member's getLeader()
 * (polled every 50 ms) names the new leader. Five groups, two candidate processes each, leaders
 * killed 500 ms apart. tooz's candidates call run_watchers() every second (its elections run only
 * there), as rollcall retries elections that have no wait queue every second (watch_interval).
 * Where the leader lock lives on a lease or session (etcd, ZooKeeper, Redis, memcached), a raw client
 * polls the lock every 25 ms to time the backend's own expiry of the dead leader's hold, run by run.
 */
import { BACKENDS, rollcallUrl, toozUrl, uniq, withQuery, type BenchBackend } from './lib/backends.js'
import { forEachBackend, type BenchContext } from './lib/context.js'
import { rawBackend } from './lib/raw.js'
import { endAll, rollcall, sleep, tooz, type Agent } from './lib/procs.js'
import { median, round, summarize } from './lib/stats.js'

export const SCENARIO = 'failover'
export const TITLE = 'Leader failover: the leader killed with SIGKILL (timeout 5 s)'

const TIMEOUT_S = 5
const POLL_MS = 1000
const STAGGER_MS = 500

/** Why tooz 3.1 cannot take part, per backend (it elects only on Redis, memcached and ZooKeeper). */
const TOOZ_NO_ELECTION: Partial<Record<BenchBackend, string>> = {
  etcd3: 'tooz 3.1 etcd3gw: watch_elected_as_leader() is accepted but nothing ever elects (no run_elect_coordinator)',
  file: 'tooz 3.1 file driver: watch_elected_as_leader() raises NotImplemented',
  postgresql: 'tooz 3.1 has no leader election on this backend (locks only)',
  mysql: 'tooz 3.1 has no leader election on this backend (locks only)',
}

async function session(impl: 'rollcall' | 'tooz', backend: BenchBackend, groupsN: number, ctx: BenchContext): Promise<Record<string, unknown>> {
  const url = withQuery(rollcallUrl(backend), `timeout=${TIMEOUT_S}`)
  const agentUrl = impl === 'tooz' ? toozUrl(backend, url) : url
  const spawn = impl === 'tooz' ? tooz : rollcall
  const base = uniq('fo')
  const groups = Array.from({ length: groupsN }, (_, i) => `${base}-g${i}`)
  const agents: Agent[] = []
  const raw = rawBackend(backend, url)
  const freedAt = new Map<string, number>()
  let polling = true
  try {
    const candidates = new Map<string, Agent[]>()
    for (const g of groups) {
      const pair = [0, 1].map((i) =>
        spawn('candidate', { url: agentUrl, group: g, member: `${g}-c${i}`, pollMs: POLL_MS, seconds: 300 }, `${impl} candidate ${g}/${i}`)
      )
      agents.push(...pair)
      candidates.set(g, pair)
      await Promise.all(pair.map((a) => a.ready()))
    }
    const observer = spawn('leader_observer', { url: agentUrl, member: `${base}-obs`, groups, pollMs: 50, seconds: 300 }, `${impl} leader observer`)
    agents.push(observer)
    await observer.ready().catch(() => {})
    // Wait for a first leader in every group.
    const leaderOf = (g: string): Agent | undefined => candidates.get(g)!.find((a) => a.lines.some((l) => l.elected))
    const until = Date.now() + 30_000
    while (Date.now() < until && groups.some((g) => !leaderOf(g))) await sleep(100)
    await sleep(1000)
    const killed = new Map<string, { at: number; survivor: Agent; survivorId: string }>()
    // The backend's own expiry of each dead leader's hold: the first poll that sees another holder, or none.
    const pollers = raw.leaderToken
      ? groups.map(async (g) => {
        const before = await raw.leaderToken!(g)
        while (polling && !freedAt.has(g)) {
          await sleep(25)
          if (killed.has(g) && (await raw.leaderToken!(g).catch(() => before)) !== before) freedAt.set(g, Date.now())
        }
      })
      : []
    for (const g of groups) {
      const leader = leaderOf(g)
      if (!leader) continue
      const survivor = candidates.get(g)!.find((a) => a !== leader)!
      killed.set(g, { at: leader.kill(), survivor, survivorId: `${g}-c${candidates.get(g)!.indexOf(survivor)}` })
      await sleep(STAGGER_MS)
    }
    const deadline = Date.now() + (TIMEOUT_S + 20) * 1000
    const electedAt = (g: string): number | undefined => killed.get(g)!.survivor.lines.find((l) => l.elected)?.t as number | undefined
    const knownAt = (g: string): number | undefined =>
      observer.lines.find((l) => l.group === g && l.leader === killed.get(g)!.survivorId)?.t as number | undefined
    const observerFailed = (): boolean => observer.lines.some((l) => l.error)
    while (Date.now() < deadline && [...killed.keys()].some((g) => electedAt(g) === undefined || (!observerFailed() && knownAt(g) === undefined))) {
      await sleep(100)
    }
    polling = false
    await Promise.all(pollers)
    const elected: number[] = []
    const known: number[] = []
    const freed: number[] = []
    const afterFreed: number[] = []
    let missed = 0
    for (const [g, k] of killed) {
      const e = electedAt(g)
      const fr = freedAt.get(g)
      if (fr !== undefined) freed.push(fr - k.at)
      if (e === undefined) missed++
      else elected.push(e - k.at)
      if (e !== undefined && fr !== undefined) afterFreed.push(e - fr)
      const kn = knownAt(g)
      if (kn !== undefined) known.push(kn - k.at)
    }
    const obsError = observer.lines.find((l) => l.error)
    ctx.log(`failover ${backend} ${impl}: elected median ${round(median(elected), 0)} ms, known ${round(median(known), 0)} ms, missed ${missed}`)
    return {
      electedMs: summarize(elected),
      knownMs: summarize(known),
      missed,
      ...(freed.length ? { lockFreedMs: summarize(freed), electedAfterFreedMs: summarize(afterFreed) } : {}),
      runs: killed.size,
      groupsWithoutFirstLeader: groups.length - killed.size,
      ...(obsError ? { knownNa: `get_leader() raises ${obsError.error} on this backend` } : {}),
    }
  } finally {
    polling = false
    await endAll(agents, 3000)
    await raw.close()
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const groupsN = ctx.quick ? 1 : 5
  await forEachBackend(
    ctx,
    SCENARIO,
    TITLE,
    { groups: groupsN, candidatesPerGroup: 2, timeoutSeconds: TIMEOUT_S, pollMs: POLL_MS, staggerMs: STAGGER_MS },
    BACKENDS,
    async (backend, errors) => {
      const out: Record<string, unknown> = {}
      try {
        out.rollcall = await session('rollcall', backend, groupsN, ctx)
      } catch (err) {
        errors.push(`rollcall: ${(err as Error).message}`)
      }
      const na = TOOZ_NO_ELECTION[backend]
      if (!na) {
        try {
          out.tooz = await session('tooz', backend, groupsN, ctx)
        } catch (err) {
          errors.push(`tooz: ${(err as Error).message}`)
        }
      } else {
        out.tooz = { na }
      }
      return out
    },
  )
}
