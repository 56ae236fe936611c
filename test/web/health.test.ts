/**
 * /healthz and the connection-state metrics against a coordination backend that dies and comes
 * back: a private Redis on its own port, SIGKILLed and restarted.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { startStatusServer, type StatusServer } from '../../src/web/index.js'
import { startRedis, type PrivateServer } from '../support/servers.js'
import { rid, waitFor } from '../support/wait.js'
import { call } from './support.js'

describe('web: health', () => {
  let redis: PrivateServer
  let observer: Coordinator
  let server: StatusServer

  before(async () => {
    redis = await startRedis()
    observer = await connect(`${redis.url}?timeout=2`, { memberId: rid('observer') })
    server = await startStatusServer({ coordinator: observer, port: 0, refreshMs: 200, heartbeatProbeMs: 200 })
  })

  after(async () => {
    await server?.close()
    await observer?.stop()
    await redis?.stop()
  })

  it('web: health: /healthz is 200 while Redis answers, 503 naming the check while it is dead, 200 again after', async () => {
    const ok = await call(server.url, 'GET', '/healthz')
    assert.equal(ok.status, 200)
    assert.deepEqual(Object.keys(ok.json.checks), ['coordination'])
    redis.kill()
    const down = await waitFor(
      '/healthz to be 503',
      async () => {
        const r = await call(server.url, 'GET', '/healthz')
        return r.status === 503 ? r : undefined
      },
      15_000,
      100,
    )
    assert.equal(down.json.status, 'unavailable')
    assert.equal(down.json.checks.coordination.ok, false)
    assert.ok(down.json.checks.coordination.error.length > 0)
    const groups = await call(server.url, 'GET', '/v1/groups')
    assert.ok(groups.status === 503 || groups.status === 504, `GET /v1/groups while Redis is dead: ${groups.status} ${groups.text}`)
    assert.match(groups.json.error.code, /CONNECTION_FAILED|OPERATION_TIMEOUT/)
    await redis.start()
    await waitFor('/healthz to be 200 again', async () => (await call(server.url, 'GET', '/healthz')).status === 200, 30_000, 200)
    const metrics = (await call(server.url, 'GET', '/metrics')).text
    assert.match(metrics, /rollcall_backend_connection_state\{state="(connected|reconnected)"\} 1/)
  })

  it('web: health: a server with neither services nor groups has nothing to check and is healthy', async () => {
    const bare = await startStatusServer({ port: 0 })
    try {
      const r = await call(bare.url, 'GET', '/healthz')
      assert.equal(r.status, 200)
      assert.deepEqual(r.json, { status: 'ok', checks: {} })
      const services = await call(bare.url, 'GET', '/v1/services')
      assert.equal(services.status, 404)
      assert.equal(services.json.error.code, 'NOT_CONFIGURED')
    } finally {
      await bare.close()
    }
  })
})
