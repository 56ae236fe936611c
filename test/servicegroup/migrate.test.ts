/**
 * Migration off mc and zk: report_to_previous_driver reports to both drivers, so readers on either
 * see the service up; the checker lists the services on which the two disagree.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkMigration, compareDrivers, createServiceGroup, loadConfig } from '../../src/servicegroup/index.js'
import { backend, serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { rid, waitFor } from '../support/wait.js'
import { SG_TIMING, catalogUrl, openGroup, openTestCatalog } from './support.js'

const memcached = serverUrl('memcached').replace('memcached://', '')
const zookeeper = serverUrl('zookeeper').replace('zookeeper://', '')
const toozUrl = `${backend('redis').fastUrl}&watch_interval=0.2`
const timing = {
  reportIntervalSeconds: SG_TIMING.reportIntervalSeconds,
  serviceDownTimeSeconds: SG_TIMING.serviceDownTimeSeconds,
  initialReportDelaySeconds: SG_TIMING.initialReportDelaySeconds,
}

describe('servicegroup: migration', { concurrency: 3 }, () => {
  for (const previous of ['mc', 'zk'] as const) {
    it(`migrate: with report_to_previous_driver = ${previous}, a service is up for tooz readers and ${previous} readers alike`, async (t) => {
      const catalog = await openTestCatalog(t)
      const zk = { address: zookeeper, sgPrefix: `/${rid('sg')}`, recvTimeoutMs: SG_TIMING.zkRecvTimeoutMs }
      const both = await openGroup(t, catalog, {
        ...timing,
        driver: 'tooz',
        toozUrl,
        reportToPreviousDriver: previous,
        memcacheServers: [memcached],
        zookeeper: zk,
      })
      assert.deepEqual(both.drivers.map((d) => d.name), ['tooz', previous])
      const oldReader = await openGroup(t, catalog, { ...timing, driver: previous, memcacheServers: [memcached], zookeeper: zk })
      const newReader = await openGroup(t, catalog, { ...timing, driver: 'tooz', toozUrl })
      const [host, topic] = [rid('host'), rid('topic')]
      const svc = await both.register({ host, binary: 'worker', topic })
      await both.join(host, topic, svc)
      await waitFor('up for the old driver', () => oldReader.isUp(svc), TIMING.eventMs)
      await waitFor('up for the new driver', () => newReader.isUp(svc), TIMING.eventMs)
      assert.deepEqual(both.health().map((h) => h.driver), ['tooz', previous])
      const report = await compareDrivers({ catalog, from: oldReader.driver, to: newReader.driver, topic })
      assert.deepEqual(report, { from: previous, to: 'tooz', checked: 1, disagreements: [] })
      await both.leave(host, topic)
      await waitFor('down for both', async () => !(await oldReader.isUp(svc)) && !(await newReader.isUp(svc)), TIMING.eventMs)
    })
  }

  it('migrate: a service still reporting only to mc is listed as up on mc and down on tooz, and the check says so', async (t) => {
    const shared = catalogUrl(t, 'sqlite')
    const { openCatalog } = await import('../../src/servicegroup/index.js')
    const catalog = await openCatalog(shared.url, { tablePrefix: shared.tablePrefix })
    t.after(() => catalog.close())
    const oldOnly = await openGroup(t, catalog, { ...timing, driver: 'mc', memcacheServers: [memcached] })
    const both = await openGroup(t, catalog, { ...timing, driver: 'tooz', toozUrl, reportToPreviousDriver: 'mc', memcacheServers: [memcached] })
    const topic = rid('topic')
    const a = await oldOnly.register({ host: rid('old'), binary: 'worker', topic })
    const b = await both.register({ host: rid('new'), binary: 'worker', topic })
    await oldOnly.join(a.host, topic, a)
    await both.join(b.host, topic, b)
    await waitFor('the mc-only service to report', () => oldOnly.isUp(a), TIMING.eventMs)
    const env = {
      ROLLCALL_DATABASE_CONNECTION: shared.url,
      ROLLCALL_DATABASE_TABLE_PREFIX: shared.tablePrefix,
      ROLLCALL_SERVICEGROUP_DRIVER: 'tooz',
      ROLLCALL_SERVICEGROUP_TOOZ_URL: toozUrl,
      ROLLCALL_MEMCACHE_SERVERS: memcached,
    }
    const { config } = await loadConfig({ env })
    const report = await checkMigration(config, { from: 'mc', to: 'tooz', topic })
    assert.equal(report.checked, 2)
    assert.deepEqual(report.disagreements, [{ id: a.id, host: a.host, binary: 'worker', topic, from: 'up', to: 'down' }])
  })

  it('migrate: the check refuses unknown or identical drivers, and a side that is not configured', async () => {
    const { config } = await loadConfig({ env: { ROLLCALL_DATABASE_CONNECTION: 'sqlite://' } })
    await assert.rejects(checkMigration(config, { from: 'memcache', to: 'tooz' }), {
      code: 'INVALID_ARGUMENT',
      message: /--from takes one of db, mc, zk, tooz/,
    })
    await assert.rejects(checkMigration(config, { from: 'tooz', to: 'tooz' }), { code: 'INVALID_ARGUMENT' })
    await assert.rejects(checkMigration(config, { from: 'mc', to: 'tooz' }), { code: 'INVALID_CONFIG', setting: '[memcache] servers' })
  })

  it('migrate: createServiceGroup refuses a previous driver that is the driver, or not mc/zk', async (t) => {
    const catalog = await openTestCatalog(t)
    await assert.rejects(createServiceGroup({ catalog, driver: 'mc', memcacheServers: [memcached], reportToPreviousDriver: 'mc' }), {
      setting: '[DEFAULT] report_to_previous_driver',
    })
    await assert.rejects(createServiceGroup({ catalog, driver: 'tooz', toozUrl, reportToPreviousDriver: 'db' as never }), {
      setting: '[DEFAULT] report_to_previous_driver',
    })
  })
})
