/**
 * The tooz driver's live view against the coordination layer's own member cache: a member dropped
 * and rejoined between two of the layer's polls produces no event when a read of ours and that
 * cache disagree. The group view (Coordinator.viewGroup) reads both from one read, so a view that
 * saw the member gone sees it back at the next poll, not at the next resync.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { backend } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { openGroup, openTestCatalog } from './support.js'

describe('servicegroup: tooz view', () => {
  it('tooz-view: a member dropped and rejoined within one watch interval is seen back within two, not at the next resync', { timeout: 60_000 }, async (t) => {
    const watchSeconds = 3
    const url = `${backend('redis').url}?timeout=30&watch_interval=${watchSeconds}`
    const catalog = await openTestCatalog(t)
    const writer = await openGroup(t, catalog, { driver: 'tooz', toozUrl: url, reportIntervalSeconds: 60 })
    const reader = await openGroup(t, catalog, { driver: 'tooz', toozUrl: url, reportIntervalSeconds: 60 })
    const [host, topic] = [rid('host'), rid('topic')]
    await writer.join(host, topic)
    const svc = { host, topic }
    await waitFor('up', () => reader.isUp(svc), 5_000)
    // Drop the writer's member behind everyone's back, read it gone, and put it back at once.
    const peek = await connect(url, { memberId: rid('peek'), autoWatch: false, heartbeat: false })
    t.after(() => peek.stop())
    const [member] = await peek.getMembers(topic)
    assert.ok(member)
    const as = await connect(url, { memberId: member, autoWatch: false, heartbeat: false })
    await as.leaveGroup(topic)
    await as.stop()
    await reader.leave('nobody', topic) // marks the view stale without touching the writer
    assert.equal(await reader.isUp(svc), false)
    await writer.leave(host, topic)
    await writer.join(host, topic)
    const started = Date.now()
    await waitFor('back up', () => reader.isUp(svc), 2 * watchSeconds * 1000 + 3_000, 100)
    t.diagnostic(`back up after ${Date.now() - started} ms`)
  })
})
