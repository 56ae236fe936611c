/**
 * Python tooz 3.1 (Debian) and rollcall on one Redis: shared groups and capabilities, mutually
 * exclusive locks in the matching lock_key_style, and leader elections that block each other.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, type ConnectOptions, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { fromPeer, ToozPeer, ToozPeerError } from '../support/tooz-peer.js'
import { rid, waitFor } from '../support/wait.js'

const URL = serverUrl('redis')

async function open(t: TestContext, query = '', options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(`${URL}${query}`, { memberId: rid('node'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 4 * TIMING.watchIntervalMs))

describe('redis interop with Python tooz 3.1', { concurrency: 4 }, () => {
  it('redis: interop: a Python member and a Node member see each other with exact capabilities', async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, URL, pyId)
    const node = await open(t)
    const g = rid('g')
    const pyCaps = { host: 'py-1', blob: { __bytes__: '00ff10' }, text: 'чупакабра ✓', n: 42, f: 1.5, none: null, list: [1, 'a'] }
    await py.call('join_group_create', { group: g, capabilities: pyCaps })
    const nodeCaps = { host: 'node-1', blob: new Uint8Array([0, 1, 255]), text: 'zürich ☃', big: 2 ** 40, neg: -7 }
    await node.joinGroup(g, nodeCaps)
    const members = await node.getMembersWithCapabilities(g)
    assert.equal(members.size, 2)
    const pyMember = pyId
    assert.deepEqual([...members.keys()], [pyId, node.memberId].sort())
    assert.deepEqual(members.get(pyMember), fromPeer(pyCaps))
    assert.deepEqual(members.get(node.memberId), nodeCaps)
    assert.deepEqual(await py.call('get_members', { group: g }), [pyMember, node.memberId].sort())
    assert.deepEqual(fromPeer(await py.call('get_member_capabilities', { group: g, member: node.memberId })), nodeCaps)
    await node.updateCapabilities(g, { v: 2 })
    assert.deepEqual(await py.call('get_member_capabilities', { group: g, member: node.memberId }), { v: 2 })
    await py.call('update_capabilities', { group: g, capabilities: { py: 'updated' } })
    assert.deepEqual(await node.getMemberCapabilities(g, pyMember), { py: 'updated' })
    await node.leaveGroup(g)
    assert.deepEqual(await py.call('get_members', { group: g }), [pyMember])
  })

  it("redis: interop: a Node member that stops is gone for Python too; Python's leave is seen by Node", async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t)
    const watcher = await open(t)
    const g = rid('g')
    await node.joinGroupCreate(g)
    await py.call('join_group', { group: g })
    await watcher.joinGroup(g)
    assert.equal((await watcher.getMembers(g)).length, 3)
    await node.stop()
    assert.equal((await py.call('get_members', { group: g }) as string[]).includes(node.memberId), false)
    await py.call('leave_group', { group: g })
    assert.deepEqual(await watcher.getMembers(g), [watcher.memberId])
  })

  for (const [style, str] of [['legacy', false], ['legacy-str', true]] as const) {
    it(`redis: interop: Python and Node locks with ${str ? 'str' : 'bytes'} names exclude each other under lock_key_style=${style}`, async (t) => {
      const py = await ToozPeer.start(t, URL, rid('py'))
      const node = await open(t, `?lock_key_style=${style}`)
      const name = rid('lock')
      const lock = node.getLock(name)
      assert.equal(await py.call('lock_acquire', { name, str }), true)
      assert.equal(await lock.acquire({ blocking: false }), false, 'Python holds it')
      assert.equal(await py.call('lock_release', { name, str }), true)
      assert.equal(await lock.acquire({ blocking: false }), true)
      assert.equal(await py.call('lock_acquire', { name, str }), false, 'Node holds it')
      assert.equal(await lock.release(), true)
      assert.equal(await py.call('lock_acquire', { name, str }), true)
      assert.equal(await py.call('lock_is_owner', { name, str }), true)
      // The hazard the option exists for: tooz 9's layout does not see tooz 3.1's lock.
      const v9 = await open(t, '?lock_key_style=v9')
      const other = v9.getLock(name)
      assert.equal(await other.acquire({ blocking: false }), true, 'v9 keys differ from tooz 3.1 keys')
      await other.release()
    })
  }

  it('redis: interop: a Python leader blocks a Node candidate, which reads it as tooz:<token> and takes over when Python stops', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t, '?lock_key_style=legacy')
    const g = rid('g')
    await py.call('create_group', { group: g })
    assert.deepEqual(await py.call('elect', { group: g }), [g])
    node.watchElectedAsLeader(g, () => {})
    await settle()
    assert.equal(node.isLeader(g), false)
    assert.match(await node.getLeader(g) ?? '', /^tooz:[0-9a-f]{32}$/)
    await py.stop()
    await waitFor('Node to lead once Python stopped', () => node.isLeader(g), TIMING.eventMs)
    assert.equal(await node.getLeader(g), node.memberId)
  })

  it('redis: interop: tooz 3.1 names the leader lock with bytes even for a str group, and legacy-str follows it', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t, '?lock_key_style=legacy-str')
    const g = rid('g')
    await py.call('create_group', { group: g, str: true })
    assert.deepEqual(await py.call('elect', { group: g, str: true }), [g])
    node.watchElectedAsLeader(g, () => {})
    await settle()
    assert.equal(node.isLeader(g), false, 'the Python leader holds the bytes-form leader key')
    assert.match(await node.getLeader(g) ?? '', /^tooz:[0-9a-f]{32}$/)
  })

  it('redis: interop: a Node leader blocks a Python candidate; Python tooz 3.1 has no get_leader on Redis', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t, '?lock_key_style=legacy')
    const g = rid('g')
    await node.createGroup(g)
    node.watchElectedAsLeader(g, () => {})
    await waitFor('Node to lead', () => node.isLeader(g), TIMING.eventMs)
    assert.deepEqual(await py.call('elect', { group: g }), [])
    assert.deepEqual(await py.call('run_watchers', { group: g }), [])
    await assert.rejects(py.call('get_leader', { group: g }), (e: Error) => e instanceof ToozPeerError && e.toozError === 'NotImplemented')
    // A hold-off, so that Node does not win the next round itself before Python polls (tooz has none by default).
    assert.equal(await node.standDownGroupLeader(g, { holdOffMs: 10_000 }), true)
    await waitFor('Python to win the next round', async () => (await py.call('run_watchers', { group: g }) as string[]).includes(g), TIMING.eventMs, 100)
    await settle()
    assert.equal(node.isLeader(g), false, 'Node must not lead while Python does')
  })
})
