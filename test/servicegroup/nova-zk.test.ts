/**
 * Nova's test_zk_driver.py (Grizzly to Liberty), ported onto the shared ZooKeeper: the node
 * hierarchy `<prefix>/<topic>/<host>/<pid>`, join/leave, and stop.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { OPEN_ACL, ZkConnection } from '../../src/clients/zookeeper/zookeeper-client.js'
import { createServiceGroup } from '../../src/servicegroup/index.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { openTestCatalog } from './support.js'

const address = serverUrl('zookeeper').replace('zookeeper://', '')

async function zk(): Promise<ZkConnection> {
  const [host, port] = address.split(':')
  const conn = new ZkConnection({
    servers: [{ host: host!, port: Number(port) }],
    randomizeHosts: false,
    sessionTimeoutMs: 4_000,
    connectTimeoutMs: 4_000,
    opTimeoutMs: 4_000,
    digestAuth: undefined,
    acl: OPEN_ACL,
    shownAs: address,
    onState: () => {},
    onNewSession: async () => {},
  })
  await conn.start()
  return conn
}

describe('servicegroup: Nova zk driver tests', () => {
  it('zk: test_zookeeper_hierarchy_structure — <prefix>/unittest/serviceC/<pid> absent before join, present after', async (t) => {
    const catalog = await openTestCatalog(t)
    const prefix = `/${rid('servicegroups')}`
    const conn = await zk()
    t.after(() => conn.stop())
    const path = `${prefix}/unittest/serviceC/${process.pid}`
    const sg = await createServiceGroup({ catalog, driver: 'zk', zookeeper: { address, sgPrefix: prefix, recvTimeoutMs: 4_000 } })
    t.after(() => sg.close())
    assert.equal(await conn.exists(path), null)
    await sg.join('serviceC', 'unittest')
    const stat = await conn.exists(path)
    assert.ok(stat, `${path} missing after join`)
    assert.notEqual(stat.ephemeralOwner, '0000000000000000', 'the node is not ephemeral')
  })

  it('zk: test_join_leave — up after join, down after leave', async (t) => {
    const catalog = await openTestCatalog(t)
    const zookeeper = { address, sgPrefix: `/${rid('servicegroups')}`, recvTimeoutMs: 4_000 }
    const sg = await createServiceGroup({ catalog, driver: 'zk', zookeeper })
    t.after(() => sg.close())
    const reader = await createServiceGroup({ catalog, driver: 'zk', zookeeper })
    t.after(() => reader.close())
    await sg.join('serviceA', 'unittest')
    assert.equal(await reader.isUp({ host: 'serviceA', topic: 'unittest' }), true)
    await sg.leave('serviceA', 'unittest')
    await waitFor('down after leave', async () => !(await reader.isUp({ host: 'serviceA', topic: 'unittest' })), 1_000)
  })

  it('zk: test_stop — closing the service group ends the session, and the service is down at once', async (t) => {
    const catalog = await openTestCatalog(t)
    const zookeeper = { address, sgPrefix: `/${rid('servicegroups')}`, recvTimeoutMs: 4_000 }
    const sg = await createServiceGroup({ catalog, driver: 'zk', zookeeper })
    const reader = await createServiceGroup({ catalog, driver: 'zk', zookeeper })
    t.after(() => reader.close())
    await sg.join('serviceB', 'unittest')
    assert.equal(await reader.isUp({ host: 'serviceB', topic: 'unittest' }), true)
    await sg.close({ leave: false })
    await waitFor('down after stop', async () => !(await reader.isUp({ host: 'serviceB', topic: 'unittest' })), 1_000)
  })

  it('zk: an unreachable ensemble fails at start-up with a connection error', async (t) => {
    const catalog = await openTestCatalog(t)
    await assert.rejects(createServiceGroup({ catalog, driver: 'zk', zookeeper: { address: '127.0.0.1:1', recvTimeoutMs: 1_000 } }), {
      code: 'CONNECTION_FAILED',
    })
  })
})
