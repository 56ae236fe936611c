/**
 * Python tooz 3.1 (Debian, psycopg2 / pymysql) and rollcall on one PostgreSQL and one MariaDB:
 * tooz's SQL drivers are lock-only, so what must match is the lock. A Python lock excludes the
 * Node lock of the same name and the reverse, blocking waits on either side are woken by the
 * other's release, and the URL forms Python tooz accepts meet the same locks.
 *
 * URL findings (tested below): Python tooz's mysql URL does not need a database (GET_LOCK names
 * are server-wide, so `mysql://root@127.0.0.1:3306` meets rollcall's `.../rollcall`); rollcall's
 * does, for its tables. PostgreSQL advisory locks are per database: Python tooz without a database
 * lands in the database named like the user and does NOT meet rollcall's locks in `rollcall`;
 * `?dbname=rollcall` and the `/rollcall` path are equivalent on both sides.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { ToozPeer } from '../support/tooz-peer.js'
import { rid, waitFor } from '../support/wait.js'

type Sql = 'postgresql' | 'mysql'

async function open(t: TestContext, url: string): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('node'), watchIntervalMs: TIMING.watchIntervalMs })
  t.after(() => c.stop())
  return c
}

/** Strips the database path: `scheme://user@host:port`. */
function withoutDatabase(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^/]+)\/.*$/, '$1')
}

for (const backend of ['postgresql', 'mysql'] as const satisfies readonly Sql[]) {
  const URL = serverUrl(backend)

  describe(`${backend} interop with Python tooz 3.1`, { concurrency: 4 }, () => {
    for (const label of ['ASCII', 'non-ASCII'] as const) {
      it(`${backend}: interop: a Python lock and a Node lock of one ${label} name exclude each other, both ways`, async (t) => {
        const py = await ToozPeer.start(t, URL, rid('py'))
        const node = await open(t, URL)
        const name = label === 'ASCII' ? rid('lock') : rid('замок-ü')
        const lock = node.getLock(name)
        assert.equal(await py.call('lock_acquire', { name }), true)
        assert.equal(await lock.acquire({ blocking: false }), false, 'Python holds it')
        assert.equal(await py.call('lock_release', { name }), true)
        assert.equal(await lock.acquire({ blocking: false }), true)
        assert.equal(await py.call('lock_acquire', { name }), false, 'Node holds it')
        assert.equal(await lock.release(), true)
        assert.equal(await py.call('lock_acquire', { name }), true)
        assert.equal(await py.call('lock_release', { name }), true)
      })
    }

    it(`${backend}: interop: a Node wait is woken by Python's release, and a Python wait by Node's`, async (t) => {
      const py = await ToozPeer.start(t, URL, rid('py'))
      const node = await open(t, URL)
      const name = rid('lock')
      const lock = node.getLock(name)
      assert.equal(await py.call('lock_acquire', { name }), true)
      const waiting = lock.acquire({ timeoutMs: TIMING.eventMs })
      await new Promise((r) => setTimeout(r, 300))
      const releasedAt = Date.now()
      assert.equal(await py.call('lock_release', { name }), true)
      assert.equal(await waiting, true)
      t.diagnostic(`Node acquired ${Date.now() - releasedAt} ms after Python released`)
      // Python blocks in its own wait (pg: pg_advisory_lock; mysql: GET_LOCK(name, 0) once a second).
      const pyWaiting = py.call('lock_acquire', { name, blocking: true }, TIMING.eventMs * 2)
      await new Promise((r) => setTimeout(r, 300))
      assert.equal(await lock.release(), true)
      assert.equal(await pyWaiting, true)
      assert.equal(await lock.acquire({ blocking: false }), false, 'Python holds it again')
      assert.equal(await py.call('lock_release', { name }), true)
    })

    it(`${backend}: interop: a Node leader lock excludes Python's lock of the name leader_of_<group>`, async (t) => {
      const py = await ToozPeer.start(t, URL, rid('py'))
      const node = await open(t, URL)
      const g = rid('g')
      await node.joinGroupCreate(g)
      node.watchElectedAsLeader(g, () => {})
      await waitFor('the Node member to lead', () => node.isLeader(g), 5_000, 100)
      assert.equal(await py.call('lock_acquire', { name: `leader_of_${g}` }), false)
      assert.equal(await node.getLeader(g), node.memberId)
    })
  })
}

describe('postgresql shared locks with Python tooz 3.1', () => {
  it("postgresql: interop: a Node shared lock (pg_advisory_lock_shared, tooz's key) and a Python lock of one name exclude each other, both ways", async (t) => {
    const URL = serverUrl('postgresql')
    const py = await ToozPeer.start(t, URL, rid('py'))
    const node = await open(t, URL)
    const other = await open(t, URL)
    const name = rid('замок')
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await node.getLock(name).acquire({ shared: true, blocking: false }), false, 'Python holds it')
    assert.equal(await py.call('lock_release', { name }), true)
    const reader = node.getLock(name)
    const reader2 = other.getLock(name)
    assert.equal(await reader.acquire({ shared: true, blocking: false }), true)
    assert.equal(await reader2.acquire({ shared: true, blocking: false }), true, 'readers hold together')
    assert.equal(await py.call('lock_acquire', { name }), false, 'Node readers hold it')
    assert.equal(await reader.release(), true)
    assert.equal(await py.call('lock_acquire', { name }), false, 'one Node reader still holds it')
    assert.equal(await reader2.release(), true)
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await py.call('lock_release', { name }), true)
  })
})

describe('SQL URL forms shared with Python tooz', { concurrency: 4 }, () => {
  it("mysql: interop: Python tooz needs no database in its URL, and still meets rollcall's locks", async (t) => {
    const py = await ToozPeer.start(t, withoutDatabase(serverUrl('mysql')), rid('py'))
    const node = await open(t, serverUrl('mysql'))
    const name = rid('lock')
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await node.getLock(name).acquire({ blocking: false }), false)
    assert.equal(await py.call('lock_release', { name }), true)
  })

  it('postgresql: interop: the database may be the URL path or ?dbname=, on both sides', async (t) => {
    const base = withoutDatabase(serverUrl('postgresql'))
    const py = await ToozPeer.start(t, `${base}?dbname=rollcall`, rid('py'))
    const node = await open(t, `${base}/postgres?dbname=rollcall`)
    const name = rid('lock')
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await node.getLock(name).acquire({ blocking: false }), false, 'dbname= overrides the path, as in tooz')
    assert.equal(await py.call('lock_release', { name }), true)
  })

  it('postgresql: interop: without a database Python tooz locks in another database, and does NOT exclude rollcall (hazard)', async (t) => {
    const py = await ToozPeer.start(t, withoutDatabase(serverUrl('postgresql')), rid('py'))
    const node = await open(t, serverUrl('postgresql'))
    const name = rid('lock')
    assert.equal(await py.call('lock_acquire', { name }), true)
    const lock = node.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), true, 'advisory locks are per database')
    await lock.release()
    assert.equal(await py.call('lock_release', { name }), true)
  })
})
