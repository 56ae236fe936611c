/**
 * The postgresql driver on the application's own pg Pool (connect('postgresql://?...', { client })):
 * a smoke on the shared server, seen from a member that connected by URL; after stop() the pool is
 * open and usable and holds no session rollcall checked out. Wrong clients are refused.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'
import { connect, InvalidOptionError, InvalidUrlError, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { rid } from '../support/wait.js'
import { openPeer, smoke } from './own-client-support.js'

const URL = serverUrl('postgresql')

function pool(t: TestContext, options: pg.PoolConfig = {}): pg.Pool {
  const p = new pg.Pool({ connectionString: URL, max: 5, ...options })
  p.on('error', () => {})
  t.after(() => p.end().catch(() => {}))
  return p
}

async function openOwn(t: TestContext, client: pg.Pool): Promise<Coordinator> {
  const c = await connect('postgresql://?membership_timeout=10', { client, memberId: rid('own') })
  t.after(() => c.stop())
  return c
}

describe("postgresql: the application's own client", () => {
  it('postgresql: own client: groups, heartbeat, locks and leadership run on a pg Pool; stop() leaves it usable with every session given back', async (t) => {
    const own = pool(t)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    await c.stop()
    const { rows } = await own.query('SELECT 41 + 1 AS answer')
    assert.equal(rows[0].answer, 42)
    assert.equal(own.totalCount - own.idleCount, 0, 'a session checked out by rollcall was not given back')
    assert.equal(own.ending, false)
  })

  it('postgresql: own client: a client of the wrong kind, URL connection parts and connection options are refused before any I/O', async (t) => {
    const redis = new Redis({ lazyConnect: true })
    t.after(() => redis.disconnect())
    const single = new pg.Client(URL)
    const cases: [unknown, RegExp][] = [
      [single, /got a pg Client \(one connection\); pass a pg Pool/],
      [redis, /must be a pg Pool: got an? \w+; pass new pg\.Pool/],
      [{}, /pass new pg\.Pool/],
    ]
    for (const [value, message] of cases) {
      const err = await connect('postgresql://', { client: value as pg.Pool }).then(() => undefined, (e: unknown) => e)
      assert.ok(err instanceof InvalidOptionError, `${String(err)} for ${message}`)
      assert.match(err.message, message)
    }
    const own = pool(t)
    await assert.rejects(connect('postgresql://postgres@127.0.0.1/rollcall', { client: own }), InvalidUrlError)
    await assert.rejects(connect('postgresql://?host=/tmp', { client: own }), /Option host \(in the URL\) configures the postgresql connection/)
    assert.equal(own.totalCount, 0, 'a refused connect() used the pool')
  })
})
