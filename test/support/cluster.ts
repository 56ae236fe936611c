/**
 * Replicated backends on loopback, for fault tests: a three-node ZooKeeper ensemble, a three-node
 * etcd cluster, and Redis with Sentinel (a master, two replicas, three sentinels). Every process
 * is a child of the test process, on free ports, with its own data directory; nodes are killed by
 * PID (and everything is killed when the test process exits). The shared servers of
 * scripts/backends.sh are never touched.
 *
 * With a Placement (the partition harness, test/partition/), node i runs inside network namespace
 * hosts[i].netns (`ip netns exec`, which execs the server, so the PID is the server's) and listens
 * on hosts[i].address, on the servers' standard ports (each host has its own port space); Redis's
 * sentinel i shares host i with data node i. etcd then runs with pre-vote, as current etcd does by
 * default: without it a healed node deposes the leader (issue 27).
 */
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, spawnInNamespace } from './servers.js'
import { waitFor } from './wait.js'

/** Where each node of a cluster runs (see the file's doc). */
export interface Placement {
  /** One per node (for Redis: per data node, each sharing its host with one sentinel). */
  hosts: readonly { address: string; netns: string }[]
}

/** One process of a cluster. */
export interface ClusterNode {
  /** `zk1`, `etcd2`, `master`, `replica1`, `sentinel3`... (names stay with the process, not the role). */
  readonly name: string
  /** The port clients (or, for a sentinel, sentinel clients) use. */
  readonly port: number
  /** The address it listens on (127.0.0.1 unless placed). */
  readonly address: string
  readonly pid: number | undefined
  /** True while its process runs. */
  readonly running: boolean
  /** SIGKILL. */
  kill(): Promise<void>
  /** Starts it again (same ports, same data directory) and waits until it answers. */
  start(): Promise<void>
  /** SIGSTOP of the node and every process it runs (PostgreSQL's backends), where SIGSTOP of its PID alone would not stop it answering. */
  pause?(): void
  /** SIGCONT after pause(). */
  resume?(): void
}

/** A running cluster. */
export interface Cluster {
  readonly kind: 'zookeeper' | 'etcd3' | 'redis-sentinel' | 'postgresql' | 'mysql' | 'memcached'
  readonly nodes: readonly ClusterNode[]
  /** A rollcall URL naming every node (for Redis: every sentinel), with `query` appended. */
  url(query: string): string
  /** The node that leads (ZooKeeper, etcd) or is the master (Redis), as the cluster sees it now. */
  leader(): Promise<ClusterNode | undefined>
  /**
   * Whether each node says it leads, all asked at once, each given `ms` to answer: a node that
   * gave no answer in time is absent (unknown), one not running says no. A node cut off from the
   * leader may still say yes for a while. Clusters that elect (ZooKeeper, etcd), and Redis with
   * Sentinel (a data node that says role:master).
   */
  leads?(ms?: number): Promise<Map<ClusterNode, boolean>>
  /** Resolves once every running node is back in the cluster and serving (bounded by `ms`). */
  healthy(ms?: number): Promise<void>
  /** One line on who runs and who leads, for failure messages. */
  describe(): Promise<string>
  /** Kills everything and removes the data. */
  stop(): Promise<void>
}

/** The etcd clusters' election timeout (heartbeat 200 ms): steady on a loaded machine. A new leader also grants every lease this much on top of its TTL. */
export const ETCD_ELECTION_TIMEOUT_MS = 2_000

const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

/**
 * Sends `request` to 127.0.0.1:port and returns what came back before the server closed, `until`
 * matched the reply, or `ms` passed.
 */
export function ask(port: number, request: string, ms = 2_000, until?: RegExp, address = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, address)
    let out = ''
    const done = (): void => {
      s.destroy()
      resolve(out)
    }
    s.setTimeout(ms, done)
    s.on('error', done)
    s.on('connect', () => s.write(request))
    s.on('data', (d) => {
      out += d.toString()
      if (until?.test(out)) done()
    })
    s.on('end', done)
    s.on('close', done)
  })
}

/** A Redis command in RESP, for ask(). */
function resp(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`
}

/** Asks a Redis server (or sentinel, which has no QUIT) one command; the raw reply, then "+PONG". */
async function redisAsk(node: { address: string; port: number }, ...args: string[]): Promise<string> {
  return ask(node.port, resp(...args) + resp('PING'), 2_000, /\+PONG\r\n$/, node.address)
}

/** Polls `check` every 200 ms (wait.ts's waitFor) until it holds, or throws naming `what` after `ms`. */
async function waitUntil(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
  await waitFor(what, check, ms, 200)
}

class Proc implements ClusterNode {
  #child: ChildProcess | undefined
  #stderr = ''

  constructor(
    readonly name: string,
    readonly port: number,
    readonly command: () => { cmd: string; args: string[] },
    readonly answers: () => Promise<boolean>,
    /** Runs before each restart (not the first start). */
    readonly beforeRestart: () => Promise<void> = async () => {},
    readonly address = '127.0.0.1',
    /** The network namespace it runs in (undefined: the test's own). */
    readonly netns?: string,
  ) {}

  get pid(): number | undefined {
    return this.running ? this.#child?.pid : undefined
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** Spawns without waiting (a cluster's nodes must start together). */
  launch(): void {
    const { cmd, args } = this.command()
    const p = spawnInNamespace(this.netns, cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    p.stderr!.on('data', (d) => (this.#stderr = (this.#stderr + String(d)).slice(-3_000)))
    live.add(p)
    p.once('exit', () => live.delete(p))
    this.#child = p
  }

  /** Resolves once the node answers; rejects at once (NodeExitedError) if it exits first. */
  async ready(ms: number): Promise<void> {
    const state = await waitFor(`${this.name} on port ${this.port}`, async () => (!this.running ? 'exited' : (await this.answers()) ? 'up' : undefined), ms)
    if (state === 'exited') {
      throw new NodeExitedError(`${this.name} (port ${this.port}) exited while starting: ${this.#stderr.trim().split('\n').slice(-3).join(' | ')}`)
    }
  }

  async kill(): Promise<void> {
    const p = this.#child
    if (!p || !this.running) return
    const gone = new Promise((r) => p.once('exit', r))
    p.kill('SIGCONT')
    p.kill('SIGKILL')
    await gone
  }

  async start(): Promise<void> {
    if (this.running) return
    await this.beforeRestart()
    this.launch()
    await this.ready(60_000)
  }
}

/** A node's process ended before it answered (most often: a port it was given was taken meanwhile). */
class NodeExitedError extends Error {}

/**
 * Starts a cluster; if a node exits while starting, starts it once more on fresh ports (ports are
 * picked free, but another process may take one before the node binds it).
 */
async function onFreshPortsIfExited(start: () => Promise<Cluster>): Promise<Cluster> {
  return start().catch((err: unknown) => {
    if (err instanceof NodeExitedError) return start()
    throw err
  })
}

/** Starts nodes together; on failure kills them and removes `dir` (all the cluster's data). */
async function startAll(nodes: readonly Proc[], ms: number, dir: string): Promise<void> {
  for (const n of nodes) n.launch()
  try {
    await Promise.all(nodes.map((n) => n.ready(ms)))
  } catch (err) {
    await Promise.all(nodes.map((n) => n.kill()))
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
}

async function ports(n: number): Promise<number[]> {
  const out: number[] = []
  while (out.length < n) {
    const p = await freePort()
    if (!out.includes(p)) out.push(p)
  }
  return out
}

/** How to build a ZooKeeper ensemble (every field optional). */
export interface ZookeeperEnsembleOptions {
  /** Default 500. */
  tickTimeMs?: number
  /** Default 10 (ticks a follower may go without hearing the leader). */
  syncLimit?: number
  /**
   * The quorum and election ports server `from` (0-based) is to use for server `to`: by default
   * `to`'s own; a fault test returns the ports of proxies it runs, to cut one server off from
   * its peers while its clients still reach it.
   */
  peerRoute?(from: number, to: number, ports: { quorum: number; election: number }): Promise<{ quorum: number; election: number }>
  /** Each node in a network namespace of the partition harness, on its host's address; default: all on loopback. */
  placement?: Placement
}

/** A three-node ZooKeeper ensemble (tickTime 500 ms, sessions from 1 s up). */
async function zookeeperEnsemble(size = 3, options: ZookeeperEnsembleOptions = {}): Promise<Cluster> {
  const placement = options.placement
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-zk-ensemble-'))
  const all = placement ? [...Array(size).fill(2181), ...Array(size).fill(2888), ...Array(size).fill(3888)] : await ports(3 * size)
  const [client, peer, election] = [all.slice(0, size), all.slice(size, 2 * size), all.slice(2 * size)]
  const tickTimeMs = options.tickTimeMs ?? 500
  const addr = (i: number): string => placement?.hosts[i]!.address ?? '127.0.0.1'
  const routes: string[][] = []
  for (let from = 0; from < size; from++) {
    const lines: string[] = []
    for (let to = 0; to < size; to++) {
      const own = { quorum: peer[to]!, election: election[to]! }
      const r = from === to || !options.peerRoute ? own : await options.peerRoute(from, to, own)
      lines.push(`server.${to + 1}=${r === own ? addr(to) : '127.0.0.1'}:${r.quorum}:${r.election}`)
    }
    routes.push(lines)
  }
  const nodes = client.map((port, i) => {
    const home = join(dir, `zk${i + 1}`)
    mkdirSync(join(home, 'data'), { recursive: true })
    writeFileSync(join(home, 'data', 'myid'), `${i + 1}\n`)
    writeFileSync(
      join(home, 'zoo.cfg'),
      [
        // forceSync=no, as for the single private server (servers.ts): no multi-second fsync stalls.
        `tickTime=${tickTimeMs}`,
        'initLimit=20',
        `syncLimit=${options.syncLimit ?? 10}`,
        `minSessionTimeout=${2 * tickTimeMs}`,
        'maxSessionTimeout=60000',
        'forceSync=no',
        `dataDir=${join(home, 'data')}`,
        `clientPort=${port}`,
        `clientPortAddress=${addr(i)}`,
        'admin.enableServer=false',
        '4lw.commands.whitelist=*',
        'maxClientCnxns=0',
        'quorumListenOnAllIPs=false',
        ...routes[i]!,
        '',
      ].join('\n'),
    )
    writeFileSync(
      join(home, 'log4j.properties'),
      'log4j.rootLogger=ERROR, '
        + 'CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n',
    )
    return new Proc(
      `zk${i + 1}`,
      port,
      () => ({
        cmd: 'java',
        // Leader election retries at most every 2 s (default: backing off up to 60 s while a peer is
        // still starting, which on a loaded machine can keep an ensemble leaderless for a minute).
        args: [
          '-Xmx128m',
          '-XX:+UseSerialGC',
          '-XX:TieredStopAtLevel=1',
          '-Dzookeeper.admin.enableServer=false',
          '-Dzookeeper.4lw.commands.whitelist=*',
          '-Dzookeeper.fastleader.maxNotificationInterval=2000',
          '-Dzookeeper.cnxTimeout=2000',
          '-cp',
          `${home}:/usr/share/java/zookeeper.jar`,
          'org.apache.zookeeper.server.quorum.QuorumPeerMain',
          join(home, 'zoo.cfg'),
        ],
      }),
      async () => /Mode: (leader|follower)/.test(await ask(port, 'srvr', 2_000, undefined, addr(i))),
      undefined,
      addr(i),
      placement?.hosts[i]!.netns,
    )
  })
  const srvr = (n: Proc): Promise<string> => ask(n.port, 'srvr', 2_000, undefined, n.address)
  await startAll(nodes, 180_000, dir)
  return {
    kind: 'zookeeper',
    nodes,
    url: (query) => `zookeeper://${nodes.map((n) => `${n.address}:${n.port}`).join(',')}${query ? `?${query}` : ''}`,
    async leader() {
      for (const n of nodes) if (n.running && /Mode: leader/.test(await srvr(n))) return n
      return undefined
    },
    async leads(ms = 1_000) {
      // A node that serves says `Mode: leader` or `Mode: follower`; one that does not (no quorum) says so in words.
      const says = await Promise.all(nodes.map(async (n) => (n.running ? await ask(n.port, 'srvr', ms, undefined, n.address) : 'down')))
      return new Map(nodes.flatMap((n, i) => (says[i] ? [[n, /Mode: leader/.test(says[i])]] : [])))
    },
    async healthy(ms = 60_000) {
      await waitUntil('every ZooKeeper node serving, one of them leading', async () => {
        const modes = await Promise.all(nodes.filter((n) => n.running).map(async (n) => /Mode: (\w+)/.exec(await srvr(n))?.[1]))
        return modes.every((m) => m === 'leader' || m === 'follower') && modes.filter((m) => m === 'leader').length === 1
      }, ms)
    },
    async describe() {
      const modes = await Promise.all(
        nodes.map(async (n) => `${n.name} ${n.running ? (/Mode: (\w+)/.exec(await srvr(n))?.[1] ?? 'not serving') : 'down'}`),
      )
      return modes.join(', ')
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** POSTs to an etcd node's JSON gateway. */
async function etcdPost(port: number, path: string, body: unknown = {}, address = '127.0.0.1', ms = 2_000): Promise<any> {
  const res = await fetch(`http://${address}:${port}/v3/${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(ms) })
  if (!res.ok) throw new Error(`etcd ${path}: HTTP ${res.status}`)
  return res.json()
}

/** A three-node etcd cluster (heartbeat 200 ms, election timeout 2 s: steady on a loaded machine). */
async function etcdCluster(size = 3, placement?: Placement, options: EtcdClusterOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-etcd-cluster-'))
  const all = placement ? [...Array(size).fill(2379), ...Array(size).fill(2380)] : await ports(2 * size)
  const [client, peer] = [all.slice(0, size), all.slice(size)]
  const addr = (i: number): string => placement?.hosts[i]!.address ?? '127.0.0.1'
  const token = `rollcall-${Math.random().toString(36).slice(2, 10)}`
  const initial = client.map((_, i) => `etcd${i + 1}=http://${addr(i)}:${peer[i]}`).join(',')
  const nodes = client.map((port, i) =>
    new Proc(
      `etcd${i + 1}`,
      port,
      () => ({
        cmd: 'etcd',
        args: [
          '--name',
          `etcd${i + 1}`,
          '--data-dir',
          join(dir, `etcd${i + 1}`),
          '--listen-client-urls',
          `http://${addr(i)}:${port}`,
          '--advertise-client-urls',
          `http://${addr(i)}:${port}`,
          '--listen-peer-urls',
          `http://${addr(i)}:${peer[i]}`,
          '--initial-advertise-peer-urls',
          `http://${addr(i)}:${peer[i]}`,
          '--initial-cluster',
          initial,
          '--initial-cluster-state',
          'new',
          '--initial-cluster-token',
          token,
          '--heartbeat-interval',
          '200',
          '--election-timeout',
          String(ETCD_ELECTION_TIMEOUT_MS),
          '--log-level',
          'error',
          ...(placement || options.preVote ? ['--pre-vote=true'] : []),
        ],
      }),
      async () => {
        const res = await fetch(`http://${addr(i)}:${port}/health`, { signal: AbortSignal.timeout(2_000) })
        return res.ok && ((await res.json()) as { health?: string }).health === 'true'
      },
      undefined,
      addr(i),
      placement?.hosts[i]!.netns,
    )
  )
  await startAll(nodes, 60_000, dir)
  const status = async (n: Proc, ms?: number): Promise<{ member: string; leader: string } | undefined> => {
    const s = await etcdPost(n.port, 'maintenance/status', {}, n.address, ms).catch(() => undefined)
    return s && { member: String(s.header?.member_id), leader: String(s.leader) }
  }
  return {
    kind: 'etcd3',
    nodes,
    url: (query) => `etcd3+http://${nodes.map((n) => `${n.address}:${n.port}`).join(',')}${query ? `?${query}` : ''}`,
    async leader() {
      for (const n of nodes) {
        if (!n.running) continue
        const s = await status(n)
        if (s && s.member === s.leader) return n
      }
      return undefined
    },
    async leads(ms = 1_000) {
      const says = await Promise.all(nodes.map(async (n) => (n.running ? status(n, ms) : { member: 'down', leader: '' })))
      return new Map(nodes.flatMap((n, i) => (says[i] ? [[n, says[i].member === says[i].leader]] : [])))
    },
    async healthy(ms = 60_000) {
      await waitUntil('every etcd node healthy, agreeing on one leader', async () => {
        const all = await Promise.all(nodes.filter((n) => n.running).map(async (n) => (await n.answers().catch(() => false)) && status(n)))
        return all.every((s) => s && s.leader !== '0') && new Set(all.map((s) => s && s.leader)).size === 1
      }, ms)
    },
    async describe() {
      const views = await Promise.all(nodes.map(async (n) => {
        if (!n.running) return `${n.name} down`
        const s = await status(n)
        return `${n.name} ${s ? (s.member === s.leader ? 'leader' : `follower of ${s.leader}`) : 'no status'}`
      }))
      return views.join(', ')
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The master name the sentinels monitor. */
export const SENTINEL_MASTER = 'rcmaster'

/**
 * Redis with Sentinel: a master and two replicas (no persistence), three sentinels with quorum 2,
 * down-after 1 s. `leader()` is the current master; nodes are named after their first role.
 */
async function redisSentinel(placement?: Placement): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-sentinel-'))
  const all = placement ? [6379, 6379, 6379, 26379, 26379, 26379] : await ports(6)
  const [dataPorts, sentinelPorts] = [all.slice(0, 3), all.slice(3)]
  const addr = (i: number): string => placement?.hosts[i]!.address ?? '127.0.0.1'
  const netns = (i: number): string | undefined => placement?.hosts[i]!.netns
  /** A data node's identity: address and port (placed nodes share a port). */
  const key = (n: { address: string; port: number }): string => `${n.address}:${n.port}`
  // A data node restarts as a replica of the master the sentinels name then, as an operator
  // would restart it (an old master restarted empty as a master would wait for the sentinels).
  let currentMaster = key({ address: addr(0), port: dataPorts[0]! })
  const data = dataPorts.map((port, i) => {
    const home = join(dir, `redis${i}`)
    mkdirSync(home, { recursive: true })
    const name = i === 0 ? 'master' : `replica${i}`
    return new Proc(
      name,
      port,
      () => ({
        cmd: 'redis-server',
        args: [
          '--port',
          String(port),
          '--bind',
          addr(i),
          // Redis 7 refuses every client not on loopback while the default user has no password,
          // whatever --bind says: placed nodes are reached on the hosts' bridge.
          '--protected-mode',
          'no',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          home,
          '--replica-announce-ip',
          addr(i),
          ...(currentMaster === key({ address: addr(i), port }) ? [] : ['--replicaof', ...currentMaster.split(':')]),
        ],
      }),
      async () => (await redisAsk({ address: addr(i), port }, 'PING')).startsWith('+PONG'),
      async () => {
        currentMaster = (await masterAddr()) ?? currentMaster
      },
      addr(i),
      netns(i),
    )
  })
  const sentinels = sentinelPorts.map((port, i) => {
    const home = join(dir, `sentinel${i + 1}`)
    mkdirSync(home, { recursive: true })
    const conf = join(home, 'sentinel.conf')
    writeFileSync(
      conf,
      [
        `port ${port}`,
        `bind ${addr(i)}`,
        'protected-mode no',
        `dir ${home}`,
        'sentinel resolve-hostnames no',
        `sentinel announce-ip ${addr(i)}`,
        `sentinel monitor ${SENTINEL_MASTER} ${addr(0)} ${dataPorts[0]} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER} 2`,
        '',
      ].join('\n'),
    )
    // The sentinel rewrites its own config (what it learned), so a restart keeps its view.
    return new Proc(
      `sentinel${i + 1}`,
      port,
      () => ({ cmd: 'redis-server', args: [conf, '--sentinel'] }),
      async () => (await redisAsk({ address: addr(i), port }, 'PING')).startsWith('+PONG'),
      undefined,
      addr(i),
      netns(i),
    )
  })
  await startAll(data, 30_000, dir)
  await startAll(sentinels, 30_000, dir).catch(async (err: unknown) => {
    await Promise.all(data.map((n) => n.kill()))
    throw err
  })
  const nodes = [...data, ...sentinels]
  /** The master the first running sentinel names, as `address:port`. */
  const masterAddr = async (): Promise<string | undefined> => {
    for (const s of sentinels) {
      if (!s.running) continue
      const m = /\$\d+\r\n([\d.]+)\r\n\$\d+\r\n(\d+)/.exec(await redisAsk(s, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER))
      if (m) return `${m[1]}:${m[2]}`
    }
    return undefined
  }
  const cluster: Cluster = {
    kind: 'redis-sentinel',
    nodes,
    url: (query) =>
      `redis://${key(sentinels[0]!)}?sentinel=${SENTINEL_MASTER}${sentinels.slice(1).map((s) => `&sentinel_fallback=${key(s)}`).join('')}${
        query ? `&${query}` : ''
      }`,
    async leader() {
      const at = await masterAddr()
      return data.find((n) => key(n) === at && n.running)
    },
    async leads(ms = 1_000) {
      // A data node says role:master or role:slave; a master cut off from the sentinels says master until they demote it after the heal.
      const says = await Promise.all(
        data.map(async (n) => (n.running ? await ask(n.port, resp('INFO', 'replication') + resp('PING'), ms, /\+PONG\r\n$/, n.address) : '')),
      )
      return new Map(data.flatMap((n, i) => (!n.running ? [[n, false]] : says[i]!.endsWith('+PONG\r\n') ? [[n, /role:master/.test(says[i]!)]] : [])))
    },
    async healthy(ms = 60_000) {
      // What the last check found wanting, for the timeout message.
      let wanting = 'no check ran'
      const not = (why: string): false => {
        wanting = why
        return false
      }
      await waitUntil('the sentinels agreeing on a running master with every running replica in sync and every running sentinel known', async () => {
        const at = await masterAddr()
        const master = data.find((n) => key(n) === at)
        if (!master?.running) return not(`the sentinels name ${at}, which runs no data node`)
        const info = await redisAsk(master, 'INFO', 'replication')
        if (!/role:master/.test(info)) return not(`${master.name} is not a master: ${info.replace(/\r\n/g, ' ')}`)
        const synced = (info.match(/slave\d+:ip=[^,]+,port=\d+,state=online/g) ?? []).length
        if (synced !== data.filter((n) => n.running).length - 1) return not(`${synced} replicas of ${master.name} online: ${info.replace(/\r\n/g, ' ')}`)
        for (const s of sentinels.filter((x) => x.running)) {
          const view = await redisAsk(s, 'SENTINEL', 'master', SENTINEL_MASTER)
          const field = (name: string): number => Number(new RegExp(`\\$\\d+\\r\\n${name}\\r\\n\\$\\d+\\r\\n(\\d+)`).exec(view)?.[1] ?? -1)
          const ip = new RegExp(`\\$\\d+\\r\\nip\\r\\n\\$\\d+\\r\\n([\\d.]+)`).exec(view)?.[1]
          if (`${ip}:${field('port')}` !== key(master)) return not(`${s.name} names ${ip}:${field('port')}, not ${master.name}`)
          if (field('num-other-sentinels') < sentinels.filter((x) => x.running).length - 1) {
            return not(`${s.name} knows ${field('num-other-sentinels')} other sentinels`)
          }
          // A sentinel learns replicas from the master's INFO, every 10 s: one that does not know a
          // replica yet would leave it behind in a failover, following the dead master for good.
          if (field('num-slaves') < synced) return not(`${s.name} knows ${field('num-slaves')} of the ${synced} replicas`)
        }
        return true
      }, ms).catch(async (err: Error) => {
        throw new Error(`${err.message}; last found: ${wanting}; cluster: ${await cluster.describe().catch(() => '?')}`)
      })
    },
    async describe() {
      const views = await Promise.all(sentinels.map(async (s) => {
        if (!s.running) return `${s.name} down`
        const m = /\$\d+\r\n([\d.]+)\r\n\$\d+\r\n(\d+)/.exec(await redisAsk(s, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER))
        return `${s.name} names ${data.find((n) => key(n) === `${m?.[1]}:${m?.[2]}`)?.name ?? 'no master'}`
      }))
      const roles = await Promise.all(
        data.map(async (n) => `${n.name} ${n.running ? (/role:(\w+)/.exec(await redisAsk(n, 'INFO', 'replication'))?.[1] ?? '?') : 'down'}`),
      )
      return [...roles, ...views].join(', ')
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()))
      rmSync(dir, { recursive: true, force: true })
    },
  }
  try {
    await cluster.healthy(60_000)
  } catch (err) {
    await cluster.stop()
    throw err
  }
  return cluster
}

/** {@link zookeeperEnsemble}, on fresh ports once more if a node exits while starting. */
export function startZookeeperEnsemble(size = 3, options: ZookeeperEnsembleOptions = {}): Promise<Cluster> {
  return onFreshPortsIfExited(() => zookeeperEnsemble(size, options))
}

/** Options of {@link startEtcdCluster}. */
export interface EtcdClusterOptions {
  /** Run with pre-vote on loopback too (a Placement always does): a resumed node then cannot depose the leader. */
  preVote?: boolean
}

/** {@link etcdCluster}, on fresh ports once more if a node exits while starting. */
export function startEtcdCluster(size = 3, placement?: Placement, options: EtcdClusterOptions = {}): Promise<Cluster> {
  return onFreshPortsIfExited(() => etcdCluster(size, placement, options))
}

/** {@link redisSentinel}, on fresh ports once more if a node exits while starting. */
export function startRedisSentinel(placement?: Placement): Promise<Cluster> {
  return onFreshPortsIfExited(() => redisSentinel(placement))
}
