/** Group views (Coordinator.viewGroup): a snapshot with capabilities, a version, change events. */
import assert from 'node:assert/strict'
import { GroupNotFoundError, InvalidStateError, NotSupportedError, type GroupView, type GroupViewChange, type MemberEvent } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

/** The next `changed` of `view` matching `filter`. */
function nextChange(view: GroupView, filter: (c: GroupViewChange) => boolean, ms: number): Promise<GroupViewChange> {
  return nextEvent<GroupViewChange>(view, 'changed', filter, ms)
}

export function groupViewCases(h: Harness): void {
  h.gated('groups', 'group view: the first snapshot holds every member with its capabilities, at version 1', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g, { zone: 'a' })
    await b.joinGroup(g, { zone: 'b' })
    const view = await a.viewGroup(g)
    t.after(() => view.close())
    assert.equal(view.version, 1)
    assert.ok(view.fresh)
    assert.deepEqual([...view.members], [[a.memberId, { zone: 'a' }], [b.memberId, { zone: 'b' }]].sort((x, y) => String(x[0]).localeCompare(String(y[0]))))
    await assert.rejects(a.viewGroup(rid('missing')), GroupNotFoundError)
    await assert.rejects(a.viewGroup(g, { resyncIntervalMs: 0 }), /resyncIntervalMs/)
  }, async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.viewGroup(rid('g')), NotSupportedError)
  })

  h.gated('groups', 'group view: a join and a leave each bump the version and emit the change', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const view = await a.viewGroup(g)
    t.after(() => view.close())
    const joined = nextChange(view, (c) => c.joined.length > 0, TIMING.eventMs)
    await b.joinGroup(g, { n: 1 })
    assert.deepEqual(await joined, { group: g, version: 2, joined: [b.memberId], left: [], updated: [] })
    assert.equal(view.version, 2)
    assert.deepEqual(view.members.get(b.memberId), { n: 1 })
    const left = nextChange(view, (c) => c.left.length > 0, TIMING.eventMs)
    await b.leaveGroup(g)
    assert.deepEqual(await left, { group: g, version: 3, joined: [], left: [b.memberId], updated: [] })
    assert.deepEqual([...view.members.keys()], [a.memberId])
  })

  h.gated(['groups', 'updateCapabilities'], 'group view: a capabilities update is seen at the next full re-read and bumps the version', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g, { v: 1 })
    const view = await a.viewGroup(g, { resyncIntervalMs: 300 })
    t.after(() => view.close())
    const updated = nextChange(view, (c) => c.updated.length > 0, TIMING.eventMs)
    await b.updateCapabilities(g, { v: 2 })
    assert.deepEqual(await updated, { group: g, version: 2, joined: [], left: [], updated: [b.memberId] })
    assert.deepEqual(view.members.get(b.memberId), { v: 2 })
  })

  h.gated('memberExpiry', 'group view: a member that stops beating is seen leaving at its expiry', async (t) => {
    const a = await h.open(t, { fast: true })
    const b = await h.open(t, { fast: true, heartbeat: false })
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    const view = await a.viewGroup(g)
    t.after(() => view.close())
    assert.equal(view.members.size, 2)
    const left = await nextChange(view, (c) => c.left.includes(b.memberId), TIMING.expirySeconds * 1000 + TIMING.expirySlackMs)
    assert.equal(left.version, 2)
    assert.deepEqual([...view.members.keys()], [a.memberId])
  })

  h.gated('groups', 'group view: close() ends events and refreshes; the watch ends with it', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const view = await a.viewGroup(g, { resyncIntervalMs: 100 })
    const changes: GroupViewChange[] = []
    view.on('changed', (c) => changes.push(c))
    const closed = nextEvent<void>(view, 'closed', () => true, TIMING.eventMs)
    await view.close()
    await closed
    assert.ok(view.closed)
    assert.equal(view.fresh, false)
    await view.close()
    await assert.rejects(view.refresh(), InvalidStateError)
    await b.joinGroup(g)
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs + 200))
    assert.deepEqual(changes, [])
    assert.equal(view.version, 1)
  })

  h.gated(
    'groups',
    "group view: the watcher's events and the view come from one read (a refresh that sees a member gone has fired its memberLeft)",
    async (t) => {
      const a = await h.open(t)
      const b = await h.open(t)
      const g = rid('g')
      await a.joinGroupCreate(g)
      await b.joinGroup(g)
      const view = await a.viewGroup(g)
      t.after(() => view.close())
      const lefts: MemberEvent[] = []
      a.on('memberLeft', (e) => e.group === g && lefts.push(e))
      await b.leaveGroup(g)
      await view.refresh()
      assert.deepEqual([...view.members.keys()], [a.memberId])
      assert.deepEqual(lefts, [{ group: g, member: b.memberId }])
      // Back at once: the watcher's cache said "gone" with the view, so the rejoin is news to both.
      const back = nextChange(view, (c) => c.joined.includes(b.memberId), TIMING.eventMs)
      await b.joinGroup(g)
      await back
    },
  )

  h.gated('groups', 'group view: a deleted group empties the view and refresh() says GroupNotFoundError', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await b.joinGroupCreate(g)
    const view = await a.viewGroup(g)
    t.after(() => view.close())
    await b.leaveGroup(g)
    await a.deleteGroup(g)
    await assert.rejects(view.refresh(), GroupNotFoundError)
    assert.equal(view.members.size, 0)
  })

  h.gated('groups', 'group view: with autoWatch off it changes only in refresh() and runWatchers()', async (t) => {
    const a = await h.open(t, { autoWatch: false })
    const b = await h.open(t)
    const c = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const view = await a.viewGroup(g, { resyncIntervalMs: 100 })
    t.after(() => view.close())
    await b.joinGroup(g)
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs + 200))
    assert.equal(view.version, 1)
    await view.refresh()
    assert.equal(view.version, 2)
    assert.ok(view.members.has(b.memberId))
    await c.joinGroup(g)
    await waitFor(
      'runWatchers() to bring the join',
      async () => {
        await a.runWatchers()
        return view.members.has(c.memberId)
      },
      TIMING.eventMs,
      50,
    )
    assert.equal(view.version, 3)
  })

  h.gated('groups', 'group view: stop() closes every view', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const view = await a.viewGroup(g)
    const closed = nextEvent<void>(view, 'closed', () => true, TIMING.eventMs)
    await a.stop()
    await closed
    assert.ok(view.closed)
  })
}
