/**
 * The nemesis of partition runs (issue 27): a seed gives a schedule (a bounded list of faults with
 * their times and durations, the same list for the same seed and options), and runSchedule() plays
 * it against a cluster on Hosts (hosts.ts), writing a nemesis record for every step: `cut` (with
 * every host on its side and whether the cut leaves the cluster's leader off the majority) before
 * the fault takes effect, `heal` after it is undone. Faults never overlap; each is healed before the
 * next, and the schedule ends healed.
 *
 * Topology: servers n1..nN (cluster node i on host n(i+1)) and clients c1..cN; client ci is ni's
 * "own" client (the one cut off with it by the `...-with-client` faults).
 *
 * Faults (all of one server's host, picked by the seed, or the leader's when the kind says so):
 * - `isolate`: the server alone on its side (its clients stay with the majority);
 * - `isolate-with-client`: the server and its own client on the minority side;
 * - `isolate-leader`, `isolate-leader-with-client`: the same for the node that leads (ZooKeeper,
 *   etcd) or is the master (Redis) when the fault begins;
 * - `split`: the server and a random subset of the clients (possibly none) on the minority side;
 * - `drop-in`, `drop-out`: one-way: the server hears nothing from anyone / nobody hears it (TCP
 *   cannot work either way, so the history records it as the server's isolation);
 * - `flap`: the server's isolation cut and healed 3-5 times, 0.5-2 s each (one cut/heal pair each);
 * - `pause`: SIGSTOP of the server's process, SIGCONT at the heal (recorded as its isolation: none
 *   of its peers or clients gets an answer from it meanwhile).
 *
 * A cut's served side is the one with more than half of the servers, whatever the clients'
 * number on either (its cut record says so: `majority`, the index of that side). A single server
 * (PostgreSQL, MariaDB, memcached: one server host n1, three clients) serves whoever is on its
 * side, and its schedules draw from {@link SINGLE_SERVER_FAULT_KINDS}: the server's kinds above (`split` being
 * the server with some of the clients; with all of them it cuts nothing and records nothing) and
 * the same done to one client, drawn by the seed:
 * - `isolate-client`: the client alone on its side;
 * - `client-drop-in`, `client-drop-out`: one way: the client hears nothing / nobody hears it;
 * - `pause-client`: SIGSTOP of the client's process, SIGCONT at the heal (recorded as its isolation).
 *
 * A pause's cut record says so (`paused`): what the paused side did not do meanwhile it could not do.
 */
import type { Cluster } from '../../support/cluster.js'
import { historyClockMs, type HistoryWriter } from '../../fault/support/partition-history.js'
import type { Hosts } from './hosts.js'

/** The kinds of fault (see the file's doc). */
export const FAULT_KINDS = [
  'isolate',
  'isolate-with-client',
  'isolate-leader',
  'isolate-leader-with-client',
  'split',
  'drop-in',
  'drop-out',
  'flap',
  'pause',
] as const

/** The kinds of fault against a single server and its clients (see the file's doc). */
export const SINGLE_SERVER_FAULT_KINDS = [
  'isolate',
  'split',
  'drop-in',
  'drop-out',
  'flap',
  'pause',
  'isolate-client',
  'client-drop-in',
  'client-drop-out',
  'pause-client',
] as const

/** The kinds that hit one client (its index in Fault.clients). */
const CLIENT_KINDS: ReadonlySet<FaultKind> = new Set(['isolate-client', 'client-drop-in', 'client-drop-out', 'pause-client'])

/** One kind of fault. */
export type FaultKind = typeof FAULT_KINDS[number] | typeof SINGLE_SERVER_FAULT_KINDS[number]

/** One fault of a schedule. */
export interface Fault {
  kind: FaultKind
  /** Wait before it begins, after the previous fault was healed (the first: after the schedule starts). */
  gapMs: number
  /** How long it lasts (for `flap`: the whole series). */
  durationMs: number
  /** Server index (0-based); for the leader kinds, the fallback when no node leads. */
  node: number
  /** For `split`: the client indices cut off with the server; for the client kinds: the one client hit. */
  clients: number[]
  /** For `flap`: [on, off] ms of each round. */
  rounds: [number, number][]
}

/** A seed's faults. */
export interface Schedule {
  seed: number
  faults: Fault[]
}

/** Bounds of generated schedules. */
export interface ScheduleOptions {
  /** Number of servers (and of clients, unless `clients` says otherwise). */
  size: number
  /** Number of clients, when not `size` (a single server has three). */
  clients?: number
  /** Faults per schedule. */
  count: number
  /** Duration of a fault, [min, max] ms. */
  faultMs: [number, number]
  /** Wait before each fault, [min, max] ms (long enough for the cluster to recover from the previous one). */
  gapMs: [number, number]
  /** Only these kinds (default: all). */
  kinds?: readonly FaultKind[]
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The schedule of `seed`: the same faults, in the same order, with the same times, for the same seed and options. */
export function makeSchedule(seed: number, o: ScheduleOptions): Schedule {
  const r = prng(seed)
  const int = (lo: number, hi: number): number => Math.floor(lo + r() * (hi - lo + 1))
  const kinds = o.kinds ?? FAULT_KINDS
  const faults: Fault[] = []
  for (let i = 0; i < o.count; i++) {
    const kind = kinds[int(0, kinds.length - 1)]!
    const node = int(0, o.size - 1)
    // The client kinds draw their client after the node: the schedules of FAULT_KINDS draw as before.
    const clientCount = o.clients ?? o.size
    const clients = kind === 'split' ? [...Array(clientCount).keys()].filter(() => r() < 0.5) : CLIENT_KINDS.has(kind) ? [int(0, clientCount - 1)] : []
    const rounds: [number, number][] = kind === 'flap' ? [...Array(int(3, 5))].map(() => [int(500, 2_000), int(500, 2_000)]) : []
    const durationMs = kind === 'flap' ? rounds.reduce((n, [on, off]) => n + on + off, 0) : int(...o.faultMs)
    faults.push({ kind, gapMs: int(...o.gapMs), durationMs, node, clients, rounds })
  }
  return { seed, faults }
}

/** The longest a schedule can take (for test timeouts). */
export function scheduleBoundMs(s: Schedule): number {
  return s.faults.reduce((n, f) => n + f.gapMs + f.durationMs + 15_000, 0)
}

/** What runSchedule() acts on. */
export interface NemesisTarget {
  hosts: Hosts
  cluster: Cluster
  /** Host names of the servers (node i on servers[i]) and of the clients (client i on clients[i]). */
  servers: readonly string[]
  clients: readonly string[]
  /** The PID of client i's process now (for `pause-client`). */
  clientPid?(i: number): number | undefined
  /** The history, written as process `nemesis`. */
  history: HistoryWriter
  /** Stops early (the faults in progress are healed first). */
  signal?: AbortSignal
}

/** One fault as it happened. */
export interface Played {
  fault: Fault
  /** The server it hit (resolved for the leader kinds). */
  node: number
  takesLeader: boolean
  startAt: number
  endAt: number
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const t = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => {
      clearTimeout(t)
      resolve()
    }, { once: true })
  })

/**
 * The side a cut of [`minority`, the rest] leaves served: the one with more than half of the
 * servers (a quorum: ZooKeeper's and etcd's voters, Redis's sentinels, one per server host; a
 * single server's own side), however many clients are on either. Counting clients as hosts would
 * call a server cut off with every client the majority (Redis full form: n1 with c1-c3 against
 * n2, n3: the sentinels on n2, n3 failed the master over, and the clients, which could reach no
 * master, were judged healthy members lapsing) and leave a 3-3 split with no served side at all.
 */
function servedSide(servers: readonly string[], minority: readonly string[]): { majority?: 0 | 1 } {
  const onMinority = servers.filter((s) => minority.includes(s)).length
  if (onMinority * 2 > servers.length) return { majority: 0 }
  if ((servers.length - onMinority) * 2 > servers.length) return { majority: 1 }
  return {}
}

/** Plays `schedule`; resolves with what happened once the last fault is healed. */
export async function runSchedule(schedule: Schedule, t: NemesisTarget): Promise<Played[]> {
  const played: Played[] = []
  const all = [...t.servers, ...t.clients]
  for (const f of schedule.faults) {
    await sleep(f.gapMs, t.signal)
    if (t.signal?.aborted) break
    const leader = await t.cluster.leader().catch(() => undefined)
    const leaderHost = leader && t.hosts.hostAt(leader.address)?.name
    const byLeader = f.kind === 'isolate-leader' || f.kind === 'isolate-leader-with-client'
    const leaderServer = leaderHost === undefined ? -1 : t.servers.indexOf(leaderHost)
    const node = byLeader && leaderServer >= 0 ? leaderServer : f.node
    const onClient = CLIENT_KINDS.has(f.kind)
    const victim = onClient ? t.clients[f.clients[0]!]! : t.servers[node]!
    const minority = onClient ? [victim] : [
      victim,
      ...(f.kind === 'isolate-with-client' || f.kind === 'isolate-leader-with-client' ? [t.clients[node]!] : []),
      ...f.clients.map((c) => t.clients[c]!),
    ]
    const majority = all.filter((h) => !minority.includes(h))
    const takesLeader = leaderHost !== undefined && minority.includes(leaderHost)
    const served = servedSide(t.servers, minority)
    const cutRecord = (paused?: true): void => {
      t.history.write({ type: 'nemesis', what: 'cut', sides: [minority, majority], takesLeader, ...served, ...(paused && { paused }) })
    }
    // Each step is recorded as it begins, the heal as the cut: applying one takes effect host by host over up to several hundred ms,
    // and what happens meanwhile is after it (etcd seed 470402175: a client cut off reconnected, rejoined and was seen back 422 ms
    // before a heal recorded once applied, and the isUp views that had not caught up yet were judged against the watch as if cut off).
    const healRecord = (): void => {
      t.history.write({ type: 'nemesis', what: 'heal' })
    }
    const startAt = historyClockMs()
    if (majority.length === 0) {
      // A single server's split with every client on its side: nobody to cut off, and a cut needs two sides.
      await sleep(f.durationMs, t.signal)
      played.push({ fault: f, node, takesLeader: false, startAt, endAt: historyClockMs() })
      continue
    }
    if (f.kind === 'flap') {
      for (const [on, off] of f.rounds) {
        cutRecord()
        await t.hosts.cut([minority, majority])
        await sleep(on)
        healRecord()
        await t.hosts.heal()
        if (t.signal?.aborted) break
        await sleep(off)
      }
    } else if (f.kind === 'pause') {
      // A Redis host runs a data node and a sentinel: both are paused. A node that pauses itself (PostgreSQL: with its backends) does so.
      const nodes = t.cluster.nodes.filter((n) => n.address === t.hosts.host(victim).address && n.pid !== undefined)
      cutRecord(true)
      for (const n of nodes) n.pause ? n.pause() : t.hosts.pause(n.pid!)
      await sleep(f.durationMs, t.signal)
      healRecord()
      for (const n of nodes) n.resume ? n.resume() : t.hosts.resume(n.pid!)
    } else if (f.kind === 'pause-client') {
      const pid = t.clientPid?.(f.clients[0]!)
      cutRecord(true)
      if (pid !== undefined) t.hosts.pause(pid)
      await sleep(f.durationMs, t.signal)
      healRecord()
      if (pid !== undefined) t.hosts.resume(pid)
    } else {
      cutRecord()
      if (f.kind === 'drop-in' || f.kind === 'client-drop-in') await t.hosts.drop(majority, minority)
      else if (f.kind === 'drop-out' || f.kind === 'client-drop-out') await t.hosts.drop(minority, majority)
      else await t.hosts.cut([minority, majority])
      await sleep(f.durationMs, t.signal)
      healRecord()
      await t.hosts.heal()
    }
    played.push({ fault: f, node, takesLeader, startAt, endAt: historyClockMs() })
  }
  return played
}

/** One line per fault, for messages and the report. */
export function describeSchedule(s: Schedule): string {
  return s.faults
    .map((f) =>
      `${f.kind}(${
        CLIENT_KINDS.has(f.kind) ? `c${f.clients[0]! + 1}` : `n${f.node + 1}${f.clients.length ? ` +${f.clients.map((c) => `c${c + 1}`).join(',')}` : ''}`
      }) after ${f.gapMs} ms for ${f.durationMs} ms`
    )
    .join('; ')
}
