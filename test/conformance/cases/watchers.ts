/** Join/leave watchers, delivered without a run_watchers() pump, and member expiry. */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { GroupNotFoundError, WatchCallbackNotFoundError, type MemberEvent } from '../../../src/index.js'
import { TIMING } from '../../support/timing.js'
import { nextEvent, rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

export function watcherCases(h: Harness): void {
  h.gated('groups', 'watchers: watching a missing group fails with GroupNotFoundError', async (t) => {
    const a = await h.open(t)
    await assert.rejects(a.watchJoinGroup(rid('g'), () => {}), GroupNotFoundError)
    await assert.rejects(a.unwatchJoinGroup(rid('g'), () => {}), WatchCallbackNotFoundError)
  })

  h.gated('groups', 'watchers: joins and leaves arrive by themselves, as callbacks and events', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const joins: MemberEvent[] = []
    const leaves: MemberEvent[] = []
    await a.watchJoinGroup(g, (e) => joins.push(e))
    await a.watchLeaveGroup(g, (e) => leaves.push(e))
    const joinedEvent = nextEvent<MemberEvent>(a, 'memberJoined', (e) => e.group === g, TIMING.eventMs)
    await b.joinGroup(g)
    assert.deepEqual(await joinedEvent, { group: g, member: b.memberId })
    await waitFor('the join callback', () => joins.length === 1, TIMING.eventMs)
    assert.deepEqual(joins, [{ group: g, member: b.memberId }])
    const leftEvent = nextEvent<MemberEvent>(a, 'memberLeft', (e) => e.group === g, TIMING.eventMs)
    await b.leaveGroup(g)
    assert.deepEqual(await leftEvent, { group: g, member: b.memberId })
    await waitFor('the leave callback', () => leaves.length === 1, TIMING.eventMs)
  })

  h.gated('groups', "watchers: runWatchers() returns the callbacks' results (tooz parity, autoWatch off)", async (t) => {
    const a = await h.open(t, { autoWatch: false })
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.watchJoinGroup(g, (e) => `hello ${e.member}`)
    await b.joinGroup(g)
    const results = await waitFor(
      'runWatchers() results',
      async () => {
        const r = await a.runWatchers()
        return r.length ? r : undefined
      },
      TIMING.eventMs,
      50,
    )
    assert.deepEqual(results, [`hello ${b.memberId}`])
    const cb = (): void => {}
    await assert.rejects(a.unwatchLeaveGroup(g, cb), WatchCallbackNotFoundError)
  })

  h.gated('groups', 'watchers: a pending watch keeps its process alive until its event comes', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'test/support/watch-process.ts', h.config.url, rid('g')], {
      timeout: 30_000,
    })
    assert.match(stdout, /^joined joiner-\d+$/m)
  })

  h.gated('groups', 'watchers: a throwing callback becomes a warning and others still run', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    let ran = false
    await a.watchJoinGroup(g, () => {
      throw new Error('boom')
    })
    await a.watchJoinGroup(g, () => (ran = true))
    const warning = nextEvent<Error>(a, 'warning', (e) => e.message.includes('boom'), TIMING.eventMs)
    await b.joinGroup(g)
    await warning
    await waitFor('the second callback', () => ran, TIMING.eventMs)
  })

  h.gated('pushWatch', 'watchers: pushed changes arrive well within one poll interval', async (t) => {
    // Poll only every 60 s: anything faster than that was pushed.
    const a = await h.open(t, { watchIntervalMs: 60_000 })
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const stop = await a.watchGroup(g)
    const started = Date.now()
    const joined = nextEvent<MemberEvent>(a, 'memberJoined', (e) => e.group === g, TIMING.eventMs)
    await b.joinGroup(g)
    await joined
    assert.ok(Date.now() - started < TIMING.eventMs)
    await stop()
  }, async (t) => {
    // Without pushWatch, expiries are not pushed: the group is read on every watch interval, so
    // a long interval delays nothing that runWatchers() can fetch at once.
    const a = await h.open(t, { watchIntervalMs: 60_000, autoWatch: false })
    const b = await h.open(t)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.watchJoinGroup(g, (e) => e.member)
    await b.joinGroup(g)
    assert.deepEqual(await a.runWatchers(), [b.memberId])
  })

  h.gated('expiryWake', 'watchers: a member that stops beating is seen leaving at its expiry, though polls are a minute apart', async (t) => {
    const a = await h.open(t, { fast: true, watchIntervalMs: 60_000 })
    const b = await h.open(t, { fast: true, heartbeat: false })
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    await a.watchGroup(g)
    const startedAt = Date.now()
    // Nothing polls within the wait: only the wake at b's expiry can deliver this.
    await nextEvent<MemberEvent>(a, 'memberLeft', (e) => e.member === b.memberId, TIMING.expirySeconds * 1000 + TIMING.expirySlackMs)
    t.diagnostic(`memberLeft ${Date.now() - startedAt} ms after the watch began (liveness window ${TIMING.expirySeconds} s, polls 60 s apart)`)
    assert.deepEqual(await a.getMembers(g), [a.memberId])
  })

  h.gated(['groups', 'acrossProcesses'], 'expiry: a member killed with SIGKILL is seen leaving, without runWatchers()', async (t) => {
    if (!h.caps.has('memberExpiry') && !h.caps.has('sessionExpiry')) throw new Error('a cross-process driver must declare memberExpiry or sessionExpiry')
    const a = await h.open(t, { fast: true })
    const g = rid('g')
    await a.joinGroupCreate(g)
    await a.watchGroup(g)
    const victim = rid('victim')
    // Recorded from the start, awaited once the child says it joined: the bound is then the
    // watcher's, not the child's start-up (seconds of module loading on a busy machine).
    const joins: string[] = []
    a.on('memberJoined', (e) => e.group === g && joins.push(e.member))
    const child = await h.spawnMember(t, g, victim, { fast: true, capabilities: { pid: 'child' } })
    await waitFor('memberJoined of the child', () => joins.includes(victim), TIMING.eventMs)
    assert.deepEqual(await a.getMemberCapabilities(g, victim), { pid: 'child' })
    const left = nextEvent<MemberEvent>(a, 'memberLeft', (e) => e.member === victim, TIMING.expirySeconds * 1000 + TIMING.expirySlackMs)
    const killedAt = Date.now()
    child.kill('SIGKILL')
    await left
    const tookMs = Date.now() - killedAt
    t.diagnostic(`memberLeft ${tookMs} ms after SIGKILL (liveness window ${TIMING.expirySeconds} s)`)
    assert.deepEqual(await a.getMembers(g), [a.memberId])
  }, async (t) => {
    // In-process only: a member never expires, however long it goes without heartbeats.
    const a = await h.open(t)
    const b = await h.open(t, { heartbeat: false })
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    await new Promise((r) => setTimeout(r, TIMING.expirySeconds * 1000 + 500))
    assert.deepEqual(await a.getMembers(g), [a.memberId, b.memberId].sort())
  })
}
