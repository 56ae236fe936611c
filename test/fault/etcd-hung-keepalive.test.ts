/**
 * etcd, the leader paused (issue 27, known bug `etcd-hung-keepalive`): a lease keepalive that a
 * follower receives while the old leader is gone is forwarded to that leader and hangs. Before
 * the fix the driver sent nothing else meanwhile (one keepalive per beat, bounded only by the
 * HTTP timeout, which equals the TTL here), so the client-side expiry told a healthy member
 * `membershipLost` although etcd kept its lease and no watcher saw it leave. Now a beat sends
 * another keepalive every TTL/4 while none answered (src/coordination/drivers/etcd3/etcd3-hedge.ts),
 * each bounded at half the TTL, and the deadline runs from the send time of the last answered one.
 *
 * A 3-node etcd (pre-vote, election timeout 2 s) on loopback; member A (lease TTL 10 s, HTTP
 * timeout 10 s) talks to follower 1 alone, watcher W to follower 2 alone. The leader is SIGSTOPped
 * for 12 s, longer than the TTL, three times (a leader elected on A's server is handed on first):
 * A must not be told anything is lost, W must not see A leave. Before the fix a beat sent before
 * the follower knew the new leader hung until the resume and A was told `membershipLost` (then
 * `rejoined` within ~70 ms) in the first or second round. Then A's own server is SIGSTOPped: A
 * must be told it is lost within the TTL + 2 s.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startEtcdCluster, type Cluster, type ClusterNode } from '../support/cluster.js'
import { rid } from '../support/wait.js'
import { open, recordEvents, recordMembers, Scope, show, sleep, until } from './support/harness.js'

const TTL_S = 10
const PAUSE_MS = 12_000
const ROUNDS = 3

/** POSTs to a node's JSON gateway. */
async function post(n: ClusterNode, path: string, body: unknown = {}): Promise<any> {
  const res = await fetch(`http://${n.address}:${n.port}/v3/${path}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(5_000) })
  assert.ok(res.ok, `etcd ${path}: HTTP ${res.status}`)
  return res.json()
}

/** Asks `leader` to hand leadership to `to`. */
async function transferLeadership(leader: ClusterNode, to: ClusterNode): Promise<void> {
  const { header } = await post(to, 'maintenance/status')
  await post(leader, 'maintenance/transfer-leadership', { targetID: header.member_id })
}

describe('etcd: a keepalive hung on a paused leader', () => {
  let cluster: Cluster
  const paused = new Set<number>()
  const scope = new Scope()

  before(async () => {
    cluster = await startEtcdCluster(3, undefined, { preVote: true })
  })
  after(async () => {
    for (const pid of paused) process.kill(pid, 'SIGCONT')
    await scope.close()
    await cluster?.stop()
  })

  const pause = (n: ClusterNode): number => {
    const pid = n.pid!
    paused.add(pid)
    process.kill(pid, 'SIGSTOP')
    return pid
  }
  const resume = (pid: number): void => {
    process.kill(pid, 'SIGCONT')
    paused.delete(pid)
  }
  const urlOf = (n: ClusterNode): string => `etcd3+http://${n.address}:${n.port}?membership_timeout=${TTL_S}&timeout=${TTL_S}`

  it('keeps a member on the majority side, and still loses one cut off', { timeout: 240_000 }, async () => {
    const group = rid('hung')
    let a: Awaited<ReturnType<typeof open>> | undefined
    let aLog: ReturnType<typeof recordEvents> = []
    let seen: ReturnType<typeof recordMembers> | undefined
    let aNode: ClusterNode | undefined
    let rounds = 0
    for (let round = 0; rounds < ROUNDS; round++) {
      assert.ok(round < 2 * ROUNDS, `only ${rounds} of ${ROUNDS} rounds in ${round} tries`)
      await cluster.healthy(30_000)
      const leader = (await cluster.leader())!
      const followers = cluster.nodes.filter((n) => n !== leader && n.running)
      if (a === undefined) {
        // A on one follower, W on the other: the leader moves between rounds, so each round finds them again.
        aNode = followers[0]!
        a = await open(scope, urlOf(aNode))
        aLog = recordEvents(a)
        await a.createGroup(group)
        await a.joinGroup(group)
        const w = await open(scope, urlOf(followers[1]!))
        seen = recordMembers(w)
        await w.watchGroup(group)
        await until('W sees A', async () => (await w.getMembers(group)).includes(a!.memberId) || undefined, 10_000)
      }
      if (leader === aNode) {
        // Pre-vote elects whoever caught up first, often A's server: hand leadership on, and try again.
        await transferLeadership(aNode, followers[0]!)
        continue
      }
      rounds += 1
      const pid = pause(leader)
      await sleep(PAUSE_MS)
      resume(pid)
      const lost = aLog.filter((e) => e.what.startsWith('membershipLost') || e.what === 'state:lost')
      assert.deepEqual(lost, [], `round ${round}: A was told it was lost while the majority served\n${show(aLog)}`)
      assert.deepEqual(seen!.left, [], `round ${round}: W saw A leave`)
    }
    assert.ok(rounds >= 1, "no round paused a leader other than A's server")
    // A's own server stops: that is a real loss, reported within the TTL + 2 s.
    await cluster.healthy(30_000)
    const cutAt = Date.now()
    const pid = pause(aNode!)
    const ev = await until(
      'A told it is lost',
      () => aLog.find((e) => e.at >= cutAt && (e.what.startsWith('membershipLost') || e.what === 'state:lost')),
      20_000,
    )
    resume(pid)
    console.log(`${rounds} leader pauses of ${PAUSE_MS} ms survived; A's own server stopped: A told at +${ev.at - cutAt} ms`)
    assert.ok(ev.at - cutAt <= TTL_S * 1000 + 2_000, `A was told ${ev.at - cutAt} ms after its server stopped\n${show(aLog)}`)
  })
})
