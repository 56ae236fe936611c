/** Lifecycle, groups, membership and capabilities: tooz test_coordination.py's core, plus more exact checks. */
import assert from 'node:assert/strict'
import {
  CoordinatorStoppedError,
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  InvalidArgumentError,
  MemberExistsError,
  MemberNotJoinedError,
  NotSupportedError,
  loadDriver,
  type RollcallError,
} from '../../../src/index.js'
import { rid, waitFor } from '../../support/wait.js'
import { TIMING } from '../../support/timing.js'
import type { Harness } from '../harness.js'

export function groupCases(h: Harness): void {
  h.test('lifecycle: stop() is idempotent and later calls fail with CoordinatorStoppedError', async (t) => {
    const c = await h.open(t)
    assert.equal(c.state, 'started')
    await c.stop()
    await c.stop()
    assert.equal(c.state, 'stopped')
    await assert.rejects(c.getGroups(), CoordinatorStoppedError)
    assert.throws(() => c.getLock('x'), CoordinatorStoppedError)
  })

  h.test('lifecycle: heartbeat() resolves to a positive interval', async (t) => {
    const c = await h.open(t)
    const ms = await c.heartbeat()
    assert.ok(ms > 0, `interval ${ms}`)
  })

  h.gated('groups', 'groups: create, list, delete', async (t) => {
    const c = await h.open(t)
    const g1 = rid('g')
    const g2 = rid('g')
    await c.createGroup(g1)
    await c.createGroup(g2)
    const mine = (await c.getGroups()).filter((g) => g === g1 || g === g2)
    assert.deepEqual(mine.sort(), [g1, g2].sort())
    await c.deleteGroup(g1)
    assert.ok(!(await c.getGroups()).includes(g1))
    assert.ok((await c.getGroups()).includes(g2))
  }, async (t) => {
    const c = await h.open(t)
    await assert.rejects(c.createGroup(rid('g')), NotSupportedError)
    await assert.rejects(c.joinGroup(rid('g')), NotSupportedError)
  })

  h.gated('groups', 'groups: getGroups lists groups only, never members, locks or leaders', async (t) => {
    const c = await h.open(t)
    const d = await h.open(t)
    const g = rid('g')
    await c.joinGroupCreate(g, { a: 1 })
    await d.joinGroup(g)
    await c.getLock(rid('l')).acquire()
    if (h.caps.has('leaderElection')) {
      c.watchElectedAsLeader(g, () => {})
      await waitFor('an election', () => c.isLeader(g), TIMING.eventMs)
    }
    const groups = await c.getGroups()
    assert.ok(groups.includes(g))
    const junk = groups.filter((x) => x.startsWith(`${g}/`) || x.startsWith(g) && x !== g || x === 'locks')
    assert.deepEqual(junk, [])
    assert.deepEqual(await c.getMembers(g), [c.memberId, d.memberId].sort())
  })

  h.gated('groups', 'errors: every error crossing the driver boundary names the driver', async (t) => {
    const c = await h.open(t)
    const g = rid('g')
    const scheme = h.config.url.slice(0, h.config.url.indexOf(':'))
    const name = (await loadDriver(scheme)).name
    const named = (cls: new(...args: never[]) => Error) => (err: unknown) => err instanceof cls && (err as RollcallError).driver === name
    await assert.rejects(c.deleteGroup(g), named(GroupNotFoundError))
    await assert.rejects(c.joinGroup(g), named(GroupNotFoundError))
    await c.createGroup(g)
    await assert.rejects(c.createGroup(g), named(GroupExistsError))
    await c.deleteGroup(g)
  })

  h.gated('groups', 'groups: errors for missing, existing and non-empty groups', async (t) => {
    const c = await h.open(t)
    const g = rid('g')
    await assert.rejects(c.deleteGroup(g), GroupNotFoundError)
    await assert.rejects(c.joinGroup(g), GroupNotFoundError)
    await assert.rejects(c.getMembers(g), GroupNotFoundError)
    await c.createGroup(g)
    await assert.rejects(c.createGroup(g), GroupExistsError)
    await c.joinGroup(g)
    await assert.rejects(c.deleteGroup(g), GroupNotEmptyError)
    await c.leaveGroup(g)
    await c.deleteGroup(g)
  })

  h.gated('groups', 'members: two members see exactly each other', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroupCreate(g)
    assert.deepEqual(await a.getMembers(g), [a.memberId, b.memberId].sort())
    assert.deepEqual(await b.getMembers(g), [a.memberId, b.memberId].sort())
    assert.deepEqual(a.joinedGroups, [g])
  })

  h.gated('groups', 'members: joining twice fails and keeps the first capabilities', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g, { v: 1 })
    await assert.rejects(a.joinGroup(g, { v: 2 }), MemberExistsError)
    assert.deepEqual(await a.getMemberCapabilities(g, a.memberId), { v: 1 })
  })

  h.gated('groups', 'members: leave, and leaving when not joined', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    await b.leaveGroup(g)
    assert.deepEqual(await a.getMembers(g), [a.memberId])
    await assert.rejects(b.leaveGroup(g), MemberNotJoinedError)
    await assert.rejects(b.leaveGroup(rid('g')), (err: Error) => err instanceof MemberNotJoinedError || err instanceof GroupNotFoundError)
  })

  h.gated('groups', 'members: stop() leaves every joined group', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    await b.stop()
    assert.deepEqual(await a.getMembers(g), [a.memberId])
  })

  h.gated('groups', 'capabilities: round-trip of nested values, bytes, unicode and big integers', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const caps = {
      host: 'compute-1',
      zone: 'az1',
      ports: [80, 443],
      nested: { ok: true, none: null, f: 1.5 },
      blob: new Uint8Array([0, 1, 255]),
      text: 'чупакабра ✓',
      big: 2 ** 40,
      neg: -12345,
    }
    await a.joinGroupCreate(g, caps)
    await b.joinGroup(g, 'just a string')
    assert.deepEqual(await b.getMemberCapabilities(g, a.memberId), caps)
    const all = await a.getMembersWithCapabilities(g)
    assert.deepEqual([...all.keys()], [a.memberId, b.memberId].sort())
    assert.deepEqual(all.get(a.memberId), caps)
    assert.equal(all.get(b.memberId), 'just a string')
    await assert.rejects(a.getMemberCapabilities(g, rid('nobody')), MemberNotJoinedError)
  })

  h.gated('groups', 'capabilities: values msgpack cannot hold are refused before anything is written', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    await a.createGroup(g)
    await assert.rejects(a.joinGroup(g, { f: () => 1 }), InvalidArgumentError)
    await assert.rejects(a.joinGroup(g, new (class Thing {})()), InvalidArgumentError)
    assert.deepEqual(await a.getMembers(g), [])
  })

  h.gated(['groups', 'updateCapabilities'], 'capabilities: update while joined', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g, { v: 1 })
    await a.updateCapabilities(g, { v: 2, more: 'x' })
    assert.deepEqual(await b.getMemberCapabilities(g, a.memberId), { v: 2, more: 'x' })
    await assert.rejects(b.updateCapabilities(g, { v: 3 }), MemberNotJoinedError)
  }, async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.updateCapabilities(rid('g'), {}), NotSupportedError)
  })

  h.gated(['groups', 'memberInfo'], 'members: getMemberInfo reports capabilities and times', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    const before = Date.now() - 5_000
    await a.joinGroupCreate(g, { v: 1 })
    const info = await a.getMemberInfo(g, a.memberId)
    assert.deepEqual(info.capabilities, { v: 1 })
    assert.ok(info.createdAt.getTime() >= before && info.createdAt.getTime() <= Date.now() + 5_000)
    assert.ok(info.updatedAt.getTime() >= info.createdAt.getTime())
  }, async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.getMemberInfo(rid('g'), 'm'), NotSupportedError)
  })
}
