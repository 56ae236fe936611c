/**
 * No credential from a backend URL appears in anything the status server sends: the page, every
 * JSON route, the event stream, /metrics, /healthz and error bodies, while the backends answer and
 * while they do not. The catalog and the coordination backend are the real PostgreSQL (which
 * trusts loopback, so the password in the URL is sent only where asked for), reached through a
 * fault-injecting proxy that is cut mid-test.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { connect, type Coordinator } from '../../src/index.js'
import { createServiceGroup, openCatalog, type Catalog, type ServiceGroup } from '../../src/servicegroup/index.js'
import { startStatusServer, type StatusServer } from '../../src/web/index.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { rid, waitFor } from '../support/wait.js'
import { call, openEvents, WEB_TIMING } from './support.js'

const SECRET = `pw-${Math.random().toString(36).slice(2, 12)}`
const TOKEN = `tok-${Math.random().toString(36).slice(2)}`

describe('web: credentials', () => {
  let proxy: TcpProxy
  let url: string
  let catalog: Catalog
  let sg: ServiceGroup
  let observer: Coordinator
  let member: Coordinator
  let server: StatusServer
  const tablePrefix = `w_${Math.random().toString(36).slice(2, 10)}_`
  const group = rid('cred')
  const topic = rid('cred-topic')
  let serviceId = 0

  before(async () => {
    const target = new URL(serverUrl('postgresql'))
    proxy = await TcpProxy.start(Number(target.port || 5432))
    url = `postgresql://${target.username || 'postgres'}:${SECRET}@127.0.0.1:${proxy.port}${target.pathname}`
    catalog = await openCatalog(url, { tablePrefix })
    sg = await createServiceGroup({ catalog, driver: 'db', reportIntervalSeconds: 0.5, serviceDownTimeSeconds: 2, initialReportDelaySeconds: 0 })
    const rec = await sg.register({ host: 'node-1', binary: `mirror-of-postgresql://u:${SECRET}@db`, topic })
    serviceId = rec.id
    await sg.join('node-1', topic, rec)
    // Tables of its own: /v1/groups lists every group of the namespace, and the shared one holds
    // the groups of every other test running at the same time.
    const coordinationUrl = `${url}?namespace=${tablePrefix}c_`
    observer = await connect(coordinationUrl, { memberId: rid('observer') })
    member = await connect(coordinationUrl, { memberId: rid('member') })
    await member.joinGroupCreate(group, { backup: `redis://admin:${SECRET}@10.1.2.3:6379/0`, dsn: `mysql://root:${SECRET}@db/x?password=${SECRET}` })
    server = await startStatusServer({ serviceGroup: sg, coordinator: observer, token: TOKEN, port: 0, refreshMs: 200 })
    await waitFor('the group on the page', () => server.groups!.rows.some((g) => g.group === group), WEB_TIMING.liveMs)
  })

  after(async () => {
    proxy?.restore()
    await server?.close()
    await Promise.allSettled([member?.leaveGroup(group), sg?.close()])
    await Promise.allSettled([member?.stop(), observer?.stop()])
    await catalog?.close()
    await proxy?.close()
    const client = new pg.Client({ connectionString: serverUrl('postgresql') })
    await client.connect()
    try {
      const rest = await client.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE $1`, [`${tablePrefix.replace(/_/g, '\\_')}%`])
      for (const row of rest.rows as { tablename: string }[]) await client.query(`DROP TABLE IF EXISTS "${row.tablename}" CASCADE`)
      const sequences = await client.query(`SELECT sequencename FROM pg_sequences WHERE sequencename LIKE $1`, [`${tablePrefix.replace(/_/g, '\\_')}%`])
      for (const row of sequences.rows as { sequencename: string }[]) await client.query(`DROP SEQUENCE IF EXISTS "${row.sequencename}"`)
    } finally {
      await client.end()
    }
  })

  async function everything(): Promise<string[]> {
    const id = serviceId
    const paths = [
      '/',
      `/?topic=${topic}`,
      '/v1/services',
      `/v1/services/${id}`,
      '/v1/services/424242',
      '/v1/groups',
      `/v1/groups/${group}`,
      '/v1/groups/nope-x',
      '/metrics',
      '/healthz',
      '/nowhere',
    ]
    const bodies = await Promise.all(paths.map(async (p) => (await call(server.url, 'GET', p)).text))
    const stream = await openEvents(server.url)
    try {
      await stream.next('snapshot', () => true)
      bodies.push(JSON.stringify(stream.events))
    } finally {
      stream.close()
    }
    return bodies
  }

  it('web: credentials: no password from a URL in any response while the backends answer', async () => {
    const bodies = await everything()
    for (const body of bodies) assert.ok(!body.includes(SECRET), `a response holds the password: ${body.slice(0, 300)}`)
    const page = bodies[0]!
    assert.match(page, /postgresql:\/\/\*\*\*@127\.0\.0\.1/, 'the page names the backend, redacted')
    const groups = JSON.parse(bodies[5]!)
    const caps = groups.groups.find((g: { group: string }) => g.group === group).members[0].capabilities
    assert.equal(caps.backup, 'redis://***@10.1.2.3:6379/0')
    assert.equal(caps.dsn, 'mysql://***@db/x?password=***')
  })

  it('web: credentials: none either while the backend is cut off, in problems, errors and /healthz', async () => {
    const stream = await openEvents(server.url)
    try {
      proxy.cut()
      await waitFor('the page to report the problem', () => server.problems.length > 0, WEB_TIMING.liveMs)
      const health = await call(server.url, 'GET', '/healthz')
      assert.equal(health.status, 503)
      assert.equal(health.json.status, 'unavailable')
      const list = await call(server.url, 'GET', '/v1/services')
      assert.ok(list.status >= 500, `status ${list.status}`)
      assert.ok(list.json.error.code)
      await stream.next('health', (d) => d.problems.length > 0)
      const bodies = [...(await everything()), health.text, list.text, JSON.stringify(stream.events)]
      for (const body of bodies) assert.ok(!body.includes(SECRET), `a response holds the password: ${body.slice(0, 300)}`)
      assert.match(bodies[0]!, /cannot be read/)
    } finally {
      proxy.restore()
      stream.close()
    }
    await waitFor('/healthz to be 200 again', async () => (await call(server.url, 'GET', '/healthz')).status === 200, 30_000, 200)
  })
})
