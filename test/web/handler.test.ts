/**
 * createStatusHandler(): the status routes mounted under a prefix in the test's own node:http
 * server beside the application's own routes, reading a real Redis: the page and its relative
 * links, the JSON API, the health check, the event stream, metrics, and what is left to the app.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { connect, InvalidArgumentError, MetricsUnavailableError, type Coordinator } from '../../src/index.js'
import { createStatusHandler, type StatusHandler } from '../../src/web/public.js'
import { createStatusApp } from '../../src/web/status-app.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { call, openEvents, WEB_TIMING } from './support.js'

/** Listens on a free loopback port; resolves with the base URL. */
async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

describe('web: status handler in an application server', () => {
  let app: Coordinator
  let observer: Coordinator
  let status: StatusHandler
  let server: Server
  let base: string
  const group = rid('handler')

  before(async () => {
    app = await connect(serverUrl('redis'), { memberId: rid('app') })
    observer = await connect(serverUrl('redis'), { memberId: rid('observer') })
    await app.joinGroupCreate(group, { role: 'worker' })
    status = await createStatusHandler({ coordinator: observer, basePath: '/ops/rollcall/', metrics: true, refreshMs: 200, title: 'app status' })
    // The application's own server: its routes first, the status handler as the fallback with a next().
    server = createServer((req, res) => {
      if (req.url === '/app') return void res.end('the app itself')
      status(req, res, () => {
        res.writeHead(404, { 'content-type': 'text/plain' })
        res.end('app 404')
      })
    })
    base = await listen(server)
  })

  after(async () => {
    await status?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await app?.stop()
    await observer?.stop()
  })

  it('web: handler: the page lives at basePath/ with relative links only, and basePath redirects there', async () => {
    assert.equal(status.basePath, '/ops/rollcall')
    const redirect = await call(base, 'GET', '/ops/rollcall?topic=x')
    assert.equal(redirect.status, 308)
    assert.equal(redirect.headers.location, '/ops/rollcall/?topic=x')
    const page = await call(base, 'GET', '/ops/rollcall/')
    assert.equal(page.status, 200)
    assert.match(page.text, /<title>app status<\/title>/)
    assert.match(page.text, new RegExp(`data-group="${group}"`))
    assert.match(page.text, /href="v1\/groups"/)
    assert.match(page.text, /href="metrics"/)
    assert.match(page.text, /new EventSource\('v1\/events'/)
    assert.doesNotMatch(page.text, /(?:href|action|src)="\/(?!\/)/, 'no root-absolute link')
    assert.doesNotMatch(page.text, /'\/v1\//, 'the script uses no root-absolute path')
    // Every relative link resolves under the prefix and is answered by a status route there (v1/services
    // by its own 404 NOT_CONFIGURED: this handler shows no service group), never by the app's 404.
    const pageUrl = new URL('/ops/rollcall/', base)
    const answers: Record<string, number> = { 'v1/groups': 200, 'v1/services': 404, 'healthz': 200, 'metrics': 200 }
    for (const [href, expected] of Object.entries(answers)) {
      const r = await call(base, 'GET', new URL(href, pageUrl).pathname)
      assert.equal(r.status, expected, `${href}: ${r.text.slice(0, 200)}`)
      assert.notEqual(r.text, 'app 404', href)
    }
  })

  it('web: handler: the JSON API, health check, event stream and metrics answer under the prefix', async () => {
    const groups = await call(base, 'GET', '/ops/rollcall/v1/groups')
    assert.equal(groups.status, 200)
    const row = groups.json.groups.find((g: { group: string }) => g.group === group)
    assert.deepEqual(row.members.map((m: { capabilities: unknown }) => m.capabilities), [{ role: 'worker' }])
    const one = await call(base, 'GET', `/ops/rollcall/v1/groups/${group}`)
    assert.equal(one.status, 200)
    const health = await call(base, 'GET', '/ops/rollcall/healthz')
    assert.equal(health.status, 200, health.text)
    assert.equal(health.json.status, 'ok')
    const stream = await openEvents(new URL('/ops/rollcall/', base).href)
    try {
      const snapshot = await stream.next('snapshot', () => true)
      assert.ok(snapshot.groups.some((g: { group: string }) => g.group === group))
      const other = await connect(serverUrl('redis'), { memberId: rid('late') })
      try {
        await other.joinGroup(group)
        await stream.next('group', (g) => g.group === group && g.members.length === 2)
      } finally {
        await other.stop()
      }
    } finally {
      stream.close()
    }
    const metrics = await waitFor('the metrics to count the group', async () => {
      const r = await call(base, 'GET', '/ops/rollcall/metrics')
      return r.status === 200 && r.text.includes('rollcall_http_requests_total{route="/v1/groups",method="GET",status="200"}') ? r : undefined
    }, WEB_TIMING.liveMs)
    assert.match(metrics.text, /rollcall_backend_connection_state\{state="connected"\} 1/)
  })

  it("web: handler: requests outside the prefix, and unknown routes under it, reach the app's next handler", async () => {
    assert.equal((await call(base, 'GET', '/app')).text, 'the app itself')
    for (const path of ['/v1/groups', '/healthz', '/ops/rollcallx/v1/groups', '/ops/rollcall/nope']) {
      const r = await call(base, 'GET', path)
      assert.deepEqual([r.status, r.text], [404, 'app 404'], path)
    }
  })

  it('web: handler: without next, other paths are a JSON 404 naming the routes; without metrics there is no metrics route', async (t) => {
    const bare = await createStatusHandler({ coordinator: observer, basePath: '/s' })
    t.after(() => bare.close())
    const s = createServer((req, res) => bare(req, res))
    t.after(() => new Promise((resolve) => s.close(resolve)))
    const url = await listen(s)
    const outside = await call(url, 'GET', '/elsewhere')
    assert.equal(outside.status, 404)
    assert.equal(outside.json.error.code, 'ROUTE_NOT_FOUND')
    assert.match(outside.json.error.message, /see \/s\/ for the page and \/s\/v1\/services, .*\/s\/healthz/)
    assert.equal((await call(url, 'GET', '/s/metrics')).status, 404)
    const page = await call(url, 'GET', '/s/')
    assert.doesNotMatch(page.text, /href="metrics"/)
    assert.equal((await call(url, 'GET', '/s/healthz')).status, 200)
  })

  it('web: handler: a basePath that is not a URL path is a typed error before any read', async () => {
    for (const basePath of ['status', '/a?b', '/a//b']) {
      await assert.rejects(
        createStatusHandler({ coordinator: observer, basePath }),
        (err: unknown) => err instanceof InvalidArgumentError && /basePath/.test(err.message),
        basePath,
      )
    }
  })

  it('web: handler: without prom-client (as rollcall serve runs then), the page links metrics and /metrics answers 501 naming the fix', async (t) => {
    const app = await createStatusApp({ coordinator: observer }, '', new MetricsUnavailableError())
    t.after(() => app.close())
    const s = createServer((req, res) => void app.handle(req, res))
    t.after(() => new Promise((resolve) => s.close(resolve)))
    const url = await listen(s)
    const r = await call(url, 'GET', '/metrics')
    assert.equal(r.status, 501)
    assert.equal(r.json.error.code, 'METRICS_UNAVAILABLE')
    assert.match(r.json.error.message, /npm install prom-client/)
    assert.equal((await call(url, 'GET', '/healthz')).status, 200)
  })
})
