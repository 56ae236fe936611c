/** The status server's pure parts: listen addresses, update bodies, error statuses, JSON and HTML output. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { listenAddress, parseListen } from '../../src/cli/commands/serve.js'
import { GroupNotFoundError, ServiceNotFoundError } from '../../src/index.js'
import { parseServiceUpdate } from '../../src/web/api.js'
import { statusForCode, toPublicJson, tokensEqual } from '../../src/web/http.js'
import { escapeHtml, formatAge } from '../../src/web/page.js'
import { parseServiceFilter, parseServiceId } from '../../src/web/services.js'

describe('web: unit', () => {
  it('web: unit: --listen takes HOST:PORT, [v6]:PORT, :PORT and PORT; loopback by default', () => {
    assert.deepEqual(parseListen('0.0.0.0:8080'), { host: '0.0.0.0', port: 8080 })
    assert.deepEqual(parseListen('[::1]:7979'), { host: '::1', port: 7979 })
    assert.deepEqual(parseListen(':7000'), { host: '127.0.0.1', port: 7000 })
    assert.deepEqual(parseListen('7001'), { host: '127.0.0.1', port: 7001 })
    for (const bad of ['', 'host', 'host:', 'host:99999', 'a b:1', '1.2.3.4:-1']) assert.throws(() => parseListen(bad), { code: 'INVALID_ARGUMENT' }, bad)
  })

  it('web: unit: the listen address is --listen, else a configured [api] listen, else 127.0.0.1:7979', () => {
    const config = (host: string, port: number) => ({ api: { token: undefined, listen: { host, port } } }) as never
    assert.deepEqual(listenAddress(undefined, undefined), { host: '127.0.0.1', port: 7979 })
    assert.deepEqual(listenAddress(undefined, config('10.0.0.5', 9000)), { host: '10.0.0.5', port: 9000 })
    assert.deepEqual(listenAddress('127.0.0.1:1234', config('10.0.0.5', 9000)), { host: '127.0.0.1', port: 1234 })
  })

  it('web: unit: update bodies follow Nova 2.53: a reason only with disabled, enabling clears it', () => {
    assert.deepEqual(parseServiceUpdate({ status: 'disabled', disabled_reason: 'x' }), { disabled: true, disabledReason: 'x' })
    assert.deepEqual(parseServiceUpdate({ status: 'enabled' }), { disabled: false, disabledReason: null })
    assert.deepEqual(parseServiceUpdate({ forced_down: true }), { forcedDown: true })
    assert.throws(() => parseServiceUpdate(null), /JSON object/)
    assert.throws(() => parseServiceUpdate({ status: 'enabled', disabled_reason: 'x' }), /only be given/)
    assert.throws(() => parseServiceUpdate({ status: 'disabled', disabled_reason: 'a\u0000b' }), /control characters/)
  })

  it('web: unit: ids and filters are checked', () => {
    assert.equal(parseServiceId('42'), 42)
    for (const bad of ['0', '042', '-1', '1e3', '9007199254740993', '']) assert.throws(() => parseServiceId(bad), { code: 'INVALID_ARGUMENT' }, bad)
    assert.deepEqual(parseServiceFilter(new URLSearchParams('topic=a&state=down&zone=')), { topic: 'a', state: 'down' })
    assert.throws(() => parseServiceFilter(new URLSearchParams('sort=id')), /Unknown query parameter/)
  })

  it('web: unit: HTTP statuses derive from error codes', () => {
    assert.equal(statusForCode(new ServiceNotFoundError('x').code), 404)
    assert.equal(statusForCode(new GroupNotFoundError('g').code), 404)
    assert.equal(statusForCode('SERVICEGROUP_UNAVAILABLE'), 503)
    assert.equal(statusForCode('OPERATION_TIMEOUT'), 504)
    assert.equal(statusForCode('NOT_SUPPORTED'), 501)
    assert.equal(statusForCode('BACKEND_ERROR'), 500)
  })

  it('web: unit: public JSON redacts URLs at any depth and makes msgpack values JSON', () => {
    const out = toPublicJson(new Map<unknown, unknown>([['a', { url: 'redis://u:pw@h:1' }], ['b', [new Uint8Array([1, 2]), 10n, new Set(['x'])]]]))
    assert.deepEqual(out, { a: { url: 'redis://***@h:1' }, b: [{ $bytes: 'AQI=' }, '10', ['x']] })
  })

  it('web: unit: tokens compare equal only when equal, whatever their lengths', () => {
    assert.equal(tokensEqual('abc', 'abc'), true)
    assert.equal(tokensEqual('abc', 'abd'), false)
    assert.equal(tokensEqual('abc', 'abcd'), false)
    assert.equal(tokensEqual('', 'x'), false)
  })

  it('web: unit: HTML escaping and ages', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&#60;a href=&#34;x&#34;&#62;&#39;&#38;&#39;&#60;/a&#62;')
    const now = new Date('2024-01-01T00:10:00Z')
    assert.equal(formatAge('2024-01-01T00:09:55Z', now), '5 s')
    assert.equal(formatAge('2024-01-01T00:05:00Z', now), '5 min')
    assert.equal(formatAge(null, now), '—')
  })
})
