/**
 * The memcached client against a hostile fake server on loopback (fake-memcached.ts): lengths,
 * flags and CAS values that are negative, signed, exponents, hex or out of range; a value
 * announced over the size limit and streamed; a line that never ends; bytes no request asked
 * for. Every case must end in a typed error naming the problem within a bound, the connection
 * dropped and the next request served on a new one; no unhandled rejection, no socket left open.
 */
import assert from 'node:assert/strict'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it, type TestContext } from 'node:test'
import {
  MAX_VALUE_BYTES,
  MemcachedClient,
  MemcachedConnectionError,
  MemcachedProtocolError,
  type MemcachedClientOptions,
} from '../../src/clients/memcached/memcached-client.js'
import { MAX_LINE_BYTES } from '../../src/clients/memcached/memcached-protocol.js'
import { scriptProcess } from '../support/script-process.js'
import { FakeMemcached, type MemcachedScript } from './fake-memcached.js'
import { failOnUnhandled, rejection } from './hostile-support.js'

failOnUnhandled()

/** A client of a fake following `script`; both are closed when the test ends. */
async function withFake(
  t: TestContext,
  script: MemcachedScript,
  options: Partial<MemcachedClientOptions> = {},
): Promise<{ c: MemcachedClient; fake: FakeMemcached }> {
  const fake = await FakeMemcached.start(script)
  const c = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port: fake.port }], connectTimeoutMs: 3_000, requestTimeoutMs: 5_000, ...options })
  t.after(async () => {
    await c.close()
    await fake.close()
  })
  return { c, fake }
}

/** A protocol error naming `problem`. */
function assertProtocol(err: Error, problem: RegExp): void {
  assert.ok(err instanceof MemcachedProtocolError, `a MemcachedProtocolError, not ${err.name}: ${err.message}`)
  assert.ok(err instanceof MemcachedConnectionError, 'a connection error (the driver maps it to ConnectionError)')
  assert.match(err.message, problem)
}

/** Writes `bytes` in 1 MiB pieces, as fast as the socket takes them, until `totalBytes` or the socket closes; resolves with what was written. */
async function stream(sock: Socket, totalBytes: number): Promise<number> {
  const piece = Buffer.alloc(1024 * 1024, 0x61)
  let written = 0
  while (written < totalBytes && !sock.destroyed && sock.writable) {
    if (!sock.write(piece)) await new Promise((resolve) => (sock.once('drain', resolve), sock.once('close', resolve)))
    written += piece.length
  }
  return written
}

describe('memcached client against a hostile server: numbers', () => {
  it('a negative value length (VALUE b 0 -17) ends in a protocol error within 2 s, get and present alike (a child process: a client that loops fails, not hangs)', async (t) => {
    const fake = await FakeMemcached.start((sock) => void sock.write('VALUE a 0 1\r\nx\r\nVALUE b 0 -17\r\nEND\r\n'))
    t.after(() => fake.close())
    const client = JSON.stringify(new URL('../../src/clients/memcached/memcached-client.ts', import.meta.url).href)
    const { proc, out } = scriptProcess(
      t,
      `const { MemcachedClient } = await import(${client})
      const c = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port: ${fake.port} }], connectTimeoutMs: 3000, requestTimeoutMs: 5000 })
      await c.connect()
      for (const ask of [() => c.get(['a', 'b']), () => c.present(['a', 'b'])]) {
        const t0 = performance.now()
        const outcome = await ask().then((v) => 'resolved', (err) => err.name + ': ' + err.message)
        console.log(JSON.stringify({ outcome, ms: Math.round(performance.now() - t0) }))
      }
      await c.close()`,
    )
    const exited = await Promise.race([new Promise((resolve) => proc.once('exit', resolve)), sleep(20_000).then(() => 'hang')])
    assert.notEqual(exited, 'hang', `the client did not finish within 20 s (a parser looping?); said: ${out()}`)
    const lines = out().trim().split('\n').map((l) => JSON.parse(l) as { outcome: string; ms: number })
    assert.equal(lines.length, 2, out())
    for (const { outcome, ms } of lines) {
      assert.match(outcome, /^MemcachedProtocolError: memcached sent a value size "-17" \(digits up to \d+ expected\) in "VALUE b 0 -17"/)
      assert.ok(ms < 2_000, `${ms} ms`)
    }
  })

  const BAD_LINES: [command: 'gets' | 'mg', line: string, problem: RegExp][] = [
    ['gets', 'VALUE k 0 1e1 5', /a value size "1e1"/],
    ['gets', 'VALUE k 0 0x1 5', /a value size "0x1"/],
    ['gets', 'VALUE k 0 +1 5', /a value size "\+1"/],
    ['gets', 'VALUE k 0  1 5', /VALUE line of 6 fields/],
    ['gets', 'VALUE k -1 1 5', /flags "-1"/],
    ['gets', 'VALUE k 4294967296 1 5', /flags "4294967296"/],
    ['gets', 'VALUE k 0 1 x', /a CAS value "x"/],
    ['gets', 'VALUE k 0 1 18446744073709551616', /a CAS value "18446744073709551616"/],
    ['gets', 'VALUE k 0 1', /a VALUE line of 4 fields \(5 expected\)/],
    ['gets', 'VALUE other 0 1 5', /a value for key "other", which was not asked for/],
    ['gets', 'STORED', /an unexpected reply "STORED" in reply to gets/],
    ['mg', 'HD cabc', /a CAS value "abc"/],
    ['mg', 'HD c-5', /a CAS value "-5"/],
    ['mg', 'HD t1.5', /a TTL "1.5"/],
    ['mg', 'VA -1 c5', /a value size "-1"/],
    ['mg', 'VA 1e3', /a value size "1e3"/],
    ['mg', 'HD 5', /a returned flag "5"/],
  ]

  it(`lengths, flags and CAS values that are not plain digits in range, and lines of the wrong shape (${BAD_LINES.length} cases): a protocol error, the connection dropped, the next request on a new one`, async (t) => {
    let next = ''
    const { c, fake } = await withFake(t, (sock, line) => {
      if (line === 'version') sock.write('VERSION 1.6.21\r\n')
      else sock.write(`${next}\r\nx\r\nEND\r\n`)
    })
    for (const [i, [command, line, problem]] of BAD_LINES.entries()) {
      next = line
      const ask = command === 'gets' ? c.gets('k') : c.meta('mg', 'k', ['c', 't', 'v'])
      assertProtocol(await rejection(ask, 3_000), problem)
      assert.equal(await c.version(), '1.6.21', `case ${i}: the next request works`)
      assert.equal(fake.connections, i + 2, `case ${i}: on a new connection`)
    }
  })
})

describe('memcached client against a hostile server: sizes', () => {
  it(`a value announced at ${MAX_VALUE_BYTES + 1} bytes or 99999999999 and streamed: refused at once, nothing buffered for it`, async (t) => {
    let streamed = 0
    let size = 0
    const { c } = await withFake(t, async (sock) => {
      sock.write(`VALUE k 0 ${size}\r\n`)
      streamed += await stream(sock, 512 * 1024 * 1024)
    }, { requestTimeoutMs: 10_000 })
    for (size of [99_999_999_999, MAX_VALUE_BYTES + 1]) {
      assertProtocol(await rejection(c.get(['k']), 2_000), new RegExp(`a value size "${size}" \\(digits up to ${MAX_VALUE_BYTES} expected\\)`))
    }
    assert.ok(streamed < 256 * 1024 * 1024, `${streamed} bytes streamed before the client hung up`)
  })

  it('a value of the largest size, sent in 1 KiB pieces, is read whole', async (t) => {
    const value = Buffer.alloc(MAX_VALUE_BYTES, 0x62)
    value.write('\r\nEND\r\n', 5000)
    const { c } = await withFake(t, async (sock) => {
      const wire = Buffer.concat([Buffer.from(`VALUE k 7 ${value.length}\r\n`), value, Buffer.from('\r\nEND\r\n')])
      for (let at = 0; at < wire.length && !sock.destroyed; at += 1024 * 1024) {
        // 1 KiB writes, a MiB at a time, so that the client sees many small chunks.
        for (let k = at; k < Math.min(at + 1024 * 1024, wire.length); k += 1024) sock.write(wire.subarray(k, Math.min(k + 1024, at + 1024 * 1024, wire.length)))
        await sleep(1)
      }
    }, { requestTimeoutMs: 30_000 })
    const item = (await c.get(['k'])).get('k')
    assert.equal(item?.flags, 7)
    assert.ok(item?.value.equals(value))
  })

  it(`a line with no \\r\\n past ${MAX_LINE_BYTES} bytes: a protocol error, not a buffer that grows until the timeout`, async (t) => {
    const { c } = await withFake(t, (sock) => void stream(sock, 64 * 1024 * 1024), { requestTimeoutMs: 10_000 })
    assertProtocol(await rejection(c.version(), 2_000), new RegExp(`a line of over ${MAX_LINE_BYTES} bytes \\("aaaa`))
  })
})

describe('memcached client against a hostile server: bytes no request asked for', () => {
  it('a stray STORED after a reply is not taken for the next cas: the connection is dropped and the cas answered on a new one', async (t) => {
    const disconnects: Error[] = []
    const { c, fake } = await withFake(t, (sock, line, index) => {
      if (line === 'version') sock.write(index === 0 ? 'VERSION 1.6.21\r\nSTORED\r\n' : 'VERSION 1.6.21\r\n')
      else if (line.startsWith('cas ')) sock.write('EXISTS\r\n')
    }, { onDisconnected: (err) => void disconnects.push(err) })
    assert.equal(await c.version(), '1.6.21')
    assert.equal(await c.store('cas', 'k', Buffer.from('v'), 1, 60, 7n), 'exists')
    assert.equal(fake.connections, 2)
    assert.equal(disconnects.length, 1)
    assertProtocol(disconnects[0]!.cause as Error, /memcached sent 8 bytes that no request asked for \("STORED\\r\\n"\)/)
  })

  it('a stray END before a get is not taken for its reply: the group read finds the value', async (t) => {
    const { c } = await withFake(t, (sock, line, index) => {
      if (line === 'version') sock.write(index === 0 ? 'VERSION 1.6.21\r\nEND\r\n' : 'VERSION 1.6.21\r\n')
      else if (line === 'get g') sock.write('VALUE g 2 3\r\nabc\r\nEND\r\n')
    })
    assert.equal(await c.version(), '1.6.21')
    assert.equal((await c.get(['g'])).get('g')?.value.toString(), 'abc')
  })

  it('bytes streamed with no request pending: the connection is dropped at the first chunk, not buffered', async (t) => {
    const disconnects: Error[] = []
    let streamed = 0
    const { c } = await withFake(t, (sock, line) => {
      sock.write('VERSION 1.6.21\r\n')
      if (line === 'version') void stream(sock, 512 * 1024 * 1024).then((n) => (streamed = n))
    }, { onDisconnected: (err) => void disconnects.push(err) })
    assert.equal(await c.version(), '1.6.21')
    for (let i = 0; i < 200 && disconnects.length === 0; i++) await sleep(10)
    assert.equal(disconnects.length, 1, 'dropped within 2 s')
    assertProtocol(disconnects[0]!.cause as Error, /bytes that no request asked for \("aaaa/)
    await sleep(100)
    assert.ok(streamed < 64 * 1024 * 1024, `${streamed} bytes taken before the drop`)
  })
})
