/** Backend URL parsing and redaction. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { InvalidUrlError, parseBackendUrl, redactUrl } from '../../src/index.js'

describe('unit: url', () => {
  it("url: the Nova specification's URLs and tooz's forms parse", () => {
    const kazoo = parseBackendUrl('kazoo://127.0.0.1:2181?timeout=5')
    assert.equal(kazoo.scheme, 'kazoo')
    assert.deepEqual(kazoo.hosts, [{ host: '127.0.0.1', port: 2181 }])
    assert.deepEqual([...kazoo.query], [['timeout', ['5']]])
    assert.deepEqual(parseBackendUrl('memcached://:11211?timeout=5').hosts, [{ host: '', port: 11211 }])
    assert.deepEqual(parseBackendUrl('redis://:6379?timeout=5').hosts, [{ host: '', port: 6379 }])
    const multi = parseBackendUrl('zookeeper://h1:2181,[::1]:2182,h3/chroot/x?hosts=h4:1&hosts=h5:2')
    assert.deepEqual(multi.hosts, [{ host: 'h1', port: 2181 }, { host: '::1', port: 2182 }, { host: 'h3', port: undefined }])
    assert.equal(multi.path, '/chroot/x')
    assert.deepEqual(multi.query.get('hosts'), ['h4:1', 'h5:2'])
    const file = parseBackendUrl('file:///var/lib/rollcall')
    assert.deepEqual(file.hosts, [])
    assert.equal(file.path, '/var/lib/rollcall')
    assert.equal(parseBackendUrl('etcd3+https://e1:2379').scheme, 'etcd3+https')
    assert.equal(parseBackendUrl('redis:///var/run/redis.sock').path, '/var/run/redis.sock')
    assert.equal(parseBackendUrl('memory://').hosts.length, 0)
  })

  it('url: credentials are decoded, kept out of `redacted`', () => {
    const u = parseBackendUrl('redis://user:p%40ss@h:1/0?password=x&ssl=true')
    assert.equal(u.username, 'user')
    assert.equal(u.password, 'p@ss')
    assert.equal(u.redacted, 'redis://***@h:1/0?password=***&ssl=true')
    assert.equal(parseBackendUrl('redis://:only@h').password, 'only')
  })

  it('url: malformed URLs fail with InvalidUrlError naming the problem, password hidden', () => {
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['localhost:6379', /not a backend URL/],
      ['redis://h:99999', /Port "99999"/],
      ['redis://h:abc', /Port "abc"/],
      ['redis://::1:6379', /brackets/],
      ['redis://[::1', /Unclosed/],
      ['redis://u:secret@h:0', /Port "0"/],
      ['redis://h/%zz', /malformed %-escape/],
    ]
    for (const [input, pattern] of cases) {
      assert.throws(() => parseBackendUrl(input), (e: Error) => e instanceof InvalidUrlError && pattern.test(e.message) && !e.message.includes('secret'), input)
    }
  })

  it('url: redactUrl hides passwords in any text, even with a raw "@" inside', () => {
    assert.equal(redactUrl('connect redis://u:p@ss@host:1 failed'), 'connect redis://***@host:1 failed')
    assert.equal(redactUrl('mysql://root@h/db'), 'mysql://***@h/db')
    assert.equal(redactUrl('x?sentinel_password=abc&y=1'), 'x?sentinel_password=***&y=1')
  })

  it('url: property: parsing never throws anything but InvalidUrlError, and never echoes a password', () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 4 }).filter((p) => /^[A-Za-z0-9]+$/.test(p)), (junk, pw) => {
        const input = `redis://user:${pw}@${junk}`
        try {
          const u = parseBackendUrl(input)
          assert.ok(!u.redacted.includes(`:${pw}@`))
        } catch (err) {
          assert.ok(err instanceof InvalidUrlError, String(err))
          assert.ok(!(err as Error).message.includes(`:${pw}@`), (err as Error).message)
        }
      }),
      { numRuns: 2000 },
    )
  })
})

describe('unit: translate', () => {
  it('translate: errors with read-only messages (DOMException causes) still translate, secrets scrubbed', async () => {
    const { translateError } = await import('../../src/coordination/runtime/translate.js')
    const memory = (await import('../../src/coordination/drivers/memory.js')).default
    const cause = AbortSignal.timeout(0)
    await new Promise((r) => setTimeout(r, 5))
    const err = Object.assign(new Error('boom with pw-123456 inside'), { cause: cause.reason })
    const out = translateError(err, 'do it', memory, 'redis://u:***@h', ['pw-123456'])
    assert.match(out.message, /boom with \*\*\* inside/)
  })
})
