/**
 * RepeatedWarnings (issue 11), driven by an injected clock: the first warning of a kind is logged,
 * repeats are counted, a "still failing" summary comes every 30 s by default, recovered() ends an
 * episode with one line, and a kind quiet for twice the interval starts afresh.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RepeatedWarnings, SUMMARY_EVERY_MS } from '../../src/internal/repeated-warnings.js'

interface Line {
  level: 'warn' | 'info'
  message: string
  fields?: Record<string, unknown>
}

/** A RepeatedWarnings on a clock the test moves, and the lines it logged. */
function setup(options: { summaryEveryMs?: number } = {}): { w: RepeatedWarnings; lines: Line[]; advance(ms: number): void } {
  let now = 1_000_000
  const lines: Line[] = []
  const sink = {
    warn: (message: string, fields?: Record<string, unknown>) => lines.push({ level: 'warn', message, fields }),
    info: (message: string, fields?: Record<string, unknown>) => lines.push({ level: 'info', message, fields }),
  }
  const w = new RepeatedWarnings(sink, { ...options, now: () => now })
  return { w, lines, advance: (ms) => void (now += ms) }
}

/** Warns `count` times, `everyMs` apart, as 5 groups polling every 200 ms would in turn. */
function poll(s: ReturnType<typeof setup>, key: string, count: number, everyMs: number): void {
  for (let i = 0; i < count; i++) {
    s.w.warn(key, `The connection to Redis broke (group g${i % 5})`)
    s.advance(everyMs)
  }
}

describe('unit: repeated warnings', () => {
  it('repeated warnings: the default summary interval is 30 s', () => {
    assert.equal(SUMMARY_EVERY_MS, 30_000)
  })

  it('repeated warnings: one line at the start, a summary every 30 s with the count left out, one recovery line', () => {
    const s = setup()
    assert.equal(s.w.warn('outage:CONNECTION_FAILED', 'The connection to Redis broke (group g0)', { code: 'CONNECTION_FAILED' }), true)
    assert.deepEqual(s.lines, [{ level: 'warn', message: 'The connection to Redis broke (group g0)', fields: { code: 'CONNECTION_FAILED' } }])
    s.advance(40)
    // 29.96 s of repeats, 25 a second: none logged.
    poll(s, 'outage:CONNECTION_FAILED', 749, 40)
    assert.equal(s.lines.length, 1, s.lines.map((l) => l.message).join('\n'))
    // The first repeat at or past 30 s since the first line brings the summary.
    assert.equal(s.w.warn('outage:CONNECTION_FAILED', 'The connection to Redis broke (group g4)'), true)
    assert.equal(s.lines.length, 2)
    assert.deepEqual(s.lines[1], {
      level: 'warn',
      message: 'Still failing after 30 s (750 similar warnings since the last line): The connection to Redis broke (group g4)',
      fields: { repeats: 750 },
    })
    // The next summary counts only what came after the last one.
    s.advance(1_000)
    poll(s, 'outage:CONNECTION_FAILED', 30, 1_000)
    assert.equal(s.lines.length, 3)
    assert.match(s.lines[2]!.message, /^Still failing after 60 s \(30 similar warnings since the last line\)/)
    s.advance(4_000)
    s.w.recovered()
    assert.equal(s.lines.length, 4)
    assert.deepEqual(s.lines[3], {
      level: 'info',
      message: 'Recovered after 65 s (780 repeats of this warning were not logged): The connection to Redis broke (group g0)',
      fields: { repeats: 780 },
    })
    // Ended: the next failure is a new episode, logged as it comes.
    s.w.recovered()
    assert.equal(s.lines.length, 4, 'no second recovery line')
    assert.equal(s.w.warn('outage:CONNECTION_FAILED', 'broke again'), true)
    assert.equal(s.lines[4]!.message, 'broke again')
  })

  it('repeated warnings: a warning never repeated ends without a recovery line', () => {
    const s = setup()
    s.w.warn('outage:CONNECTION_FAILED', 'broke once')
    s.advance(5_000)
    s.w.recovered()
    assert.deepEqual(s.lines.map((l) => l.message), ['broke once'])
  })

  it('repeated warnings: kinds are counted apart, and recovered() ends only those it matches', () => {
    const s = setup()
    poll(s, 'outage:CONNECTION_FAILED', 10, 100)
    poll(s, 'INVALID_VALUE:group g7 holds a foreign value', 10, 100)
    assert.deepEqual(s.lines.map((l) => l.level), ['warn', 'warn'])
    s.w.recovered((key) => key.startsWith('outage:'))
    assert.equal(s.lines.length, 3)
    assert.match(s.lines[2]!.message, /^Recovered after 2 s \(9 repeats of this warning were not logged\): The connection to Redis broke/)
    // The other kind is still an episode: its repeats stay silent.
    assert.equal(s.w.warn('INVALID_VALUE:group g7 holds a foreign value', 'again'), false)
    assert.equal(s.lines.length, 3)
  })

  it('repeated warnings: a kind quiet for twice the interval starts afresh; a shorter interval is honoured', () => {
    const s = setup({ summaryEveryMs: 1_000 })
    poll(s, 'k', 3, 100)
    assert.equal(s.lines.length, 1)
    // Past the interval since the first line: the next repeat is summarised.
    s.advance(800)
    assert.equal(s.w.warn('k', 'm'), true)
    assert.match(s.lines[1]!.message, /^Still failing after 1\.1 s \(3 similar warnings/)
    // Quiet for over 2 s (twice the interval): a new episode, the message logged as it is.
    s.advance(2_001)
    assert.equal(s.w.warn('k', 'fresh'), true)
    assert.equal(s.lines[2]!.message, 'fresh')
    s.advance(1_999)
    assert.equal(s.w.warn('k', 'still the same episode'), true, 'within twice the interval: a summary')
    assert.match(s.lines[3]!.message, /^Still failing after 2 s \(1 similar warnings/)
  })
})
