/**
 * Clusters, where users go when one server is not enough: a three-node ZooKeeper ensemble, a
 * three-node etcd cluster, and Redis with Sentinel (master, two replicas, three sentinels), all on
 * loopback (test/support/cluster.ts). Each run SIGKILLs one node, the leader or master every other
 * run, and checks that the clients move on by themselves: A's writes work again without anyone
 * reconnecting by hand; no live member is lost (A, in this process, and B, a process of its own,
 * stay listed with their capabilities and are never told they were dropped); and A's lock is
 * never held twice (C waits for it throughout, and gets it only once A releases it or is told it
 * lost it). The node is then started again and the cluster must heal before the next run.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Coordinator } from '../../src/index.js'
import { startEtcdCluster, startRedisSentinel, startZookeeperEnsemble, type Cluster, type ClusterNode } from '../support/cluster.js'
import { rid } from '../support/wait.js'
import { faultBackends } from './support/backends.js'
import { has, open, orderProblems, recordEvents, repeat, show, sleep, spawnMember, until, type Scope, testTimeout } from './support/harness.js'
import { todoFor, type KnownBug } from './support/known.js'
import { ResultsWriter } from './support/results.js'

const writer = new ResultsWriter(import.meta.url)
const backends = await faultBackends()

/** Session and lease length: long enough that a failover never costs a member its liveness. */
const LIVENESS_S = 10
const MOVE_ON_MS = 60_000

interface ClusterKind {
  /** The backend whose driver the cluster serves. */
  backend: string
  title: string
  start(): Promise<Cluster>
  /** The node to kill in run n: the leader (or master) on odd runs, each other kind of node in turn on even runs. */
  victim(cluster: Cluster, n: number): Promise<ClusterNode>
  /** A known bug that breaks this case (test/fault/support/known.ts): it then runs as `todo`. */
  knownBug?: KnownBug
}

async function nonLeader(cluster: Cluster, n: number, names: RegExp): Promise<ClusterNode> {
  const leader = await cluster.leader()
  const others = cluster.nodes.filter((x) => x !== leader && x.running && names.test(x.name))
  return others[Math.floor(n / 2) % others.length]!
}

const KINDS: ClusterKind[] = [
  {
    backend: 'zookeeper',
    title: 'Three-node ZooKeeper ensemble: one node SIGKILLed (the leader every other run)',
    start: () => startZookeeperEnsemble(),
    victim: async (c, n) => (n % 2 === 1 ? (await c.leader())! : nonLeader(c, n, /^zk/)),
  },
  {
    backend: 'etcd3',
    title: 'Three-node etcd cluster: one node SIGKILLed (the leader every other run)',
    start: () => startEtcdCluster(),
    victim: async (c, n) => (n % 2 === 1 ? (await c.leader())! : nonLeader(c, n, /^etcd/)),
  },
  {
    backend: 'redis',
    title: 'Redis with Sentinel (master, two replicas, three sentinels): one node SIGKILLed (the master every other run, else a replica or a sentinel)',
    start: () => startRedisSentinel(),
    victim: async (c, n) => (n % 2 === 1 ? (await c.leader())! : nonLeader(c, n, /^(replica|sentinel|master)/)),
  },
]

/** Watches for C taking the lock. */
function contend(scope: Scope, c: Coordinator, name: string): () => number | undefined {
  const lock = c.getLock(name)
  const stop = new AbortController()
  scope.defer(() => stop.abort())
  let takenAt: number | undefined
  void (async () => {
    while (!stop.signal.aborted && takenAt === undefined) {
      try {
        if (await lock.acquire({ timeoutMs: 3_000, signal: stop.signal })) takenAt = Date.now()
      } catch {
        await sleep(200)
      }
    }
  })()
  return () => takenAt
}

async function runCluster(scope: Scope, kind: ClusterKind, cluster: Cluster, n: number): Promise<{ ms: number; counts: Record<string, number> }> {
  await cluster.healthy()
  const url = cluster.url(`timeout=${LIVENESS_S}`)
  const g = rid('g')
  const name = rid('l')
  const a = await open(scope, url)
  const log = recordEvents(a)
  const capsA = { who: 'A', run: n }
  await a.joinGroupCreate(g, capsA)
  const lockA = a.getLock(name)
  assert.equal(await lockA.acquire({ timeoutMs: 20_000 }), true, 'A takes the lock')
  const m = await spawnMember(scope, { url, memberId: rid('B'), group: g, capabilities: { who: 'B', run: n } })
  const c = await open(scope, url)
  const takenAt = contend(scope, c, name)
  // Let replication settle (Redis replicates asynchronously) before anything is killed.
  await sleep(500)

  const victim = await kind.victim(cluster, n)
  const wasLeader = victim === (await cluster.leader())
  const killedAt = Date.now()
  await victim.kill()
  scope.defer(() => victim.start())
  // The clients move on by themselves: A's writes work again.
  let writes = 0
  await until(
    "A's writes to work again",
    async () => {
      await a.updateCapabilities(g, { ...capsA, write: ++writes })
      return true
    },
    MOVE_ON_MS,
    200,
  ).catch(async (err: Error) => {
    throw new Error(
      `${err.message}; killed ${victim.name}${wasLeader ? ' (the leader)' : ''}; A ${a.connectionState}: ${show(log)}; cluster: ${await cluster.describe()}`,
    )
  })
  const movedOnMs = Date.now() - killedAt
  const capsNow = { ...capsA, write: writes }
  await until(
    'A and B listed with their capabilities',
    async () => {
      const members = await a.getMembersWithCapabilities(g)
      return members.size === 2 && JSON.stringify(members.get(a.memberId)) === JSON.stringify(capsNow)
        && JSON.stringify(members.get(m.memberId)) === JSON.stringify({ who: 'B', run: n })
    },
    MOVE_ON_MS,
    200,
  )
  const bStatus = await m.status()
  assert.equal(m.exited(), undefined, "B's process is still running")
  assert.deepEqual(bStatus.joined, [g], `B: ${JSON.stringify(bStatus)}`)
  // No live member lost: neither was ever told it had been dropped.
  for (const [who, events] of [['A', log], ['B', m.events]] as const) {
    assert.ok(!has(events, `membershipLost:${g}`), `${who} was told it lost its membership: ${show(events)}`)
    const problems = orderProblems(events, who, g, name)
    assert.deepEqual(problems, [], `${problems.join('; ')}: ${show(events)}`)
  }
  // The lock: never held twice.
  let heldUntil = log.find((e) => e.what === `lockLost:${name}`)?.at
  if (heldUntil === undefined) {
    assert.equal(await lockA.isStillOwner(), true, 'A believes it holds the lock: the cluster must agree')
    assert.equal(takenAt(), undefined, 'C took the lock while A held it')
    heldUntil = Date.now()
    assert.equal(await lockA.release(), true)
  }
  const cAt = await until('C to take the lock after A', () => takenAt(), MOVE_ON_MS)
  assert.ok(cAt >= heldUntil, `C took the lock ${heldUntil - cAt} ms before A stopped holding it: ${show(log)}`)

  await victim.start()
  await cluster.healthy()
  return {
    ms: movedOnMs,
    counts: { [wasLeader ? 'leader or master killed' : 'other node killed']: 1, 'lock reported lost': has(log, `lockLost:${name}`) ? 1 : 0 },
  }
}

describe('fault: clusters', { concurrency: 3 }, () => {
  for (const kind of KINDS) {
    const b = backends.find((x) => x.name === kind.backend)!
    // A cluster serves members in other processes and hosts: the driver must say it can.
    const missing = (['groups', 'locks', 'acrossHosts'] as const).filter((c) => !b.caps.has(c))
    const skip = missing.length ? `unsupported by ${b.name}: ${missing.join(', ')}` : undefined
    describe(`${kind.backend}: cluster`, () => {
      let cluster: Cluster | undefined
      before(async () => {
        if (!skip) cluster = await kind.start()
      })
      after(() => cluster?.stop())
      it(`${kind.backend}: fault: cluster: one node killed (leader or master included): clients move on, no member lost, no lock held twice`, {
        skip,
        todo: skip ? undefined : todoFor(kind.knownBug),
        timeout: testTimeout(240_000),
      }, async (t) => {
        await repeat(t, {
          writer,
          scenario: 'cluster.node-killed',
          backend: kind.backend,
          runTimeoutMs: 240_000,
          title: kind.title,
          measure: "node SIGKILLed → A's writes work again",
        }, (scope, n) => runCluster(scope, kind, cluster!, n))
      })
    })
  }
})
