/**
 * Generates docs/performance.md, docs/scale.md and their plots (docs/img/bench-*.png) from the
 * result files in bench/results/. Nothing here measures; `npm run bench -- --docs-only` reruns it.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { BACKENDS, LABEL, type BenchBackend } from './backends.js'
import { BENCH_DIR, conditions, QUIET_LOAD, RESULTS_DIR } from './context.js'
import { SERIES, formatValue, writePng, type BarGroup, type Chart } from './plot.js'

const ROOT = join(BENCH_DIR, '..')
const DOCS = join(ROOT, 'docs')
const IMG = join(DOCS, 'img')

type J = any

function load(name: string): J | undefined {
  const f = join(RESULTS_DIR, `${name}.json`)
  if (!existsSync(f)) return undefined
  try {
    return JSON.parse(readFileSync(f, 'utf8'))
  } catch {
    return undefined
  }
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
const f = (v: unknown, unit = ''): string => {
  const n = num(v)
  return n === undefined ? '–' : `${formatValue(n)}${unit}`
}
/** "how many times better" with one decimal (or "–"). */
const x = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? '–' : v >= 100 ? `${Math.round(v)}×` : `${v.toFixed(v >= 10 ? 0 : 1)}×`)
const ratio = (a: unknown, b: unknown): number | undefined => {
  const na = num(a)
  const nb = num(b)
  return na !== undefined && nb !== undefined && nb > 0 ? na / nb : undefined
}
const entry = (r: J, b: BenchBackend): J | undefined => r?.backends?.[b]

/** Backends whose leader lock dies with its holder's process (kernel file lock, server session lock). */
const FREED_AT_DEATH: ReadonlySet<BenchBackend> = new Set(['file', 'postgresql', 'mysql'])
const data = (r: J, b: BenchBackend): J | undefined => entry(r, b)?.data
const na = (v: J): string | undefined => (v && typeof v === 'object' && typeof v.na === 'string' ? v.na : undefined)
const row = (cells: unknown[]): string => `| ${cells.map((c) => String(c ?? '–')).join(' | ')} |`
const sep = (n: number): string => `|${'---|'.repeat(n)}`
/** A rate table row (join, heartbeat): per second and p50 / p99 for rollcall and tooz, the floor's rate, both ratios, the conditions. */
const rateRow = (label: string, members: unknown, rc: J, tz: J, raw: J, conditions: string): string =>
  row([
    label,
    members,
    f(rc?.perSecond),
    `${f(rc?.samples?.p50)} / ${f(rc?.samples?.p99)}`,
    na(tz) ? 'n/a' : f(tz?.perSecond),
    na(tz) ? 'n/a' : `${f(tz?.samples?.p50)} / ${f(tz?.samples?.p99)}`,
    f(raw?.perSecond),
    x(ratio(rc?.perSecond, tz?.perSecond)),
    x(ratio(raw?.perSecond, rc?.perSecond)),
    conditions,
  ])

interface Verdict {
  target: string
  backend: string
  figure: string
  met: boolean | undefined
  note?: string
}

function loadNote(r: J, b: BenchBackend): string {
  return conditions(entry(r, b))
}

function errorsOf(r: J, b: BenchBackend): string[] {
  return (entry(r, b)?.errors as string[] | undefined) ?? []
}

function img(name: string, chart: Chart, log: (m: string) => void): string {
  try {
    writePng(chart, join(IMG, `bench-${name}.png`))
    return `![${chart.title}](img/bench-${name}.png)\n`
  } catch (err) {
    log(`plot ${name} failed: ${(err as Error).message}`)
    return `(plot ${name} could not be drawn: ${(err as Error).message})\n`
  }
}

export async function generateDocs(log: (m: string) => void): Promise<void> {
  mkdirSync(IMG, { recursive: true })
  const machine = load('machine')
  const R = {
    join: load('join'),
    heartbeat: load('heartbeat'),
    read: load('group-read'),
    detection: load('detection'),
    locks: load('locks'),
    failover: load('failover'),
    scale: load('scale'),
    sg: load('servicegroup'),
  }
  const verdicts: Verdict[] = []
  const vsTooz = (scenario: string, b: BenchBackend, rc: unknown, tz: unknown, higherBetter: boolean, what: string): void => {
    if (num(rc) === undefined || num(tz) === undefined) return
    const better = higherBetter ? num(rc)! >= num(tz)! : num(rc)! <= num(tz)!
    verdicts.push({ target: 'at least as good as tooz', backend: b, figure: `${scenario}: ${what}: rollcall ${f(rc)} vs tooz ${f(tz)}`, met: better })
  }
  const vsFloor = (scenario: string, b: BenchBackend, rc: unknown, raw: unknown, higherBetter: boolean, what: string): void => {
    const r = higherBetter ? ratio(raw, rc) : ratio(rc, raw)
    if (r === undefined) return
    verdicts.push({ target: 'within 3× of the raw floor', backend: b, figure: `${scenario}: ${what}: ${r.toFixed(1)}× the floor`, met: r <= 3 })
  }
  const sections: string[] = []

  // ---- join
  if (R.join) {
    const groups: BarGroup[] = []
    const lines = [
      row([
        'backend',
        'members',
        'rollcall members/s',
        'p50 / p99 ms',
        'tooz members/s',
        'p50 / p99 ms',
        'floor members/s',
        'vs tooz',
        'vs floor',
        'conditions',
      ]),
      sep(10),
    ]
    for (const b of BACKENDS) {
      const d = data(R.join, b)
      if (!d) continue
      const rc = d.rollcall
      const tz = d.tooz
      const raw = d.raw
      groups.push({
        label: LABEL[b],
        values: [rc?.perSecond, tz?.perSecond, raw?.perSecond],
        notes: [undefined, na(tz) ? 'n/a (no groups in tooz)' : undefined, undefined],
      })
      lines.push(rateRow(LABEL[b], d.members, rc, tz, raw, loadNote(R.join, b)))
      vsTooz('join', b, rc?.perSecond, tz?.perSecond, true, 'members/s')
      vsFloor('join', b, rc?.perSecond, raw?.perSecond, true, 'members/s')
    }
    sections.push(`## Join

${R.join.title}: N = ${R.join.params.members} members, each its own coordinator (connected beforehand, not timed), join one
group one after another. tooz does the same in one Python process; the floor is one raw join per member
(Redis HSETNX, memcached gets+cas, ZooKeeper create, etcd txn, SQL INSERT, file write) on one connection.
PostgreSQL and MariaDB runs use fewer members: each rollcall member holds one server connection, and the
servers' default max_connections (100 and 151) allow about 80 and 130 beside the bench's own. "vs tooz" is rollcall's rate over
tooz's; "vs floor" is the floor's rate over rollcall's (1× = at the floor).

${
      img('join', {
        title: 'Join: members per second (higher is better)',
        unit: 'members/s',
        series: [SERIES.rollcall, SERIES.tooz, SERIES.raw],
        groups,
        log: true,
      }, log)
    }
${lines.join('\n')}
`)
  }

  // ---- heartbeat
  if (R.heartbeat) {
    const sizes: number[] = R.heartbeat.params.sizes ?? [100, 1000]
    const lines = [
      row(['backend', 'members', 'rollcall beats/s', 'p50 / p99 ms', 'tooz beats/s', 'p50 / p99 ms', 'floor beats/s', 'vs tooz', 'vs floor', 'conditions']),
      sep(10),
    ]
    const groups: BarGroup[] = []
    const cpu = [
      row([
        'backend',
        'members',
        'server',
        'beat every',
        'CPU (timeout 5 s)',
        'CPU ms per beat',
        'CPU at default timeout',
        'server ops per beat',
        'writes per beat',
        'bytes in/out per beat',
        'process RSS per member',
      ]),
      sep(11),
    ]
    const cpuGroups: BarGroup[] = []
    for (const b of BACKENDS) {
      const d = data(R.heartbeat, b)
      if (!d) continue
      for (const s of sizes) {
        const c = d[`capacity${s}`]
        if (!c) continue
        const rc = c.rollcall
        const tz = c.tooz
        const raw = c.raw
        lines.push(rateRow(LABEL[b], c.members, rc, tz, raw, loadNote(R.heartbeat, b)))
        if (s === sizes.at(-1)) {
          groups.push({
            label: `${LABEL[b]} (${c.members})`,
            values: [rc?.perSecond, tz?.perSecond, raw?.perSecond],
            notes: [undefined, na(tz) ? 'n/a (no groups in tooz)' : undefined, undefined],
          })
        }
        vsTooz(`heartbeat ${c.members}`, b, rc?.perSecond, tz?.perSecond, true, 'beats/s')
        vsFloor(`heartbeat ${c.members}`, b, rc?.perSecond, raw?.perSecond, true, 'beats/s')
      }
      const u = d.upkeep
      if (u) {
        cpu.push(
          row([
            LABEL[b],
            u.members,
            u.server,
            `${f(u.beatPeriodMs)} ms`,
            `${f(u.cpuPercent)} %`,
            f(u.cpuMsPerBeat),
            `${f(u.cpuPercentAtDefault)} % (timeout ${u.defaultTimeoutSeconds} s)`,
            f(u.perBeat?.ops),
            f(u.perBeat?.writes),
            u.perBeat ? `${f(u.perBeat.bytesIn)} / ${f(u.perBeat.bytesOut)}` : '–',
            `${f(u.rssPerMemberKiB)} KiB`,
          ]),
        )
        cpuGroups.push({ label: LABEL[b], values: [u.cpuPercentAtDefault] })
      }
    }
    sections.push(`## Heartbeat

**Capacity.** ${sizes.join(' and ')} joined members beat in a closed loop for ${R.heartbeat.params.seconds} s: each member calls
heartbeat() again as soon as the previous one answers. rollcall and tooz run one coordinator per member
(rollcall in one Node process, tooz in one Python process with a thread per member); the floor is the raw
liveness refresh (Redis PSETEX, memcached set, ZooKeeper exists, etcd lease keepalive, SQL UPDATE, file
utimes) from the same number of concurrent loops, one raw client (connection) per member, for half the
window. tooz's memcached heartbeat is a fire-and-forget \`set\` (pymemcache noreply): it never waits for the
server, so its "latency" is the time to write to the socket and its rate is not a round-trip rate. A rollcall beat does more than tooz's:
it also checks that the member is still listed in each joined group (to rejoin after a loss), in the same
round trip where the backend allows.

${
      img('heartbeat', {
        title: `Heartbeat capacity at ${sizes.at(-1)} members (higher is better)`,
        unit: 'beats/s',
        series: [SERIES.rollcall, SERIES.tooz, SERIES.raw],
        groups,
        log: true,
      }, log)
    }
${lines.join('\n')}

**Upkeep.** The CPU one rollcall process spends keeping ${R.heartbeat.params.upkeepMembers} members alive at their normal interval
(timeout=5 s, so a beat every ~2.4 s per member), over 10 s, with the backend's own counters (a private
server for Redis, memcached, ZooKeeper and etcd; ZooKeeper counts packets, pings included). The column "CPU
at default timeout" scales the per-beat cost to each driver's default timeout.

${
      img('upkeep', {
        title: `CPU of one process keeping ${R.heartbeat.params.upkeepMembers} members alive (default timeouts)`,
        unit: '% of one core',
        series: [SERIES.rollcall],
        groups: cpuGroups,
      }, log)
    }
${cpu.join('\n')}
`)
  }

  // ---- group read
  if (R.read) {
    const sizes: number[] = R.read.params.sizes ?? [100, 1000, 5000]
    const biggest = sizes.at(-1)!
    const lines = [
      row([
        'backend',
        'members',
        'rollcall ids p50/p99',
        'with caps p50/p99',
        'tooz ids p50/p99',
        'with caps p50/p99',
        'floor ids / caps p50',
        'caps vs tooz',
        'caps vs floor',
        'conditions',
      ]),
      sep(10),
    ]
    const groups: BarGroup[] = []
    for (const b of BACKENDS) {
      const d = data(R.read, b)
      if (!d) continue
      for (const s of sizes) {
        const e = d[`size${s}`]
        if (!e) continue
        const rc = e.rollcall
        const tz = e.tooz
        const raw = e.raw
        const tzCaps = tz?.caps?.p50 ?? tz?.capsExtrapolatedP50
        const tzCapsText = tz?.caps
          ? `${f(tz.caps.p50)} / ${f(tz.caps.p99)}`
          : tz?.capsExtrapolatedP50
          ? `~${f(tz.capsExtrapolatedP50)} (extrapolated, not run)`
          : na(tz)
          ? 'n/a'
          : '–'
        lines.push(
          row([
            LABEL[b],
            s,
            `${f(rc?.ids?.p50)} / ${f(rc?.ids?.p99)}`,
            `${f(rc?.caps?.p50)} / ${f(rc?.caps?.p99)}`,
            na(tz) ? 'n/a' : `${f(tz?.ids?.p50)} / ${f(tz?.ids?.p99)}`,
            tzCapsText,
            `${f(raw?.ids?.p50)} / ${f(raw?.caps?.p50)}`,
            x(ratio(tzCaps, rc?.caps?.p50)),
            x(ratio(rc?.caps?.p50, raw?.caps?.p50)),
            loadNote(R.read, b),
          ]),
        )
        if (s === biggest) {
          groups.push({
            label: LABEL[b],
            values: [rc?.caps?.p50, tzCaps, raw?.caps?.p50],
            notes: [
              undefined,
              tz?.capsExtrapolatedP50 && !tz?.caps ? `~${Math.round(tzCaps / 1000)} s (extrapolated)` : na(tz) ? 'n/a (no groups in tooz)' : undefined,
              undefined,
            ],
          })
          const r = ratio(tzCaps, rc?.caps?.p50)
          const want = b === 'memcached' ? 1000 : 20
          if (r !== undefined) {
            verdicts.push({
              target: `caps read at ${s} ≥ ${want}× faster than tooz`,
              backend: b,
              figure: `${x(r)}${tz?.caps ? '' : ' (tooz extrapolated)'}`,
              met: r >= want,
            })
          }
        }
        vsTooz(`read ${s} ids`, b, rc?.ids?.p50, tz?.ids?.p50, false, 'p50 ms')
        vsTooz(`read ${s} caps`, b, rc?.caps?.p50, tz?.caps?.p50, false, 'p50 ms')
        vsFloor(`read ${s} ids`, b, rc?.ids?.p50, raw?.ids?.p50, false, 'p50')
        vsFloor(`read ${s} caps`, b, rc?.caps?.p50, raw?.caps?.p50, false, 'p50')
      }
    }
    sections.push(`## Group read

getMembers and getMembersWithCapabilities on groups of ${sizes.join(', ')} members, in milliseconds (p50 / p99 over
up to ${R.read.params.maxRuns} reads within ${R.read.params.budgetMs / 1000} s). The members are written in tooz's layout by a raw client, so all three
read the same data. tooz 3.1 has no get_members_with_capabilities: it reads capabilities one member at a
time (get_members, then one get_member_capabilities per member, all submitted before the first is awaited,
its best case). On memcached each get_member_capabilities re-reads the whole group (one get per member),
so tooz's read with capabilities costs N² round trips: it is run up to 1,000 members and extrapolated
(quadratically) beyond. The floor: Redis HGETALL + one pipelined EXISTS batch; memcached one get of the
group + one multi-get of the member keys; ZooKeeper getChildren + pipelined getData; etcd one range; SQL
one SELECT; file readdir + stat (+ read) of every member file.

${
      img('group-read', {
        title: `Read ${biggest} members with capabilities, p50 (lower is better)`,
        unit: 'ms',
        series: [SERIES.rollcall, SERIES.tooz, SERIES.raw],
        groups,
        log: true,
      }, log)
    }
${lines.join('\n')}
`)
  }

  // ---- detection
  if (R.detection) {
    const lines = [
      row([
        'backend',
        'rollcall min / median / max ms',
        'backend expiry (median)',
        'noticed after expiry (median)',
        'tooz min / median / max ms',
        'backend expiry (median)',
        'noticed after expiry (median)',
        'missed (rollcall / tooz)',
        'conditions',
      ]),
      sep(9),
    ]
    const groups: BarGroup[] = []
    for (const b of BACKENDS) {
      const d = data(R.detection, b)
      if (!d) continue
      const rc = d.rollcall
      const tz = d.tooz
      const lagText = (
        o: J,
      ): string => (num(o?.lagMs?.p50) !== undefined
        ? f(o.lagMs.p50)
        : num(o?.detectMs?.p50) !== undefined && num(o?.floorMs?.p50) !== undefined
        ? `~${f(o.detectMs.p50 - o.floorMs.p50)}`
        : '–')
      lines.push(
        row([
          LABEL[b],
          `${f(rc?.detectMs?.min)} / ${f(rc?.detectMs?.p50)} / ${f(rc?.detectMs?.max)}`,
          f(rc?.floorMs?.p50),
          lagText(rc),
          na(tz)
            ? 'n/a'
            : `${f(tz?.detectMs?.min)} / ${f(tz?.detectMs?.p50)} / ${f(tz?.detectMs?.max)}${
              tz?.mode === 'get_members' ? " (no watchers in tooz's etcd3gw driver: get_members() polled and diffed)" : ''
            }`,
          na(tz) ? 'n/a' : f(tz?.floorMs?.p50),
          na(tz) ? 'n/a' : lagText(tz),
          `${rc?.missed ?? '–'} / ${na(tz) ? 'n/a' : tz?.missed ?? '–'}`,
          loadNote(R.detection, b),
        ]),
      )
      groups.push({
        label: LABEL[b],
        values: [rc?.detectMs?.p50, tz?.detectMs?.p50, rc?.floorMs?.p50],
        notes: [undefined, na(tz) ? 'n/a (no groups in tooz)' : undefined, undefined],
      })
      // Compared on what the observer adds after the backend's expiry: the kill-to-expiry part is the
      // victim's heartbeat phase, random per run, and is the backend's, not the library's.
      const lagOf = (o: J): number | undefined =>
        num(o?.lagMs?.p50) ?? (num(o?.detectMs?.p50) !== undefined && num(o?.floorMs?.p50) !== undefined ? o.detectMs.p50 - o.floorMs.p50 : undefined)
      vsTooz('detection', b, lagOf(rc), lagOf(tz), false, "median ms noticed after the backend's expiry")
      if (b === 'zookeeper' || b === 'etcd3' || num(rc?.electedAfterFreedMs?.p50) !== undefined) {
        const gap = num(rc?.detectMs?.p50) !== undefined && num(rc?.floorMs?.p50) !== undefined ? rc.detectMs.p50 - rc.floorMs.p50 : undefined
        if (gap !== undefined) {
          verdicts.push({
            target: "detection within 0.5 s of the backend's expiry",
            backend: b,
            figure: `median ${f(rc.detectMs.p50)} ms vs expiry ${f(rc.floorMs.p50)} ms (+${Math.round(gap)} ms)`,
            met: gap <= 500,
          })
        }
      }
    }
    sections.push(`## Failure detection

A member killed with SIGKILL, timeout ${R.detection.params.timeoutSeconds} s, ${R.detection.params.runs} runs per backend: \
the time from the kill until another member's
memberLeft fires (rollcall: pushed by ZooKeeper and etcd; Redis, SQL and file re-read the group when its first
member expires; memcached polled every second) or until tooz's
run_watchers() reports it (polled every ${R.detection.params.pollMs} ms: tooz can only poll). \
The ${R.detection.params.runs} victims are separate processes killed
${R.detection.params.staggerMs} ms apart in one session; what varies between runs is where in its heartbeat cycle each victim dies. "Backend
expiry" is the backend's own verdict: a raw client listing the live members every 25 ms (Redis beat key
gone, memcached member key gone, ZooKeeper ephemeral node deleted, etcd lease expired, SQL expires_at
passed, file mtime older than the timeout). Kill to expiry depends on where in its heartbeat cycle the
victim died (random per run, and the same for both libraries: an interleaved check of 6 + 6 victims on
etcd gave medians of 3.9 s and 4.4 s), so it is measured for rollcall's victims and tooz's separately, and
rollcall is compared with tooz on what each adds after the expiry ("noticed after expiry", per run).

${
      img('detection', {
        title: 'Time to notice a killed member, median (lower is better)',
        unit: 'ms after SIGKILL',
        series: [SERIES.rollcall, SERIES.tooz, { name: 'backend expiry (rollcall victims)', color: SERIES.raw.color }],
        groups,
      }, log)
    }
${lines.join('\n')}
`)
  }

  // ---- locks
  if (R.locks) {
    const procs: number[] = R.locks.params.processes ?? [2, 8]
    const lines = [
      row([
        'backend',
        'rollcall ops/s (p50 ms)',
        'tooz ops/s (p50 ms)',
        'floor ops/s (p50 ms)',
        'vs tooz',
        'vs floor',
        ...procs.flatMap((p) => [`rollcall ${p} procs: ops/s, fairness, longest wait`, `tooz ${p} procs`]),
        'conditions',
      ]),
      sep(6 + procs.length * 2 + 1),
    ]
    const groups: BarGroup[] = []
    const cgroups: BarGroup[] = []
    for (const b of BACKENDS) {
      const d = data(R.locks, b)
      if (!d) continue
      const c = (k: string): string => {
        const v = d[k]
        return v ? `${f(v.perSecond)}, ${f(v.fairness)}, ${f(v.longestWaitMs)} ms` : '–'
      }
      // One table row per rollcall run: `run` is the key prefix of its cells (rollcall, or unfenced for a run without the fencing token).
      const rowOf = (label: string, run: string): string =>
        row([
          label,
          `${f(d[run]?.perSecond)} (${f(d[run]?.samples?.p50)})`,
          `${f(d.tooz?.perSecond)} (${f(d.tooz?.samples?.p50)})`,
          `${f(d.raw?.perSecond)} (${f(d.raw?.samples?.p50)})`,
          x(ratio(d[run]?.perSecond, d.tooz?.perSecond)),
          x(ratio(d.raw?.perSecond, d[run]?.perSecond)),
          ...procs.flatMap((p) => [c(`${run}${p}`), c(`tooz${p}`)]),
          loadNote(R.locks, b),
        ])
      lines.push(rowOf(LABEL[b], 'rollcall'))
      groups.push({ label: LABEL[b], values: [d.rollcall?.perSecond, d.tooz?.perSecond, d.raw?.perSecond] })
      const p = procs.at(-1)!
      cgroups.push({ label: LABEL[b], values: [d[`rollcall${p}`]?.perSecond, d[`tooz${p}`]?.perSecond] })
      // Where a backend also ran without its fencing token (which tooz does not take), that run is the like-for-like comparison.
      const unfenced = d.unfenced !== undefined
      if (unfenced) lines.push(rowOf(`${LABEL[b]}, fencing=false`, 'unfenced'))
      const k = (kind: string): string => (unfenced ? `unfenced${kind}` : `rollcall${kind}`)
      const as = unfenced ? ' (fencing=false, as tooz)' : ''
      vsTooz(`locks uncontended${as}`, b, d[k('')]?.perSecond, d.tooz?.perSecond, true, 'ops/s')
      vsFloor('locks uncontended', b, d.rollcall?.perSecond, d.raw?.perSecond, true, 'ops/s')
      for (const q of procs) {
        const rc = d[k(String(q))]
        const tz = d[`tooz${q}`]
        const fair = rc && tz ? ` (fairness ${f(rc.fairness)} vs ${f(tz.fairness)})` : ''
        vsTooz(`locks ${q} processes${as}`, b, rc?.perSecond, tz?.perSecond, true, `ops/s${fair}`)
        vsTooz(`locks ${q} processes${as}`, b, rc?.longestWaitMs, tz?.longestWaitMs, false, 'longest wait ms')
      }
      const most = d[k(String(procs.at(-1)))]
      if (num(most?.fairness) !== undefined) {
        verdicts.push({
          target: 'lock fairness ≥ 0.9 (fewest/most acquisitions per process)',
          backend: b,
          figure: `${procs.at(-1)} processes${as}: ${f(most.fairness)}`,
          met: most.fairness >= 0.9,
        })
      }
    }
    const errs = BACKENDS.flatMap((b) => errorsOf(R.locks, b).map((e) => `- ${LABEL[b]}: ${e}`))
    sections.push(`## Locks

Uncontended: one process, acquire + release of one lock in a closed loop for ${R.locks.params.uncontendedWarmupSeconds ?? 0} s uncounted, then
${R.locks.params.uncontendedSeconds} s counted (operations/s, p50 of one acquire+release in ms; tooz and the floor alike). Contended: ${
      procs.join(' and ')
    } processes loop on the same lock (blocking acquire, release at once) for
${R.locks.params.warmupSeconds ?? 0} s uncounted, then ${R.locks.params.contendedSeconds} s counted (the steady state: a Node process that has
taken a lock only a few hundred times still runs much of its code unoptimized; both implementations loop alike): total acquisitions/s,
fairness (the fewest acquisitions of one process over the most: 1 = even, 0 = one process starved; the target is ≥ 0.9 with ${
      procs.at(-1)
    } processes), and the longest single wait. The floor is the raw client's uncontended cycle (Redis SET NX PX
+ compare-and-delete script, memcached add + delete, ZooKeeper sequential create + getChildren + delete,
etcd txn + delete, PostgreSQL pg_try_advisory_lock + unlock, MariaDB GET_LOCK + RELEASE_LOCK, file
fcntl lock + unlock on an open file). Lock TTLs are 10 s (timeout=10) where the backend has them. MariaDB
runs twice: as configured by default, with a fencing token per acquire (an InnoDB counter row, one committed
write), and with \`fencing=false\` (GET_LOCK alone, as tooz, which takes no token); the targets compare the
latter with tooz. Each contended phase starts once the CPU is at least 85 % idle over half a second (the
previous phase's processes take a moment to exit).

Contended rollcall locks hand over in turns on Redis, file and MariaDB: a holder looping on the lock keeps it
for up to 32 acquisitions (128 on Redis, where a hand-over costs about five lock cycles) in 100 ms while the others wait,
then the next in line gets it (on MariaDB the line
is a second GET_LOCK name that rollcall waiters queue on, so the server's own first-come queue orders them).
On MariaDB turns trade the 2-process figure for the 8-process one. In the server's plain queue a release hands
the lock straight to the other process's waiting GET_LOCK, so one client round trip is on the critical path
per acquisition, against two (acquire, release) within a turn; with 2 processes, each on its own core, the
plain queue was faster (interleaved runs before/after: 1,932-2,266 vs 1,650-1,789 acquisitions/s with the
token, 5,323-8,557 vs 2,866-3,078 without), while with 8 processes on 2 cores waking the next process on
every release costs more than that saves (1,087 vs 1,229-1,289 with the token, 1,526-1,915 vs 2,399-2,683
without). Both stay ahead of tooz without the token (the compared row).

${
      img('locks', {
        title: 'Uncontended acquire+release per second (higher is better)',
        unit: 'operations/s',
        series: [SERIES.rollcall, SERIES.tooz, SERIES.raw],
        groups,
        log: true,
      }, log)
    }
${
      img('locks-contended', {
        title: `${procs.at(-1)} processes contending: acquisitions per second (higher is better)`,
        unit: 'acquisitions/s',
        series: [SERIES.rollcall, SERIES.tooz],
        groups: cgroups,
        log: true,
      }, log)
    }
${lines.join('\n')}
${errs.length ? `\nErrors recorded:\n${errs.join('\n')}\n` : ''}`)
  }

  // ---- failover
  if (R.failover) {
    const lines = [
      row([
        'backend',
        'rollcall elected min / median / max ms',
        'known to others (median)',
        'tooz elected min / median / max ms',
        'known to others (median)',
        'leader lock freed by the backend (median)',
        'rollcall elected after that (median / max)',
        'backend expiry (detection, median)',
        'conditions',
      ]),
      sep(9),
    ]
    const groups: BarGroup[] = []
    for (const b of BACKENDS) {
      const d = data(R.failover, b)
      if (!d) continue
      const rc = d.rollcall
      const tz = d.tooz
      const expiry = data(R.detection, b)?.rollcall?.floorMs?.p50
      lines.push(
        row([
          LABEL[b],
          `${f(rc?.electedMs?.min)} / ${f(rc?.electedMs?.p50)} / ${f(rc?.electedMs?.max)}`,
          f(rc?.knownMs?.p50),
          na(tz) ? `n/a: ${na(tz)}` : `${f(tz?.electedMs?.min)} / ${f(tz?.electedMs?.p50)} / ${f(tz?.electedMs?.max)}`,
          na(tz) ? 'n/a' : tz?.knownNa ? `n/a: ${tz.knownNa}` : f(tz?.knownMs?.p50),
          rc?.lockFreedMs ? f(rc.lockFreedMs.p50) : '–',
          rc?.electedAfterFreedMs ? `${f(rc.electedAfterFreedMs.p50)} / ${f(rc.electedAfterFreedMs.max)}` : '–',
          f(expiry),
          loadNote(R.failover, b),
        ]),
      )
      groups.push({ label: LABEL[b], values: [rc?.electedMs?.p50, tz?.electedMs?.p50], notes: [undefined, na(tz) ? 'n/a (no election in tooz)' : undefined] })
      // Where the bench watched the leader lock for both, each is judged on what it adds after the backend freed it (as detection is
      // judged after the expiry): when the kill fell in the lease differs run by run and side by side.
      const bothFreed = num(rc?.electedAfterFreedMs?.p50) !== undefined && num(tz?.electedAfterFreedMs?.p50) !== undefined
      if (bothFreed) vsTooz('failover', b, rc.electedAfterFreedMs.p50, tz.electedAfterFreedMs.p50, false, 'median ms elected after the backend freed the lock')
      else vsTooz('failover', b, rc?.electedMs?.p50, tz?.electedMs?.p50, false, 'median ms')
      if (FREED_AT_DEATH.has(b) && num(rc?.electedMs?.p50) !== undefined) {
        verdicts.push({
          target: "failover ≤ 100 ms after the backend frees the leader's lock",
          backend: b,
          figure: `median ${f(rc.electedMs.p50)} ms after the kill, which frees the lock at once (max ${f(rc.electedMs.max)})`,
          met: rc.electedMs.p50 <= 100,
        })
      }
      if (b === 'zookeeper' || b === 'etcd3' || num(rc?.electedAfterFreedMs?.p50) !== undefined) {
        // Measured run by run where the bench watched the leader lock; else against detection's expiry.
        const target = "failover within 0.5 s of the backend's expiry"
        const afterFreed = num(rc?.electedAfterFreedMs?.p50)
        if (afterFreed !== undefined) {
          const figure = `median ${f(afterFreed)} ms after the backend freed the dead leader's lock (max ${f(rc.electedAfterFreedMs.max)})`
          verdicts.push({ target, backend: b, figure, met: afterFreed <= 500 })
          verdicts.push({ target: "failover ≤ 100 ms after the backend frees the leader's lock", backend: b, figure, met: afterFreed <= 100 })
        } else if (num(rc?.electedMs?.p50) !== undefined && num(expiry) !== undefined) {
          const gap = rc.electedMs.p50 - expiry
          verdicts.push({ target, backend: b, figure: `median ${f(rc.electedMs.p50)} ms vs expiry ${f(expiry)} ms (+${Math.round(gap)} ms)`, met: gap <= 500 })
        }
      }
    }
    sections.push(`## Leader failover

The leader of a group killed with SIGKILL (timeout ${R.failover.params.timeoutSeconds} s): time until the other candidate is elected (rollcall's
leaderElected; tooz's elected callback, which only run_watchers() runs, here every ${R.failover.params.pollMs} ms) and until a third member
polling getLeader() every 50 ms names the new leader. ${R.failover.params.groups} groups with two candidate processes each, leaders killed
${R.failover.params.staggerMs} ms apart. On PostgreSQL and MariaDB the leader lock is a session lock, freed the moment the server sees the
connection close, so failover does not wait for any timeout. On etcd, ZooKeeper, Redis and memcached, where the leader
lock lives on a lease or a session, a raw client polls the lock every 25 ms and notes when the backend frees the
dead leader's hold (etcd revokes expired leases on a 500 ms tick, so that moment varies by up to half a
second from the TTL); "elected after that" is measured run by run, and where it was measured for both libraries,
that is what rollcall is compared with tooz on (when the kill fell in the lease differs from run to run). The backend-expiry column repeats the
detection scenario's median (same timeout, same kind of kill) for comparison.

${
      img('failover', {
        title: 'Leader failover: time to a new leader, median (lower is better)',
        unit: 'ms after SIGKILL',
        series: [SERIES.rollcall, SERIES.tooz],
        groups,
      }, log)
    }
${lines.join('\n')}
`)
  }

  // ---- scale (summary here, details in scale.md)
  if (R.scale) {
    const groups: BarGroup[] = []
    const lines = [
      row([
        'backend',
        'members',
        'rollcall read with caps p50 / p99 ms',
        'getMembers p50 ms',
        'floor with caps p50 ms',
        'writes per member per beat',
        'rollcall heap / RSS per member',
        'conditions',
      ]),
      sep(8),
    ]
    for (const b of ['redis', 'etcd3'] as const) {
      const d = data(R.scale, b)
      if (!d) continue
      const rc = d.read?.rollcall
      lines.push(
        row([
          LABEL[b],
          Number(d.members).toLocaleString('en'),
          `${f(rc?.caps?.p50)} / ${f(rc?.caps?.p99)}`,
          f(rc?.ids?.p50),
          f(d.read?.raw?.caps?.p50),
          f(d.heartbeat?.perMemberPerBeat?.writes),
          `${f(d.processMemory?.heapPerMemberKiB)} / ${f(d.processMemory?.rssPerMemberKiB)} KiB`,
          loadNote(R.scale, b),
        ]),
      )
      groups.push({ label: LABEL[b], values: [rc?.caps?.p50, undefined, d.read?.raw?.caps?.p50] })
      if (num(rc?.caps?.p50) !== undefined) {
        verdicts.push({ target: `read ${d.members} members with caps < 1 s`, backend: b, figure: `p50 ${f(rc.caps.p50)} ms`, met: rc.caps.p50 < 1000 })
      }
      const w = num(d.heartbeat?.perMemberPerBeat?.writes)
      if (w !== undefined) {
        verdicts.push({ target: 'one backend write per member per interval', backend: b, figure: `${w.toFixed(3)} writes`, met: Math.abs(w - 1) < 0.02 })
      }
      vsFloor(`scale read ${d.members}`, b, rc?.caps?.p50, d.read?.raw?.caps?.p50, false, 'p50')
    }
    sections.push(`## Scale

One group of ${
      (data(R.scale, 'redis')?.members ?? data(R.scale, 'etcd3')?.members ?? 100_000).toLocaleString('en')
    } members on Redis and on etcd (private servers): see [scale.md](scale.md) for the method and the load a
100,000-service fleet puts on every backend.

${
      img('scale', {
        title: 'Read the whole group with capabilities, p50 (lower is better)',
        unit: 'ms',
        series: [SERIES.rollcall, SERIES.tooz, SERIES.raw],
        groups,
      }, log)
    }
${lines.join('\n')}
`)
  }

  // ---- service groups (measured by bench/servicegroup.bench.ts, which its engineer owns)
  if (R.sg) {
    const targets = Object.keys(R.sg.backends ?? {})
    const lines = [
      row([
        'driver-backend',
        'services',
        'first list ms (round trips: catalog / driver)',
        'warm list p50 / p99 ms',
        'driver reads per warm list',
        'isUp per call',
        'conditions',
      ]),
      sep(7),
    ]
    const groups: BarGroup[] = []
    for (const t of targets) {
      const e = R.sg.backends[t]
      const d = e?.data ?? {}
      const errs: string[] = e?.errors ?? []
      lines.push(
        row([
          t,
          d.services ?? '–',
          d.listCold
            ? `${f(d.listCold.ms)} (${d.listCold.catalogStatements ?? '–'} / ${d.listCold.driverReads ?? '–'})`
            : errs.length
            ? `failed: ${errs[0]!.slice(0, 120)}`
            : '–',
          d.listWarm ? `${f(d.listWarm.p50)} / ${f(d.listWarm.p99)}` : '–',
          d.listWarm?.driverReadsPerList ?? '–',
          d.isUpHotPath ? `${f(d.isUpHotPath.usPerCall)} µs` : '–',
          conditions(e),
        ]),
      )
      groups.push({ label: t, values: [d.listCold?.ms, d.listWarm?.p50] })
    }
    sections.push(`## Service groups

\`rollcall service list\` over ${R.sg.params?.services ?? 5000} services, per service-group driver and backend, measured by
bench/servicegroup.bench.ts (written with the service-group layer; \`npm run bench\` runs it and these rows come from
its bench/results/servicegroup.json). "First list" builds the driver's view (one batched read per topic for
tooz and zk); warm lists reuse it while fresh. isUp is the per-service check after a list (the scheduler's hot path).

${
      img('servicegroup', {
        title: `service list over ${R.sg.params?.services ?? 5000} services (lower is better)`,
        unit: 'ms',
        series: [{ name: 'first list', color: SERIES.rollcall.color }, { name: 'warm list p50', color: '#63b3ed' }],
        groups,
        log: true,
      }, log)
    }
${lines.join('\n')}
`)
  } else {
    sections.push(`## Service groups

\`service list\` over 5,000 services per driver is measured by bench/servicegroup.bench.ts (written with the
service-group layer). It did not exist when these docs were generated; \`npm run bench\` runs it and includes
its results (bench/results/servicegroup.json) once it does.
`)
  }

  // ---- verdicts
  const misses = verdicts.filter((v) => v.met === false)
  const byTarget = new Map<string, Verdict[]>()
  for (const v of verdicts) byTarget.set(v.target, [...(byTarget.get(v.target) ?? []), v])
  const targetLines = [row(['target', 'met', 'missed', 'misses']), sep(4)]
  const why = new Map<string, string[]>()
  for (const [t, vs] of byTarget) {
    const missed = vs.filter((v) => v.met === false)
    targetLines.push(row([
      t,
      vs.length - missed.length,
      missed.length,
      missed.map((m) => {
        const cause = explain(t, m.backend, m.figure)
        if (cause) why.set(cause, [...(why.get(cause) ?? []), `${LABEL[m.backend as BenchBackend] ?? m.backend} ${m.figure.split(':')[0]}`])
        const n = cause ? [...why.keys()].indexOf(cause) + 1 : undefined
        return `${LABEL[m.backend as BenchBackend] ?? m.backend}: ${m.figure}${n ? ` [${n}]` : ''}`
      }).join('; ') || '–',
    ]))
  }
  const whyLines = [...why.entries()].map(([text, where], i) => `${i + 1}. ${text} (${[...new Set(where)].join(', ')})`)

  const quick = [R.join, R.heartbeat, R.read, R.detection, R.locks, R.failover, R.scale].some((r) =>
    Object.values((r?.backends ?? {}) as Record<string, J>).some((e) => e.quick)
  )
  const reruns: { command: string; takenAt: string; load1AtStart: number }[] = machine?.reruns ?? []
  const startLoad: number = Math.max(machine?.load1AtStart ?? 0, ...reruns.map((r) => r.load1AtStart))
  const provisional = startLoad > QUIET_LOAD
  const v = machine?.versions ?? {}
  const doc = `# Performance: rollcall beside Python tooz and the raw client

<!-- Generated by \`npm run bench\` (bench/lib/report.ts) from bench/results/*.json. Do not edit by hand. -->

${
    provisional
      ? `> **Provisional (load ${startLoad} when a run began).** Other work was running on the machine (1-minute load
> average above ${QUIET_LOAD} before the first scenario of a run). These figures show the shape of the comparison, not final
> numbers: rerun \`npm run bench\` on a quiet machine to replace them.\n`
      : ''
  }${quick ? '> **Quick run**: small N, for checking the scripts only.\n' : ''}
Every scenario runs rollcall, Python tooz (Debian's python3-tooz, driven by bench/tooz_bench.py) and the
raw client library doing the same work in the fewest round trips ("the floor"), against the same server,
with the same parameters, in one run on one machine. Ratios say how many times better rollcall is than tooz
("vs tooz", above 1× is better) and how far it is from the floor ("vs floor", 1× is the floor itself).

## Machine and versions

| | |
|---|---|
| CPU | ${machine?.cpuModel ?? '–'}, ${machine?.cores ?? '–'} cores |
| memory | ${machine?.memoryGiB ?? '–'} GiB |
| kernel | ${machine?.kernel ?? '–'} |
| load average at start | ${(machine?.loadavg ?? []).join(' ')} |
| run started | ${machine?.takenAt ?? '–'} (\`${machine?.command ?? 'npm run bench'}\`) |
${reruns.map((r) => `| retaken | ${r.takenAt}: \`${r.command}\` (load ${r.load1AtStart} at its start) |\n`).join('')}| Node.js | ${v.node ?? '–'} |
| Redis | ${v.redis ?? '–'} |
| memcached | ${v.memcached ?? '–'} |
| ZooKeeper | ${v.zookeeper ?? '–'} |
| etcd | ${v.etcd ?? '–'} (JSON gateway) |
| PostgreSQL | ${v.postgresql ?? '–'} |
| MariaDB | ${v.mariadb ?? '–'} |
| Python / tooz | ${v.python ?? '–'} / python3-tooz ${v.tooz ?? '–'} (kazoo ${v.kazoo ?? '–'}, redis-py ${v['redis-py'] ?? '–'}, pymemcache ${
    v.pymemcache ?? '–'
  }, etcd3gw ${v.etcd3gw ?? '–'}) |

All traffic is loopback. Servers: the shared test servers of scripts/backends.sh, except where a scenario says
"private" (a server of its own from test/support/servers.ts, so that its counters are the scenario's alone).

## How to run

\`\`\`sh
bash scripts/backends.sh up                     # the servers (npm test does this too)
npm run bench                                   # everything, then these docs (about 20 minutes)
npm run bench -- --backend redis --scenario group-read   # one backend / scenario (lists: a,b)
npm run bench -- --quick                        # small N: checks the scripts in a few minutes
npm run bench -- --docs-only                    # regenerate docs and plots from bench/results/
\`\`\`

This run: \`${machine?.command ?? 'npm run bench'}\`. A filtered run replaces only its own rows in bench/results/*.json.

## Targets

${targetLines.join('\n')}

${
    whyLines.length
      ? `### Why the misses happen

${whyLines.join('\n')}
`
      : ''
  }${misses.length > 0 && whyLines.length === 0 ? 'No known cause recorded for these misses (bench/lib/causes.ts).' : ''}

${sections.join('\n')}
`
  writeFileSync(join(DOCS, 'performance.md'), doc)
  writeFileSync(join(DOCS, 'scale.md'), scaleDoc(R, provisional ? startLoad : undefined, log))
  log(`docs: docs/performance.md, docs/scale.md and ${IMG}/bench-*.png written (${misses.length} target misses)`)
}

import { scaleDoc } from './scale-report.js'
import { explain } from './causes.js'
