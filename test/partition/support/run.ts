/**
 * One partition run (issue 27): six hosts (servers n1-n3, clients c1-c3; hosts.ts), a real cluster
 * across n1-n3 (test/support/cluster.ts with a Placement), or four for a single server (n1 alone:
 * single-server.ts, its clients cut off from it by the nemesis), the fenced register in the test process
 * (register.ts), one client process per client host running the lock, election, membership and
 * service-group (isUp) workloads against every server's address (client.ts), then the nemesis
 * playing schedules back to back (nemesis.ts), a quiet tail for recovery, a clean stop, and the checker
 * (test/fault/support/partition-checker.ts) on the whole history. A cluster that elects is watched
 * meanwhile: who leads goes into the history (watchLeaders). A backend with queues (ZooKeeper)
 * has them read after the quiet tail, into queues.json beside the history. Everything made is
 * removed at the end, pass or fail; the history directory is kept when the run found something.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { ETCD_ELECTION_TIMEOUT_MS, startEtcdCluster, startRedisSentinel, startZookeeperEnsemble, type Cluster, type Placement } from '../../support/cluster.js'
import { checkPartitionHistory, type PartitionCheckOptions, type PartitionReport } from '../../fault/support/partition-checker.js'
import { historyClockMs, HistoryWriter, readHistory, type HistoryEntry } from '../../fault/support/partition-history.js'
import type { ClientSpec } from './client.js'
import { Hosts } from './hosts.js'
import { openRawZk } from '../../drivers/zookeeper-support.js'
import { runSchedule, SINGLE_SERVER_FAULT_KINDS, type Played, type Schedule, type ScheduleOptions } from './nemesis.js'
import { startRegister } from './register.js'
import { startSingleServer } from './single-server.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const REPO = join(HERE, '..', '..', '..')
const CLIENT = join(HERE, 'client.ts')

/** A backend under partition: its cluster, the URL options its clients get, the checker's bounds and the schedules' bounds. */
export interface PartitionBackend {
  /** The backend's name as docs/reliability.md reports it. */
  name: 'zookeeper' | 'etcd3' | 'redis' | 'postgresql' | 'mysql' | 'memcached'
  title: string
  /** Server hosts (default 3); a single server has one, and its clients are cut off from it rather than it from a majority. */
  servers?: number
  start(placement: Placement): Promise<Cluster>
  /** The URL query of every client: its liveness (session, lease or key TTL; PARTITION_BACKENDS says why each). */
  query: string
  check: PartitionCheckOptions
  /** The schedules' bounds; `size` (default 3) and `count` are the run's. */
  schedule: Omit<ScheduleOptions, 'size' | 'count'> & { size?: number }
  /**
   * What the backend holds for the run's lock, election and group once the quiet tail is over,
   * written to queues.json beside the history: the first question a lock or leadership never
   * granted again raises is what heads the queue, and whose it is.
   */
  queues?(cluster: Cluster, names: RunNames): Promise<unknown>
}

/** The names of one run's lock, election group and membership group. */
export interface RunNames {
  lock: string
  election: string
  group: string
}

/**
 * ZooKeeper's queues (zookeeper-lock.ts) and the group, read from a serving node: each child with
 * its data (a contender's member id), its owner session and its creation time on the history's
 * clock (every namespace shares the host's), so that a node left heading a queue is named with
 * the session that owns it, and the member nodes tell whose session that is.
 */
async function zookeeperQueues(cluster: Cluster, names: RunNames): Promise<unknown> {
  const node = cluster.nodes.find((n) => n.running)
  if (!node) return { error: 'no node running' }
  const zk = await openRawZk({ host: node.address, port: node.port })
  try {
    const read = async (path: string): Promise<unknown> => {
      // None yet (no one ever queued) reads as empty.
      const children = await zk.children(path).catch((): string[] => [])
      const nodes = await Promise.all(children.map(async (name) => {
        const r = await zk.get(`${path}/${name}`).catch(() => undefined)
        return { name, data: r?.data.toString('latin1'), owner: r?.stat.ephemeralOwner, createdAt: r ? Number(r.stat.ctime) : Infinity }
      }))
      // In creation order: a queue's order.
      return nodes.sort((a, b) => a.createdAt - b.createdAt)
    }
    return {
      [names.lock]: await read(`/tooz/locks/${names.lock}`),
      [`${names.election}/leader`]: await read(`/tooz/${names.election}/leader`),
      [names.group]: await read(`/tooz/${names.group}`),
    }
  } finally {
    await zk.close()
  }
}

/** Liveness of a single server's clients: membership, lock and leader timeout, in seconds (no cluster failover to outlast). */
export const LIVENESS_S = 4

/**
 * The checker's bounds for a single server: a cut member seen gone within its timeout + 2 s, back
 * within 10 s of the heal; the rounds of a flap, which cut every client off from the server, heal
 * for less than the 3 s a client takes to reconnect and elect again, so only heals followed by 3 s
 * or more without a cut are judged for locks and leaderships never granted again.
 */
const SINGLE_SERVER_CHECK: PartitionCheckOptions = { detectWithinMs: LIVENESS_S * 1_000 + 2_000, recoverWithinMs: 10_000, settleMs: 3_000 }

/** Schedules against one server and three clients (nemesis.ts SINGLE_SERVER_FAULT_KINDS). */
const SINGLE_SERVER_SCHEDULE: PartitionBackend['schedule'] = {
  size: 1,
  clients: 3,
  kinds: SINGLE_SERVER_FAULT_KINDS,
  faultMs: [3_000, 12_000],
  gapMs: [6_000, 9_000],
}

/** A single server of `name` on n1, its three clients with LIVENESS_S, the single-server bounds and schedules. */
function singleServer(name: 'postgresql' | 'mysql' | 'memcached', title: string): PartitionBackend {
  return {
    name,
    title,
    servers: 1,
    start: (p) => startSingleServer(name, p),
    query: `timeout=${LIVENESS_S}`,
    check: SINGLE_SERVER_CHECK,
    schedule: SINGLE_SERVER_SCHEDULE,
  }
}

/** The etcd clients' request timeout, in seconds: below etcd's own (5 s + two election timeouts), see PARTITION_BACKENDS.etcd3. */
export const ETCD_REQUEST_TIMEOUT_S = 4

/**
 * The backends, with their bounds.
 *
 * Liveness against the cluster's own failover (issue 27). A member counts its session or lease
 * from the send time of its last request the cluster's leader answered (client-side expiry), and
 * while the leader is cut off, or a new one not yet elected, nothing renews it. So a CP backend's
 * liveness must outlast the cluster's worst leaderless stretch by what the member may already have
 * used of it when the cut comes; a shorter one makes healthy members on the majority side presume
 * themselves lost at every leader cut (their lock holds must end then: that is the rule that keeps
 * locks safe), and with ZooKeeper also end their sessions. These are protocol bounds, not rollcall's:
 *
 * - ZooKeeper: followers notice a silent leader after syncLimit x tickTime and then elect (about
 *   1-2 s); a cut shorter than that is waited out, plus TCP's retransmission back-off on the
 *   quorum link (up to about the cut again). The client's proof of what the leader has seen lags
 *   up to 3/8 of the session and it gives up a tenth early, so about half the session is left at a
 *   cut. The ensemble runs ZooKeeper's sample syncLimit of 5 ticks (2.5 s at 500 ms ticks; with 10,
 *   5 s, no session below about 15 s would survive a leader cut), and sessions of 12 s: 6.3 s left
 *   at worst against about 4.5 s leaderless (a 4 s session lost every member at every flap of the
 *   leader: seed 2701). Deployments keep this proportion or more: ZooKeeper's sample tickTime 2 s
 *   and syncLimit 5 with Kafka's 18 s or Curator's 60 s sessions.
 * - etcd: followers call an election a randomised 1-2 election timeouts (2 s here) after the
 *   leader's last heartbeat, so up to about 4.5 s leaderless. A member beats at half its TTL, and a
 *   keepalive copy goes out every twentieth of it, so 45% of the TTL is left at worst: leases of
 *   10 s (4 s leases lost members on the majority side at most leader cuts: seed 2702). tooz's
 *   default is 30 s, against etcd's default election timeout of 1 s.
 * - Redis with Sentinel: the sentinels fail a silent master over after down-after (1 s here),
 *   their own election and the promotion, and clients then find the new master through them.
 *   Keys are refreshed at half their TTL, so keys of 10 s (4 s keys lost members on the majority
 *   side at every master cut: seed 2703). A client would keep its silent connection to the cut-off
 *   master until socket_timeout, its beats hanging there while its keys lapse on the new master
 *   (members on the majority side lapsed 8-10 s after a master cut while only lock holders asked
 *   the sentinels), so every client in a group or holding a lock asks a sentinel every second
 *   whether its server is still the master, and moves when not, dropping the silent connection at
 *   once (redis-fencing.ts): members on the majority side move 3.5-4.2 s after a master cut, the
 *   sentinels' failover taking about 3.5 s of it. A client cut off with the old master stays the
 *   known hazard (verdict.ts, redis-sentinel-failover).
 *
 * - A single server (PostgreSQL, MariaDB, memcached) has no failover: its clients keep
 *   LIVENESS_S, and only a client's own cut or pause, or the server's, ends what it holds.
 *
 * Each schedule's faults reach past detectWithinMs (+ electionMs) often enough that detection of a
 * cut-off member is measured, not only its absence.
 */
export const PARTITION_BACKENDS: Record<PartitionBackend['name'], PartitionBackend> = {
  zookeeper: {
    name: 'zookeeper',
    title: 'Three-node ZooKeeper ensemble (tickTime 500 ms, syncLimit 5), session timeout 12 s',
    start: (p) => startZookeeperEnsemble(3, { placement: p, syncLimit: 5 }),
    query: 'timeout=12',
    // A cut leader: followers notice after syncLimit × tickTime (2.5 s), elect (~1-2 s), and the new leader restarts every session's clock.
    // Locks and leaderships are judged only after heals followed by 4.5 s or more without a cut: a cut of the leader shorter than
    // syncLimit × tickTime can still end its term that long after the cut began, after the heal, and the election and the clients'
    // reconnects follow (full form, a flap of the leader: cut 1.95 s, its followers left it 0.42 s after the heal and elected another
    // 1.8 s later, in the next round; the 1.33 s between the rounds, led by the old leader as far as it said, granted nothing).
    check: { detectWithinMs: 14_000, electionMs: 6_500, recoverWithinMs: 10_000, settleMs: 4_500 },
    schedule: { faultMs: [3_000, 20_000], gapMs: [6_000, 9_000] },
    queues: zookeeperQueues,
  },
  etcd3: {
    name: 'etcd3',
    title: 'Three-member etcd 3.4 cluster with pre-vote (heartbeat 200 ms, election timeout 2 s), leases of 10 s',
    start: (p) => startEtcdCluster(3, p),
    // Requests are bounded at 4 s, below etcd's own request timeout (5 s + two election timeouts): a txn sent to a member cut off
    // gives up and moves on well within the leases (seed 13: with every request bounded at the 10 s of the leases, a release and
    // two acquires hung 9-10 s on the cut-off leader, and nobody was granted the lock in the 7 s between the heal and the next cut).
    query: `timeout=${ETCD_REQUEST_TIMEOUT_S}&membership_timeout=10&lock_timeout=10`,
    // A cut leader: the majority elects within about two election timeouts, and the new leader extends every lease by one more.
    // Locks and leaderships are judged only after heals followed by ETCD_REQUEST_TIMEOUT_S or more without a cut: a request sent
    // while the cluster has no leader is dropped (raft drops proposals without a leader) and its client learns it only at its
    // timeout, so a holder's release sent during a cut of the leader may still be waiting for that when a flap's round heals
    // (0.5-2 s) and the lock is not free before it is sent again (seed 470402163: rounds of 1.2 s after cuts of 3.7 s, the
    // release answered nothing for 4.1 s).
    check: {
      detectWithinMs: 12_000,
      electionMs: 6_500,
      // etcd server/etcdserver: once a new leader has applied its predecessor's entries, lessor.Promote(electionTimeout) gives every
      // lease its TTL plus one election timeout from then (full form: members cut off with the leader were seen gone 14.1 s after
      // the cut, 12.1 s after the new leader took office).
      leaderGraceMs: ETCD_ELECTION_TIMEOUT_MS,
      recoverWithinMs: 10_000,
      settleMs: ETCD_REQUEST_TIMEOUT_S * 1_000,
    },
    schedule: { faultMs: [3_000, 18_000], gapMs: [6_000, 9_000] },
  },
  redis: {
    name: 'redis',
    title: 'Redis master + two replicas + three Sentinels (quorum 2, down-after 1 s), one data node and one sentinel per host, keys of 10 s',
    start: (p) => startRedisSentinel(p),
    query: 'timeout=10',
    // A cut master: the sentinels fail over after down-after (1 s) plus their own election. Locks and leaderships are judged only
    // after heals followed by 5 s or more without a cut: a flap of the master heals for 0.5-2 s between its cuts, shorter than
    // the failover a cut begins (about 3.5 s) and a client's move after it (its check each second), and nothing is granted
    // meanwhile (full form, a flap of the master: 3 windows of 0.7-1.4 s judged lost, the lock granted 80 ms after the last heal).
    check: { detectWithinMs: 12_000, electionMs: 6_000, recoverWithinMs: 15_000, settleMs: 5_000 },
    schedule: { faultMs: [3_000, 18_000], gapMs: [8_000, 12_000] },
  },
  postgresql: singleServer('postgresql', 'One PostgreSQL server, membership_timeout 4 s, clients cut off from it'),
  mysql: singleServer('mysql', 'One MariaDB server, membership_timeout 4 s, clients cut off from it'),
  memcached: singleServer('memcached', 'One memcached server, member, lock and leader keys of 4 s, clients cut off from it'),
}

/** What a run returns. */
export interface PartitionRunResult {
  backend: PartitionBackend['name']
  schedules: Schedule[]
  played: Played[]
  /** Each schedule's time window on the history clock, from its first fault to its last heal (to find which seed a finding belongs to). */
  windows: { seed: number; from: number; to: number }[]
  report: PartitionReport
  history: HistoryEntry[]
  /** Kept when the run found something (else removed). */
  historyPath: string
  /** Register writes. */
  writes: { accepted: number; rejected: number }
  startupMs: number
  durationMs: number
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const now = historyClockMs

/** A client process being watched: its `ready` line, and its end before the run stops it (with its stderr). */
interface WatchedClient {
  ready: Promise<void>
  /** Why it ended on its own, with the tail of its stderr; undefined while it runs (or once the run stopped it). */
  gone(): Error | undefined
  /** The run is stopping it: its end is no longer news. */
  stopping(): void
}

/** Watches client `name`: ready() waits for its `ready` line within `ms`, rejecting with its stderr if it exits first or after `ms`. */
function watchClient(p: ChildProcess, name: string, ms: number): WatchedClient {
  let err = ''
  let gone: Error | undefined
  let stopping = false
  p.stderr?.on('data', (d) => (err = (err + String(d)).slice(-2_000)))
  p.once('exit', (code, sig) => {
    if (!stopping) gone = new Error(`client ${name} exited (${code ?? sig}) during the run: ${err.trim()}`)
  })
  const ready = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`client ${name} not ready within ${ms} ms: ${err.trim()}`)), ms)
    p.stdout?.on('data', (d) => {
      if (String(d).includes('ready')) {
        clearTimeout(t)
        resolve()
      }
    })
    p.once('exit', (code, sig) => {
      clearTimeout(t)
      reject(new Error(`client ${name} exited (${code ?? sig}) before it was ready: ${err.trim()}`))
    })
  })
  return { ready, gone: () => gone, stopping: () => (stopping = true) }
}

/** How often the monitor asks every node whether it leads. */
const LEADERS_EVERY_MS = 250

/**
 * Asks every node of a cluster that elects whether it leads, every LEADERS_EVERY_MS, and writes a
 * `cluster` record whenever the answer changes, naming the leaders by host: the checker allows
 * the time the served side had none (partition-checker.ts: Leaders). A node that does not answer
 * within the probe's second (cut off, paused, or slow on a loaded machine) keeps its last answer:
 * silence is not a lost leader. A record is written once the answers are in, so it lags the change
 * by up to a probe interval plus that second. Returns the stop (again is harmless); a cluster that
 * does not elect is not watched.
 */
function watchLeaders(cluster: Cluster, hosts: Hosts, historyPath: string): () => Promise<void> {
  if (!cluster.leads) return async () => {}
  const writer = new HistoryWriter(historyPath, 'monitor')
  let stopped = false
  const loop = (async () => {
    const says = new Map<string, boolean>()
    let last: string | undefined
    while (!stopped) {
      for (const [n, leads] of await cluster.leads!()) says.set(hosts.hostAt(n.address)?.name ?? n.name, leads)
      const leaders = JSON.stringify([...says].filter(([, leads]) => leads).map(([host]) => host).sort())
      if (!stopped && leaders !== last) {
        last = leaders
        writer.write({ type: 'cluster', leaders: JSON.parse(leaders) as string[] })
      }
      await sleep(LEADERS_EVERY_MS)
    }
  })()
  let stopping: Promise<void> | undefined
  return () =>
    stopping ??= (async () => {
      stopped = true
      await loop.catch(() => {})
      writer.close()
    })()
}

/** Runs `schedules` back to back against one fresh cluster of `backend`; see the file's doc. */
export async function partitionRun(
  backend: PartitionBackend,
  schedules: readonly Schedule[],
  log: (line: string) => void = () => {},
): Promise<PartitionRunResult> {
  const began = now()
  const dir = mkdtempSync(join(tmpdir(), `rollcall-partition-${backend.name}-`))
  const historyPath = join(dir, 'history.jsonl')
  const servers = ['n1', 'n2', 'n3'].slice(0, backend.servers ?? 3)
  const clientHosts = ['c1', 'c2', 'c3']
  const hosts = await Hosts.create([...servers, ...clientHosts])
  const clients: ChildProcess[] = []
  let cluster: Cluster | undefined
  let register: Awaited<ReturnType<typeof startRegister>> | undefined
  let keep = true
  const nemesis = new HistoryWriter(historyPath, 'nemesis')
  let stopWatching = async (): Promise<void> => {}
  try {
    cluster = await backend.start({ hosts: servers.map((s) => hosts.host(s)) })
    await cluster.healthy(90_000)
    stopWatching = watchLeaders(cluster, hosts, historyPath)
    register = await startRegister(hosts.adminAddress, historyPath)
    const id = randomBytes(3).toString('hex')
    const url = cluster.url(backend.query)
    log(`${backend.name}: hosts ${hosts.prefix}, ${url}`)
    const names: RunNames = { lock: `lock-${id}`, election: `elect-${id}`, group: `members-${id}` }
    for (const c of clientHosts) {
      const spec: ClientSpec = {
        url,
        name: `${c}-w${id}`,
        host: c,
        history: historyPath,
        lock: { name: names.lock, register: register.url, holdMs: [300, 1_500] },
        election: { group: names.election, termMs: [1_000, 4_000] },
        group: names.group,
        // report_interval as Nova's default: a service dropped by the backend is back at its next report.
        services: {
          topic: `services-${id}`,
          processes: Object.fromEntries(clientHosts.map((h) => [h, `${h}-w${id}`])),
          pollMs: [250, 500],
          reportIntervalS: 10,
        },
      }
      clients.push(hosts.spawn(c, process.execPath, ['--import', 'tsx', CLIENT, JSON.stringify(spec)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] }))
    }
    const watched = clients.map((p, i) => watchClient(p, clientHosts[i]!, 90_000))
    await Promise.all(watched.map((w) => w.ready))
    // A client that ended on its own (a crash of the library or of its workload) fails the run with its stderr, not as a
    // nemesis error about the process it could no longer pause or resume.
    const clientGone = (): Error | undefined => watched.map((w) => w.gone()).find((e) => e !== undefined)
    const startupMs = Math.round(now() - began)
    // Let every watcher see every member before the first fault.
    await sleep(3_000)
    const played: Played[] = []
    const windows: PartitionRunResult['windows'] = []
    for (const s of schedules) {
      const began = now()
      const mine = await runSchedule(s, { hosts, cluster, servers, clients: clientHosts, clientPid: (i) => clients[i]?.pid, history: nemesis }).catch(
        (err: unknown) => {
          throw clientGone() ?? err
        },
      )
      const gone = clientGone()
      if (gone) throw gone
      played.push(...mine)
      // From its first fault, not from the quiet gap before it: what happens in that gap is the previous schedule's aftermath.
      windows.push({ seed: s.seed, from: mine[0]?.startAt ?? began, to: now() })
      log(`${backend.name}: schedule ${s.seed} played (${played.length} faults so far)`)
    }
    // A quiet tail: recovery of the last fault is measured, and must happen, before the clients stop.
    await sleep((backend.check.recoverWithinMs ?? 10_000) + 2_000)
    if (backend.queues) {
      const queues = await backend.queues(cluster, names).catch((err: unknown) => ({ error: String(err) }))
      writeFileSync(join(dir, 'queues.json'), `${JSON.stringify(queues, null, 1)}\n`)
    }
    const gone = clientGone()
    if (gone) throw gone
    for (const w of watched) w.stopping()
    for (const p of clients) p.kill('SIGTERM')
    await Promise.all(
      clients.map((p) => Promise.race([new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(undefined) : p.once('exit', r))), sleep(15_000)])),
    )
    for (const [i, p] of clients.entries()) {
      if (p.exitCode === null && p.signalCode === null) {
        nemesis.write({ type: 'process', what: 'kill', process: `${clientHosts[i]}-w${id}` })
        p.kill('SIGKILL')
      }
    }
    await stopWatching()
    const history = readHistory(historyPath)
    const report = checkPartitionHistory(history, backend.check)
    // PARTITION_KEEP=1 keeps a passing run's history too (its path is in the result).
    keep = report.failures > 0 || process.env.PARTITION_KEEP === '1'
    return {
      backend: backend.name,
      schedules: [...schedules],
      played,
      windows,
      report,
      history,
      historyPath,
      writes: { ...register.counts },
      startupMs,
      durationMs: Math.round(now() - began),
    }
  } finally {
    await stopWatching()
    for (const p of clients) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
    await register?.close().catch(() => {})
    await cluster?.stop().catch(() => {})
    await hosts.destroy()
    nemesis.close()
    if (!keep) rmSync(dir, { recursive: true, force: true })
  }
}

/** The seed whose window holds time `at`, else the last one begun before it (its aftermath); undefined before the first fault. */
export function seedAt(r: PartitionRunResult, at: number): number | undefined {
  return (r.windows.find((w) => w.from <= at && at <= w.to) ?? r.windows.findLast((w) => w.from <= at))?.seed
}
