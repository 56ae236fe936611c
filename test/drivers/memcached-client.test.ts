/** The memcached protocol client, against the real shared server (and private ones it may kill). */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import {
  MemcachedClient,
  MemcachedConnectionError,
  MemcachedKeyError,
  MemcachedServerError,
  MemcachedTimeoutError,
  type MemcachedClientOptions,
} from '../../src/clients/memcached/memcached-client.js'
import { ReplyReader, parseMeta, parseTtls, parseValues } from '../../src/clients/memcached/memcached-protocol.js'
import { TcpProxy } from '../support/proxy.js'
import { freePort, startMemcached } from '../support/servers.js'
import { rid, waitFor } from '../support/wait.js'
import { PrivateMemcached, sharedMemcached } from './memcached-support.js'

function client(t: TestContext, options: Partial<MemcachedClientOptions> = {}): MemcachedClient {
  const { host, port } = sharedMemcached()
  const c = new MemcachedClient({ hosts: [{ host, port }], connectTimeoutMs: 2_000, requestTimeoutMs: 2_000, ...options })
  t.after(() => c.close())
  return c
}

const buf = (s: string): Buffer => Buffer.from(s)

async function proxy(t: TestContext): Promise<TcpProxy> {
  const p = await TcpProxy.start(sharedMemcached().port)
  t.after(() => p.close())
  return p
}

describe('memcached client', { concurrency: 4 }, () => {
  it('memcached-client: get: one request fetches many keys; missing keys are absent', async (t) => {
    const c = client(t)
    const keys = [rid('k'), rid('k'), rid('k')]
    for (const [i, k] of keys.entries()) assert.equal(await c.store('set', k, buf(`v${i}`), i + 1, 60), 'stored')
    const before = c.requestCount
    const got = await c.get([...keys, rid('missing')])
    assert.equal(c.requestCount - before, 1)
    assert.deepEqual([...got.keys()].sort(), [...keys].sort())
    for (const [i, k] of keys.entries()) {
      assert.equal(got.get(k)!.value.toString(), `v${i}`)
      assert.equal(got.get(k)!.flags, i + 1)
    }
    assert.equal((await c.get([])).size, 0)
  })

  it('memcached-client: values: flags and binary payloads round-trip exactly', async (t) => {
    const c = client(t)
    const payloads = [Buffer.alloc(0), Buffer.from([0, 13, 10, 255, 13, 10]), buf('END\r\nVALUE x 0 1\r\n'), Buffer.alloc(300_000, 7)]
    for (const [i, flags] of [0, 1, 2, 0xffffffff].entries()) {
      const k = rid('k')
      await c.store('set', k, payloads[i]!, flags, 60)
      const item = await c.gets(k)
      assert.equal(item!.flags, flags)
      assert.ok(item!.value.equals(payloads[i]!), `payload ${i}`)
      assert.equal(typeof item!.cas, 'bigint')
    }
  })

  it('memcached-client: values: replies split anywhere are parsed alike; a large value waits whole', () => {
    const big = Buffer.alloc(200_000, 0x61)
    big.write('\r\nEND\r\n', 1000)
    const wire = Buffer.concat([buf('VALUE a 2 3 11\r\nabc\r\nVALUE big 1 200000 12\r\n'), big, buf('\r\nEND\r\nHD c42\r\n')])
    const check = (cuts: number[]): void => {
      const r = new ReplyReader()
      const parsers = [parseValues('gets', ['a', 'big']), parseMeta('mg')]
      const out: unknown[] = []
      let from = 0
      for (const to of [...cuts, wire.length]) {
        const more = r.push(wire.subarray(from, to))
        from = to
        if (!more || parsers.length === 0) continue
        for (let v = parsers[0]!(r); v !== undefined; v = parsers[0]?.(r)) {
          out.push(v.value)
          parsers.shift()
          if (parsers.length === 0) break
        }
      }
      assert.equal(parsers.length, 0, `cuts ${cuts.join(',')}`)
      const items = out[0] as Map<string, { value: Buffer; flags: number; cas: bigint | undefined }>
      assert.equal(items.get('a')!.value.toString(), 'abc')
      assert.equal(items.get('a')!.cas, 11n)
      assert.ok(items.get('big')!.value.equals(big))
      assert.equal(items.get('big')!.cas, 12n)
      assert.equal((out[1] as { flags: Map<string, string> }).flags.get('c'), '42')
    }
    check([])
    // Within a header line, within the \r\n after a value, inside a large value, at every 64 KiB.
    check([3, 16, 17, 20, 30, 60, 1000, 1500, 200_040, 200_041])
    check(Array.from({ length: Math.floor(wire.length / 65_536) }, (_, i) => (i + 1) * 65_536))
    check(Array.from({ length: 400 }, (_, i) => 5 + i * 517))
    // While the large value is incomplete, chunks are only gathered (push says there is nothing to parse).
    const r = new ReplyReader()
    assert.equal(r.push(wire.subarray(0, 100)), true)
    const parse = parseValues('gets', ['a', 'big'])
    assert.equal(parse(r), undefined)
    assert.equal(r.push(wire.subarray(100, 50_000)), false)
    assert.equal(r.push(wire.subarray(50_000, 150_000)), false)
    assert.equal(r.push(wire.subarray(150_000)), true)
    assert.ok(parse(r))
  })

  it('memcached-client: ttls: one request reads the remaining TTL of many keys; absent keys are left out', async (t) => {
    const c = client(t)
    const [forever, soon, later, missing] = [rid('k'), rid('k'), rid('k'), rid('k')]
    await c.store('set', forever, buf('a'), 0, 0)
    await c.store('set', soon, buf('b'), 0, 5)
    await c.store('set', later, buf('c'), 0, 600)
    const keys = [forever, missing, soon, later]
    const before = c.requestCount
    const ttls = await c.ttls(keys)
    assert.equal(c.requestCount - before, 1, 'one request for all of them')
    assert.deepEqual([...ttls.keys()].sort(), [forever, soon, later].sort())
    assert.equal(ttls.get(forever), -1)
    assert.ok(ttls.get(soon)! >= 4 && ttls.get(soon)! <= 5, `5 s key reported with ${ttls.get(soon)} s`)
    assert.ok(ttls.get(later)! >= 599 && ttls.get(later)! <= 600, `600 s key reported with ${ttls.get(later)} s`)
    assert.deepEqual(await c.ttls([]), new Map())
    // Replies split anywhere parse alike, and the reply count must match the keys asked for.
    const wire = buf('HD t-1\r\nEN\r\nHD t5\r\nHD t600\r\nMN\r\n')
    for (let cut = 1; cut < wire.length; cut++) {
      const r = new ReplyReader()
      const parse = parseTtls(keys)
      r.push(wire.subarray(0, cut))
      const first = parse(r)
      r.push(wire.subarray(cut))
      const value = first ?? parse(r)
      assert.deepEqual(value?.value, new Map([[forever, -1], [soon, 5], [later, 600]]), `cut at ${cut}`)
    }
    assert.throws(() =>
      parseTtls([forever])((() => {
        const r = new ReplyReader()
        r.push(buf('HD t1\r\nHD t2\r\nMN\r\n'))
        return r
      })()), /mg/)
  })

  it('memcached-client: cas: a stale CAS value is refused with exists, a missing key with notFound', async (t) => {
    const c = client(t)
    const k = rid('k')
    await c.store('set', k, buf('a'), 2, 60)
    const first = (await c.gets(k))!
    assert.equal(await c.store('cas', k, buf('b'), 2, 60, first.cas), 'stored')
    assert.equal(await c.store('cas', k, buf('c'), 2, 60, first.cas), 'exists')
    assert.equal((await c.gets(k))!.value.toString(), 'b')
    assert.equal(await c.store('cas', rid('k'), buf('x'), 2, 60, first.cas), 'notFound')
  })

  it('memcached-client: add: a second add of a key is notStored and keeps the first value', async (t) => {
    const c = client(t)
    const k = rid('k')
    assert.equal(await c.store('add', k, buf('first'), 1, 60), 'stored')
    assert.equal(await c.store('add', k, buf('second'), 1, 60), 'notStored')
    assert.equal((await c.gets(k))!.value.toString(), 'first')
    assert.equal(await c.delete(k), true)
    assert.equal(await c.delete(k), false)
  })

  it('memcached-client: meta: add returns a CAS, and delete compares it', async (t) => {
    const c = client(t)
    const k = rid('k')
    const added = await c.meta('ms', k, ['ME', 'F1', 'T60', 'c'], buf('owner'))
    assert.equal(added.code, 'HD')
    const cas = BigInt(added.flags.get('c')!)
    assert.equal((await c.meta('ms', k, ['ME', 'F1', 'T60', 'c'], buf('other'))).code, 'NS')
    assert.equal((await c.meta('md', k, [`C${cas + 1n}`])).code, 'EX', 'a wrong CAS must not delete')
    const got = await c.meta('mg', k, ['v', 'c', 'f'])
    assert.equal(got.code, 'VA')
    assert.equal(got.value!.toString(), 'owner')
    assert.equal(got.flags.get('f'), '1')
    assert.equal((await c.meta('md', k, [`C${cas}`])).code, 'HD')
    assert.equal((await c.meta('md', k, [`C${cas}`])).code, 'NF')
    assert.equal((await c.meta('mg', k, ['v'])).code, 'EN')
  })

  it('memcached-client: touch: extends the expiry without changing the CAS; expired keys vanish', async (t) => {
    const c = client(t)
    const k = rid('k')
    await c.store('set', k, buf('x'), 1, 5)
    const cas = (await c.gets(k))!.cas
    assert.equal(await c.touch(k, 100), true)
    const ttl = Number((await c.meta('mg', k, ['t', 'c'])).flags.get('t'))
    assert.ok(ttl > 90 && ttl <= 100, `ttl ${ttl}`)
    assert.equal((await c.gets(k))!.cas, cas)
    assert.equal(await c.touch(rid('k'), 10), false)
    const short = rid('k')
    await c.store('set', short, buf('x'), 1, 1)
    await waitFor('the key to expire', async () => !(await c.get([short])).has(short), 5_000, 100)
    // Beyond 30 days memcached reads expiries as Unix times: the client converts.
    const long = rid('k')
    await c.store('set', long, buf('x'), 1, 40 * 86_400)
    const longTtl = Number((await c.meta('mg', long, ['t'])).flags.get('t'))
    assert.ok(Math.abs(longTtl - 40 * 86_400) < 10, `ttl ${longTtl}`)
  })

  it('memcached-client: pipelining: concurrent requests on one connection get their own replies', async (t) => {
    const c = client(t)
    const keys = Array.from({ length: 300 }, () => rid('k'))
    await Promise.all(keys.map((k) => c.store('set', k, buf(`value of ${k}`), 1, 60)))
    const values = await Promise.all(keys.map((k) => c.gets(k)))
    values.forEach((v, i) => assert.equal(v!.value.toString(), `value of ${keys[i]}`))
  })

  it('memcached-client: keys: bad keys are refused before anything is sent', async (t) => {
    const c = client(t)
    await c.version()
    const before = c.requestCount
    assert.throws(() => c.get(['has space']), MemcachedKeyError)
    assert.throws(() => c.store('set', 'x'.repeat(251), buf('v'), 1, 1), MemcachedKeyError)
    assert.throws(() => c.delete('new\nline'), MemcachedKeyError)
    assert.equal(c.requestCount, before)
    await c.store('set', 'x'.repeat(250), buf('v'), 1, 5)
  })

  it('memcached-client: errors: SERVER_ERROR is mapped and the connection stays usable', async (t) => {
    const c = client(t)
    const k = rid('k')
    await assert.rejects(
      c.store('set', k, Buffer.alloc(2 * 1024 * 1024), 1, 60),
      (err: Error) => err instanceof MemcachedServerError && err.kind === 'SERVER_ERROR' && /too large/.test(err.message),
    )
    assert.equal(await c.store('set', k, buf('small'), 1, 60), 'stored')
    assert.match(await c.version(), /^\d+\.\d+/)
  })

  it('memcached-client: connect: a closed port fails at once, a silent server within the timeout', async (t) => {
    const closed = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port: await freePort() }], connectTimeoutMs: 1_000, requestTimeoutMs: 1_000 })
    await assert.rejects(closed.connect(), (err: Error) => err instanceof MemcachedConnectionError && /127\.0\.0\.1:\d+ \(.*ECONNREFUSED/.test(err.message))
    const silentProxy = await proxy(t)
    silentProxy.pause()
    const silent = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port: silentProxy.port }], connectTimeoutMs: 500, requestTimeoutMs: 500 })
    t.after(() => silent.close())
    const started = Date.now()
    await assert.rejects(silent.connect(), (err: Error) => err instanceof MemcachedConnectionError && /no reply to stats within 500 ms/.test(err.message))
    assert.ok(Date.now() - started < 3_000, `took ${Date.now() - started} ms`)
  })

  it('memcached-client: fail-over: the first host that answers is used', async (t) => {
    const { host, port } = sharedMemcached()
    const c = client(t, { hosts: [{ host: '127.0.0.1', port: await freePort() }, { host, port }] })
    const server = await c.connect()
    assert.equal(server.port, port)
    assert.match(server.version, /^1\.6\./)
    assert.equal(typeof server.pid, 'number')
  })

  it('memcached-client: timeout: a stalled reply fails within requestTimeoutMs; the next request reconnects', async (t) => {
    const p = await proxy(t)
    // The same limit bounds the request after recovery (a reconnect plus a round trip): 1 s, not a
    // few hundred ms, so that a loaded machine does not fail the recovery this test expects.
    const requestTimeoutMs = 1_000
    const c = client(t, { hosts: [{ host: '127.0.0.1', port: p.port }], requestTimeoutMs })
    await c.version()
    p.pause()
    const started = Date.now()
    const stalled = [c.version(), c.get([rid('k')])]
    await assert.rejects(stalled[0]!, MemcachedTimeoutError)
    await assert.rejects(stalled[1]!, (err: Error) => err instanceof MemcachedTimeoutError || err instanceof MemcachedConnectionError)
    const waitedMs = Date.now() - started
    assert.ok(waitedMs >= requestTimeoutMs - 5 && waitedMs < requestTimeoutMs + 4_000, `failed after ${waitedMs} ms`)
    p.resume()
    assert.match(await c.version(), /^1\./)
  })

  it('memcached-client: reconnect: after the server closes the socket, the next request reconnects', async (t) => {
    // idle_timeout makes memcached itself close connections idle for over a second.
    const mc = await PrivateMemcached.start(t, ['-o', 'idle_timeout=1'])
    const events: string[] = []
    const c = client(t, {
      hosts: [{ host: '127.0.0.1', port: mc.port }],
      onConnected: (_s, reconnect) => events.push(reconnect ? 'reconnected' : 'connected'),
      onDisconnected: () => events.push('disconnected'),
    })
    const k = rid('k')
    await c.store('set', k, buf('kept'), 1, 60)
    await waitFor('memcached to close the idle connection', () => events.includes('disconnected'), 10_000, 100)
    assert.equal((await c.gets(k))!.value.toString(), 'kept')
    assert.deepEqual(events, ['connected', 'disconnected', 'reconnected'])
  })

  it('memcached-client: restart: a restarted server is told apart by its pid and boot time', async (t) => {
    const mc = await startMemcached()
    t.after(() => mc.stop())
    const c = client(t, { hosts: [{ host: '127.0.0.1', port: mc.port }] })
    const before = await c.connect()
    assert.equal(before.pid, mc.pid)
    mc.kill()
    await assert.rejects(c.version(), MemcachedConnectionError)
    await mc.start()
    await c.version()
    assert.equal(c.server!.pid, mc.pid)
    assert.notEqual(c.server!.pid, before.pid)
  })

  it('memcached-client: close: pending and later requests fail with MemcachedConnectionError', async (t) => {
    const p = await proxy(t)
    const c = client(t, { hosts: [{ host: '127.0.0.1', port: p.port }] })
    await c.version()
    p.pause()
    const pending = c.version()
    await c.close()
    await assert.rejects(pending, MemcachedConnectionError)
    await assert.rejects(c.version(), MemcachedConnectionError)
  })
})
