/**
 * detection: a member killed with SIGKILL (timeout 5 s), 20 runs: time from the kill until another
 * member's memberLeft fires (rollcall) or run_watchers() reports it (tooz, polled every second, as
 * rollcall polls backends that do not push). The 20 victims are separate processes killed 300 ms
 * apart in one session (each kill is independent; the heartbeat phase at the kill is what varies).
 * The floor is the backend's own expiry: a raw client listing the live members every 25 ms.
 */
import { safeName } from '../src/coordination/drivers/file/file-format.js'
import { BACKENDS, TOOZ_GROUPS, rollcallUrl, toozUrl, uniq, withQuery, type BenchBackend } from './lib/backends.js'
import { capsOf, forEachBackend, inBatches, memberCap, type BenchContext } from './lib/context.js'
import { endAll, rollcall, sleep, tooz, type Agent } from './lib/procs.js'
import { rawBackend } from './lib/raw.js'
import { median, round, summarize } from './lib/stats.js'

export const SCENARIO = 'detection'
export const TITLE = 'Failure detection: a member killed with SIGKILL (timeout 5 s)'

const TIMEOUT_S = 5
const POLL_MS = 1000
const STAGGER_MS = 300

interface Outcome {
  detect: number[]
  floor: number[]
  lag: number[]
  missed: number
  /** How tooz's observer learns of it: run_watchers, or get_members polling where it has no watchers. */
  mode?: string
}

async function session(impl: 'rollcall' | 'tooz', backend: BenchBackend, runs: number, ctx: BenchContext): Promise<Outcome> {
  const url = withQuery(rollcallUrl(backend), `timeout=${TIMEOUT_S}`)
  const agentUrl = impl === 'tooz' ? toozUrl(backend, url) : url
  const spawn = impl === 'tooz' ? tooz : rollcall
  const group = uniq('detect')
  const ids = Array.from({ length: runs }, (_, i) => `${group}-v${i}`)
  const agents: Agent[] = []
  const raw = rawBackend(backend, url)
  const keyOf = (id: string): string => (backend === 'file' ? `${safeName(id)}.raw` : id)
  try {
    const observer = spawn('observer', { url: agentUrl, group, member: `${group}-obs`, pollMs: POLL_MS, seconds: 300 }, `${impl} observer`)
    agents.push(observer)
    await observer.ready()
    const victims = await inBatches(ids, 5, async (id, i) => {
      const v = spawn('victim', { url: agentUrl, group, member: id, caps: capsOf(i), seconds: 300 }, `${impl} victim ${i}`)
      agents.push(v)
      await v.ready()
      return v
    })
    await sleep(1500)
    // The floor: the backend's own view, polled.
    const killedAt = new Map<string, number>()
    const goneAt = new Map<string, number>()
    let polling = true
    let floorError: string | undefined
    const poller = (async () => {
      while (polling) {
        const ids = await raw.readIds(group).catch((err: unknown) => {
          floorError ??= (err as Error).message
          return undefined
        })
        const t = Date.now()
        if (ids) {
          const live = new Set(ids)
          for (const id of killedAt.keys()) if (!goneAt.has(id) && !live.has(keyOf(id))) goneAt.set(id, t)
        }
        await sleep(25)
      }
    })()
    for (const [i, v] of victims.entries()) {
      killedAt.set(ids[i]!, v.kill())
      await sleep(STAGGER_MS)
    }
    const deadline = Date.now() + (TIMEOUT_S + 15) * 1000
    const leftAt = (id: string): number | undefined => observer.lines.find((l) => l.left === id)?.t as number | undefined
    while (Date.now() < deadline && ids.some((id) => leftAt(id) === undefined || !goneAt.has(id))) await sleep(100)
    polling = false
    await poller
    const detect: number[] = []
    const floor: number[] = []
    const lag: number[] = []
    let missed = 0
    for (const id of ids) {
      const k = killedAt.get(id)!
      const l = leftAt(id)
      if (l === undefined) missed++
      else detect.push(l - k)
      const g = goneAt.get(id)
      if (g !== undefined) floor.push(g - k)
      // What the observer adds after the backend's own expiry (the victim's beat phase cancels out).
      if (l !== undefined && g !== undefined) lag.push(l - g)
    }
    if (floorError) ctx.log(`detection ${backend} ${impl}: floor read failed: ${floorError}`)
    const mode = observer.lines.find((l) => l.ready)?.mode as string | undefined
    ctx.log(`detection ${backend} ${impl}: median ${round(median(detect), 0)} ms, floor ${round(median(floor), 0)} ms, missed ${missed}`)
    return { detect, floor, lag, missed, mode }
  } finally {
    await endAll(agents, 3000)
    await raw.drop(group, ids).catch(() => {})
    await raw.close()
  }
}

const show = (o: Outcome): Record<string, unknown> => ({
  detectMs: summarize(o.detect),
  floorMs: summarize(o.floor),
  lagMs: summarize(o.lag),
  missed: o.missed,
  runs: o.detect.length + o.missed,
  ...(o.mode ? { mode: o.mode } : {}),
})

export async function run(ctx: BenchContext): Promise<void> {
  const runs = ctx.quick ? 3 : 20
  await forEachBackend(ctx, SCENARIO, TITLE, { runs, timeoutSeconds: TIMEOUT_S, pollMs: POLL_MS, staggerMs: STAGGER_MS }, BACKENDS, async (backend, errors) => {
    const out: Record<string, unknown> = {}
    try {
      out.rollcall = show(await session('rollcall', backend, memberCap(backend, runs), ctx))
    } catch (err) {
      errors.push(`rollcall: ${(err as Error).message}`)
    }
    if (TOOZ_GROUPS.has(backend)) {
      try {
        out.tooz = show(await session('tooz', backend, runs, ctx))
      } catch (err) {
        errors.push(`tooz: ${(err as Error).message}`)
      }
    } else {
      out.tooz = { na: 'tooz 3.1 has no groups on this backend (locks only)' }
    }
    return out
  })
}
