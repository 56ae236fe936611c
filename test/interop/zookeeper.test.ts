/**
 * rollcall and Python tooz 3.1 (kazoo driver) on one ZooKeeper: members, capabilities, locks and
 * leaders seen from both sides. The Python side is a real tooz process (test/support/tooz-peer.py).
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, parseBackendUrl, type Coordinator } from '../../src/index.js'
import { tryLockInProcess } from '../conformance/cases/tooz/support.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { fromPeer, ToozPeer } from '../support/tooz-peer.js'
import { rid, waitFor } from '../support/wait.js'
import { openRawZk } from '../drivers/zookeeper-support.js'

const base = serverUrl('zookeeper')
/** The URL tooz is given: the kazoo alias, tooz's own spelling of the timeout. */
const peerUrl = `${base.replace(/^zookeeper:/, 'kazoo:')}${base.includes('?') ? '&' : '?'}timeout=10`

async function open(t: TestContext, url = base, watchIntervalMs: number = TIMING.watchIntervalMs): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('node'), watchIntervalMs })
  t.after(() => c.stop())
  return c
}

describe('zookeeper interop with Python tooz', { concurrency: 4 }, () => {
  it('zookeeper: interop: Python and Node members see each other, capabilities decoded exactly', async (t) => {
    const node = await open(t)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    const g = rid('g')
    const pyCaps = {
      host: 'compute-1',
      ports: [80, 443],
      nested: { ok: true, none: null, f: 1.5 },
      text: 'чупакабра',
      big: 2 ** 40,
      neg: -7,
      blob: { __bytes__: '00ff10' },
    }
    await py.call('join_group_create', { group: g, capabilities: pyCaps })
    const nodeCaps = { zone: 'az1', weight: 3, blob: new Uint8Array([9, 0, 255]), list: ['a', 1, 2.5] }
    await node.joinGroup(g, nodeCaps)
    const members = await node.getMembersWithCapabilities(g)
    assert.deepEqual([...members.keys()], [node.memberId, pyId].sort())
    assert.deepEqual(members.get(pyId), fromPeer(pyCaps))
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId, pyId].sort())
    const seen = fromPeer(await py.call('get_member_capabilities', { group: g, member: node.memberId })) as Record<string, unknown>
    assert.deepEqual(seen, { ...nodeCaps, blob: new Uint8Array([9, 0, 255]) })
    await py.call('update_capabilities', { group: g, capabilities: { v: 2 } })
    assert.deepEqual(await node.getMemberCapabilities(g, pyId), { v: 2 })
    await py.call('leave_group', { group: g })
    assert.deepEqual(await node.getMembers(g), [node.memberId])
  })

  it('zookeeper: interop: a Node watcher sees a Python member join and leave, pushed', async (t) => {
    // No polling for a minute: what arrives within seconds was pushed by a child watch.
    const node = await open(t, base, 60_000)
    const g = rid('g')
    await node.joinGroupCreate(g)
    const events: string[] = []
    node.on('memberJoined', (e) => e.group === g && events.push(`+${e.member}`))
    node.on('memberLeft', (e) => e.group === g && events.push(`-${e.member}`))
    await node.watchGroup(g)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    await py.call('join_group', { group: g })
    await waitFor('the Python join', () => events.includes(`+${pyId}`), TIMING.eventMs)
    await py.stop()
    await waitFor('the Python leave', () => events.includes(`-${pyId}`), TIMING.eventMs)
  })

  it('zookeeper: interop: locks exclude both ways', async (t) => {
    const node = await open(t)
    const py = await ToozPeer.start(t, peerUrl, rid('py'))
    const name = rid('l')
    assert.equal(await py.call('lock_acquire', { name }), true)
    const lock = node.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), false)
    assert.equal(await lock.acquire({ timeoutMs: TIMING.shortWaitMs }), false)
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), true)
    assert.equal(await py.call('lock_acquire', { name }), false)
    assert.equal(await lock.release(), true)
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await py.call('lock_is_owner', { name }), true)
    await py.call('lock_release', { name })
  })

  it('zookeeper: interop: Python and Node waiters queue in one line, in arrival order', async (t) => {
    const holder = await open(t)
    const second = await open(t)
    const py = await ToozPeer.start(t, peerUrl, rid('py'))
    const name = rid('l')
    const held = holder.getLock(name)
    assert.equal(await held.acquire(), true)
    // Python queues first (a blocking kazoo acquire), then a second Node coordinator.
    const raw = await rawClient(t)
    const pyGot = py.call('lock_acquire', { name, blocking: true }, 30_000)
    await waitFor('the Python contender node', async () => (await raw.children(`/tooz/locks/${name}`)).length === 2, TIMING.eventMs)
    const nodeLock = second.getLock(name)
    let nodeGot = false
    const nodeWait = nodeLock.acquire({ timeoutMs: 30_000 }).then((v) => (nodeGot = v))
    await waitFor('the Node contender node', async () => (await raw.children(`/tooz/locks/${name}`)).length === 3, TIMING.eventMs)
    // One line: every contender, Python's and ours, is a kazoo-style node ordered by its sequence.
    for (const c of await raw.children(`/tooz/locks/${name}`)) assert.match(c, /^[0-9a-f]{32}__lock__\d{10}$/)
    await held.release()
    assert.equal(await pyGot, true, 'Python queued first and is served first')
    await new Promise((r) => setTimeout(r, 300))
    assert.equal(nodeGot, false, 'the Node waiter must still wait behind Python')
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await nodeWait, true)
    assert.equal(await py.call('lock_acquire', { name }), false)
    await nodeLock.release()
  })

  it('zookeeper: interop: a Python leader is seen by getLeader and blocks Node candidates; stand-down hands over', async (t) => {
    const node = await open(t)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    const g = rid('g')
    await node.joinGroupCreate(g)
    await py.call('join_group', { group: g })
    assert.equal(await node.getLeader(g), null)
    assert.deepEqual(await py.call('elect', { group: g }), [g])
    assert.equal(await node.getLeader(g), pyId)
    node.watchElectedAsLeader(g, () => {})
    await new Promise((r) => setTimeout(r, 5 * TIMING.watchIntervalMs))
    assert.equal(node.isLeader(g), false, 'Node must not lead while Python does')
    assert.equal(await py.call('stand_down', { group: g }), true)
    await waitFor('Node to lead', () => node.isLeader(g), TIMING.eventMs)
    assert.equal(await py.call('get_leader', { group: g }), node.memberId)
    // tooz's own reading shows its layout; rollcall's hides it.
    assert.ok((await py.call('get_members', { group: g })).includes('leader'))
    assert.deepEqual(await node.getMembers(g), [node.memberId, pyId].sort())
  })

  it("zookeeper: interop: a Node leader is seen by Python and blocks Python's candidacy", async (t) => {
    const node = await open(t)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    const g = rid('g')
    await node.joinGroupCreate(g)
    const candidate = (): void => {}
    node.watchElectedAsLeader(g, candidate)
    await waitFor('Node to lead', () => node.isLeader(g), TIMING.eventMs)
    assert.equal(await py.call('get_leader', { group: g }), node.memberId)
    assert.deepEqual(await py.call('elect', { group: g }), [])
    assert.deepEqual(await py.call('run_watchers'), [])
    // Leaving the race stands down; Python's next election round wins.
    await node.unwatchElectedAsLeader(g, candidate)
    assert.equal(node.isLeader(g), false)
    assert.deepEqual(
      await waitFor(
        'Python to lead',
        async () => {
          const r = await py.call('run_watchers')
          return r.length ? r : undefined
        },
        TIMING.eventMs,
        100,
      ),
      [g],
    )
    assert.equal(await node.getLeader(g), pyId)
  })

  it("zookeeper: interop: getGroups and getMembers hide what Python's locks and elections leave behind", async (t) => {
    const node = await open(t)
    const pyId = rid('py')
    const py = await ToozPeer.start(t, peerUrl, pyId)
    const g = rid('g')
    await py.call('join_group_create', { group: g })
    await py.call('lock_acquire', { name: rid('l') })
    await py.call('elect', { group: g })
    assert.ok((await py.call('get_groups')).includes('locks'), 'tooz lists its locks node as a group')
    const groups = await node.getGroups()
    assert.ok(groups.includes(g))
    assert.ok(!groups.includes('locks'))
    assert.deepEqual(await node.getMembers(g), [pyId])
    assert.deepEqual([...(await node.getMembersWithCapabilities(g)).keys()], [pyId])
    assert.equal(await node.getLeader(g), pyId)
    await py.call('stand_down', { group: g })
    await py.call('leave_group', { group: g })
    // Only tooz's empty `leader` node is left: rollcall deletes the group anyway.
    await node.deleteGroup(g)
    assert.ok(!(await node.getGroups()).includes(g))
  })

  it("zookeeper: interop: with user:password both sides use tooz's digest ACL and read each other's nodes", async (t) => {
    const ns = rid('ns')
    const auth = base.replace(/^zookeeper:\/\//, 'zookeeper://rollcall:s3cret@')
    const node = await open(t, `${auth}${auth.includes('?') ? '&' : '?'}namespace=${ns}`)
    const g = rid('g')
    await node.joinGroupCreate(g, { side: 'node' })
    const pyId = rid('py')
    const py = await ToozPeer.start(t, `${auth.replace(/^zookeeper:/, 'kazoo:')}${auth.includes('?') ? '&' : '?'}namespace=${ns}&timeout=10`, pyId)
    await py.call('join_group', { group: g, capabilities: { side: 'py' } })
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId, pyId].sort())
    assert.deepEqual(await node.getMemberCapabilities(g, pyId), { side: 'py' })
    const name = rid('l')
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await node.getLock(name).acquire({ blocking: false }), false)
    await py.call('lock_release', { name })
    await py.call('leave_group', { group: g })
  })

  it(
    'zookeeper: interop: shared locks: kazoo ReadLock and Node readers hold together; a kazoo WriteLock excludes Node readers and writers; Node readers '
      + 'exclude a kazoo WriteLock and hold together across processes',
    async (t) => {
      const node = await open(t)
      const py = await ToozPeer.start(t, peerUrl, rid('py'))
      const name = rid('l')
      const reader = node.getLock(name)
      assert.equal(await py.call('kazoo_lock_acquire', { name, kind: 'read' }), true)
      assert.equal(await reader.acquire({ shared: true, blocking: false }), true, 'a Node reader holds together with a kazoo ReadLock')
      assert.equal(await node.getLock(name).acquire({ blocking: false }), false, 'a kazoo reader excludes a Node writer')
      assert.equal(await reader.release(), true)
      assert.equal(await py.call('kazoo_lock_release', { name, kind: 'read' }), true)

      assert.equal(await py.call('kazoo_lock_acquire', { name, kind: 'write' }), true)
      assert.equal(await node.getLock(name).acquire({ shared: true, blocking: false }), false, 'a kazoo WriteLock excludes a Node reader')
      assert.equal(await node.getLock(name).acquire({ shared: true, timeoutMs: TIMING.shortWaitMs }), false, 'and a waiting one')
      assert.equal(await node.getLock(name).acquire({ blocking: false }), false, 'and a Node writer')
      assert.equal(await py.call('kazoo_lock_release', { name, kind: 'write' }), true)

      assert.equal(await reader.acquire({ shared: true, blocking: false }), true)
      assert.equal(await py.call('kazoo_lock_acquire', { name, kind: 'write' }), false, 'a Node reader excludes a kazoo WriteLock taker')
      assert.equal(await py.call('kazoo_lock_acquire', { name, kind: 'read' }), true, 'a kazoo ReadLock taker holds with a Node reader')
      assert.equal(await py.call('kazoo_lock_release', { name, kind: 'read' }), true)
      assert.equal(await tryLockInProcess(base, name, true), true, 'a Node reader in another process holds with it')
      assert.equal(await tryLockInProcess(base, name), false, 'a Node writer in another process is excluded')
      assert.equal(await reader.release(), true)
      assert.equal(await py.call('kazoo_lock_acquire', { name, kind: 'write' }), true, 'free for a kazoo writer once the reader released it')
      assert.equal(await py.call('kazoo_lock_release', { name, kind: 'write' }), true)
    },
  )

  it('zookeeper: interop: shared locks: Node and kazoo waiters of either kind queue in one line of kazoo-named nodes', async (t) => {
    const node = await open(t)
    const py = await ToozPeer.start(t, peerUrl, rid('py'))
    const raw = await rawClient(t)
    const name = rid('l')
    const path = `/tooz/locks/${name}`
    assert.equal(await py.call('kazoo_lock_acquire', { name, kind: 'write' }), true)
    const reader = node.getLock(name)
    const readerGot = reader.acquire({ shared: true, timeoutMs: 30_000 })
    await waitFor("the Node reader's node", async () => (await raw.children(path)).length === 2, TIMING.eventMs)
    assert.ok((await raw.children(path)).some((c) => /^[0-9a-f]{32}__rlock__\d{10}$/.test(c)), 'a Node reader is a kazoo ReadLock node')
    assert.equal(await py.call('kazoo_lock_release', { name, kind: 'write' }), true)
    assert.equal(await readerGot, true, 'the Node reader is served once the kazoo writer released')
    // A blocking kazoo WriteLock now queues behind the Node reader, and is served when it releases.
    const pyGot = py.call('kazoo_lock_acquire', { name, kind: 'write', blocking: true, timeout: 25 }, 30_000)
    await waitFor("the kazoo writer's node", async () => (await raw.children(path)).length === 2, TIMING.eventMs)
    await new Promise((r) => setTimeout(r, TIMING.shortWaitMs))
    assert.equal(await reader.isStillOwner(), true)
    assert.equal(await reader.release(), true)
    assert.equal(await pyGot, true)
    assert.equal(await node.getLock(name).acquire({ shared: true, blocking: false }), false, 'the kazoo writer holds it now')
    assert.equal(await py.call('kazoo_lock_release', { name, kind: 'write' }), true)
  })

  it(
    "zookeeper: interop: shared locks: a Python tooz lock (kazoo's plain Lock) is granted beside Node readers, as documented, and excludes later "
      + 'ones',
    async (t) => {
      const node = await open(t)
      const py = await ToozPeer.start(t, peerUrl, rid('py'))
      const name = rid('l')
      const reader = node.getLock(name)
      assert.equal(await reader.acquire({ shared: true, blocking: false }), true)
      assert.equal(await py.call('lock_acquire', { name }), true, "the hazard docs/api.md names: tooz's lock does not see readers")
      assert.equal(await node.getLock(name).acquire({ shared: true, blocking: false }), false, 'a later Node reader is excluded by the tooz holder')
      assert.equal(await node.getLock(name).acquire({ blocking: false }), false, 'and a Node writer')
      assert.equal(await py.call('lock_release', { name }), true)
      assert.equal(await reader.release(), true)
    },
  )
})

/** A plain client (no driver) on the shared server, closed after the test: reads what is really stored. */
async function rawClient(t: TestContext): Promise<{ children(path: string): Promise<string[]> }> {
  const { hosts } = parseBackendUrl(base)
  const raw = await openRawZk({ host: hosts[0]!.host, port: hosts[0]!.port ?? 2181, timeoutMs: 5_000 })
  t.after(() => raw.close())
  return raw
}
