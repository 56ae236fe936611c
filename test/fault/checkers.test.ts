/**
 * The fault suite's own checkers, on hand-written inputs: a checker that never fails proves
 * nothing. The lock-log checker must catch overlapping holds, a process beginning a second hold
 * inside its first, and fencing tokens that do not grow, while accepting a holder killed inside
 * its hold; the event-order check must accept the orders the Coordinator documents and refuse the
 * others.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { AppendLog, checkExclusive, parseLog, readLog } from '../support/lock-checker.js'
import { orderProblems, type Ev } from './support/harness.js'

const log = (...lines: string[]): ReturnType<typeof parseLog> => parseLog(lines.map((l, i) => `${l} ${1000 + i}`).join('\n'))

describe('fault: checkers', () => {
  it('lock checker: clean handovers, a holder killed inside, a lost lock: no violation', () => {
    const r = checkExclusive(log('enter 1 5', 'exit 1 5', 'enter 2 6', 'kill 2 -', 'enter 3 7', 'lost 3 7', 'enter 4 9', 'exit 4 9', 'exit 4 9'), 'lock', {
      fencing: true,
    })
    assert.deepEqual(r.violations, [])
    assert.equal(r.holds, 4)
    assert.equal(r.killedInside, 1)
    assert.equal(r.lostInside, 1)
    assert.equal(r.worstTakeoverAfterKillMs, 1)
  })

  it('lock checker: an enter before the holder exits, is killed or loses the lock is a violation', () => {
    const r = checkExclusive(log('enter 1 -', 'enter 2 -', 'exit 1 -', 'exit 2 -', 'kill 3 -', 'enter 3 -', 'enter 4 -'), 'lock')
    assert.equal(r.violations.length, 2, r.violations.join('\n'))
    assert.match(r.violations[0]!, /pid 2 enters at line 2 while pid 1 has held it since line 1/)
    assert.match(r.violations[1]!, /pid 4 enters at line 7 while pid 3/)
  })

  it('lock checker: a process beginning a second hold inside its first is a violation', () => {
    const r = checkExclusive(log('lead 1 -', 'lead 1 -', 'unlead 1 -'), 'leader')
    assert.equal(r.violations.length, 1)
    assert.match(r.violations[0]!, /pid 1 leads again at line 2/)
  })

  it('lock checker: fencing tokens must strictly grow, and be there', () => {
    const r = checkExclusive(log('enter 1 5', 'exit 1 5', 'enter 2 5', 'exit 2 5', 'enter 3 4', 'exit 3 4', 'enter 4 -', 'exit 4 -'), 'lock', { fencing: true })
    assert.equal(r.violations.length, 3, r.violations.join('\n'))
    assert.match(r.violations[0]!, /token 5 of pid 2 at line 3 does not exceed token 5/)
    assert.match(r.violations[1]!, /token 4 of pid 3/)
    assert.match(r.violations[2]!, /without a fencing token/)
  })

  it('lock checker: AppendLog lines parse back in order; malformed lines are refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-checker-'))
    try {
      const l = new AppendLog(join(dir, 'log'))
      l.write('enter', 7, 12n)
      l.write('exit', 7, 12n)
      l.write('kill', 8)
      l.close()
      assert.deepEqual(readLog(join(dir, 'log')).map((x) => [x.kind, x.pid, x.token, x.line]), [['enter', 7, 12n, 1], ['exit', 7, 12n, 2], [
        'kill',
        8,
        undefined,
        3,
      ]])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    assert.throws(() => parseLog('enter 1 - 5 extra'), /line 1 of the log is malformed/)
    assert.throws(() => parseLog('grab 1 - 5'), /malformed/)
  })

  it('event order: documented orders pass, others are named', () => {
    const ev = (...what: string[]): Ev[] => what.map((w, i) => ({ what: w, at: i }))
    assert.deepEqual(orderProblems(ev(), 'A', 'g'), [])
    assert.deepEqual(
      orderProblems(
        ev('state:suspended', 'state:reconnected', 'state:suspended', 'state:lost', 'membershipLost:g', 'lockLost:l', 'state:reconnected', 'rejoined:g'),
        'A',
        'g',
        'l',
      ),
      [],
    )
    assert.deepEqual(orderProblems(ev('state:lost', 'state:reconnected'), 'A', 'g'), [])
    assert.match(
      orderProblems(ev('state:lost', 'state:suspended', 'state:reconnected'), 'A', 'g')[0]!,
      /connection states out of order: lost suspended reconnected/,
    )
    assert.match(orderProblems(ev('state:suspended'), 'A', 'g')[0]!, /out of order: suspended/)
    assert.match(orderProblems(ev('membershipLost:g'), 'A', 'g')[0]!, /never followed by rejoined/)
    assert.match(orderProblems(ev('rejoined:g'), 'A', 'g')[0]!, /rejoined without membershipLost/)
    assert.match(orderProblems(ev('lockLost:l', 'lockLost:l'), 'A', 'g', 'l')[0]!, /more than once/)
  })
})
