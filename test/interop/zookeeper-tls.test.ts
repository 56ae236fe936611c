/**
 * rollcall and Python tooz 3.1 on the TLS ZooKeeper of scripts/backends.sh (client certificates
 * required): a group, a lock and a leader shared over TLS. tooz 3.1 passes no TLS settings to
 * kazoo, so test/support/tooz-peer.py gives tooz's driver a KazooClient of its own built from the
 * same URL options rollcall reads (use_ssl, verify_certs, ca, certfile, keyfile): docs/interop.md.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { TIMING } from '../support/timing.js'
import { ToozPeer } from '../support/tooz-peer.js'
import { rid, waitFor } from '../support/wait.js'
import { sharedZookeeperTls } from '../support/zookeeper-tls.js'

const tls = sharedZookeeperTls()
const query = `use_ssl=true&verify_certs=true&ca=${tls.files.ca}&certfile=${tls.files.certfile}&keyfile=${tls.files.keyfile}`
/** rollcall's URL: a 15 s session, as the other cases that connect over TLS on a loaded machine. */
const nodeUrl = `${tls.url}?${query}&timeout=15`
/** tooz's URL: the kazoo alias; the TLS options are read by the peer, not by tooz. */
const peerUrl = `${tls.url.replace(/^zookeeper:/, 'kazoo:')}?${query}&timeout=15`

async function open(t: TestContext): Promise<Coordinator> {
  const c = await connect(nodeUrl, { memberId: rid('node'), watchIntervalMs: TIMING.watchIntervalMs })
  t.after(() => c.stop())
  return c
}

describe('zookeeper over TLS: interop with Python tooz', { concurrency: 3 }, () => {
  it('zookeeper-tls: interop: Python and Node members see each other in one group', async (t) => {
    const node = await open(t)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    const g = rid('g')
    await py.call('join_group_create', { group: g, capabilities: { side: 'py' } })
    await node.joinGroup(g, { side: 'node' })
    assert.deepEqual(await node.getMembers(g), [node.memberId, pyId].sort())
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId, pyId].sort())
    assert.deepEqual(await node.getMemberCapabilities(g, pyId), { side: 'py' })
    assert.deepEqual(await py.call('get_member_capabilities', { group: g, member: node.memberId }), { side: 'node' })
    await py.call('leave_group', { group: g })
    assert.deepEqual(await node.getMembers(g), [node.memberId])
  })

  it('zookeeper-tls: interop: locks exclude both ways', async (t) => {
    const node = await open(t)
    const py = await ToozPeer.start(t, peerUrl, rid('py'))
    const name = rid('l')
    assert.equal(await py.call('lock_acquire', { name }), true)
    const lock = node.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), false, 'Python holds it')
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), true)
    assert.equal(await py.call('lock_acquire', { name }), false, 'Node holds it')
    assert.equal(await lock.release(), true)
    assert.equal(await py.call('lock_acquire', { name }), true)
    await py.call('lock_release', { name })
  })

  it('zookeeper-tls: interop: a Python leader is seen by getLeader; once it stands down, the Node leader is seen by Python', async (t) => {
    const node = await open(t)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    const g = rid('g')
    await node.joinGroupCreate(g)
    await py.call('join_group', { group: g })
    assert.deepEqual(await py.call('elect', { group: g }), [g])
    assert.equal(await node.getLeader(g), pyId)
    node.watchElectedAsLeader(g, () => {})
    await new Promise((r) => setTimeout(r, 5 * TIMING.watchIntervalMs))
    assert.equal(node.isLeader(g), false, 'Node must not lead while Python does')
    assert.equal(await py.call('stand_down', { group: g }), true)
    await waitFor('Node to lead', () => node.isLeader(g), TIMING.eventMs)
    assert.equal(await py.call('get_leader', { group: g }), node.memberId)
    assert.deepEqual(await py.call('run_watchers'), [g], 'Python does not win again while Node leads')
  })
})
