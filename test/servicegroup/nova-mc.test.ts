/**
 * Nova's test_mc_servicegroup.py, ported onto a real (private) memcached, so that the exact key
 * names Nova asserts (`compute:fake-host`) can be used without colliding with other tests.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { MemcachedClient } from '../../src/clients/memcached/memcached-client.js'
import { createServiceGroup, type ServiceGroup } from '../../src/servicegroup/index.js'
import { McDriver } from '../../src/servicegroup/drivers/mc.js'
import { startMemcached, type PrivateServer } from '../support/servers.js'
import { waitFor } from '../support/wait.js'
import { FakeTimers } from './fake-timers.js'
import { openTestCatalog } from './support.js'

let server: PrivateServer
let client: MemcachedClient

before(async () => {
  server = await startMemcached()
  client = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port: server.port }], connectTimeoutMs: 2_000, requestTimeoutMs: 2_000 })
})
after(async () => {
  await client.close()
  await server.stop()
})

const host = 'fake-host'
const key = 'compute:fake-host'

describe('servicegroup: Nova mc driver tests', { concurrency: false }, () => {
  it('mc: test_is_up — no key is down, a key is up, each check is one get of compute:fake-host', async () => {
    await client.delete(key)
    const driver = new McDriver({ servers: [`127.0.0.1:${server.port}`], serviceDownTimeSeconds: 60 })
    try {
      const requests = driver.client.requestCount
      assert.equal(await driver.isUp({ host, topic: 'compute' }), false)
      await client.store('set', key, Buffer.from(new Date().toISOString()), 0, 60)
      assert.equal(await driver.isUp({ host, topic: 'compute' }), true)
      // One connection handshake (stats) plus exactly one get per check.
      assert.equal(driver.client.requestCount - requests, 3)
      assert.equal(driver.stats.reads, 2)
    } finally {
      await driver.close()
    }
  })

  it('mc: test_report_state — one set of compute:fake-host holding the report time, expiring after service_down_time', async () => {
    await client.delete(key)
    const driver = new McDriver({ servers: [`127.0.0.1:${server.port}`], serviceDownTimeSeconds: 60 })
    try {
      const before = Date.now()
      await driver.report({ host, topic: 'compute' } as never)
      assert.equal(driver.stats.writes, 1)
      const item = (await client.get([key])).get(key)
      assert.ok(item, 'no key after a report')
      const at = Date.parse(item.value.toString())
      assert.ok(at >= before - 1 && at <= Date.now() + 1, item.value.toString())
      const meta = await client.meta('mg', key, ['t'])
      const ttl = Number(meta.flags.get('t'))
      assert.ok(ttl > 55 && ttl <= 60, `TTL ${ttl}`)
    } finally {
      await driver.close()
    }
  })

  it('mc: expiry — a key set with service_down_time 2 s is up at once and down within 3 s (memcached counts whole seconds)', async () => {
    const driver = new McDriver({ servers: [`127.0.0.1:${server.port}`], serviceDownTimeSeconds: 2 })
    try {
      await driver.report({ host: 'ttl-host', topic: 'compute' } as never)
      assert.equal(await driver.isUp({ host: 'ttl-host', topic: 'compute' }), true)
      await waitFor('expiry', async () => !(await driver.isUp({ host: 'ttl-host', topic: 'compute' })), 3_500, 100)
    } finally {
      await driver.close()
    }
  })

  it('mc: getAll — one multi-get for the whole topic; deleted keys are down', async () => {
    const driver = new McDriver({ servers: [`127.0.0.1:${server.port}`], serviceDownTimeSeconds: 60 })
    try {
      const hosts = Array.from({ length: 100 }, (_, i) => `ga-${i}`)
      for (const h of hosts.slice(0, 50)) await driver.report({ host: h, topic: 'compute' } as never)
      await driver.leave('ga-0', 'compute')
      const reads = driver.stats.reads
      const requests = driver.client.requestCount
      const view = await driver.getAll('compute', hosts.map((h) => ({ host: h, topic: 'compute' })))
      assert.equal(driver.stats.reads - reads, 1)
      assert.equal(driver.client.requestCount - requests, 1)
      assert.deepEqual(hosts.filter((h) => view.isUp({ host: h, topic: 'compute' })), hosts.slice(1, 50))
    } finally {
      await driver.close()
    }
  })

  describe("mc: test_get_updated_time — the newer of the cache time and the record's updated_at", () => {
    const dbTime = new Date('2016-04-18T02:56:25.198871Z')
    let sg: ServiceGroup
    before(async () => {
      await client.delete(key)
    })
    const cases: [string, string | null, Date | null, Date | null][] = [
      ["mc has no key → the record's time", null, dbTime, dbTime],
      ['mc newer → the cache time (UTC)', '2016-04-18T03:56:25.198871Z', dbTime, new Date('2016-04-18T03:56:25.198Z')],
      ["record newer → the record's time", '2016-04-18T01:56:25.198871Z', dbTime, dbTime],
      ['record has none → the cache time', '2016-04-18T03:56:25.198871Z', null, new Date('2016-04-18T03:56:25.198Z')],
    ]
    for (const [what, cached, updatedAt, expected] of cases) {
      it(`mc: ${what}`, async (t) => {
        const catalog = await openTestCatalog(t)
        sg = await createServiceGroup({ catalog, driver: 'mc', memcacheServers: [`127.0.0.1:${server.port}`] })
        t.after(() => sg.close({ leave: false }))
        if (cached === null) await client.delete(key)
        else await client.store('set', key, Buffer.from(cached), 0, 60)
        const got = await sg.getUpdatedTime({ host, topic: 'compute', updatedAt })
        assert.equal(got?.toISOString(), expected?.toISOString())
      })
    }
  })

  it('mc: a broken client makes reports fail into the latch, never into the caller', async (t) => {
    const catalog = await openTestCatalog(t)
    const timers = new FakeTimers()
    const sg = await createServiceGroup({ catalog, driver: 'mc', memcacheServers: ['127.0.0.1:1'], reportIntervalSeconds: 1, timers })
    t.after(() => sg.close({ leave: false }))
    const svc = await sg.register({ host, binary: 'nova-compute', topic: 'compute' })
    await sg.join(host, 'compute', svc)
    await timers.advance(5_000)
    await waitFor('the latch', () => sg.health()[0]!.disconnected, 5_000)
    await assert.rejects(sg.isUp(svc), { code: 'SERVICEGROUP_UNAVAILABLE', message: /servicegroup driver mc is temporarily unavailable/ })
  })

  it('mc: no [memcache] servers is an error at start-up, naming the setting', async (t) => {
    const catalog = await openTestCatalog(t)
    await assert.rejects(createServiceGroup({ catalog, driver: 'mc' }), { code: 'INVALID_CONFIG', setting: '[memcache] servers' })
  })
})
