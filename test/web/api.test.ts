/**
 * The status server's HTTP surface, route by route: the os-services-shaped JSON API and its bad
 * inputs, tokens and read-only mode, groups, the event stream, /metrics and /healthz. The server
 * runs in this process on a random loopback port over a real SQLite catalog (db driver, services
 * reporting from a second ServiceGroup) and a memory:// coordination store.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { createServiceGroup, openCatalog, type Catalog, type ServiceGroup, type ServiceRecord } from '../../src/servicegroup/index.js'
import { startStatusServer, MAX_BODY_BYTES, type StatusServer } from '../../src/web/index.js'
import { rid, waitFor } from '../support/wait.js'
import { call, openEvents, send, tempDir, WEB_TIMING } from './support.js'

const TOKEN = `tok-${Math.random().toString(36).slice(2)}`
const TIMES = { reportIntervalSeconds: 0.3, serviceDownTimeSeconds: 1.5, initialReportDelaySeconds: 0 }

describe('web: api', () => {
  const cleanups: (() => Promise<unknown> | unknown)[] = []
  let catalog: Catalog
  let sg: ServiceGroup
  let reporter: ServiceGroup
  let observer: Coordinator
  let member: Coordinator
  let server: StatusServer
  let readOnly: StatusServer
  let base: string
  let roBase: string
  const topic = rid('api')
  const group = rid('grp')
  const svc: Record<string, ServiceRecord> = {}

  before(async () => {
    const dir = tempDir({ after: (fn: () => unknown) => cleanups.push(fn) })
    catalog = await openCatalog(`sqlite:///${join(dir, 'rollcall.sqlite')}`)
    sg = await createServiceGroup({ catalog, driver: 'db', ...TIMES })
    reporter = await createServiceGroup({ catalog, driver: 'db', ...TIMES })
    svc.a = await reporter.register({ host: 'node-a', binary: 'rollcall-api', topic, availabilityZone: 'az1' })
    svc.b = await reporter.register({ host: 'node-b', binary: 'rollcall-api', topic, availabilityZone: 'az2' })
    svc.c = await reporter.register({ host: 'node-c', binary: 'rollcall-worker', topic: `${topic}-w` })
    await catalog.markDown('node-c', `${topic}-w`)
    await reporter.join('node-a', topic, svc.a)
    await reporter.join('node-b', topic, svc.b)
    const store = `memory://${rid('web')}`
    observer = await connect(store, { memberId: 'observer' })
    member = await connect(store, { memberId: 'member-1' })
    await member.joinGroupCreate(group, { host: 'node-a', note: 'mirror at redis://admin:hunter2-secret@10.0.0.1:6379' })
    member.watchElectedAsLeader(group, () => undefined)
    server = await startStatusServer({ serviceGroup: sg, coordinator: observer, token: TOKEN, port: 0, refreshMs: 200 })
    readOnly = await startStatusServer({ serviceGroup: sg, port: 0, refreshMs: 200 })
    base = server.url
    roBase = readOnly.url
    await waitFor('both reporting services to be up', async () => {
      const r = await call(base, 'GET', `/v1/services?topic=${topic}&state=up`)
      return r.json.services.length === 2
    }, WEB_TIMING.liveMs)
  })

  after(async () => {
    await server?.close()
    await readOnly?.close()
    await Promise.allSettled([reporter?.close(), sg?.close(), member?.stop(), observer?.stop()])
    await catalog?.close()
    for (const fn of cleanups.reverse()) await fn()
  })

  it('web: api: GET /v1/services lists os-services fields, by topic then host', async () => {
    const r = await call(base, 'GET', '/v1/services')
    assert.equal(r.status, 200)
    assert.match(String(r.headers['content-type']), /^application\/json/)
    const mine = r.json.services.filter((s: { topic: string }) => s.topic.startsWith(topic))
    assert.deepEqual(mine.map((s: { host: string }) => s.host), ['node-a', 'node-b', 'node-c'])
    const a = mine[0]
    assert.deepEqual(Object.keys(a).sort(), [
      'binary',
      'created_at',
      'disabled_reason',
      'forced_down',
      'host',
      'id',
      'last_report_at',
      'state',
      'status',
      'topic',
      'updated_at',
      'version',
      'zone',
    ])
    assert.equal(a.id, svc.a!.id)
    assert.equal(a.binary, 'rollcall-api')
    assert.equal(a.zone, 'az1')
    assert.equal(a.status, 'enabled')
    assert.equal(a.state, 'up')
    assert.equal(a.forced_down, false)
    assert.ok(Date.parse(a.updated_at) > 0 && Date.parse(a.last_report_at) > 0)
    assert.equal(mine[2].state, 'down', 'node-c was marked down')
  })

  it('web: api: filters by topic, zone, state, host and binary; bad filters are 400', async () => {
    const byZone = await call(base, 'GET', `/v1/services?topic=${topic}&zone=az2`)
    assert.deepEqual(byZone.json.services.map((s: { host: string }) => s.host), ['node-b'])
    const down = await call(base, 'GET', `/v1/services?topic=${topic}-w&state=down`)
    assert.deepEqual(down.json.services.map((s: { host: string }) => s.host), ['node-c'])
    const byHost = await call(base, 'GET', `/v1/services?host=node-a&binary=rollcall-api`)
    assert.deepEqual(byHost.json.services.map((s: { id: number }) => s.id), [svc.a!.id])
    const badState = await call(base, 'GET', '/v1/services?state=sideways')
    assert.equal(badState.status, 400)
    assert.equal(badState.json.error.code, 'INVALID_ARGUMENT')
    assert.match(badState.json.error.message, /state must be up or down/)
    const unknown = await call(base, 'GET', '/v1/services?colour=red')
    assert.equal(unknown.status, 400)
    assert.match(unknown.json.error.message, /Unknown query parameter "colour"/)
  })

  it('web: api: GET /v1/services/{id}; unknown id 404, malformed id 400', async () => {
    const r = await call(base, 'GET', `/v1/services/${svc.b!.id}`)
    assert.equal(r.status, 200)
    assert.equal(r.json.service.host, 'node-b')
    const missing = await call(base, 'GET', '/v1/services/987654')
    assert.equal(missing.status, 404)
    assert.equal(missing.json.error.code, 'SERVICE_NOT_FOUND')
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999', '%00']) {
      const b = await call(base, 'GET', `/v1/services/${bad}`)
      assert.equal(b.status, 400, bad)
      assert.equal(b.json.error.code, 'INVALID_ARGUMENT')
    }
  })

  it('web: api: PUT disables with a reason, enables (clearing it), forces down and back: the catalog changes', async () => {
    const id = svc.a!.id
    const dis = await send(base, 'PUT', `/v1/services/${id}`, { status: 'disabled', disabled_reason: 'maintenance' }, TOKEN)
    assert.equal(dis.status, 200, dis.text)
    assert.equal(dis.json.service.status, 'disabled')
    assert.equal(dis.json.service.disabled_reason, 'maintenance')
    assert.equal(dis.json.service.state, 'up', 'disabled never changes State')
    let rec = await catalog.get(id)
    assert.equal(rec.disabled, true)
    assert.equal(rec.disabledReason, 'maintenance')
    const en = await send(base, 'PUT', `/v1/services/${id}`, { status: 'enabled' }, TOKEN)
    assert.equal(en.json.service.status, 'enabled')
    assert.equal(en.json.service.disabled_reason, null)
    rec = await catalog.get(id)
    assert.equal(rec.disabled, false)
    assert.equal(rec.disabledReason, null)
    const forced = await send(base, 'PUT', `/v1/services/${id}`, { forced_down: true }, TOKEN)
    assert.equal(forced.json.service.forced_down, true)
    assert.equal(forced.json.service.state, 'down', 'forced_down overrides liveness')
    assert.equal((await catalog.get(id)).forcedDown, true)
    const unforced = await send(base, 'PUT', `/v1/services/${id}`, { forced_down: false }, TOKEN)
    assert.equal(unforced.json.service.state, 'up')
    assert.equal((await catalog.get(id)).forcedDown, false)
  })

  it('web: api: PUT rejects malformed JSON, oversized bodies, unknown fields and wrong types', async () => {
    const id = svc.b!.id
    const path = `/v1/services/${id}`
    const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
    const malformed = await call(base, 'PUT', path, { body: '{"status": "disabled",', headers: auth })
    assert.equal(malformed.status, 400)
    assert.equal(malformed.json.error.code, 'INVALID_JSON')
    assert.match(malformed.json.error.message, /not valid JSON/)
    const empty = await call(base, 'PUT', path, { body: '', headers: auth })
    assert.equal(empty.status, 400)
    const huge = await call(base, 'PUT', path, { body: JSON.stringify({ status: 'disabled', disabled_reason: 'x'.repeat(MAX_BODY_BYTES) }), headers: auth })
    assert.equal(huge.status, 413)
    assert.equal(huge.json.error.code, 'PAYLOAD_TOO_LARGE')
    const wrongType = await call(base, 'PUT', path, { body: 'status=disabled', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' } })
    assert.equal(wrongType.status, 415)
    const cases: [unknown, RegExp][] = [
      [{}, /Nothing to change/],
      [[], /must be a JSON object/],
      [{ status: 'off' }, /status must be "enabled" or "disabled"/],
      [{ status: 'enabled', disabled_reason: 'x' }, /disabled_reason can only be given with "status": "disabled"/],
      [{ disabled_reason: 'x' }, /disabled_reason can only be given/],
      [{ status: 'disabled', disabled_reason: 'x'.repeat(256) }, /at most 255 characters/],
      [{ forced_down: 'yes' }, /forced_down must be true or false/],
      [{ status: 'disabled', colour: 'red' }, /Unknown field "colour"/],
    ]
    for (const [body, message] of cases) {
      const r = await send(base, 'PUT', path, body, TOKEN)
      assert.equal(r.status, 400, JSON.stringify(body))
      assert.match(r.json.error.message, message)
    }
    const rec = await catalog.get(id)
    assert.equal(rec.disabled, false, 'nothing was written by a rejected request')
    const unknownId = await send(base, 'PUT', '/v1/services/987654', { status: 'disabled' }, TOKEN)
    assert.equal(unknownId.status, 404)
  })

  it('web: api: writes need the bearer token; a server without one is read-only and says how to enable writes', async () => {
    const path = `/v1/services/${svc.b!.id}`
    const none = await send(base, 'PUT', path, { status: 'disabled' })
    assert.equal(none.status, 401)
    assert.equal(none.json.error.code, 'UNAUTHORIZED')
    assert.match(String(none.headers['www-authenticate']), /^Bearer/)
    const wrong = await send(base, 'PUT', path, { status: 'disabled' }, `${TOKEN}x`)
    assert.equal(wrong.status, 401)
    const basic = await call(base, 'DELETE', path, { headers: { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` } })
    assert.equal(basic.status, 401)
    const ro = await send(roBase, 'PUT', path, { status: 'disabled' }, TOKEN)
    assert.equal(ro.status, 403)
    assert.equal(ro.json.error.code, 'READ_ONLY')
    assert.match(ro.json.error.message, /\[api\] token/)
    assert.match(ro.json.error.message, /ROLLCALL_API_TOKEN/)
    const roDelete = await call(roBase, 'DELETE', path)
    assert.equal(roDelete.status, 403)
    assert.equal((await catalog.get(svc.b!.id)).disabled, false)
    assert.equal((await call(roBase, 'GET', path)).status, 200, 'reads need no token')
  })

  it('web: api: DELETE makes the driver forget the service and removes the record', async () => {
    const extra = await reporter.register({ host: 'node-d', binary: 'rollcall-api', topic })
    await reporter.join('node-d', topic, extra)
    await waitFor('node-d up', async () => (await call(base, 'GET', `/v1/services/${extra.id}`)).json.service.state === 'up', WEB_TIMING.liveMs)
    const r = await call(base, 'DELETE', `/v1/services/${extra.id}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    assert.equal(r.status, 204)
    assert.equal(r.text, '')
    await assert.rejects(catalog.get(extra.id), { code: 'SERVICE_NOT_FOUND' })
    assert.equal((await call(base, 'GET', `/v1/services/${extra.id}`)).status, 404)
    const list = await call(base, 'GET', `/v1/services?host=node-d`)
    assert.deepEqual(list.json.services, [])
    const again = await call(base, 'DELETE', `/v1/services/${extra.id}`, { headers: { authorization: `Bearer ${TOKEN}` } })
    assert.equal(again.status, 404)
    await reporter.leave('node-d', topic)
  })

  it('web: api: groups with members, capabilities and leader; unknown group 404', async () => {
    await waitFor(
      'the leader to be elected',
      async () => (await call(base, 'GET', `/v1/groups/${group}`)).json?.group?.leader === 'member-1',
      WEB_TIMING.liveMs,
    )
    const list = await call(base, 'GET', '/v1/groups')
    assert.equal(list.status, 200)
    const g = list.json.groups.find((x: { group: string }) => x.group === group)
    assert.deepEqual(g.members.map((m: { member_id: string }) => m.member_id), ['member-1'])
    assert.equal(g.members[0].capabilities.host, 'node-a')
    assert.equal(g.leader, 'member-1')
    const one = await call(base, 'GET', `/v1/groups/${encodeURIComponent(group)}`)
    assert.equal(one.json.group.group, group)
    const missing = await call(base, 'GET', `/v1/groups/${rid('nope')}`)
    assert.equal(missing.status, 404)
    assert.equal(missing.json.error.code, 'GROUP_NOT_FOUND')
    const badEscape = await call(base, 'GET', '/v1/groups/%E0%A4%A')
    assert.equal(badEscape.status, 400)
    const noGroups = await call(roBase, 'GET', '/v1/groups')
    assert.equal(noGroups.status, 404)
    assert.equal(noGroups.json.error.code, 'NOT_CONFIGURED')
  })

  it('web: api: unknown routes are 404 and wrong methods 405, as JSON errors', async () => {
    const r = await call(base, 'GET', '/v2/services')
    assert.equal(r.status, 404)
    assert.equal(r.json.error.code, 'ROUTE_NOT_FOUND')
    assert.equal((await call(base, 'GET', '/v1/services/1/extra')).status, 404)
    const m = await call(base, 'POST', '/v1/services', { body: '{}', headers: { 'content-type': 'application/json' } })
    assert.equal(m.status, 405)
    assert.match(String(m.headers.allow), /GET/)
    assert.equal((await call(base, 'DELETE', '/v1/groups')).status, 405)
    assert.equal((await call(base, 'HEAD', '/v1/services')).status, 200)
  })

  it('web: api: the event stream opens with a snapshot and pushes a row that changes', async () => {
    const stream = await openEvents(base)
    try {
      const snap = await stream.next('snapshot', () => true)
      assert.ok(snap.services.some((s: { id: number }) => s.id === svc.b!.id))
      assert.ok(snap.groups.some((g: { group: string }) => g.group === group))
      await send(base, 'PUT', `/v1/services/${svc.b!.id}`, { forced_down: true }, TOKEN)
      const ev = await stream.next('service', (row) => row.id === svc.b!.id && row.state === 'down')
      assert.equal(ev.forced_down, true)
      await send(base, 'PUT', `/v1/services/${svc.b!.id}`, { forced_down: false }, TOKEN)
      await stream.next('service', (row) => row.id === svc.b!.id && row.state === 'up')
      const joiner = await connect(observer.url, { memberId: 'member-2' })
      try {
        await joiner.joinGroup(group, { host: 'node-b' })
        await stream.next('group', (g) => g.group === group && g.members.length === 2)
      } finally {
        await joiner.stop()
      }
      await stream.next('group', (g) => g.group === group && g.members.length === 1)
    } finally {
      stream.close()
    }
  })

  it('web: api: a service that stops reporting turns down on the stream by itself', async () => {
    const stream = await openEvents(base)
    try {
      const extra = await reporter.register({ host: 'node-e', binary: 'rollcall-api', topic })
      await reporter.join('node-e', topic, extra)
      await stream.next('service', (row) => row.id === extra.id && row.state === 'up')
      const downAt = Date.now()
      await reporter.leave('node-e', topic)
      await stream.next('service', (row) => row.id === extra.id && row.state === 'down')
      assert.ok(Date.now() - downAt < 3000, 'a graceful leave shows within the refresh period')
    } finally {
      stream.close()
    }
  })

  it("web: api: /metrics is Prometheus text from the server's own registry", async () => {
    await call(base, 'GET', '/v1/services')
    const r = await call(base, 'GET', '/metrics')
    assert.equal(r.status, 200)
    assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/)
    assert.match(r.text, new RegExp(`rollcall_services\\{topic="${topic}",state="up"\\} [1-9]`))
    assert.match(r.text, new RegExp(`rollcall_services\\{topic="${topic}-w",state="down"\\} 1`))
    assert.match(r.text, new RegExp(`rollcall_group_members\\{group="${group}"\\} 1`))
    assert.match(r.text, /rollcall_heartbeat_duration_seconds_count [1-9]/)
    assert.match(r.text, /rollcall_backend_connection_state\{state="connected"\} 1/)
    assert.match(r.text, /rollcall_heartbeat_failures_total/)
    assert.match(r.text, /rollcall_refresh_duration_seconds_count\{view="services"\} [1-9]/)
    assert.match(r.text, /rollcall_report_latency_seconds_count\{topic="[^"]+"\} [1-9]/)
    assert.match(r.text, /rollcall_watcher_lag_seconds/)
    assert.match(r.text, /rollcall_http_requests_total\{route="\/v1\/services",method="GET",status="200"\} [1-9]/)
    assert.match(r.text, /process_cpu_user_seconds_total/)
    assert.match(r.text, /nodejs_eventloop_lag_seconds/)
    const { register } = await import('prom-client')
    assert.equal((await register.getMetricsAsJSON()).filter((m) => m.name.startsWith('rollcall_')).length, 0, 'the global registry stays empty')
  })

  it('web: api: /healthz is 200 with its checks while the backends answer', async () => {
    const r = await call(base, 'GET', '/healthz')
    assert.equal(r.status, 200)
    assert.equal(r.json.status, 'ok')
    assert.equal(r.json.checks.catalog.ok, true)
    assert.equal(r.json.checks.coordination.ok, true)
    assert.equal(r.json.checks.services.ok, true)
  })

  it('web: api: the page and every response carry security headers and no external asset', async () => {
    const page = await call(base, 'GET', '/')
    assert.equal(page.status, 200)
    assert.match(String(page.headers['content-type']), /^text\/html/)
    const csp = String(page.headers['content-security-policy'])
    assert.match(csp, /default-src 'none'/)
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1]
    assert.ok(nonce && page.text.includes(`<script nonce="${nonce}">`))
    assert.doesNotMatch(page.text, /<(?:script|link|img)[^>]+(?:src|href)="(?:https?:)?\/\//i, 'nothing fetched from elsewhere')
    assert.match(page.text, /node-a/)
    assert.equal(page.headers['x-content-type-options'], 'nosniff')
    const badFilter = await call(base, 'GET', '/?state=maybe')
    assert.equal(badFilter.status, 400)
  })

  it('web: api: values are HTML-escaped on the page', async () => {
    const evil = await reporter.register({ host: '<img src=x onerror=alert(1)>', binary: 'b"&\'', topic })
    try {
      await server.services!.refresh()
      const page = await call(base, 'GET', '/')
      assert.ok(!page.text.includes('<img src=x'), 'the host is escaped')
      assert.ok(page.text.includes('&#60;img src=x onerror=alert(1)&#62;'))
      assert.ok(page.text.includes('b&#34;&#38;&#39;'))
    } finally {
      await catalog.delete(evil.id)
    }
  })
})
