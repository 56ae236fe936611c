/**
 * rollcall side of the multi-process benchmarks, one role per process (the mirror of the
 * long-lived roles in bench/tooz_bench.py): victim, observer, candidate, leader_observer, locks.
 * Usage: node --import tsx bench/agents/member.ts ROLE 'JSON-ARGS'. Prints JSON lines; times are
 * wall-clock ms (Date.now()). Every loop ends after args.seconds at the latest.
 */
import { connect, GroupExistsError, type Coordinator } from '../../src/index.js'
import { performance } from 'node:perf_hooks'
import { createInterface } from 'node:readline'

interface Args {
  n?: number
  windowMs?: number
  url: string
  member?: string
  group?: string
  groups?: string[]
  caps?: unknown
  name?: string
  seconds?: number
  pollMs?: number
  holdMs?: number
  warmupSeconds?: number
  wait?: boolean
}

const out = (o: unknown): void => void process.stdout.write(`${JSON.stringify(o)}\n`)
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function ensureGroup(c: Coordinator, group: string): Promise<void> {
  await c.createGroup(group).catch((err: unknown) => {
    if (!(err instanceof GroupExistsError)) throw err
  })
}

const stdinLines = createInterface({ input: process.stdin })
const pendingLines: string[] = []
const lineWaiters: ((l: string) => void)[] = []
stdinLines.on('line', (l) => {
  const w = lineWaiters.shift()
  if (w) w(l)
  else pendingLines.push(l)
})
/** The next line on stdin (commands from the parent: "go", "stop"). */
const nextLine = (): Promise<string> => (pendingLines.length ? Promise.resolve(pendingLines.shift()!) : new Promise((r) => lineWaiters.push(r)))

const gc = (): void => (globalThis as { gc?: () => void }).gc?.()

const roles: Record<string, (a: Args) => Promise<void>> = {
  /**
   * Many members in one process (run with --expose-gc): reports the memory each costs, then, on
   * "go", counts heartbeats and CPU over windowMs.
   */
  async fleet(a) {
    const n = a.n ?? 1000
    gc()
    const m0 = process.memoryUsage()
    const coords: Coordinator[] = []
    for (let i = 0; i < n; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, n - i) }, async (_, j) => {
        coords[i + j] = await connect(a.url, { memberId: `${a.member}-${i + j}` })
      }))
    }
    await ensureGroup(coords[0]!, a.group!)
    for (const [i, c] of coords.entries()) {
      await c.joinGroup(a.group!, { host: `${a.member}-${i}`, binary: 'nova-compute', zone: `az${i % 3}`, version: '29.0.0', enabled: true })
    }
    gc()
    const m1 = process.memoryUsage()
    out({
      ready: true,
      heapPerMemberKiB: (m1.heapUsed - m0.heapUsed) / n / 1024,
      rssPerMemberKiB: (m1.rss - m0.rss) / n / 1024,
      externalPerMemberKiB: (m1.external - m0.external) / n / 1024,
    })
    await nextLine()
    const last = coords.map((c) => c.health.lastHeartbeatAt?.getTime())
    let beats = 0
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    while (performance.now() - t0 < (a.windowMs ?? 10_000)) {
      await sleep(200)
      for (const [i, c] of coords.entries()) {
        const t = c.health.lastHeartbeatAt?.getTime()
        if (t !== last[i]) {
          beats++
          last[i] = t
        }
      }
    }
    const cpu = process.cpuUsage(cpu0)
    out({ beats, windowMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 })
    // Stay joined (and beating) until told to stop: the parent reads the whole group meanwhile.
    await nextLine()
    await Promise.all(coords.map((c) => c.stop().catch(() => {})))
  },
  /** Joins and beats until killed. */
  async victim(a) {
    const c = await connect(a.url, { memberId: a.member })
    await c.joinGroupCreate(a.group!, a.caps ?? null)
    out({ ready: true })
    await sleep((a.seconds ?? 120) * 1000)
    await c.stop()
  },
  /** Reports memberLeft events for one group (pushed or polled, as the driver does it). */
  async observer(a) {
    const c = await connect(a.url, { memberId: a.member })
    await ensureGroup(c, a.group!)
    c.on('memberLeft', ({ member }) => out({ left: member, t: Date.now() }))
    await c.watchGroup(a.group!)
    out({ ready: true })
    await sleep((a.seconds ?? 120) * 1000)
    await c.stop()
  },
  /** Runs for leader and reports when elected. */
  async candidate(a) {
    const c = await connect(a.url, { memberId: a.member })
    await ensureGroup(c, a.group!)
    c.watchElectedAsLeader(a.group!, () => out({ elected: a.member, t: Date.now() }))
    out({ ready: true })
    await sleep((a.seconds ?? 120) * 1000)
    await c.stop()
  },
  /** Polls getLeader() for each group and reports every change. */
  async leader_observer(a) {
    const c = await connect(a.url, { memberId: a.member })
    const last = new Map<string, string | null>()
    out({ ready: true })
    const end = Date.now() + (a.seconds ?? 120) * 1000
    while (Date.now() < end) {
      for (const g of a.groups!) {
        const v = await c.getLeader(g).catch(() => undefined)
        if (v !== undefined && last.get(g) !== v) {
          last.set(g, v)
          out({ group: g, leader: v, t: Date.now() })
        }
      }
      await sleep(a.pollMs ?? 50)
    }
    await c.stop()
  },
  /** Acquire+release in a closed loop; waits for "go" on stdin when contended. */
  async locks(a) {
    const c = await connect(a.url, { memberId: a.member })
    const lock = c.getLock(a.name!)
    out({ ready: true })
    if (a.wait) await nextLine()
    // Uncounted first: every contender loops for warmupSeconds, so that what is counted is the steady state.
    const warmEnd = performance.now() + (a.warmupSeconds ?? 0) * 1000
    while (performance.now() < warmEnd) {
      if (await lock.acquire({ timeoutMs: Math.max(100, warmEnd - performance.now()) })) await lock.release()
    }
    const waits: number[] = []
    const t0 = performance.now()
    const end = t0 + (a.seconds ?? 5) * 1000
    while (performance.now() < end) {
      const t = performance.now()
      const got = await lock.acquire({ timeoutMs: Math.max(100, end - performance.now()) })
      if (!got) continue
      waits.push(performance.now() - t)
      if (a.holdMs) await sleep(a.holdMs)
      await lock.release()
    }
    const elapsed = performance.now() - t0
    await c.stop()
    const { summarize } = await import('../lib/stats.js')
    out({ count: waits.length, perSecond: Math.round((waits.length / elapsed) * 10000) / 10, waits: summarize(waits) })
  },
}

const [role, json] = process.argv.slice(2)
const fn = roles[role ?? '']
if (!fn) {
  out({ error: 'UsageError', message: `unknown role ${role}` })
  process.exit(2)
}
process.on('SIGTERM', () => process.exit(0))
fn(JSON.parse(json ?? '{}')).then(() => process.exit(0), (err: unknown) => {
  out({ error: (err as Error).name, message: (err as Error).message })
  process.exit(1)
})
