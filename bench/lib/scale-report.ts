/**
 * docs/scale.md: the load a 100,000-service fleet puts on each backend, from the measured
 * per-member costs (bench/results/scale.json on Redis and etcd at 100,000 members; heartbeat.json
 * and group-read.json up to 1,000 and 5,000 members elsewhere), extrapolated linearly on paper.
 */
import { dumps } from '../../src/index.js'
import { BACKENDS, LABEL, type BenchBackend } from './backends.js'
import { capsOf, conditions } from './context.js'
import { formatValue } from './plot.js'

type J = any

const FLEET = 100_000
/** Beat period over timeout: half the interval, minus up to 10 % jitter (mean 5 %). */
const PERIOD_FACTOR = 0.475
const DEFAULT_TIMEOUT_S: Record<BenchBackend, number> = { redis: 30, memcached: 30, zookeeper: 10, etcd3: 30, postgresql: 30, mysql: 30, file: 10 }

const n = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
const f = (v: number | undefined, unit = ''): string => (v === undefined ? '–' : `${formatValue(v)}${unit}`)
const bytes = (v: number | undefined): string => {
  if (v === undefined) return '–'
  if (v >= 2 ** 30) return `${(v / 2 ** 30).toFixed(1)} GiB`
  if (v >= 2 ** 20) return `${(v / 2 ** 20).toFixed(1)} MiB`
  if (v >= 2 ** 10) return `${(v / 2 ** 10).toFixed(1)} KiB`
  return `${Math.round(v)} B`
}
const rate = (v: number | undefined): string => (v === undefined ? '–' : `${bytes(v)}/s`)
const row = (cells: unknown[]): string => `| ${cells.map((c) => String(c ?? '–')).join(' | ')} |`

export function scaleDoc(R: Record<string, J>, provisionalLoad: number | undefined, _log: (m: string) => void): string {
  const capsBytes = dumps(capsOf(0)).length
  const idBytes = 'compute-000000-nova-compute'.length
  const lines: string[] = []
  const perBackend: string[] = []
  lines.push(
    row([
      'backend',
      'beat every (default timeout)',
      'heartbeats/s',
      'backend ops/s',
      'backend writes/s',
      'bandwidth in / out',
      'backend memory',
      'one full read with capabilities',
      'basis',
    ]),
  )
  lines.push(`|${'---|'.repeat(9)}`)
  for (const b of BACKENDS) {
    const period = DEFAULT_TIMEOUT_S[b] * PERIOD_FACTOR * (b === 'memcached' ? 29 / 30 : 1)
    const beatsPerSecond = FLEET / period
    const scale = R.scale?.backends?.[b]?.data
    const upkeep = R.heartbeat?.backends?.[b]?.data?.upkeep
    const perBeat = scale?.heartbeat?.perMemberPerBeat ?? upkeep?.perBeat
    const read5k = R.read?.backends?.[b]?.data?.size5000?.rollcall?.caps?.p50
    const readAt = scale?.read?.rollcall?.caps?.p50
    const memPer = n(scale?.populate?.serverBytesPerMember)
    let memory: number | undefined
    let memNote = ''
    if (memPer !== undefined) {
      memory = memPer * FLEET
      memNote = 'measured at 100,000'
    } else if (b === 'memcached') {
      // Group value entry (id + {capabilities: caps}) + one liveness item (~50 B item header + key + value).
      memory = FLEET * (idBytes + capsBytes + 20 + 50 + 13 + idBytes + 12)
      memNote = 'on paper'
    } else if (b === 'zookeeper') {
      // Ephemeral znode: path + data + ~100 B of DataNode/Stat overhead, plus one session per member.
      memory = FLEET * (idBytes + capsBytes + 120 + 200)
      memNote = 'on paper'
    } else if (b === 'postgresql' || b === 'mysql') {
      memory = FLEET * (idBytes * 2 + capsBytes + 3 * 8 + 60)
      memNote = 'on paper (rows, before indexes)'
    } else if (b === 'file') {
      memory = FLEET * 4096
      memNote = 'on paper (one 4 KiB block per member file)'
    }
    const readMs = n(readAt) ?? (n(read5k) !== undefined ? read5k * (FLEET / 5000) : undefined)
    const readNote = n(readAt) !== undefined ? 'measured' : n(read5k) !== undefined ? 'extrapolated ×20 from 5,000' : ''
    const ops = n(perBeat?.ops)
    const writes = n(perBeat?.writes) ?? (b === 'postgresql' || b === 'mysql' || b === 'file' ? 1 : undefined)
    // memcached: each rollcall beat reads the whole group value, so bytes out per beat grow with the group.
    const bytesOut = b === 'memcached' && n(perBeat?.bytesOut) !== undefined && n(upkeep?.members)
      ? (perBeat.bytesOut / upkeep.members) * FLEET
      : n(perBeat?.bytesOut)
    const readLimit = b === 'zookeeper'
      ? '; fails past ~27k members with the default jute.maxbuffer'
      : b === 'memcached'
      ? "; the group value exceeds memcached's 1 MiB item limit past ~9k members"
      : ''
    lines.push(
      row([
        LABEL[b],
        `${period.toFixed(1)} s (${DEFAULT_TIMEOUT_S[b]} s)`,
        f(beatsPerSecond),
        ops !== undefined ? f(ops * beatsPerSecond) : '–',
        writes !== undefined ? f(writes * beatsPerSecond) : '–',
        n(perBeat?.bytesIn) !== undefined
          ? `${rate(perBeat.bytesIn * beatsPerSecond)} / ${rate((bytesOut ?? 0) * beatsPerSecond)}${
            b === 'memcached' ? ' (out grows with the group: every beat reads the whole group value)' : ''
          }`
          : '–',
        `${bytes(memory)} (${memNote || '–'})`,
        readMs !== undefined ? `${f(readMs)} ms (${readNote}${readLimit})` : '–',
        scale
          ? 'measured at 100,000 (private server)'
          : upkeep?.server === 'private'
          ? `per-beat costs measured at ${upkeep.members} members (private server)`
          : `per-beat costs measured at ${upkeep?.members ?? '–'} members (shared server), writes from the statement count`,
      ]),
    )
  }

  const client = [
    row(['backend', 'CPU per beat', 'fleet-wide client CPU at the default timeout', 'client memory per member (RSS)', 'measured on']),
    `|${'---|'.repeat(5)}`,
  ]
  for (const b of BACKENDS) {
    const u = R.heartbeat?.backends?.[b]?.data?.upkeep
    const sc = R.scale?.backends?.[b]?.data
    const cpu = n(sc?.heartbeat?.cpuMsPerBeat) ?? n(u?.cpuMsPerBeat)
    const period = DEFAULT_TIMEOUT_S[b] * PERIOD_FACTOR * (b === 'memcached' ? 29 / 30 : 1)
    const rss = n(sc?.processMemory?.rssPerMemberKiB) ?? n(u?.rssPerMemberKiB)
    client.push(
      row([
        LABEL[b],
        cpu !== undefined ? `${cpu.toFixed(3)} ms` : '–',
        cpu !== undefined ? `${((cpu * FLEET) / (period * 1000)).toFixed(1)} cores` : '–',
        rss !== undefined && rss > 0 ? `${rss.toFixed(0)} KiB` : '–',
        sc ? `${sc.heartbeat?.realMembers} members in 2 processes` : u ? `${u.members} members in one process` : '–',
      ]),
    )
  }
  const rs = R.scale?.backends?.redis?.data
  const es = R.scale?.backends?.etcd3?.data
  const measured = (d: J, label: string): string =>
    d
      ? `### ${label}, measured at ${Number(d.members).toLocaleString('en')} members

| | |
|---|---|
| thin members written (one connection) | ${Number(d.populate?.thinMembers).toLocaleString('en')} in ${d.populate?.seconds} s (${
        f(d.populate?.membersPerSecond)
      }/s) |
| server memory per member | ${bytes(d.populate?.serverBytesPerMember)} |
| rollcall members (real coordinators) | ${d.heartbeat?.realMembers}, beating every ${f(d.heartbeat?.beatPeriodMs)} ms (timeout 5 s) |
| backend writes per member per beat | ${d.heartbeat?.perMemberPerBeat?.writes} (target: exactly 1) |
| backend operations per member per beat | ${d.heartbeat?.perMemberPerBeat?.ops} |
| bytes in / out per member per beat | ${d.heartbeat?.perMemberPerBeat?.bytesIn} / ${d.heartbeat?.perMemberPerBeat?.bytesOut} |
| rollcall CPU per beat | ${d.heartbeat?.cpuMsPerBeat} ms |
| rollcall process memory per member | heap ${d.processMemory?.heapPerMemberKiB} KiB, RSS ${d.processMemory?.rssPerMemberKiB} KiB \
(each member is a full coordinator with its own connection) |
| read the group with capabilities | p50 ${f(d.read?.rollcall?.caps?.p50)} ms, p99 ${f(d.read?.rollcall?.caps?.p99)} ms (floor ${
        f(d.read?.raw?.caps?.p50)
      } ms); ${bytes(d.read?.rollcall?.bytesOutPerCapsRead)} sent by the server per read |
| read the member ids | p50 ${f(d.read?.rollcall?.ids?.p50)} ms (floor ${f(d.read?.raw?.ids?.p50)} ms); ${
        bytes(d.read?.rollcall?.bytesOutPerIdsRead)
      } sent per read |
| conditions | ${conditions(R.scale?.backends?.[label === 'Redis' ? 'redis' : 'etcd3'])} |
`
      : `### ${label}\n\nNot measured yet (run \`npm run bench -- --scenario scale\`).\n`

  perBackend.push(measured(rs, 'Redis'), measured(es, 'etcd'))

  return `# Scale: what a 100,000-service fleet costs each backend

<!-- Generated by \`npm run bench\` (bench/lib/scale-report.ts) from bench/results/*.json. Do not edit by hand. -->

${
    provisionalLoad !== undefined
      ? `> **Provisional (load ${provisionalLoad} when the run began).** Taken while other work ran on the machine; rerun \`npm run bench\` on a quiet `
        + `machine.\n`
      : ''
  }
A fleet of ${FLEET.toLocaleString('en')} services, each one rollcall member in one group (Nova's \`tooz\` service-group
driver: group = topic, member = service process), each carrying ${capsBytes} bytes of capabilities (host, binary,
zone, version, enabled). How this was measured:

- **Redis and etcd at 100,000 members** (\`npm run bench -- --scenario scale\`), each on a private server so
  that its counters are ours alone: 98,000 members written in tooz's exact layout by a thin client that holds
  many members on one connection, plus 2,000 real rollcall coordinators in two processes of 1,000, beating at
  timeout=5 s. The server's own counters give the writes, operations and bytes per beat; its memory gives
  the cost of a member; the whole group is read with capabilities by rollcall and by the raw client.
- **Every backend up to 1,000 beating members and 5,000 listed members** (the heartbeat and group-read
  scenarios): per-beat costs on private Redis, memcached, ZooKeeper and etcd servers; on the shared
  PostgreSQL, MariaDB and file backends the per-beat cost is one statement / one utimes by construction.
- **Beyond that, on paper**: costs grow linearly with the number of members (heartbeats) or with the
  group's size (reads); limits that a bigger machine would not lift are listed per backend.

Heartbeats come at about ${PERIOD_FACTOR} × the liveness timeout (half of it, less up to 10 % jitter); the table uses
each driver's default timeout (a Nova deployment using \`servicegroup_tooz_url=...?timeout=N\` scales every
per-second figure by default/N).

## The fleet's load, per backend

${lines.join('\n')}

"one full read" is what each reader of the group pays (a status page, \`service list\`, a scheduler's
getAll): rollcall reads the whole group in one round trip where the backend allows, so its cost grows with
the group, not with the number of round trips. Watchers on backends that do not push (Redis, memcached,
SQL, file) re-read the member ids of each watched group every watch_interval (1 s by default): budget one
id read per watching process per second.

## The fleet's own cost (rollcall processes)

Per beat, in the process that keeps members alive (the heartbeat scenario's upkeep run, or the scale run),
and summed over 100,000 members at the default timeout. Each member is a full coordinator with its own
connection; a host normally runs a handful, so the per-host cost is this divided by the number of hosts.

${client.join('\n')}

${perBackend.join('\n')}

## Limits a bigger machine does not lift

- **memcached**: a group is one value (tooz's layout), and memcached refuses values over its item size
  limit (\`-I\`, 1 MiB by default). At ~${idBytes + capsBytes + 20} bytes per member entry that is about
  ${formatValue(2 ** 20 / (idBytes + capsBytes + 20))} members per group; a 100,000-member group needs \`-I 16m\` or more, and
  every join, leave and update rewrites the whole value with a CAS loop (contention grows with churn).
  rollcall's memcached heartbeat also reads the group value of every joined group to check that the member
  is still listed: at 100,000 members that is the whole multi-megabyte value per member per beat, so the
  heartbeat bandwidth grows with N² (see the memcached bytes-out per beat in the heartbeat scenario).
  Python tooz's own group read is N round trips (N² for capabilities): unusable long before 100,000.
- **ZooKeeper**: one session per member (100,000 sessions pinging every timeout/3: ~${formatValue(FLEET / (10 / 3))} pings/s at the
  default 10 s), and getChildren of one group answers in one packet, which \`jute.maxbuffer\` caps at 1 MiB by
  default: with ~${idBytes + 4}-byte child names that is about ${formatValue(2 ** 20 / (idBytes + 4))} members per group before reads fail. Raise
  jute.maxbuffer on servers and clients, or split the fleet over several groups.
- **etcd**: one lease per member; every keepalive goes to the leader (~${formatValue(FLEET / (30 * PERIOD_FACTOR))}/s at the default 30 s). A full read
  is one range whose response grows with the group (gRPC message size limits apply above ~2 GiB, far off).
- **PostgreSQL and MariaDB**: each rollcall member holds one connection (its pool of one) plus one session per
  held lock; 100,000 members need 100,000 server connections, far beyond max_connections (100 / 151 by
  default) and beyond what either server can hold. Put a connection pooler in front (PgBouncer in
  transaction mode works for membership; session locks need session mode), or run one member per host
  rather than per process.
- **file**: local only (one host); a group read stats every member file, ~100,000 stats per read.
- **Redis**: single-threaded; at the default 30 s the fleet's heartbeats are ~${formatValue(FLEET / (30 * PERIOD_FACTOR))} scripts/s, a few percent
  of one core. But one full read of a 100,000-member group is one Lua script running HGETALL plus 100,000
  EXISTS, which occupies the server for ~0.3 s (measured: 300 ms of \`evalsha\` time per read at 100,000,
  load ~7), and Redis serves nobody else meanwhile: a few readers per second (status pages, watchers
  re-reading member ids every watch_interval) would keep it busy. At this size give watchers a longer
  watch_interval, or split the fleet into several groups (Nova: one per topic already).
- **The reading client at 100,000 members** (Redis, measured): ~0.3 s in the server, ~0.15 s to receive and
  parse 12 MB, ~0.45 s to decode 100,000 capability maps with rollcall's msgpack codec, and ~0.4–0.7 s of
  bookkeeping (a copy of every value, the Map, sorting 100,000 ids): 1.3–1.6 s in all on this machine.
`
}
