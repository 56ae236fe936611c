/**
 * "Bring your own client" (connect(url, { client })) checks shared by the redis, postgresql and
 * mysql tests: a conformance-like smoke on the application's client, seen from a second member
 * that connects by URL (so both are on the same server), and the client still usable after stop().
 */
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { connect, type ConnectOptions, type Coordinator } from '../../src/index.js'
import { rid } from '../support/wait.js'

/**
 * Joins a group, beats, takes a lock (with its fencing token) and leads a group through `c`, each
 * checked from `peer`, a member on the same backend that connected by URL.
 */
export async function smoke(c: Coordinator, peer: Coordinator): Promise<void> {
  const g = rid('g')
  await c.joinGroupCreate(g, { zone: 'own-client' })
  assert.deepEqual(await peer.getMembersWithCapabilities(g), new Map([[c.memberId, { zone: 'own-client' }]]))
  const nextBeatMs = await c.heartbeat()
  assert.ok(nextBeatMs > 0, `heartbeat() answered ${nextBeatMs}`)
  const name = rid('lock')
  await c.withLock(name, async (_signal, lock) => {
    assert.equal(typeof lock.fencingToken, 'bigint')
    assert.equal(await peer.getLock(name).acquire({ blocking: false }), false, 'the peer took a lock held through the own client')
  })
  const peerLock = peer.getLock(name)
  assert.equal(await peerLock.acquire({ blocking: false }), true, 'the lock was not free after withLock()')
  await peerLock.release()
  const term = await c.withLeadership(g, async (signal, t) => {
    assert.equal(signal.aborted, false)
    assert.equal(await peer.getLeader(g), c.memberId)
    return t
  })
  assert.equal(typeof term, 'bigint')
  await c.leaveGroup(g)
  assert.deepEqual(await peer.getMembers(g), [])
}

/** connect() by URL, stopped when the test ends. */
export async function openPeer(t: TestContext, url: string, options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('peer'), ...options })
  t.after(() => c.stop())
  return c
}
