/** tooz's TestAPI (tooz/tests/test_coordination.py), groups and members, ported case by case. */
import assert from 'node:assert/strict'
import {
  ConnectionError,
  createCoordinator,
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  InvalidStateError,
  MemberExistsError,
  MemberNotJoinedError,
  parseBackendUrl,
} from '../../../../src/index.js'
import { TIMING } from '../../../support/timing.js'
import { rid } from '../../../support/wait.js'
import type { Harness } from '../../harness.js'
import { eventRecorder, runWatchersUntilSomething, toozCoordinator } from './support.js'

const isMissing = (err: unknown): boolean => err instanceof MemberNotJoinedError || err instanceof GroupNotFoundError

export function toozGroupCases(h: Harness): void {
  const tz = (t: Parameters<typeof toozCoordinator>[1], o = {}) => toozCoordinator(h, t, o)

  h.gated('acrossHosts', 'TestAPI.test_connection_error_bad_host', async () => {
    const { scheme } = parseBackendUrl(h.config.url)
    const c = await createCoordinator(`${scheme}://localhost:1/f00`, { memberId: rid('m'), heartbeat: false, autoWatch: false })
    await assert.rejects(c.start(), ConnectionError)
  })

  h.test('TestAPI.test_stop_first', async () => {
    const c = await createCoordinator(h.config.url, { memberId: rid('m') })
    await assert.rejects(c.stop(), InvalidStateError)
  })

  h.gated('groups', 'TestAPI.test_create_group', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    assert.ok((await c.getGroups()).includes(g))
  })

  h.gated('groups', 'TestAPI.test_create_group_already_exist', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await assert.rejects(c.createGroup(g), GroupExistsError)
  })

  h.gated('groups', 'TestAPI.test_get_groups', async (t) => {
    const c = await tz(t)
    const ids = Array.from({ length: 5 }, () => rid('g'))
    for (const g of ids) await c.createGroup(g)
    const created = await c.getGroups()
    for (const g of ids) assert.ok(created.includes(g), g)
  })

  h.gated('groups', 'TestAPI.test_delete_group', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    assert.ok((await c.getGroups()).includes(g))
    await c.deleteGroup(g)
    assert.ok(!(await c.getGroups()).includes(g))
    await assert.rejects(c.joinGroup(g), GroupNotFoundError)
  })

  h.gated('groups', 'TestAPI.test_delete_group_non_existent', async (t) => {
    const c = await tz(t)
    await assert.rejects(c.deleteGroup(rid('g')), GroupNotFoundError)
  })

  h.gated('groups', 'TestAPI.test_delete_group_non_empty', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    await assert.rejects(c.deleteGroup(g), GroupNotEmptyError)
    await c.leaveGroup(g)
    await c.deleteGroup(g)
  })

  h.gated('groups', 'TestAPI.test_join_group', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    assert.ok((await c.getMembers(g)).includes(c.memberId))
  })

  h.gated('groups', 'TestAPI.test_join_nonexistent_group', async (t) => {
    const c = await tz(t)
    await assert.rejects(c.joinGroup(rid('g')), GroupNotFoundError)
  })

  h.gated('groups', 'TestAPI.test_join_group_create', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.joinGroupCreate(g)
    assert.ok((await c.getMembers(g)).includes(c.memberId))
  })

  h.gated('groups', 'TestAPI.test_join_group_with_member_id_already_exists', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    const client = await tz(t, { memberId: c.memberId })
    await assert.rejects(client.joinGroup(g), MemberExistsError)
  })

  h.gated('groups', 'TestAPI.test_leave_group', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    assert.ok((await c.getGroups()).includes(g))
    await c.joinGroup(g)
    assert.ok((await c.getMembers(g)).includes(c.memberId))
    await c.leaveGroup(g)
    assert.ok(!(await c.getMembers(g)).includes(c.memberId))
  })

  h.gated('groups', 'TestAPI.test_leave_nonexistent_group', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    assert.ok(!(await c.getGroups()).includes(g))
    await assert.rejects(c.leaveGroup(g), isMissing)
  })

  h.gated('groups', 'TestAPI.test_leave_group_not_joined_by_member', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    assert.ok((await c.getGroups()).includes(g))
    await assert.rejects(c.leaveGroup(g), MemberNotJoinedError)
  })

  h.gated('groups', 'TestAPI.test_get_members', async (t) => {
    const c = await tz(t)
    const client2 = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    await client2.joinGroup(g)
    assert.deepEqual(new Set(await c.getMembers(g)), new Set([c.memberId, client2.memberId]))
  })

  h.gated('groups', 'TestAPI.test_get_member_capabilities', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g, { data: 'test_capabilities' })
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { data: 'test_capabilities' })
  })

  h.gated('groups', 'TestAPI.test_get_member_capabilities_complex', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    const caps = { type: 'warrior', abilities: ['fight', 'flight', 'double-hit-damage'] }
    await c.joinGroup(g, caps)
    const capa = await c.getMemberCapabilities(g, c.memberId) as typeof caps
    assert.deepEqual(capa, caps)
    assert.equal(capa.type, caps.type)
  })

  h.gated('groups', 'TestAPI.test_get_members_with_capabilities', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    const caps = { host: '10.0.0.1', port: 8080 }
    await c.joinGroup(g, caps)
    const result = await c.getMembersWithCapabilities(g)
    assert.ok(result.has(c.memberId))
    assert.deepEqual(result.get(c.memberId), caps)
  })

  h.gated('groups', 'TestAPI.test_get_members_with_capabilities_multiple', async (t) => {
    const c = await tz(t)
    const client2 = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g, { role: 'primary' })
    await client2.joinGroup(g, { role: 'secondary' })
    const result = await c.getMembersWithCapabilities(g)
    assert.equal(result.size, 2)
    assert.deepEqual(result.get(c.memberId), { role: 'primary' })
    assert.deepEqual(result.get(client2.memberId), { role: 'secondary' })
  })

  h.gated('groups', 'TestAPI.test_get_members_with_capabilities_nonexistent_group', async (t) => {
    const c = await tz(t)
    await assert.rejects(c.getMembersWithCapabilities(rid('g')), GroupNotFoundError)
  })

  h.gated('groups', 'TestAPI.test_get_members_with_capabilities_empty_group', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    assert.equal((await c.getMembersWithCapabilities(g)).size, 0)
  })

  h.gated('groups', 'TestAPI.test_get_members_with_capabilities_no_caps', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    const result = await c.getMembersWithCapabilities(g)
    assert.ok(result.has(c.memberId))
    assert.ok(result.get(c.memberId) === null || JSON.stringify(result.get(c.memberId)) === '{}')
  })

  h.gated('groups', 'TestAPI.test_get_member_capabilities_nonexistent_group', async (t) => {
    const c = await tz(t)
    await assert.rejects(c.getMemberCapabilities(rid('g'), c.memberId), isMissing)
  })

  h.gated('groups', 'TestAPI.test_get_member_capabilities_nonjoined_member', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await assert.rejects(c.getMemberCapabilities(g, c.memberId), MemberNotJoinedError)
  })

  h.gated(['groups', 'memberInfo'], 'TestAPI.test_get_member_info', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g, { data: 'test_capabilities' })
    assert.deepEqual((await c.getMemberInfo(g, c.memberId)).capabilities, { data: 'test_capabilities' })
  })

  h.gated(['groups', 'memberInfo'], 'TestAPI.test_get_member_info_complex', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    const caps = { type: 'warrior', abilities: ['fight', 'flight', 'double-hit-damage'] }
    await c.joinGroup(g, caps)
    assert.deepEqual((await c.getMemberInfo(g, c.memberId)).capabilities, caps)
  })

  h.gated(['groups', 'memberInfo'], 'TestAPI.test_get_member_info_nonexistent_group', async (t) => {
    const c = await tz(t)
    await assert.rejects(c.getMemberInfo(rid('g'), c.memberId), isMissing)
  })

  h.gated(['groups', 'memberInfo'], 'TestAPI.test_get_member_info_nonjoined_member', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await assert.rejects(c.getMemberInfo(g, rid('m')), MemberNotJoinedError)
  })

  h.gated(['groups', 'updateCapabilities'], 'TestAPI.test_update_capabilities', async (t) => {
    const c = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g, { version: 1 })
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { version: 1 })
    await c.updateCapabilities(g, { version: 2 })
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { version: 2 })
  })

  h.gated(['groups', 'updateCapabilities'], 'TestAPI.test_update_capabilities_with_group_id_nonexistent', async (t) => {
    const c = await tz(t)
    await assert.rejects(c.updateCapabilities(rid('g'), { data: 'test_capabilities' }), isMissing)
  })

  h.test('TestAPI.test_heartbeat', async (t) => {
    const c = await tz(t)
    assert.ok((await c.heartbeat()) > 0)
  })

  h.test('TestAPI.test_heartbeat_loop', async (t) => {
    // tooz starts its Heart by hand; here the loop is connect()'s `heartbeat` option.
    const c = await h.open(t, { heartbeat: true, autoWatch: false })
    const first = c.health.lastHeartbeatAt
    assert.ok(first, 'start() beats once')
    assert.ok(c.health.heartbeatIntervalMs > 0)
  })

  h.gated('groups', 'TestAPI.test_disconnect_leave_group', async (t) => {
    const c = await tz(t)
    const client2 = await tz(t)
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    await client2.joinGroup(g)
    const before = await c.getMembers(g)
    assert.ok(before.includes(c.memberId) && before.includes(client2.memberId))
    await client2.stop()
    const after = await c.getMembers(g)
    assert.ok(after.includes(c.memberId))
    assert.ok(!after.includes(client2.memberId))
  })

  h.gated(['groups', 'memberExpiry'], 'TestAPI.test_timeout', async (t) => {
    // tooz: timeout=5, sleep 3, heartbeat, sleep 3. Here: the fast URL (timeout=2), the same shape;
    // the watching member also beats by itself, so that only client2 can lapse however slow the host.
    const c = await tz(t, { fast: true, heartbeat: true })
    const client2 = await tz(t, { fast: true })
    const g = rid('g')
    await c.createGroup(g)
    await c.joinGroup(g)
    await client2.joinGroup(g)
    const members = await c.getMembers(g)
    assert.ok(members.includes(c.memberId) && members.includes(client2.memberId))
    const { events, cb } = eventRecorder()
    await c.watchLeaveGroup(g, cb)
    await c.runWatchers()
    const halfMs = TIMING.expirySeconds * 600
    await new Promise((r) => setTimeout(r, halfMs))
    await c.heartbeat()
    await new Promise((r) => setTimeout(r, halfMs))
    await runWatchersUntilSomething(c, TIMING.expirySlackMs)
    const now = await c.getMembers(g)
    assert.ok(now.includes(c.memberId))
    assert.ok(!now.includes(client2.memberId))
    assert.deepEqual(events, [{ group: g, member: client2.memberId }])
  })
}
