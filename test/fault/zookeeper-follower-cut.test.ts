/**
 * ZooKeeper, a lock holder whose server (a follower) is cut off from the leader while the holder
 * still reaches it (issue 27). The follower keeps answering the holder's pings until its own read
 * of the leader times out (syncLimit × tickTime: 5 s here), none of which the leader hears; the
 * leader expires the session about one session timeout (2 s) after the cut and grants the lock to
 * the next contender. The holder must be told it lost the lock BEFORE that grant.
 *
 * A three-node ensemble on loopback (test/support/cluster.ts) whose servers reach each other
 * only through per-pair TCP proxies (test/support/proxy.ts): pausing the proxies to and from one
 * follower partitions it from its peers, while the holder's own connection to it is direct.
 * Holder A connects to that follower alone; contender B to the leader alone. Before the fix
 * (answers of the follower counted as renewals) B was granted the lock ~3 s before A heard
 * `lockLost`; the session deadline now runs from the last request the leader is proven to have
 * counted (src/clients/zookeeper/zookeeper-leader-proof.ts).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startZookeeperEnsemble, type Cluster, type ClusterNode } from '../support/cluster.js'
import { TcpProxy } from '../support/proxy.js'
import { rid } from '../support/wait.js'
import { contend, open, recordEvents, repeat, sleep, testTimeout, until, type Scope } from './support/harness.js'
import { ResultsWriter } from './support/results.js'

const writer = new ResultsWriter(import.meta.url)

/** The session timeout asked for (s); the ensemble's tickTime is 500 ms, so 4 ticks. */
const SESSION_S = 2
const TICK_MS = 500
/** Ticks a follower goes without the leader before it gives up: 5 s, well past the session. */
const SYNC_LIMIT = 10
const RUN_MS = 60_000

/** The proxies carrying server `from`'s connections to server `to`. */
interface Route {
  from: number
  to: number
  proxies: TcpProxy[]
}

describe('ZooKeeper: a lock holder on a follower cut off from the leader', () => {
  let cluster: Cluster
  const routes: Route[] = []

  before(async () => {
    cluster = await startZookeeperEnsemble(3, {
      tickTimeMs: TICK_MS,
      syncLimit: SYNC_LIMIT,
      async peerRoute(from, to, ports) {
        const quorum = await TcpProxy.start(ports.quorum)
        const election = await TcpProxy.start(ports.election)
        routes.push({ from, to, proxies: [quorum, election] })
        return { quorum: quorum.port, election: election.port }
      },
    })
  })
  after(async () => {
    await cluster?.stop()
    await Promise.all(routes.flatMap((r) => r.proxies.map((p) => p.close())))
  })

  /** Pauses (or resumes) every proxy to and from server index `i`: its peers hear nothing from it, nor it from them. */
  const isolate = (i: number, on: boolean): void => {
    for (const r of routes) {
      if (r.from !== i && r.to !== i) continue
      for (const p of r.proxies) on ? p.pause() : p.resume()
    }
  }

  it('tells the holder it lost the lock before the leader grants it to another', { timeout: testTimeout(RUN_MS) }, async (t) => {
    await repeat(t, {
      writer,
      scenario: 'zookeeper.follower-cut.lock',
      title: 'ZooKeeper ensemble (tickTime 500 ms, syncLimit 10): the follower of a lock holder cut off from its peers, the holder still reaching it',
      backend: 'zookeeper',
      measure: 'cut → holder told lockLost',
      runTimeoutMs: RUN_MS,
    }, async (scope: Scope) => {
      await cluster.healthy()
      const leader = (await cluster.leader())!
      const follower = cluster.nodes.find((n) => n !== leader && n.running) as ClusterNode
      const fi = cluster.nodes.indexOf(follower)
      const a = await open(scope, `zookeeper://127.0.0.1:${follower.port}?timeout=${SESSION_S}`)
      const b = await open(scope, `zookeeper://127.0.0.1:${leader.port}?timeout=${SESSION_S}`)
      const name = rid('cut-lock')
      const aLog = recordEvents(a)
      assert.equal(await a.getLock(name).acquire({ timeoutMs: 10_000 }), true, 'A takes the lock')
      // B waits for it from the leader's side.
      const rival = contend(scope, b, name)
      // Settle into the steady state (syncs answered, pings flowing), then cut.
      await sleep(1_500)
      const cutAt = Date.now()
      isolate(fi, true)
      scope.defer(() => isolate(fi, false))
      const lostAt = await until('A told it lost the lock', () => aLog.find((e) => e.what === `lockLost:${name}`)?.at, 20_000)
      const granted = await until('B granted the lock', () => rival.takenAt(), 20_000)
      const marginMs = granted - lostAt
      t.diagnostic(`cut at 0; A told at +${lostAt - cutAt} ms; B granted at +${granted - cutAt} ms; margin ${marginMs} ms`)
      // A cut-off member is told within the session timeout + 2 s (generous: a loaded machine).
      assert.ok(lostAt - cutAt < SESSION_S * 1_000 + 2_000, `A told ${lostAt - cutAt} ms after the cut`)
      assert.ok(marginMs > 0, `B was granted the lock ${-marginMs} ms BEFORE A was told it lost it (an overlap)`)
      isolate(fi, false)
      await cluster.healthy()
      return { ms: lostAt - cutAt }
    })
  })
})
