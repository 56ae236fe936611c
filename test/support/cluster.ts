/**
 * Replicated backends on loopback, for fault tests: a three-node ZooKeeper ensemble, a three-node
 * etcd cluster, and Redis with Sentinel (a master, two replicas, three sentinels). Every process
 * is a child of the test process, on free ports, with its own data directory; nodes are killed by
 * PID (and everything is killed when the test process exits). The shared servers of
 * scripts/backends.sh are never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './servers.js'
import { waitFor } from './wait.js'

/** One process of a cluster. */
export interface ClusterNode {
  /** `zk1`, `etcd2`, `master`, `replica1`, `sentinel3`... (names stay with the process, not the role). */
  readonly name: string
  /** The port clients (or, for a sentinel, sentinel clients) use. */
  readonly port: number
  readonly pid: number | undefined
  /** True while its process runs. */
  readonly running: boolean
  /** SIGKILL. */
  kill(): Promise<void>
  /** Starts it again (same ports, same data directory) and waits until it answers. */
  start(): Promise<void>
}

/** A running cluster. */
export interface Cluster {
  readonly kind: 'zookeeper' | 'etcd3' | 'redis-sentinel'
  readonly nodes: readonly ClusterNode[]
  /** A rollcall URL naming every node (for Redis: every sentinel), with `query` appended. */
  url(query: string): string
  /** The node that leads (ZooKeeper, etcd) or is the master (Redis), as the cluster sees it now. */
  leader(): Promise<ClusterNode | undefined>
  /** Resolves once every running node is back in the cluster and serving (bounded by `ms`). */
  healthy(ms?: number): Promise<void>
  /** One line on who runs and who leads, for failure messages. */
  describe(): Promise<string>
  /** Kills everything and removes the data. */
  stop(): Promise<void>
}

const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

/**
 * Sends `request` to 127.0.0.1:port and returns what came back before the server closed, `until`
 * matched the reply, or `ms` passed.
 */
export function ask(port: number, request: string, ms = 2_000, until?: RegExp): Promise<string> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, '127.0.0.1')
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
async function redisAsk(port: number, ...args: string[]): Promise<string> {
  return ask(port, resp(...args) + resp('PING'), 2_000, /\+PONG\r\n$/)
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
    const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] })
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
}

/** A three-node ZooKeeper ensemble (tickTime 500 ms, sessions from 1 s up). */
async function zookeeperEnsemble(size = 3, options: ZookeeperEnsembleOptions = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-zk-ensemble-'))
  const all = await ports(3 * size)
  const [client, peer, election] = [all.slice(0, size), all.slice(size, 2 * size), all.slice(2 * size)]
  const tickTimeMs = options.tickTimeMs ?? 500
  const routes: string[][] = []
  for (let from = 0; from < size; from++) {
    const lines: string[] = []
    for (let to = 0; to < size; to++) {
      const own = { quorum: peer[to]!, election: election[to]! }
      const r = from === to || !options.peerRoute ? own : await options.peerRoute(from, to, own)
      lines.push(`server.${to + 1}=127.0.0.1:${r.quorum}:${r.election}`)
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
        'clientPortAddress=127.0.0.1',
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
    return new Proc(`zk${i + 1}`, port, () => ({
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
    }), async () => /Mode: (leader|follower)/.test(await ask(port, 'srvr')))
  })
  await startAll(nodes, 180_000, dir)
  return {
    kind: 'zookeeper',
    nodes,
    url: (query) => `zookeeper://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}${query ? `?${query}` : ''}`,
    async leader() {
      for (const n of nodes) if (n.running && /Mode: leader/.test(await ask(n.port, 'srvr'))) return n
      return undefined
    },
    async healthy(ms = 60_000) {
      await waitUntil('every ZooKeeper node serving, one of them leading', async () => {
        const modes = await Promise.all(nodes.filter((n) => n.running).map(async (n) => /Mode: (\w+)/.exec(await ask(n.port, 'srvr'))?.[1]))
        return modes.every((m) => m === 'leader' || m === 'follower') && modes.filter((m) => m === 'leader').length === 1
      }, ms)
    },
    async describe() {
      const modes = await Promise.all(
        nodes.map(async (n) => `${n.name} ${n.running ? (/Mode: (\w+)/.exec(await ask(n.port, 'srvr'))?.[1] ?? 'not serving') : 'down'}`),
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
async function etcdPost(port: number, path: string, body: unknown = {}): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${port}/v3/${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(2_000) })
  if (!res.ok) throw new Error(`etcd ${path}: HTTP ${res.status}`)
  return res.json()
}

/** A three-node etcd cluster (heartbeat 200 ms, election timeout 2 s: steady on a loaded machine). */
async function etcdCluster(size = 3): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-etcd-cluster-'))
  const all = await ports(2 * size)
  const [client, peer] = [all.slice(0, size), all.slice(size)]
  const token = `rollcall-${Math.random().toString(36).slice(2, 10)}`
  const initial = client.map((_, i) => `etcd${i + 1}=http://127.0.0.1:${peer[i]}`).join(',')
  const nodes = client.map((port, i) =>
    new Proc(`etcd${i + 1}`, port, () => ({
      cmd: 'etcd',
      args: [
        '--name',
        `etcd${i + 1}`,
        '--data-dir',
        join(dir, `etcd${i + 1}`),
        '--listen-client-urls',
        `http://127.0.0.1:${port}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${port}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${peer[i]}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${peer[i]}`,
        '--initial-cluster',
        initial,
        '--initial-cluster-state',
        'new',
        '--initial-cluster-token',
        token,
        '--heartbeat-interval',
        '200',
        '--election-timeout',
        '2000',
        '--log-level',
        'error',
      ],
    }), async () => {
      const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) })
      return res.ok && ((await res.json()) as { health?: string }).health === 'true'
    })
  )
  await startAll(nodes, 60_000, dir)
  const status = async (n: Proc): Promise<{ member: string; leader: string } | undefined> => {
    const s = await etcdPost(n.port, 'maintenance/status').catch(() => undefined)
    return s && { member: String(s.header?.member_id), leader: String(s.leader) }
  }
  return {
    kind: 'etcd3',
    nodes,
    url: (query) => `etcd3+http://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}${query ? `?${query}` : ''}`,
    async leader() {
      for (const n of nodes) {
        if (!n.running) continue
        const s = await status(n)
        if (s && s.member === s.leader) return n
      }
      return undefined
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
async function redisSentinel(): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-sentinel-'))
  const all = await ports(6)
  const [dataPorts, sentinelPorts] = [all.slice(0, 3), all.slice(3)]
  const [masterPort] = dataPorts as [number]
  // A data node restarts as a replica of the master the sentinels name then, as an operator
  // would restart it (an old master restarted empty as a master would wait for the sentinels).
  let currentMaster = masterPort
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
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--dir',
          home,
          '--replica-announce-ip',
          '127.0.0.1',
          ...(currentMaster === port ? [] : ['--replicaof', '127.0.0.1', String(currentMaster)]),
        ],
      }),
      async () => (await redisAsk(port, 'PING')).startsWith('+PONG'),
      async () => {
        currentMaster = (await masterAddr()) ?? currentMaster
      },
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
        'bind 127.0.0.1',
        `dir ${home}`,
        'sentinel resolve-hostnames no',
        'sentinel announce-ip 127.0.0.1',
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${masterPort} 2`,
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
      async () => (await redisAsk(port, 'PING')).startsWith('+PONG'),
    )
  })
  await startAll(data, 30_000, dir)
  await startAll(sentinels, 30_000, dir).catch(async (err: unknown) => {
    await Promise.all(data.map((n) => n.kill()))
    throw err
  })
  const nodes = [...data, ...sentinels]
  const masterAddr = async (): Promise<number | undefined> => {
    for (const s of sentinels) {
      if (!s.running) continue
      const m = /\$\d+\r\n127\.0\.0\.1\r\n\$\d+\r\n(\d+)/.exec(await redisAsk(s.port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER))
      if (m) return Number(m[1])
    }
    return undefined
  }
  const cluster: Cluster = {
    kind: 'redis-sentinel',
    nodes,
    url: (query) =>
      `redis://127.0.0.1:${sentinels[0]!.port}?sentinel=${SENTINEL_MASTER}${sentinels.slice(1).map((s) => `&sentinel_fallback=127.0.0.1:${s.port}`).join('')}${
        query ? `&${query}` : ''
      }`,
    async leader() {
      const port = await masterAddr()
      return data.find((n) => n.port === port && n.running)
    },
    async healthy(ms = 60_000) {
      // What the last check found wanting, for the timeout message.
      let wanting = 'no check ran'
      const not = (why: string): false => {
        wanting = why
        return false
      }
      await waitUntil('the sentinels agreeing on a running master with every running replica in sync and every running sentinel known', async () => {
        const port = await masterAddr()
        const master = data.find((n) => n.port === port)
        if (!master?.running) return not(`the sentinels name port ${port}, which runs no data node`)
        const info = await redisAsk(master.port, 'INFO', 'replication')
        if (!/role:master/.test(info)) return not(`${master.name} is not a master: ${info.replace(/\r\n/g, ' ')}`)
        const synced = (info.match(/slave\d+:ip=[^,]+,port=\d+,state=online/g) ?? []).length
        if (synced !== data.filter((n) => n.running).length - 1) return not(`${synced} replicas of ${master.name} online: ${info.replace(/\r\n/g, ' ')}`)
        for (const s of sentinels.filter((x) => x.running)) {
          const view = await redisAsk(s.port, 'SENTINEL', 'master', SENTINEL_MASTER)
          const field = (name: string): number => Number(new RegExp(`\\$\\d+\\r\\n${name}\\r\\n\\$\\d+\\r\\n(\\d+)`).exec(view)?.[1] ?? -1)
          if (field('port') !== master.port) return not(`${s.name} names port ${field('port')}, not ${master.name}`)
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
        const m = /\$\d+\r\n127\.0\.0\.1\r\n\$\d+\r\n(\d+)/.exec(await redisAsk(s.port, 'SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER))
        return `${s.name} names ${data.find((n) => n.port === Number(m?.[1]))?.name ?? 'no master'}`
      }))
      const roles = await Promise.all(
        data.map(async (n) => `${n.name} ${n.running ? (/role:(\w+)/.exec(await redisAsk(n.port, 'INFO', 'replication'))?.[1] ?? '?') : 'down'}`),
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

/** {@link etcdCluster}, on fresh ports once more if a node exits while starting. */
export function startEtcdCluster(size = 3): Promise<Cluster> {
  return onFreshPortsIfExited(() => etcdCluster(size))
}

/** {@link redisSentinel}, on fresh ports once more if a node exits while starting. */
export function startRedisSentinel(): Promise<Cluster> {
  return onFreshPortsIfExited(() => redisSentinel())
}
