/**
 * Safe at the edges (issue 11), through connect() with the URL a user writes: credentials of any
 * shape never echoed, redaction linear, durations bounded by the timer limit, programmatic options
 * typed, no hang on a directory that takes no entries.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { connect, createCoordinator, InvalidOptionError, InvalidUrlError, parseBackendUrl, redactUrl, RollcallError } from '../../src/index.js'
import { displayUrl, mayHoldCredentials } from '../../src/internal/redact.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { rid, waitFor } from '../support/wait.js'

/** A password made of characters every URL parser trips on. */
const HOSTILE = ['Gh7/kP#2x', 'p?ss=1', 'a#b', 'x@y@z', 'new\nline', 'sp ace', 'q"uote', 'per%cent', '%zz', 'tab\tx', 'colon:x', 'semi;x', 'back\\slash']

async function failure(p: Promise<unknown>): Promise<RollcallError> {
  try {
    await p
  } catch (err) {
    assert.ok(err instanceof RollcallError, `a typed error, not ${String(err)}`)
    return err
  }
  assert.fail('expected a failure')
}

describe('unit: edges', () => {
  it('edges: a password with a raw "/", "#", "?", "@", newline or quote is never echoed, for every scheme', async () => {
    for (const scheme of ['redis', 'memcached', 'zookeeper', 'kazoo', 'etcd3', 'etcd3+http', 'postgresql', 'mysql', 'file', 'memory']) {
      for (const pw of HOSTILE) {
        for (const url of [`${scheme}://:${pw}Z9q@127.0.0.1:1/x?timeout=1`, `${scheme}://user${pw}Z9q:${pw}Z9q@127.0.0.1`, `${scheme}::${pw}Z9q@127.0.0.1`]) {
          let shown: string
          try {
            shown = (await createCoordinator(url, { memberId: 'edge' })).url
          } catch (err) {
            assert.ok(err instanceof RollcallError, `${JSON.stringify(url)}: ${String(err)}`)
            shown = err.message
          }
          assert.ok(!shown.includes('Z9q'), `${JSON.stringify(url)} echoed its credentials: ${shown}`)
          assert.ok(!redactUrl(`failed: ${url} (x)`).includes('Z9q'), `redactUrl leaves the credentials of ${JSON.stringify(url)}`)
        }
      }
    }
    const e = await failure(connect('redis://:Gh7/kP#2x@127.0.0.1:6379'))
    assert.equal(e.code, 'INVALID_URL')
    assert.match(e.message, /redis:\/\/\*\*\*@127\.0\.0\.1:6379.*percent-encode/)
    assert.match((await failure(connect('redis::SECRET@127.0.0.1'))).message, /^"redis:\*\*\*@127\.0\.0\.1" is not a backend URL/)
    assert.equal(redactUrl('redis://:a\nSECRET@127.0.0.1:6379'), 'redis://***@127.0.0.1:6379')
    // A password that itself looks like a URL start (found by the userinfo fuzz case, seed 465547591).
    assert.equal(redactUrl('etcd3://Pw-S3cr3t://Pw-S3cr3t@127.0.0.1'), 'etcd3://***@127.0.0.1')
  })

  it('edges: percent-encoded credentials still work, and valid URLs keep their meaning', () => {
    const u = parseBackendUrl('redis://u%2Fx:Gh7%2FkP%232x%40@h:1/0?timeout=5')
    assert.equal(u.username, 'u/x')
    assert.equal(u.password, 'Gh7/kP#2x@')
    assert.equal(u.redacted, 'redis://***@h:1/0?timeout=5')
    assert.equal(parseBackendUrl('file:///var/lib/a@b').path, '/var/lib/a@b', 'an "@" in a file:// path is a path')
    assert.throws(() => parseBackendUrl('redis:///u:Zq9@127.0.0.1'), (err: Error) => err instanceof InvalidUrlError && !err.message.includes('Zq9'))
    assert.throws(
      () => parseBackendUrl('redis://h:1/0?password=p@ss'),
      (err: Error) => err instanceof InvalidUrlError && /%40/.test(err.message) && !err.message.includes('p@ss'),
    )
  })

  it('edges: property: redactUrl is linear, on long and adversarial text', () => {
    const unit = fc.constantFrom('a', ':', '/', '@', '?', '=', '&', 'redis', '://', 'password=', ' ', '\n', '1', '+')
    fc.assert(
      fc.property(fc.array(unit, { minLength: 1, maxLength: 8 }), fc.integer({ min: 20_000, max: 200_000 }), (parts, repeat) => {
        const text = parts.join('').repeat(Math.ceil(repeat / parts.join('').length))
        const t0 = performance.now()
        redactUrl(text)
        displayUrl(text)
        const ms = performance.now() - t0
        // Quadratic took 1.7 s at 40k characters; linear does 200k in a few ms. 500 ms is a generous bound on a busy machine.
        assert.ok(ms < 500, `${text.length} characters of ${JSON.stringify(parts.join(''))} took ${Math.round(ms)} ms`)
      }),
      { numRuns: 60 },
    )
    const big = `${'a'.repeat(5_000_000)}redis://u:pw@h`
    const t0 = performance.now()
    assert.ok(redactUrl(big).endsWith('redis://***@h'))
    assert.ok(performance.now() - t0 < 2_000, `5 MB took ${Math.round(performance.now() - t0)} ms`)
  })

  it('edges: property: text that mayHoldCredentials() lets through unscanned is text redactUrl leaves alone', () => {
    const unit = fc.constantFrom('a', ':', '/', '@', '?', '=', '&', 'redis', '://', 'password=', 'token=', ' ', '\n', '#', '%40', 'Z9')
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 30 }), (parts, noise) => {
        for (const text of [parts.join(''), `${noise}${parts.join('')}`]) {
          if (!mayHoldCredentials(text)) assert.equal(redactUrl(text), text, JSON.stringify(text))
        }
      }),
      { numRuns: 5_000 },
    )
    assert.equal(mayHoldCredentials('x'.repeat(100_000)), false)
    for (const text of ['redis://:pw@h', 'redis::pw@h', 'a?password=x', 'postgresql://u:p@h/db']) assert.equal(mayHoldCredentials(text), true, text)
  })

  it('edges: property: any user name and password is hidden by redactUrl and parseBackendUrl', () => {
    const chars = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('://'))
    fc.assert(
      fc.property(chars, chars, (user, pw) => {
        const url = `redis://${user}:${pw}QzQ9@127.0.0.1:6379/0`
        assert.ok(!redactUrl(`x ${url} y`).includes('QzQ9'))
        try {
          assert.ok(!parseBackendUrl(url).redacted.includes('QzQ9'))
        } catch (err) {
          assert.ok(err instanceof InvalidUrlError, String(err))
          assert.ok(!err.message.includes('QzQ9'), err.message)
        }
      }),
      { numRuns: 3_000 },
    )
  })

  it('edges: durations past the timer limit or not finite are refused with INVALID_OPTION naming the limit', async () => {
    for (const value of ['1e309', 'Infinity', '2200000', '2147484']) {
      const e = await failure(connect(`redis://127.0.0.1:6379?timeout=${value}`))
      assert.equal(e.code, 'INVALID_OPTION', `timeout=${value}: ${e.message}`)
      assert.match(e.message, value === 'Infinity' ? /not a number/ : /finite|2147483\.647 s/)
    }
    const w = await failure(connect('memory://?watch_interval=2200000'))
    assert.match(w.message, /watch_interval.*at most 2147483\.647 s \(2147483647 ms, the longest a Node timer can wait\)/)
    for (const value of [Infinity, Number.NaN, 2 ** 31, Number.MAX_VALUE]) {
      const e = await failure(connect('memory://', { watchIntervalMs: value }))
      assert.equal(e.code, 'INVALID_OPTION')
      assert.match(e.message, /2147483647/)
    }
    const c = await connect('memory://?watch_interval=2147483.647')
    await c.stop()
  })

  it('edges: programmatic options are checked as strictly as URL options', async () => {
    const cases: [unknown, RegExp][] = [
      [null, /options of connect\(\) must be an object/],
      [42, /options of connect\(\) must be an object/],
      [[], /options of connect\(\) must be an object/],
      [{ require: 'groups' }, /require must be an array/],
      [{ require: null }, /require must be an array/],
      [{ require: 42 }, /require must be an array/],
      [{ require: {} }, /require must be an array/],
      [{ require: [42] }, /Unknown capabilities/],
      [{ heartbeat: 'yes' }, /heartbeat must be true or false/],
      [{ autoWatch: 1 }, /autoWatch must be true or false/],
      [{ logger: console.log }, /logger must be an object/],
      [{ logger: null }, /logger must be an object/],
    ]
    for (const [options, pattern] of cases) {
      const e = await failure(connect('memory://', options as never))
      assert.ok(e instanceof InvalidOptionError, `${JSON.stringify(options)}: ${e.message}`)
      assert.match(e.message, pattern)
    }
  })

  it('edges: a file:// directory that takes no entries fails at once with a typed error', async () => {
    const t0 = performance.now()
    const e = await failure(connect('file:///proc/self?timeout=2'))
    assert.equal(e.code, 'CONNECTION_FAILED')
    assert.match(e.message, /Cannot use \/proc\/self as a file:\/\/ backend/)
    assert.ok(performance.now() - t0 < 5_000)
  })
})

describe('unit: edges: repeated warnings', () => {
  for (const name of ['redis', 'memcached'] as const) {
    it(`edges: ${name}: an outage is logged once when it starts and once when it ends, not once per group per poll`, { timeout: 60_000 }, async (t) => {
      const target = new URL(serverUrl(name).replace(/^[a-z0-9+]+:/, 'http:'))
      const proxy = await TcpProxy.start(Number(target.port))
      t.after(() => proxy.close())
      const lines: { level: string; msg: string }[] = []
      const logger = {
        debug: () => {},
        info: (msg: string) => lines.push({ level: 'info', msg }),
        warn: (msg: string) => lines.push({ level: 'warn', msg }),
        error: (msg: string) => lines.push({ level: 'error', msg }),
      }
      const c = await connect(`${name}://127.0.0.1:${proxy.port}?timeout=30&watch_interval=0.1`, { memberId: rid('m'), logger })
      t.after(() => c.stop())
      const warnings: unknown[] = []
      c.on('warning', (w) => warnings.push(w))
      for (let i = 0; i < 5; i++) {
        const g = rid('g')
        await c.joinGroupCreate(g)
        await c.watchJoinGroup(g, () => {})
      }
      proxy.cut()
      const cutAt = performance.now()
      await waitFor('the outage to be logged', async () => lines.length > 0 || undefined, 20_000, 20)
      const firstAfterMs = performance.now() - cutAt
      await new Promise((r) => setTimeout(r, 4_000))
      const duringOutage = lines.length
      proxy.restore()
      await waitFor('the watchers to read again', async () => (await c.getGroups().then(() => true, () => false)) || undefined, 20_000, 100)
      await waitFor('the recovery line', async () => lines.some((l) => l.level === 'info' && l.msg.startsWith('Recovered after')) || undefined, 20_000, 100)
      const warns = lines.filter((l) => l.level === 'warn')
      t.diagnostic(
        `${warnings.length} warning events, ${warns.length} warn lines (the first ${
          Math.round(firstAfterMs)
        } ms after the cut), ${lines.length} lines in all: ${JSON.stringify(lines.map((l) => `${l.level}: ${l.msg.slice(0, 70)}`))}`,
      )
      assert.ok(warnings.length >= 10, `the outage was noticed by every group's poll (${warnings.length} warning events)`)
      // One line when the outage starts, none for its repeats, one when it ends: not one per group per poll.
      assert.equal(lines[0]!.level, 'warn', 'the first line is the warning that the backend broke')
      assert.ok(warns.length <= 4, `at most one line per kind of failure, not one per group per poll: ${warns.length} lines`)
      assert.ok(duringOutage <= 4, `${duringOutage} lines during 4 s of outage`)
      const recovered = lines.filter((l) => l.level === 'info' && l.msg.startsWith('Recovered after'))
      assert.ok(recovered.length >= 1 && recovered.length <= warns.length, `one recovery line per kind that repeated: ${recovered.length}`)
      assert.match(recovered[0]!.msg, /^Recovered after \d+(\.\d)? s \(\d+ repeats of this warning were not logged\): /)
      assert.equal(lines.at(-1)!.level, 'info', 'the last line says it recovered')
    })
  }
})
