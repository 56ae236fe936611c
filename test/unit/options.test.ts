/** Option resolution: tooz spellings and units in URLs, unit-bearing names in code. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InvalidOptionError, opt } from '../../src/index.js'
import { resolveOptions } from '../../src/coordination/config/options.js'

const specs = {
  timeoutMs: opt.seconds('timeout', { default: 30, doc: 't' }),
  membershipTimeoutMs: opt.seconds('membership_timeout', { defaultFrom: 'timeoutMs', doc: 'm' }),
  db: opt.integer('db', { default: 0, min: 0, max: 15, doc: 'd' }),
  ssl: opt.boolean('ssl', { default: false, doc: 's' }),
  style: opt.enum('lock_key_style', ['v9', 'legacy'], { default: 'v9', doc: 'k' }),
  fallback: opt.list('sentinel_fallback', { default: [], doc: 'f' }),
}
const q = (s: string): Map<string, string[]> => {
  const m = new Map<string, string[]>()
  for (const [k, v] of new URLSearchParams(s)) m.set(k, [...(m.get(k) ?? []), v])
  return m
}

describe('unit: options', () => {
  it('options: defaults, defaultFrom, URL seconds → ms, repeated keys', () => {
    assert.deepEqual(resolveOptions(specs, q(''), {}, 'x'), { timeoutMs: 30_000, membershipTimeoutMs: 30_000, db: 0, ssl: false, style: 'v9', fallback: [] })
    const r = resolveOptions(specs, q('timeout=5&ssl=yes&db=3&db=4&sentinel_fallback=a:1&sentinel_fallback=b:2&lock_key_style=legacy'), {}, 'x')
    assert.deepEqual(r, { timeoutMs: 5000, membershipTimeoutMs: 5000, db: 4, ssl: true, style: 'legacy', fallback: ['a:1', 'b:2'] })
    assert.equal(resolveOptions(specs, q('timeout=0.5'), {}, 'x').timeoutMs, 500)
  })

  it('options: code overrides the URL', () => {
    const r = resolveOptions(specs, q('timeout=5&membership_timeout=7'), { membershipTimeoutMs: 1234 }, 'x')
    assert.equal(r.timeoutMs, 5000)
    assert.equal(r.membershipTimeoutMs, 1234)
  })

  it('options: every bad value names the option and what is allowed', () => {
    const bad: [string, Record<string, unknown>, RegExp][] = [
      ['colour=blue', {}, /Unknown option "colour".*known options: db, lock_key_style, membership_timeout, sentinel_fallback, ssl, timeout/],
      ['', { colour: 1 }, /Unknown option "colour" for the x driver; known options: db, fallback/],
      ['timeout=abc', {}, /"timeout".*"abc" is not a number/],
      ['timeout=-1', {}, /"timeout".*greater than zero/],
      ['timeout=', {}, /"timeout".*has no value/],
      ['db=16', {}, /"db".*at most 15/],
      ['db=1.5', {}, /not a whole number/],
      ['ssl=maybe', {}, /"ssl".*not a boolean/],
      ['lock_key_style=v8', {}, /must be one of v9, legacy/],
      ['', { timeoutMs: '5' }, /timeoutMs.*milliseconds/],
    ]
    for (const [query, code, pattern] of bad) {
      assert.throws(
        () => resolveOptions(specs, q(query), code, 'x'),
        (e: Error) => e instanceof InvalidOptionError && pattern.test(e.message),
        `${query} ${JSON.stringify(code)}`,
      )
    }
  })
})

describe('options: resolved types', () => {
  it('an option without a default resolves to T | undefined; one with a default or a defaultFrom to T', () => {
    const withOptional = { ...specs, sentinel: opt.string('sentinel', { doc: 's' }), api: opt.enum('api_version', ['v3', 'v3beta'], { doc: 'a' }) }
    const r = resolveOptions(withOptional, q(''), {}, 'test')
    // Compile-time half: each line fails to compile if the resolved type is wrong.
    const sentinel: string | undefined = r.sentinel
    // @ts-expect-error an option without a default may be undefined
    const notNarrowed: string = r.sentinel
    const api: 'v3' | 'v3beta' | undefined = r.api
    const timeout: number = r.membershipTimeoutMs
    const style: 'v9' | 'legacy' = r.style
    // Run-time half: the values the types describe.
    assert.equal(sentinel, undefined)
    assert.equal(notNarrowed, undefined)
    assert.equal(api, undefined)
    assert.equal(timeout, 30_000)
    assert.equal(style, 'v9')
    assert.equal(withOptional.sentinel.hasDefault, false)
    assert.equal(withOptional.membershipTimeoutMs.hasDefault, true)
  })
})
