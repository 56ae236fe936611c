/**
 * The redis driver on the application's own ioredis client (connect('redis://?...', { client })):
 * a smoke on the shared server, a lazy client, one through TLS (an in-process TLS proxy in front
 * of the shared server) and one through Sentinel (a private master and sentinel); after stop()
 * the client is open, usable and carries none of rollcall's listeners, and the subscriber
 * connection rollcall derived from it is closed. Wrong clients and conflicting settings are refused.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { connect as netConnect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer as createTlsServer } from 'node:tls'
import { describe, it, type TestContext } from 'node:test'
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import pg from 'pg'
import { connect, InvalidOptionError, InvalidUrlError, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { freePort, startRedis } from '../support/servers.js'
import { rid, waitFor } from '../support/wait.js'
import { selfSignedCertificate } from '../support/certificate.js'
import { openPeer, smoke } from './own-client-support.js'

const URL = serverUrl('redis')
const { port: PORT } = new globalThis.URL(URL.replace(/^redis:/, 'http:'))

/** An ioredis client of the test, disconnected when it ends. */
function client(t: TestContext, options: RedisOptions = {}): Redis {
  const r = new Redis({ host: '127.0.0.1', port: Number(PORT), ...options })
  r.on('error', () => {})
  t.after(() => r.disconnect())
  return r
}

async function openOwn(t: TestContext, own: Redis, query = ''): Promise<Coordinator> {
  const c = await connect(`redis://${query}`, { client: own, memberId: rid('own') })
  t.after(() => c.stop())
  return c
}

/** Makes `c` wait, in vain, for a lock `peer` holds: that opens its subscriber connection. */
async function contendedWait(c: Coordinator, peer: Coordinator): Promise<void> {
  const name = rid('contended')
  const held = peer.getLock(name)
  assert.equal(await held.acquire({ blocking: false }), true)
  assert.equal(await c.getLock(name).acquire({ timeoutMs: 300 }), false)
  await held.release()
}

/** The names of the server's client connections (CLIENT LIST). */
async function clientNames(r: Redis): Promise<string[]> {
  const list = (await r.client('LIST')) as string
  return list.split('\n').flatMap((line) => /\bname=(\S+)/.exec(line)?.[1] ?? [])
}

/** What stop() must leave: the client ready, usable, without rollcall's listeners. */
async function assertUsable(own: Redis, listenersBefore: Record<string, number>): Promise<void> {
  assert.equal(own.status, 'ready')
  const key = rid('after-stop')
  assert.equal(await own.set(key, 'still mine', 'PX', 10_000), 'OK')
  assert.equal(await own.get(key), 'still mine')
  for (const [event, count] of Object.entries(listenersBefore)) assert.equal(own.listenerCount(event), count, `listeners of ${event} after stop()`)
}

const EVENTS = ['error', 'close', 'reconnecting', 'ready', 'end']
const listeners = (r: Redis): Record<string, number> => Object.fromEntries(EVENTS.map((e) => [e, r.listenerCount(e)]))

describe("redis: the application's own client", () => {
  it('redis: own client: groups, heartbeat, locks and leadership run on it; stop() leaves it usable and closes only the subscriber it derived', async (t) => {
    const own = client(t)
    await waitFor('the client ready', () => own.status === 'ready', 5_000)
    const before = listeners(own)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own, '?namespace=_tooz&timeout=10')
    await smoke(c, peer)
    await contendedWait(c, peer)
    const admin = client(t)
    const sub = `rollcall:${c.memberId}:sub`
    assert.ok((await clientNames(admin)).includes(sub), 'no subscriber connection was derived for the contended wait')
    await c.stop()
    await assertUsable(own, before)
    await waitFor('the derived subscriber closed', async () => !(await clientNames(admin)).includes(sub), 5_000)
  })

  it('redis: own client: a lazy client (lazyConnect) is connected by start() and stays open after stop()', async (t) => {
    const own = client(t, { lazyConnect: true, enableOfflineQueue: false })
    assert.equal(own.status, 'wait')
    const before = listeners(own)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    const g = rid('g')
    await c.joinGroupCreate(g)
    assert.deepEqual(await peer.getMembers(g), [c.memberId])
    await c.stop()
    await assertUsable(own, before)
    assert.deepEqual(await peer.getMembers(g), [], 'stop() left its member listed')
  })

  it('redis: own client: a client configured with TLS (a TLS proxy in front of the server) serves both connections over TLS', async (t) => {
    const { key, cert } = selfSignedCertificate(t)
    let secured = 0
    const sockets = new Set<Socket>()
    const proxy = createTlsServer({ key, cert }, (socket) => {
      secured++
      const upstream = netConnect(Number(PORT), '127.0.0.1')
      sockets.add(socket).add(upstream)
      socket.pipe(upstream).pipe(socket)
      socket.on('error', () => upstream.destroy())
      upstream.on('error', () => socket.destroy())
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    t.after(() => {
      proxy.close()
      for (const s of sockets) s.destroy()
    })
    const port = (proxy.address() as { port: number }).port
    const own = client(t, { port, tls: { ca: cert } })
    await waitFor('the TLS client ready', () => own.status === 'ready', 5_000)
    const before = listeners(own)
    const peer = await openPeer(t, URL)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    await contendedWait(c, peer)
    assert.equal(secured, 2, 'the client and the subscriber derived from it should each have come through the TLS proxy')
    await c.stop()
    await assertUsable(own, before)
    // Without the CA the same proxy refuses: the TLS settings were the client's, and they mattered.
    const untrusting = client(t, { port, tls: {}, lazyConnect: true, retryStrategy: () => null })
    await assert.rejects(connect('redis://?timeout=2', { client: untrusting }), /certificate/)
  })

  it('redis: own client: a client connected through Sentinel (a private master and sentinel)', async (t) => {
    const master = await startRedis()
    t.after(() => master.stop())
    const sentinelPort = await freePort()
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-own-sentinel-'))
    const conf = join(dir, 'sentinel.conf')
    writeFileSync(conf, `sentinel monitor ownmaster 127.0.0.1 ${master.port} 1\nsentinel down-after-milliseconds ownmaster 60000\n`)
    const sentinel = spawn('redis-server', [conf, '--sentinel', '--port', String(sentinelPort), '--bind', '127.0.0.1', '--dir', dir], { stdio: 'ignore' })
    t.after(() => {
      if (sentinel.exitCode === null) sentinel.kill('SIGKILL')
    })
    const own = client(t, { sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: 'ownmaster', sentinelRetryStrategy: () => 100 })
    await waitFor('the Sentinel client ready', () => own.status === 'ready', 10_000)
    const before = listeners(own)
    const peer = await openPeer(t, master.url)
    const c = await openOwn(t, own)
    await smoke(c, peer)
    await contendedWait(c, peer)
    const admin = client(t, { port: master.port })
    assert.ok((await clientNames(admin)).includes(`rollcall:${c.memberId}:sub`), 'the subscriber did not reach the master through Sentinel')
    await c.stop()
    await assertUsable(own, before)
  })

  it('redis: own client: a client of the wrong kind, or a closed one, is an InvalidOptionError naming what to pass', async (t) => {
    const pool = new pg.Pool({ max: 1 })
    t.after(() => pool.end())
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })
    t.after(() => cluster.disconnect())
    const closed = client(t)
    await waitFor('the client ready', () => closed.status === 'ready', 5_000)
    closed.disconnect()
    const cases: [unknown, RegExp][] = [
      [pool, /must be an ioredis Redis instance.*got a BoundPool|got a Pool/],
      [{}, /pass new Redis\(\.\.\.\) from ioredis/],
      ['redis://127.0.0.1', /got string/],
      [cluster, /got an ioredis Cluster/],
      [client(t, { lazyConnect: true, keyPrefix: 'app:' }), /keyPrefix \("app:"\).*namespace option/],
      [closed, /it is closed/],
    ]
    for (const [value, message] of cases) {
      const err = await connect('redis://', { client: value as Redis }).then(() => undefined, (e: unknown) => e)
      assert.ok(err instanceof InvalidOptionError, `${String(err)} for ${message}`)
      assert.match(err.message, message)
    }
  })

  it('redis: own client: a client on a driver that takes none, URL connection parts and connection options beside it are refused before any I/O', async (t) => {
    const own = client(t, { lazyConnect: true })
    // @ts-expect-error a ZooKeeper URL takes no client: a type error, and InvalidOptionError at run time
    const onZookeeper = connect('zookeeper://127.0.0.1:2181', { client: own })
    await assert.rejects(
      onZookeeper,
      (e: unknown) => e instanceof InvalidOptionError && /zookeeper driver does not take a client: remove the client option/.test(e.message),
    )
    // @ts-expect-error rediss:// asks for TLS, which the client decides
    await assert.rejects(connect('rediss://', { client: own }), (e: unknown) => e instanceof InvalidUrlError && /write redis:\/\//.test(e.message))
    for (const url of ['redis://127.0.0.1:6379', 'redis://:secret@', 'redis:///var/run/redis.sock']) {
      const err = await connect(url, { client: own }).then(() => undefined, (e: unknown) => e as Error)
      assert.ok(err instanceof InvalidUrlError, String(err))
      assert.match(err.message, /which the client decides: with a client, the URL names the scheme and the coordination options only/)
      assert.doesNotMatch(err.message, /secret/)
    }
    await assert.rejects(connect('redis://?ssl=true', { client: own }), /Option ssl \(in the URL\) configures the redis connection, which the client decides/)
    await assert.rejects(connect('redis://', { client: own, db: 2 }), /Option db configures the redis connection/)
    await assert.rejects(connect('redis://?sentinel=m', { client: own }), InvalidOptionError)
    assert.equal(own.status, 'wait', 'a refused connect() touched the client')
  })
})
