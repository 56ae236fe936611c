/**
 * etcd3 interop: a real Python tooz 3.1 member (etcd3gw driver) and rollcall members on one etcd.
 * tooz 3.1 needs ?api_version=v3 on etcd 3.4 (its default, v3alpha, answers 404), and the
 * etcd3gw shim of test/support/tooz-peer.py (shared/reference/oracle.md).
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, GroupExistsError, GroupNotEmptyError, type Coordinator, type MemberEvent, type RollcallError } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { fromPeer, ToozPeer, ToozPeerError } from '../support/tooz-peer.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'

const URL = `${serverUrl('etcd3')}?api_version=v3`
const FAST_URL = `${URL}&timeout=${TIMING.expirySeconds}`
const HTTP = serverUrl('etcd3').replace(/^etcd3\+/, '')

async function node(t: TestContext, url = URL): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('node'), watchIntervalMs: TIMING.watchIntervalMs })
  t.after(() => c.stop())
  return c
}

/** A key read straight from the gateway. */
async function rawGet(key: string): Promise<{ value: Buffer; lease: string } | undefined> {
  const res = await fetch(`${HTTP}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from(key).toString('base64') }) })
  const kv = ((await res.json()) as { kvs?: { value?: string; lease?: string }[] }).kvs?.[0]
  return kv && { value: Buffer.from(kv.value ?? '', 'base64'), lease: kv.lease ?? '0' }
}

describe('etcd3 interop with Python tooz 3.1', { concurrency: 4 }, () => {
  it('etcd3: interop: Python and Node members see each other, with capabilities decoded exactly', async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, URL, pyId)
    const c = await node(t)
    const g = rid('g')
    await py.call('create_group', { group: g })
    const pyCaps = { binary: 'compute', host: 'h1', enabled: true, weight: 5, load: 1.5, none: null, raw: { __bytes__: '00ff' }, list: [1, 'two'] }
    await py.call('join_group', { group: g, capabilities: pyCaps })
    const nodeCaps = {
      host: 'n1',
      zone: 'az1',
      ports: [80, 443],
      blob: new Uint8Array([0, 1, 255]),
      text: 'чупакабра ✓',
      nested: { ok: false, f: 2.25 },
      big: 2 ** 40,
    }
    await c.joinGroup(g, nodeCaps)

    assert.deepEqual(await py.call('get_members', { group: g }), [c.memberId, pyId].sort())
    assert.deepEqual(await c.getMembers(g), [c.memberId, pyId].sort())
    assert.deepEqual(await c.getMemberCapabilities(g, pyId), { ...pyCaps, raw: new Uint8Array([0, 255]) })
    assert.deepEqual(fromPeer(await py.call('get_member_capabilities', { group: g, member: c.memberId })), nodeCaps)

    await py.call('update_capabilities', { group: g, capabilities: { v: 2 } })
    await c.updateCapabilities(g, { v: 3, who: 'node' })
    const all = await c.getMembersWithCapabilities(g)
    assert.deepEqual(all.get(pyId), { v: 2 })
    assert.deepEqual(await py.call('get_member_capabilities', { group: g, member: c.memberId }), { v: 3, who: 'node' })

    await c.leaveGroup(g)
    assert.deepEqual(await py.call('get_members', { group: g }), [pyId])
    await py.call('leave_group', { group: g })
    assert.deepEqual(await c.getMembers(g), [])
    await c.deleteGroup(g)
    await assert.rejects(py.call('get_members', { group: g }), (e: ToozPeerError) => e.toozError === 'GroupNotCreated')
  })

  it("etcd3: interop: groups are one namespace; Python's get_groups debris never shows in ours", async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, URL, pyId)
    const c = await node(t)
    const g = rid('g')
    await c.createGroup(g)
    await assert.rejects(py.call('create_group', { group: g }), (e: ToozPeerError) => e.toozError === 'GroupAlreadyExist')
    await py.call('join_group', { group: g, capabilities: null })
    // tooz 3.1 returns key[len(prefix):-1] for every key: a member key becomes "<g>/<member minus last char>".
    const pyGroups = (await py.call('get_groups')) as string[]
    assert.ok(pyGroups.includes(`${g}/${pyId.slice(0, -1)}`), 'the tooz bug this driver works around is still there')
    const ours = await c.getGroups()
    assert.ok(ours.includes(g))
    assert.deepEqual(ours.filter((x) => x.includes('/')), [])
    await assert.rejects(c.deleteGroup(g), GroupNotEmptyError)

    const g2 = rid('g')
    await py.call('create_group', { group: g2 })
    await assert.rejects(c.createGroup(g2), GroupExistsError)
    await c.joinGroup(g2)
    await assert.rejects(py.call('delete_group', { group: g2 }), (e: ToozPeerError) => e.toozError === 'GroupNotEmpty')
    await c.leaveGroup(g2)
    await py.call('delete_group', { group: g2 })
    assert.ok(!(await c.getGroups()).includes(g2))
  })

  it('etcd3: interop: a lock excludes Python and Node both ways (one key, /tooz/locks<name>)', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const c = await node(t)
    const name = rid('l')
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal((await rawGet(`/tooz/locks${name}`))?.value.length, 16)
    const lock = c.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), false)
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), true)
    const held = await rawGet(`/tooz/locks${name}`)
    assert.equal(held?.value.length, 16)
    assert.notEqual(held?.lease, '0')
    assert.equal(await py.call('lock_acquire', { name }), false)
    assert.equal(await lock.release(), true)
    assert.equal(await rawGet(`/tooz/locks${name}`), undefined)
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await py.call('lock_release', { name }), true)
  })

  it('etcd3: interop: a Node waiter is woken (by the watch) when the Python holder releases', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const c = await node(t)
    const name = rid('l')
    assert.equal(await py.call('lock_acquire', { name }), true)
    const lock = c.getLock(name)
    const waiting = lock.acquire({ timeoutMs: 10_000 })
    await new Promise((r) => setTimeout(r, 500))
    const releasedAt = Date.now()
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await waiting, true)
    t.diagnostic(`Node acquired ${Date.now() - releasedAt} ms after Python released`)
    assert.equal(await py.call('lock_acquire', { name }), false)
  })

  it('etcd3: interop: a Python lock named leader_of_<g> holds off Node candidates; getLeader cannot name it', async (t) => {
    const py = await ToozPeer.start(t, URL, rid('py'))
    const c = await node(t)
    const g = rid('g')
    await c.joinGroupCreate(g)
    assert.equal(await py.call('lock_acquire', { name: `leader_of_${g}` }), true)
    c.watchElectedAsLeader(g, () => {})
    const warned = nextEvent<RollcallError>(c, 'warning', (e) => e.message.includes('does not name a member'), TIMING.eventMs)
    assert.equal(await c.getLeader(g), null)
    await warned
    await new Promise((r) => setTimeout(r, 5 * TIMING.watchIntervalMs))
    assert.equal(c.isLeader(g), false)
    assert.equal(await py.call('lock_release', { name: `leader_of_${g}` }), true)
    await waitFor('Node to lead', () => c.isLeader(g), TIMING.eventMs)
    assert.equal(await c.getLeader(g), c.memberId)
    assert.equal(await py.call('lock_acquire', { name: `leader_of_${g}` }), false)
  })

  it('etcd3: interop: a SIGKILLed Python member is pushed to Node as leaving once its lease lapses', async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, FAST_URL, pyId)
    const c = await node(t, FAST_URL)
    const g = rid('g')
    await c.joinGroupCreate(g)
    await c.watchGroup(g)
    const joined = nextEvent<MemberEvent>(c, 'memberJoined', (e) => e.member === pyId, TIMING.eventMs)
    await py.call('join_group', { group: g, capabilities: { pid: 'python' } })
    await joined
    const left = nextEvent<MemberEvent>(c, 'memberLeft', (e) => e.member === pyId, TIMING.expirySeconds * 1000 + TIMING.expirySlackMs)
    const killedAt = Date.now()
    py.kill()
    await left
    t.diagnostic(`memberLeft ${Date.now() - killedAt} ms after SIGKILL of the Python member (membership_timeout ${TIMING.expirySeconds} s)`)
    assert.deepEqual(await c.getMembers(g), [c.memberId])
  })

  it("etcd3: interop: Node's stop() frees its membership and locks at once (tooz would leave them to expire)", async (t) => {
    const pyId = rid('py')
    const py = await ToozPeer.start(t, URL, pyId)
    const c = await connect(URL, { memberId: rid('node') })
    t.after(() => c.stop())
    const g = rid('g')
    const name = rid('l')
    await c.joinGroupCreate(g)
    await py.call('join_group', { group: g, capabilities: null })
    assert.equal(await c.getLock(name).acquire({ blocking: false }), true)
    assert.equal(await py.call('lock_acquire', { name }), false)
    await c.stop()
    assert.deepEqual(await py.call('get_members', { group: g }), [pyId])
    assert.equal(await py.call('lock_acquire', { name }), true, 'the lock must be free without waiting for lock_timeout (30 s)')
    assert.equal(await py.call('lock_release', { name }), true)
  })
})
