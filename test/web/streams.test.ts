/**
 * Event-stream slots (issue 28.11): 200 idle, unauthenticated /v1/events connections took every
 * slot for good and every other viewer got 503. One client now takes at most a share of the slots,
 * a stream whose socket does not drain is dropped after a time (not only past a byte cap), and
 * every stream ends after a bounded life. Real HTTP against the server on Redis.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { connect as tcpConnect, type Socket } from 'node:net'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { SSE_DEFAULTS, clientOf } from '../../src/web/sse.js'
import { startStatusServer } from '../../src/web/index.js'
import { backend } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { call } from './support.js'

/** A raw client that asks for the stream from `localAddress` and then reads only the status line. */
async function idleStream(port: number, localAddress = '127.0.0.1'): Promise<{ socket: Socket; status: number }> {
  const socket = tcpConnect({ port, host: '127.0.0.1', localAddress })
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  socket.write(`GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
  const head = await new Promise<string>((resolve, reject) => {
    socket.once('data', (d) => resolve(String(d)))
    socket.once('error', reject)
  })
  // From here on it never reads a byte.
  socket.pause()
  return { socket, status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]) }
}

/** Opens the stream from `localAddress` and resolves with its status and the first chunk. */
function viewer(port: number, localAddress: string): Promise<{ status: number; first: string; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/events', localAddress }, (res) => {
      res.setEncoding('utf8')
      res.once('data', (d: string) => resolve({ status: res.statusCode!, first: d, close: () => req.destroy() }))
    })
    req.on('error', reject)
    req.end()
  })
}

async function sseClients(base: string): Promise<number> {
  return Number(/^rollcall_sse_clients (\d+)/m.exec((await call(base, 'GET', '/metrics')).text)?.[1])
}

describe('web: streams', { concurrency: 1 }, () => {
  it('web: streams: clientOf groups IPv6 by /64 and reads IPv4-mapped addresses as IPv4', () => {
    assert.equal(clientOf('127.0.0.1'), '127.0.0.1')
    assert.equal(clientOf('::ffff:10.1.2.3'), '10.1.2.3')
    assert.equal(clientOf('2001:db8:0:1:aaaa::1'), '2001:db8:0:1::/64')
    assert.equal(clientOf('2001:db8:0:1::2'), '2001:db8:0:1::/64')
    assert.equal(clientOf('2001:db8::7'), '2001:db8:0:0::/64')
    assert.equal(clientOf('::1'), '0:0:0:0::/64')
  })

  it('web: streams: 200 idle streams from one client take only its share; a viewer elsewhere still gets one', { timeout: 120_000 }, async (t) => {
    const observer = await connect(`${backend('redis').url}?namespace=${rid('ns')}`, { memberId: rid('obs') })
    t.after(() => observer.stop())
    const server = await startStatusServer({ coordinator: observer, port: 0 })
    t.after(() => server.close())
    const port = server.address.port
    const idle: Socket[] = []
    t.after(() => idle.forEach((s) => s.destroy()))
    const statuses = new Map<number, number>()
    for (let i = 0; i < SSE_DEFAULTS.maxClients; i++) {
      const s = await idleStream(port)
      idle.push(s.socket)
      statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1)
    }
    t.diagnostic(`200 idle streams from 127.0.0.1: ${JSON.stringify(Object.fromEntries(statuses))}`)
    assert.equal(statuses.get(200), SSE_DEFAULTS.maxPerClient)
    assert.equal(statuses.get(429), SSE_DEFAULTS.maxClients - SSE_DEFAULTS.maxPerClient)
    const refused = await call(server.url, 'GET', '/v1/events')
    assert.equal(refused.status, 429)
    assert.equal(refused.json.error.code, 'TOO_MANY_STREAMS_FROM_CLIENT')
    assert.equal(refused.headers['retry-after'], '10')
    // Another client (another loopback address) is served.
    const other = await viewer(port, '127.0.0.2')
    t.after(() => other.close())
    assert.equal(other.status, 200)
    assert.match(other.first, /event: snapshot/)
    assert.equal(await sseClients(server.url), SSE_DEFAULTS.maxPerClient + 1)
  })

  it('web: streams: a stream whose socket does not drain is dropped after streamStallMs, far below the byte cap; a reading one stays', {
    timeout: 120_000,
  }, async (t) => {
    const url = `${backend('redis').url}?namespace=${rid('ns')}`
    const observer = await connect(url, { memberId: rid('obs') })
    const member = await connect(url, { memberId: rid('m') })
    t.after(() => Promise.all([member.stop(), observer.stop()]))
    const g = rid('g')
    await member.joinGroupCreate(g, { n: 0 })
    const stallMs = 1500
    const server = await startStatusServer({ coordinator: observer, port: 0, refreshMs: 100, maxStreamQueueBytes: 512 * 1024 * 1024, streamStallMs: stallMs })
    t.after(() => server.close())
    const port = server.address.port
    const stuck = await idleStream(port)
    t.after(() => stuck.socket.destroy())
    assert.equal(stuck.status, 200)
    const reader = await fetch(`http://127.0.0.1:${port}/v1/events`)
    const body = reader.body!.getReader()
    let readBytes = 0
    void (async () => {
      for (;;) {
        const { done, value } = await body.read().catch(() => ({ done: true, value: undefined }))
        if (done) return
        readBytes += value!.length
      }
    })()
    t.after(() => body.cancel().catch(() => {}))
    await waitFor('both streams to open', async () => (await sseClients(server.url)) === 2 || undefined, 10_000, 50)
    // Changes of 256 KB until the stuck stream is dropped: the kernel's buffers take a few MB, then
    // data waits in the server; 40 changes (10 MB) stay far below the 512 MiB cap.
    let changes = 0
    const started = performance.now()
    while ((await sseClients(server.url)) === 2) {
      assert.ok(changes < 40, `the stuck stream is still open after ${changes} changes of 256 KB`)
      changes += 1
      await member.updateCapabilities(g, { n: changes, blob: String(changes % 10).repeat(256 * 1024) })
      await waitFor('the change to be read', async () => readBytes >= changes * 256 * 1024 || undefined, 10_000, 20)
      await new Promise((r) => setTimeout(r, 200))
    }
    t.diagnostic(`dropped after ${changes} changes of 256 KB, ${Math.round(performance.now() - started)} ms`)
    await new Promise((r) => setTimeout(r, stallMs * 2))
    assert.equal(await sseClients(server.url), 1, 'the reading client is still connected')
  })

  it('web: streams: a stream ends after maxStreamMs, freeing its slot, even when its client never reads', { timeout: 60_000 }, async (t) => {
    const observer = await connect(`${backend('redis').url}?namespace=${rid('ns')}`, { memberId: rid('obs') })
    t.after(() => observer.stop())
    const server = await startStatusServer({ coordinator: observer, port: 0, maxStreamMs: 1500, maxStreamsPerClient: 1 })
    t.after(() => server.close())
    const port = server.address.port
    const stuck = await idleStream(port)
    t.after(() => stuck.socket.destroy())
    assert.equal(stuck.status, 200)
    assert.equal((await idleStream(port)).status, 429, 'the one slot of this client is taken')
    await waitFor('the stream to end and free its slot', async () => (await sseClients(server.url)) === 0 || undefined, 10_000, 100)
    const again = await idleStream(port)
    t.after(() => again.socket.destroy())
    assert.equal(again.status, 200)
  })
})
