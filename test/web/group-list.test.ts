/**
 * The group lists at scale (issue 26): the page and `/v1/groups` show the groups with members by
 * default, filter by prefix, page with limit/cursor, and stay small and fast at 10,000 groups;
 * `/metrics` keeps a bounded number of series.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { MAX_GROUP_SERIES } from '../../src/web/metrics.js'
import { startStatusServer } from '../../src/web/index.js'
import { GROUP_READS_IN_FLIGHT } from '../../src/web/groups.js'
import { backend } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { call, openEvents } from './support.js'

describe('web: group list', { concurrency: 1 }, () => {
  it('web: group list: /v1/groups and the page show groups with members by default; prefix, empty=1, limit and cursor', async (t) => {
    const url = `${backend('redis').url}?namespace=${rid('ns')}`
    const member = await connect(url, { memberId: 'm1' })
    const observer = await connect(url, { memberId: rid('obs') })
    t.after(() => Promise.all([member.stop(), observer.stop()]))
    const live = ['app-a', 'app-b', 'app-c', 'db-a']
    const empty = ['app-empty', 'zz-empty']
    for (const g of live) await member.joinGroupCreate(g, { g })
    for (const g of empty) await member.createGroup(g)
    const server = await startStatusServer({ coordinator: observer, port: 0, refreshMs: 200 })
    t.after(() => server.close())
    const names = async (path: string): Promise<{ names: string[]; next: string | null }> => {
      const r = await call(server.url, 'GET', path)
      assert.equal(r.status, 200, `${path}: ${r.text}`)
      return { names: r.json.groups.map((g: { group: string }) => g.group), next: r.json.next_cursor }
    }
    assert.deepEqual(await names('/v1/groups'), { names: live, next: null })
    assert.deepEqual(await names('/v1/groups?empty=1'), { names: [...live, ...empty].sort(), next: null })
    assert.deepEqual(await names('/v1/groups?prefix=app-'), { names: ['app-a', 'app-b', 'app-c'], next: null })
    assert.deepEqual(await names('/v1/groups?prefix=app-&empty=1'), { names: ['app-a', 'app-b', 'app-c', 'app-empty'], next: null })
    // Pages of 2, following the cursor to the end.
    const seen: string[] = []
    let cursor: string | null = ''
    for (let pages = 0; cursor !== null; pages++) {
      assert.ok(pages < 5)
      const page = await names(`/v1/groups?empty=1&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      assert.ok(page.names.length <= 2)
      seen.push(...page.names)
      cursor = page.next
    }
    assert.deepEqual(seen, [...live, ...empty].sort())
    for (const bad of ['limit=0', 'limit=1001', 'limit=x', 'empty=maybe', 'nope=1']) {
      const r = await call(server.url, 'GET', `/v1/groups?${bad}`)
      assert.equal(r.status, 400, bad)
      assert.equal(r.json.error.code, 'INVALID_ARGUMENT', bad)
    }
    // The page: the same filters, from the view's last read.
    const cards = (html: string): string[] => [...html.matchAll(/<article class="group" data-group="([^"]+)"/g)].map((m) => m[1]!)
    assert.deepEqual(cards((await call(server.url, 'GET', '/')).text), live)
    assert.deepEqual(cards((await call(server.url, 'GET', '/?empty=1')).text), [...live, ...empty].sort())
    const firstPage = (await call(server.url, 'GET', '/?prefix=app-&limit=2')).text
    assert.deepEqual(cards(firstPage), ['app-a', 'app-b'])
    const next = /<a id="next-groups" href="([^"]+)"/.exec(firstPage)![1]!.replaceAll('&#38;', '&')
    assert.deepEqual(cards((await call(server.url, 'GET', `/${next}`)).text), ['app-c'])
    assert.equal((await call(server.url, 'GET', '/?limit=x')).status, 400)
  })

  it('web: group list: a group that loses its last member leaves the default list; an empty one that gains a member joins it within emptyRefreshMs', {
    timeout: 120_000,
  }, async (t) => {
    const url = `${backend('redis').url}?namespace=${rid('ns')}`
    const member = await connect(url, { memberId: 'm1' })
    const observer = await connect(url, { memberId: rid('obs') })
    t.after(() => Promise.all([member.stop(), observer.stop()]))
    await member.joinGroupCreate('busy', {})
    await member.createGroup('quiet')
    for (let i = 0; i < 50; i++) await member.createGroup(`other-${i}`)
    const emptyRefreshMs = 2000
    const server = await startStatusServer({ coordinator: observer, port: 0, refreshMs: 200, emptyRefreshMs })
    t.after(() => server.close())
    const listed = async (): Promise<string[]> => (await call(server.url, 'GET', '/v1/groups')).json.groups.map((g: { group: string }) => g.group)
    const events = await openEvents(server.url)
    t.after(() => events.close())
    assert.deepEqual(await listed(), ['busy'])
    assert.equal(server.groups!.watched, 1, 'only the group with a member is watched')
    await member.leaveGroup('busy')
    await events.next('group', (g) => g.group === 'busy' && g.members.length === 0)
    assert.deepEqual(await listed(), [])
    assert.equal(server.groups!.watched, 0)
    const joinedAt = performance.now()
    await member.joinGroup('quiet', {})
    await waitFor('the first member of a group that was empty to be listed', async () => (await listed()).includes('quiet') || undefined, 30_000, 100)
    await events.next('group', (g) => g.group === 'quiet' && g.members.length === 1)
    t.diagnostic(`a first member into a group that was empty showed after ${Math.round(performance.now() - joinedAt)} ms (emptyRefreshMs ${emptyRefreshMs})`)
    assert.equal(server.groups!.watched, 1)
    assert.match((await call(server.url, 'GET', '/')).text, /data-group="quiet"/)
  })

  it(
    'web: group list: 10,000 groups: the page and /v1/groups stay small and quick; /metrics keeps at most 500 group series',
    { timeout: 180_000 },
    async (t) => {
      const url = backend('memory').url
      const owner = await connect(url, { memberId: rid('owner') })
      const observer = await connect(url, { memberId: rid('obs') })
      t.after(() => Promise.all([owner.stop(), observer.stop()]))
      const prefix = rid('big')
      const liveCount = MAX_GROUP_SERIES + 100
      const groups = Array.from({ length: 10_000 }, (_v, i) => `${prefix}-${String(i).padStart(5, '0')}`)
      for (let i = 0; i < groups.length; i += 500) {
        await Promise.all(groups.slice(i, i + 500).map((g, j) => (i + j < liveCount ? owner.joinGroupCreate(g, {}) : owner.createGroup(g))))
      }
      // The first refresh reads every group it finds, a bounded number at a time.
      let reading = 0
      let mostReading = 0
      const read = observer.getMembersWithCapabilities.bind(observer)
      observer.getMembersWithCapabilities = async (g) => {
        mostReading = Math.max(mostReading, ++reading)
        return read(g).finally(() => reading--)
      }
      const server = await startStatusServer({ coordinator: observer, port: 0 })
      t.after(() => server.close())
      assert.ok(mostReading <= GROUP_READS_IN_FLIGHT, `${mostReading} group reads in flight at once`)
      const timed = async (path: string): Promise<{ ms: number; text: string; json: any }> => {
        const t0 = performance.now()
        const r = await call(server.url, 'GET', path)
        assert.equal(r.status, 200, path)
        return { ms: performance.now() - t0, text: r.text, json: r.json }
      }
      const page = await timed(`/?prefix=${prefix}`)
      const api = await timed(`/v1/groups?prefix=${prefix}&limit=100`)
      const apiEmpty = await timed(`/v1/groups?prefix=${prefix}&empty=1&cursor=${groups[9000]}`)
      const metrics = await timed('/metrics')
      // The event stream's snapshot: the page of groups its query asks for, not every group.
      const stream = await openEvents(server.url, `?prefix=${prefix}&limit=200`)
      const snapshot = await stream.next('snapshot', () => true)
      stream.close()
      assert.equal(snapshot.groups.length, 200)
      assert.ok(snapshot.groups.every((g: { members: unknown[] }) => g.members.length === 1))
      t.diagnostic(
        `10,000 groups (${liveCount} with a member): page ${Math.round(page.ms)} ms ${page.text.length} B, /v1/groups?limit=100 ${Math.round(api.ms)} ms, `
          + `empty=1 last 999 ${Math.round(apiEmpty.ms)} ms, /metrics ${Math.round(metrics.ms)} ms ${metrics.text.length} B`,
      )
      // The page shows 200 groups with members and a link to the next ones; no empty group.
      assert.equal([...page.text.matchAll(/<article class="group"/g)].length, 200)
      assert.match(page.text, /id="next-groups"/)
      assert.ok(!page.text.includes(groups[liveCount]!), 'an empty group is on the page')
      assert.ok(page.text.length < 200_000, `the page is ${page.text.length} bytes`)
      assert.equal(api.json.groups.length, 100)
      assert.equal(api.json.next_cursor, groups[99])
      assert.equal(apiEmpty.json.groups.length, 999)
      assert.equal(apiEmpty.json.next_cursor, null)
      // Bounded series: the 500 largest groups with members; empty ones only in the totals.
      const series = metrics.text.split('\n').filter((l) => l.startsWith('rollcall_group_members{'))
      assert.equal(series.length, MAX_GROUP_SERIES)
      assert.match(metrics.text, new RegExp(`^rollcall_groups\\{members="none"\\} ${10_000 - liveCount}$`, 'm'))
      assert.match(metrics.text, new RegExp(`^rollcall_groups\\{members="some"\\} ${liveCount}$`, 'm'))
      // Generous bounds for a loaded machine: each is a few to a few hundred milliseconds.
      for (const [what, ms] of [['page', page.ms], ['api', api.ms], ['api empty=1', apiEmpty.ms], ['metrics', metrics.ms]] as const) {
        assert.ok(ms < 5000, `${what} took ${Math.round(ms)} ms`)
      }
    },
  )
})
