/**
 * Python tooz 3.1 (Debian, pymemcache) and rollcall on one memcached: shared groups and exact
 * capabilities, members that lapse on one side disappearing on the other, mutually exclusive locks,
 * and leaders seen and respected both ways.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { GroupNotEmptyError, connect, type ConnectOptions, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { fromPeer, ToozPeer, ToozPeerError } from '../support/tooz-peer.js'
import { rid, waitFor } from '../support/wait.js'

const URL = serverUrl('memcached')

async function open(t: TestContext, query = '', options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(`${URL}${query}`, { memberId: rid('node'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 4 * TIMING.watchIntervalMs))

describe('memcached interop with Python tooz 3.1', { concurrency: 4 }, () => {
  it('memcached: interop: a Python member and a Node member see each other with exact capabilities', async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, URL, pyId)
    const node = await open(t)
    const g = rid('g')
    const pyCaps = { host: 'py-1', blob: { __bytes__: '00ff10' }, text: 'чупакабра ✓', n: 42, f: 1.5, none: null, list: [1, 'a'], nested: { ok: true } }
    // create + join rather than join_group_create, whose first attempt makes tooz sleep 1 s.
    await py.call('create_group', { group: g })
    await py.call('join_group', { group: g, capabilities: pyCaps })
    const nodeCaps = { host: 'node-1', blob: new Uint8Array([0, 1, 255]), text: 'zürich ☃', big: 2 ** 40, neg: -7, f: 0.25 }
    await node.joinGroup(g, nodeCaps)
    const members = await node.getMembersWithCapabilities(g)
    assert.deepEqual([...members.keys()], [pyId, node.memberId].sort())
    assert.deepEqual(members.get(pyId), fromPeer(pyCaps))
    assert.deepEqual(members.get(node.memberId), nodeCaps)
    assert.deepEqual(await py.call('get_members', { group: g }), [pyId, node.memberId].sort())
    assert.deepEqual(fromPeer(await py.call('get_member_capabilities', { group: g, member: node.memberId })), nodeCaps)
    await node.updateCapabilities(g, { v: 2 })
    assert.deepEqual(await py.call('get_member_capabilities', { group: g, member: node.memberId }), { v: 2 })
    await py.call('update_capabilities', { group: g, capabilities: { py: 'updated' } })
    assert.deepEqual(await node.getMemberCapabilities(g, pyId), { py: 'updated' })
    await node.leaveGroup(g)
    assert.deepEqual(await py.call('get_members', { group: g }), [pyId])
    await py.call('leave_group', { group: g })
    assert.deepEqual(await node.getMembers(g), [])
  })

  it('memcached: interop: groups created, listed and deleted on either side', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t)
    const fromPy = rid('g')
    const fromNode = rid('g')
    await py.call('create_group', { group: fromPy })
    await node.createGroup(fromNode)
    assert.ok((await node.getGroups()).includes(fromPy))
    const pyGroups = await py.call('get_groups') as string[]
    assert.ok(pyGroups.includes(fromPy) && pyGroups.includes(fromNode))
    await py.call('join_group', { group: fromNode })
    await assert.rejects(node.deleteGroup(fromNode), GroupNotEmptyError)
    await assert.rejects(py.call('create_group', { group: fromNode }), (e: Error) => e instanceof ToozPeerError && e.toozError === 'GroupAlreadyExist')
    await py.call('leave_group', { group: fromNode })
    await node.deleteGroup(fromNode)
    await node.deleteGroup(fromPy)
    const after = await py.call('get_groups') as string[]
    assert.ok(!after.includes(fromPy) && !after.includes(fromNode))
    await assert.rejects(py.call('join_group', { group: fromPy }), (e: Error) => e instanceof ToozPeerError && e.toozError === 'GroupNotCreated')
  })

  it('memcached: interop: a member that stops beating is pruned by the other side', async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, `${URL}?timeout=2`, pyId)
    const watcher = await open(t)
    // A Node member that never beats again after start: its key lapses like a crashed process's.
    const silent = await open(t, '?timeout=2', { heartbeat: false })
    const g = rid('g')
    await watcher.joinGroupCreate(g)
    await silent.joinGroup(g)
    await py.call('join_group', { group: g })
    assert.equal((await watcher.getMembers(g)).length, 3)
    await waitFor(
      'Python to prune the silent Node member',
      async () => !(await py.call('get_members', { group: g }) as string[]).includes(silent.memberId),
      10_000,
      200,
    )
    py.kill()
    await waitFor('Node to prune the killed Python member', async () => !(await watcher.getMembers(g)).includes(pyId), 10_000, 200)
    assert.deepEqual(await watcher.getMembers(g), [watcher.memberId])
  })

  it('memcached: interop: Python and Node locks exclude each other both ways', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t)
    const name = rid('lock')
    const lock = node.getLock(name)
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), false, 'Python holds it')
    assert.equal(await lock.acquire({ timeoutMs: TIMING.shortWaitMs }), false, 'a timed wait gives up')
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), true)
    assert.equal(await py.call('lock_acquire', { name }), false, 'Node holds it')
    assert.equal(await lock.heartbeat(), true)
    assert.equal(await py.call('lock_acquire', { name }), false, 'still held after a refresh')
    assert.equal(await lock.release(), true)
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await py.call('lock_is_owner', { name }), true)
    // A blocked Node acquire gets it once Python lets go.
    const waiting = lock.acquire({ timeoutMs: TIMING.eventMs })
    setTimeout(() => void py.call('lock_release', { name }), 200)
    assert.equal(await waiting, true)
    await lock.release()
  })

  it("memcached: interop: a Python leader is seen by Node's getLeader and blocks its candidacy until Python stops", async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, URL, pyId)
    const node = await open(t)
    const g = rid('g')
    await py.call('create_group', { group: g })
    assert.deepEqual(await py.call('elect', { group: g }), [g])
    assert.equal(await node.getLeader(g), pyId)
    node.watchElectedAsLeader(g, () => {})
    await settle()
    assert.equal(node.isLeader(g), false)
    await py.stop()
    await waitFor('Node to lead once Python stopped', () => node.isLeader(g), TIMING.eventMs)
    assert.equal(await node.getLeader(g), node.memberId)
  })

  it("memcached: interop: a Node leader is seen by Python's get_leader and blocks its candidacy", async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t)
    const g = rid('g')
    await node.createGroup(g)
    node.watchElectedAsLeader(g, () => {})
    await waitFor('Node to lead', () => node.isLeader(g), TIMING.eventMs)
    assert.equal(await py.call('get_leader', { group: g }), node.memberId)
    assert.deepEqual(await py.call('elect', { group: g }), [])
    assert.deepEqual(await py.call('run_watchers', { group: g }), [])
    // A hold-off, so that Node does not win the next round itself before Python polls (tooz has none by default).
    assert.equal(await node.standDownGroupLeader(g, { holdOffMs: 10_000 }), true)
    await waitFor('Python to win the next round', async () => (await py.call('run_watchers', { group: g }) as string[]).includes(g), TIMING.eventMs, 100)
    await settle()
    assert.equal(node.isLeader(g), false, 'Node must not lead while Python does')
    assert.notEqual(await node.getLeader(g), node.memberId)
  })
})
