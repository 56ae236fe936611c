/**
 * Typed group handles (Coordinator.group(name, { parse })): watchJoined() and watchLeft() hand
 * callbacks the member's capabilities parsed; a joiner that does not pass is withheld and told as
 * a `warning`; a failing callback is a LISTENER_FAILED warning and delivery goes on.
 */
import assert from 'node:assert/strict'
import { GroupNotFoundError, ListenerFailedError, NotSupportedError, SerializationError, type Coordinator, type MemberJoinedEvent, type MemberLeftEvent,
  type RollcallError } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

interface Worker {
  zone: string
  slots: number
}

/** A hand-written parser, as an application without zod would write one. */
function parseWorker(value: unknown): Worker {
  const v = value as Partial<Worker> | null
  if (typeof v?.zone !== 'string' || typeof v.slots !== 'number') throw new TypeError('not a Worker')
  return { zone: v.zone, slots: v.slots }
}

/** The `warning` events of `c`, collected. */
function warnings(c: Coordinator): RollcallError[] {
  const seen: RollcallError[] = []
  c.on('warning', (err) => seen.push(err))
  return seen
}

export function typedGroupCases(h: Harness): void {
  h.gated('groups', "typed group: watchJoined hands over the joiner's parsed capabilities; members present before are not announced", async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const c = await h.open(t)
    const g = rid('g')
    const workers = a.group(g, { parse: parseWorker })
    await workers.join({ zone: 'az0', slots: 1 })
    await c.group(g, { parse: parseWorker }).join({ zone: 'az2', slots: 2 })
    const joins: MemberJoinedEvent<Worker>[] = []
    const unwatch = await workers.watchJoined((e) => void joins.push(e))
    await b.group(g, { parse: parseWorker }).join({ zone: 'az1', slots: 4 })
    await waitFor('the typed join', () => joins.length > 0, TIMING.eventMs)
    assert.deepEqual(joins, [{ group: g, member: b.memberId, capabilities: { zone: 'az1', slots: 4 } }])
    await unwatch()
    await unwatch()
    await assert.rejects(a.group(rid('missing'), { parse: parseWorker }).watchJoined(() => {}), GroupNotFoundError)
  }, async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.group(rid('g')).watchJoined(() => {}), NotSupportedError)
  })

  h.gated('groups', 'typed group: watchLeft carries the capabilities last read, for members present when the watch began too', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const c = await h.open(t)
    const g = rid('g')
    const workers = a.group(g, { parse: parseWorker })
    await workers.join({ zone: 'az0', slots: 1 })
    await b.joinGroup(g, { zone: 'az1', slots: 4 })
    const lefts: MemberLeftEvent<Worker>[] = []
    const unsubscribed: MemberLeftEvent<Worker>[] = []
    const joins: string[] = []
    const unwatchLeft = await workers.watchLeft((e) => void lefts.push(e))
    const unwatchOther = await workers.watchLeft((e) => void unsubscribed.push(e))
    const unwatchJoined = await workers.watchJoined((e) => void joins.push(e.member))
    await c.joinGroup(g, { zone: 'az2', slots: 2 })
    await waitFor('c joining', () => joins.includes(c.memberId), TIMING.eventMs)
    // Ending two of the three watches leaves the third delivering.
    await unwatchJoined()
    await unwatchOther()
    await b.leaveGroup(g)
    await c.leaveGroup(g)
    await waitFor('two typed leaves', () => lefts.length === 2, TIMING.eventMs)
    const byMember = (x: MemberLeftEvent<Worker>, y: MemberLeftEvent<Worker>): number => x.member.localeCompare(y.member)
    assert.deepEqual(
      lefts.sort(byMember),
      [
        { group: g, member: b.memberId, capabilities: { zone: 'az1', slots: 4 } },
        { group: g, member: c.memberId, capabilities: { zone: 'az2', slots: 2 } },
      ].sort(byMember),
    )
    assert.deepEqual(unsubscribed, [])
    assert.deepEqual(joins, [c.memberId])
    await unwatchLeft()
    await unwatchLeft()
    // A watch after the last one ended opens a new view.
    const again: string[] = []
    await workers.watchJoined((e) => void again.push(e.member))
    await b.joinGroup(g, { zone: 'az1', slots: 4 })
    await waitFor('b joining again', () => again.includes(b.memberId), TIMING.eventMs)
  })

  h.gated('groups', 'typed group: a joiner whose capabilities fail parse is withheld and told as a warning naming it; the others are delivered', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const c = await h.open(t)
    const g = rid('g')
    const workers = a.group(g, { parse: parseWorker })
    await workers.join({ zone: 'az0', slots: 1 })
    const reports = warnings(a)
    const joins: MemberJoinedEvent<Worker>[] = []
    const lefts: MemberLeftEvent<Worker>[] = []
    await workers.watchJoined((e) => void joins.push(e))
    await workers.watchLeft((e) => void lefts.push(e))
    // b bypasses the typed handle, as a Python peer or an older release would.
    await b.joinGroup(g, { zone: 'az1', slots: 'four' })
    await c.joinGroup(g, { zone: 'az2', slots: 2 })
    await waitFor('c announced', () => joins.some((e) => e.member === c.memberId), TIMING.eventMs)
    await waitFor('the warning about b', () => reports.some((r) => r instanceof SerializationError), TIMING.eventMs)
    assert.deepEqual(joins.map((e) => e.member), [c.memberId])
    const [refused, ...more] = reports.filter((r) => r instanceof SerializationError)
    assert.equal(more.length, 0, 'one warning per withheld join')
    assert.ok(refused!.message.includes(`"${b.memberId}"`), refused!.message)
    assert.ok(refused!.message.includes(`"${g}"`), refused!.message)
    assert.match((refused!.cause as Error).message, /not a Worker/)
    // Its leave is still told, without capabilities.
    await b.leaveGroup(g)
    await waitFor('b leaving', () => lefts.length === 1, TIMING.eventMs)
    assert.deepEqual(lefts, [{ group: g, member: b.memberId, capabilities: undefined }])
  })

  h.gated('groups', 'typed group: a throwing or rejecting callback is a LISTENER_FAILED warning; the other callbacks still run', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const workers = a.group(g, { parse: parseWorker })
    await workers.join({ zone: 'az0', slots: 1 })
    const reports = warnings(a)
    const boom = new Error('callback bug')
    await workers.watchJoined(() => {
      throw boom
    })
    await workers.watchJoined(async () => {
      await Promise.resolve()
      throw new Error('async callback bug')
    })
    const heard: string[] = []
    await workers.watchJoined((e) => void heard.push(`${e.member}:${e.capabilities.zone}`))
    await b.group(g, { parse: parseWorker }).join({ zone: 'az1', slots: 4 })
    await waitFor('two LISTENER_FAILED warnings', () => reports.filter((r) => r.code === 'LISTENER_FAILED').length === 2, TIMING.eventMs)
    const failed = reports.filter((r): r is ListenerFailedError => r instanceof ListenerFailedError)
    assert.deepEqual(failed.map((f) => [f.event, f.group]), [['watchJoined', g], ['watchJoined', g]])
    assert.equal(failed[0]!.cause, boom)
    assert.deepEqual(heard, [`${b.memberId}:az1`])
    assert.equal(a.state, 'started')
  })

  h.gated('groups', 'typed group: with autoWatch off, typed callbacks run inside runWatchers()', async (t) => {
    const a = await h.open(t, { autoWatch: false })
    const b = await h.open(t)
    const g = rid('g')
    const workers = a.group(g, { parse: parseWorker })
    await workers.join({ zone: 'az0', slots: 1 })
    const joins: MemberJoinedEvent<Worker>[] = []
    await workers.watchJoined((e) => void joins.push(e))
    await b.joinGroup(g, { zone: 'az1', slots: 4 })
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs))
    assert.deepEqual(joins, [])
    await a.runWatchers()
    assert.deepEqual(joins, [{ group: g, member: b.memberId, capabilities: { zone: 'az1', slots: 4 } }])
  })
}
