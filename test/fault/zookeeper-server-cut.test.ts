/**
 * ZooKeeper, a client whose own server goes silent while the rest of the ensemble stays
 * reachable (issue 27: seed 2701 of the partition runs told a majority-side client it lost its
 * membership). Packets to and from that server vanish (no RST, no FIN): only the client's read
 * timeout can notice. The client must drop that connection and resume the SAME session on
 * another server of the ensemble before the session could have expired: no `lost`, no
 * membershipLost, no lockLost, and B, watching the group from another server, never sees A leave
 * nor gets A's lock.
 *
 * A three-node ensemble on loopback (test/support/cluster.ts). A reaches each server through a
 * TCP proxy of its own (test/support/proxy.ts), the cut one listed first with randomize_hosts=false
 * so that A starts on it; pausing that proxy is the silent cut. The cut server is a follower on
 * even runs, the leader on odd runs (the leader itself stays in the ensemble: only A's path to it
 * is cut).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startZookeeperEnsemble, type Cluster } from '../support/cluster.js'
import { TcpProxy } from '../support/proxy.js'
import { rid } from '../support/wait.js'
import { contend, has, open, orderProblems, recordEvents, recordMembers, repeat, show, sleep, testTimeout, until, type Scope } from './support/harness.js'
import { ResultsWriter } from './support/results.js'

const writer = new ResultsWriter(import.meta.url)

/** The session timeout asked for (s), as in the partition runs; the ensemble's tickTime is 500 ms. */
const SESSION_S = 4
const RUN_MS = 90_000

describe('ZooKeeper: a client whose own server goes silent, the rest of the ensemble reachable', () => {
  let cluster: Cluster
  const proxies: TcpProxy[] = []

  before(async () => {
    cluster = await startZookeeperEnsemble(3)
    for (const n of cluster.nodes) proxies.push(await TcpProxy.start(n.port))
  })
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()))
    await cluster?.stop()
  })

  it('moves to another server within the same session: no membership or lock lost', { timeout: testTimeout(RUN_MS) }, async (t) => {
    await repeat(t, {
      writer,
      scenario: 'zookeeper.server-cut.move',
      title: "ZooKeeper ensemble (tickTime 500 ms), session 4 s: the client's own server silently cut off from it, the others reachable",
      backend: 'zookeeper',
      measure: 'cut → client reconnected on another server (same session)',
      runTimeoutMs: RUN_MS,
    }, async (scope: Scope, n: number) => {
      await cluster.healthy()
      const leader = (await cluster.leader())!
      const li = cluster.nodes.indexOf(leader)
      const ci = n % 2 === 1 ? li : cluster.nodes.findIndex((x, i) => i !== li && x.running)
      const order = [ci, ...[0, 1, 2].filter((i) => i !== ci)]
      const hostsA = order.map((i) => `127.0.0.1:${proxies[i]!.port}`).join(',')
      const a = await open(scope, `zookeeper://${hostsA}?timeout=${SESSION_S}&randomize_hosts=false`)
      const others = order.slice(1).map((i) => `127.0.0.1:${cluster.nodes[i]!.port}`).join(',')
      const b = await open(scope, `zookeeper://${others}?timeout=${SESSION_S}`)
      const g = rid('cut-g')
      const name = rid('cut-l')
      const aLog = recordEvents(a)
      const seen = recordMembers(b)
      await a.joinGroupCreate(g, { who: 'A' })
      await b.joinGroup(g, { who: 'B' })
      await b.watchGroup(g)
      const lockA = a.getLock(name)
      assert.equal(await lockA.acquire({ timeoutMs: 10_000 }), true, 'A takes the lock')
      const rival = contend(scope, b, name)
      // The steady state (syncs answered, the watch set), then the silent cut.
      await sleep(1_500)
      const cutAt = Date.now()
      proxies[ci]!.pause()
      scope.defer(() => proxies[ci]!.resume())
      const backAt = await until('A reconnected', () => aLog.find((e) => e.at >= cutAt && e.what === 'state:reconnected')?.at, 20_000)
        .catch((err: Error) => {
          throw new Error(`${err.message}: ${show(aLog)}`)
        })
      // Past the point where a session left behind would have expired on the server (timeout + a tick's rounding, and then some).
      await sleep(SESSION_S * 1_000 + 2_000)
      const where = `cut ${ci === li ? 'the leader' : 'a follower'}; A: ${show(aLog)}`
      assert.ok(!has(aLog, 'state:lost'), `A's session was lost: ${where}`)
      assert.ok(!has(aLog, `membershipLost:${g}`), `A was told it lost its membership: ${where}`)
      assert.ok(!has(aLog, `lockLost:${name}`), `A was told it lost the lock: ${where}`)
      assert.deepEqual(orderProblems(aLog, 'A', g, name), [], where)
      assert.deepEqual(seen.left.filter((e) => e.what === `${g}/${a.memberId}`), [], `B saw A leave: ${where}`)
      assert.equal(rival.takenAt(), undefined, `B was granted A's lock: ${where}`)
      assert.equal(await lockA.isStillOwner(), true, `A no longer owns the lock: ${where}`)
      const members = await b.getMembers(g)
      assert.ok(members.includes(a.memberId), `A is not listed: ${where}`)
      const leftAt = aLog.find((e) => e.at >= cutAt && e.what === 'state:suspended')?.at
      t.diagnostic(
        `run ${n}: ${ci === li ? 'leader' : 'follower'} cut; A left it +${(leftAt ?? NaN) - cutAt} ms, reconnected +${backAt - cutAt} ms, same session`,
      )
      assert.equal(await lockA.release(), true)
      proxies[ci]!.resume()
      return { ms: backAt - cutAt, counts: { [ci === li ? 'leader cut' : 'follower cut']: 1 } }
    })
  })
})
