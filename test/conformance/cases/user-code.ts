/**
 * The library survives its user's code: a failing listener or callback is reported as a
 * `warning` with code LISTENER_FAILED and rollcall carries on; views add no listener to the
 * Coordinator; a clean stop() says nothing about the work it ended.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { ListenerFailedError, type Coordinator, type GroupView, type LogFields, type Logger, type MemberEvent, type RollcallError } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

/** The `warning` events of `c`, collected. */
function warnings(c: Coordinator): RollcallError[] {
  const seen: RollcallError[] = []
  c.on('warning', (err) => seen.push(err))
  return seen
}

/** A logger that keeps every line at warn level or above. */
function capturingLogger(): Logger & { lines: { level: string; msg: string; fields?: LogFields }[] } {
  const lines: { level: string; msg: string; fields?: LogFields }[] = []
  return {
    lines,
    debug: () => {},
    info: () => {},
    warn: (msg, fields) => void lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields) => void lines.push({ level: 'error', msg, fields }),
  }
}

export function userCodeCases(h: Harness): void {
  h.gated('groups', 'listeners: a throwing memberJoined listener is reported as LISTENER_FAILED and the watcher goes on', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const c = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.watchGroup(g)
    const reports = warnings(a)
    const boom = new Error('listener bug')
    a.on('memberJoined', () => {
      throw boom
    })
    a.on('memberJoined', async () => {
      await Promise.resolve()
      throw new Error('async listener bug')
    })
    const heard: string[] = []
    a.on('memberJoined', (e) => void heard.push(e.member))
    await b.joinGroup(g)
    await waitFor('two LISTENER_FAILED warnings', () => reports.filter((r) => r.code === 'LISTENER_FAILED').length === 2, TIMING.eventMs)
    const [sync, async] = reports.filter((r): r is ListenerFailedError => r instanceof ListenerFailedError)
    assert.equal(sync!.event, 'memberJoined')
    assert.equal(sync!.group, g)
    assert.equal(sync!.cause, boom)
    assert.equal((async!.cause as Error).message, 'async listener bug')
    assert.match(sync!.message, /memberJoined listener/)
    // The listener after the failing ones heard the join, and the watcher still delivers.
    assert.deepEqual(heard, [b.memberId])
    const left = nextEvent<MemberEvent>(a, 'memberLeft', (e) => e.group === g, TIMING.eventMs)
    await c.joinGroup(g)
    await b.leaveGroup(g)
    assert.equal((await left).member, b.memberId)
    await waitFor('the second join', () => heard.length === 2, TIMING.eventMs)
  })

  h.gated('groups', 'listeners: a throwing `warning` listener is not fed its own failure: it goes to process.emitWarning()', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.watchGroup(g)
    const onProcess: Error[] = []
    const onWarning = (w: Error): void => void (w instanceof ListenerFailedError && w.group === g && onProcess.push(w))
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    let calls = 0
    a.on('warning', () => {
      calls += 1
      throw new Error('warning listener bug')
    })
    a.on('memberJoined', () => {
      throw new Error('listener bug')
    })
    await b.joinGroup(g)
    const report = await waitFor('a process warning', () => onProcess[0], TIMING.eventMs)
    assert.equal((report as ListenerFailedError).event, 'warning')
    assert.equal((report.cause as Error).message, 'warning listener bug')
    assert.equal(calls, 1)
  })

  h.gated('groups', 'listeners: a throwing watch callback is reported as LISTENER_FAILED naming watchJoinGroup', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const reports = warnings(a)
    const boom = new Error('callback bug')
    await a.watchJoinGroup(g, () => {
      throw boom
    })
    await b.joinGroup(g)
    const report = await waitFor('a LISTENER_FAILED warning', () => reports.find((r) => r.code === 'LISTENER_FAILED'), TIMING.eventMs)
    assert.ok(report instanceof ListenerFailedError)
    assert.equal(report.event, 'watchJoinGroup')
    assert.equal(report.group, g)
    assert.equal(report.cause, boom)
  })

  h.gated('leaderElection', 'listeners: a throwing leader callback is reported as LISTENER_FAILED and the term goes on', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    const reports = warnings(a)
    const boom = new Error('leader callback bug')
    a.on('leaderElected', () => {
      throw new Error('leaderElected listener bug')
    })
    a.watchElectedAsLeader(g, () => {
      throw boom
    })
    await waitFor('two LISTENER_FAILED warnings', () => reports.filter((r) => r.code === 'LISTENER_FAILED').length === 2, TIMING.eventMs)
    const events = reports.map((r) => (r as ListenerFailedError).event).sort()
    assert.deepEqual(events, ['leaderElected', 'watchElectedAsLeader'])
    assert.equal(reports.find((r) => (r as ListenerFailedError).event === 'watchElectedAsLeader')!.cause, boom)
    assert.ok(!reports.some((r) => r.code === 'BACKEND_ERROR'))
    assert.ok(a.isLeader(g))
  })

  h.gated('groups', 'listeners: a throwing `changed` listener of a view is reported and the view stays current', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const view = await a.viewGroup(g)
    t.after(() => view.close())
    const reports = warnings(a)
    view.on('changed', () => {
      throw new Error('view listener bug')
    })
    await b.joinGroup(g)
    const report = await waitFor('a LISTENER_FAILED warning', () => reports.find((r) => r.code === 'LISTENER_FAILED'), TIMING.eventMs)
    assert.equal((report as ListenerFailedError).event, 'changed')
    await b.leaveGroup(g)
    await waitFor('the view to see the leave', () => !view.members.has(b.memberId), TIMING.eventMs)
    assert.equal(view.version, 3)
  })

  h.gated('groups', 'listeners: in a real process, throwing memberJoined listeners neither crash it nor go unseen', async () => {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'test/support/throwing-listener-process.ts', h.config.url, rid('g')],
      { timeout: 60_000 },
    )
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.deepEqual(lines.at(-1), { survived: true })
    // Before any `warning` listener: on stderr, through process.emitWarning().
    assert.match(stderr, /ListenerFailedError: A memberJoined listener on group .* failed: sync failure for first-/)
    // With one: as `warning` events.
    const reports = lines.filter((l) => l.code !== undefined)
    assert.deepEqual(reports.map((r) => [r.code, r.event]), [['LISTENER_FAILED', 'memberJoined'], ['LISTENER_FAILED', 'memberJoined']])
    assert.match(String(reports[0]!.cause), /^sync failure for second-/)
    assert.match(String(reports[1]!.cause), /^async failure for second-/)
  })

  h.gated('groups', 'views: 12 views on one coordinator add no listener to it (no MaxListenersExceededWarning)', async (t) => {
    const a = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const leaks: Error[] = []
    const onWarning = (w: Error & { emitter?: unknown }): void => {
      if (w.name === 'MaxListenersExceededWarning' && w.emitter === a) leaks.push(w)
    }
    process.on('warning', onWarning)
    t.after(() => process.off('warning', onWarning))
    const views: GroupView[] = []
    for (let i = 0; i < 12; i++) views.push(await a.viewGroup(g))
    t.after(() => Promise.all(views.map((v) => v.close())))
    for (const event of ['connectionStateChanged', 'heartbeatFailed', 'warning'] as const) assert.equal(a.listenerCount(event), 0, event)
    // process warnings are emitted on the next tick.
    await new Promise((r) => setTimeout(r, 50))
    assert.deepEqual(leaks, [])
  })

  h.gated(['groups', 'acrossHosts'], 'views: with no listener on the coordinator, a view still doubts its snapshot when the link breaks', async (t) => {
    // autoWatch off: no poll runs, so only the coordinator's own events can tell the view.
    const { coordinator: a, proxy } = await h.openProxied(t, { autoWatch: false })
    const g = rid('g')
    await a.joinGroupCreate(g)
    const view = await a.viewGroup(g)
    t.after(() => view.close())
    assert.equal(view.fresh, true)
    proxy.cut()
    await waitFor('the view to doubt its snapshot', () => !view.fresh, TIMING.expirySeconds * 1000 + TIMING.expirySlackMs)
    proxy.restore()
    await waitFor(
      'a refresh() to bring it back',
      async () => {
        await view.refresh()
        return view.fresh
      },
      TIMING.expirySeconds * 1000 + 2 * TIMING.expirySlackMs,
      200,
    )
  })

  h.gated('groups', 'stop: a clean stop() after watchGroup() logs nothing and warns nothing', async (t) => {
    const logger = capturingLogger()
    const a = await h.open(t, { logger })
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    await a.watchGroup(g)
    const view = await a.viewGroup(g)
    const reports = warnings(a)
    await a.stop()
    assert.ok(view.closed)
    // Anything the stop set off has had its chance to report.
    await new Promise((r) => setTimeout(r, 3 * TIMING.watchIntervalMs))
    assert.deepEqual(logger.lines, [])
    assert.deepEqual(reports, [])
  })
}
