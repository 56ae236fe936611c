/**
 * The partition checker (issue 27) on hand-made histories: each violation class must be caught
 * (a checker that never fails proves nothing), the correct runs must pass, and a handover at
 * exactly the same instant is not an overlap. The history reader must refuse malformed lines.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { checkPartitionHistory, PartitionHistoryError, renderPartitionReport, type PartitionCheckOptions } from './support/partition-checker.js'
import { type HistoryDraft, HistoryFormatError, historyClockMs, HistoryWriter, parseHistory, readHistory } from './support/partition-history.js'
import { PARTITION_BACKENDS } from '../partition/support/run.js'
import { verdict } from '../partition/support/verdict.js'

type Row = [at: number, process: string, record: HistoryDraft]

/** Writes rows as JSON lines and reads them back, as the harness's file would be. */
const history = (rows: readonly Row[]): ReturnType<typeof parseHistory> =>
  parseHistory(rows.map(([at, process, r]) => JSON.stringify({ at, process, ...r }, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).join('\n'))
const check = (rows: readonly Row[], options?: PartitionCheckOptions): ReturnType<typeof checkPartitionHistory> => checkPartitionHistory(history(rows), options)

const start = (process: string, host: string): Row => [0, process, { type: 'process', what: 'start', host }]
const hosts: Row[] = [start('a', 'n1'), start('b', 'n2'), start('c', 'n5'), start('w1', 'n1'), start('w5', 'n5')]
const acquire = (
  at: number,
  p: string,
  token?: bigint,
  phase: 'ok' | 'invoke' = 'ok',
): Row => [at, p, { type: 'op', op: 'acquire', phase, resource: 'L', token }]
const release = (at: number, p: string): Row => [at, p, { type: 'op', op: 'release', phase: 'invoke', resource: 'L' }]
const cut = (at: number): Row => [at, 'nemesis', { type: 'nemesis', what: 'cut', sides: [['n1', 'n2', 'n3'], ['n4', 'n5']] }]
const heal = (at: number): Row => [at, 'nemesis', { type: 'nemesis', what: 'heal' }]
const seen = (at: number, observer: string, member: string, present: boolean): Row => [at, observer, {
  type: 'event',
  event: present ? 'memberJoined' : 'memberLeft',
  group: 'g',
  member,
}]

/** Three members (c on n5, cut off), watchers on both sides; c seen gone 2 s into the cut and back 1.5 s after the heal. */
const membership = (): Row[] => [
  ...hosts,
  ...['a', 'b', 'c'].map((p): Row => [10, p, { type: 'op', op: 'join', phase: 'ok', resource: 'g' }]),
  ...['a', 'b', 'c'].flatMap((m) => [seen(20, 'w1', m, true), seen(20, 'w5', m, true)]),
  cut(1_000),
  [2_500, 'c', { type: 'event', event: 'membershipLost', group: 'g', reason: 'session expired' }],
  seen(3_000, 'w1', 'c', false),
  seen(4_000, 'w5', 'a', false), // cut off itself: not asked to be right
  heal(10_000),
  [11_000, 'c', { type: 'event', event: 'rejoined', group: 'g' }],
  seen(11_500, 'w1', 'c', true),
  seen(11_600, 'w5', 'a', true),
]
const bounds = { detectWithinMs: 5_000, recoverWithinMs: 3_000 }
const without = (rows: Row[], drop: (r: Row) => boolean): Row[] => rows.filter((r) => !drop(r))

describe('fault: partition checker', () => {
  it('locks: a release at exactly the next grant is a handover; 1 ms later is an overlap of 1 ms', () => {
    const clean = check([...hosts, acquire(100, 'a', 1n), release(200, 'a'), acquire(200, 'b', 2n), release(300, 'b')])
    assert.equal(clean.beliefOverlaps.count, 0)
    assert.equal(clean.failures, 0, renderPartitionReport(clean))
    const r = check([...hosts, acquire(100, 'a', 1n), acquire(200, 'b', 2n), release(201, 'a'), release(300, 'b')])
    assert.equal(r.beliefOverlaps.count, 1)
    assert.equal(r.beliefOverlaps.maxMs, 1)
    assert.deepEqual(r.beliefOverlaps.worst?.stale, { process: 'a', beganId: 6, endedId: 8 })
    assert.deepEqual(r.beliefOverlaps.worst?.granted, { process: 'b', beganId: 7, at: 200 })
    assert.equal(r.dualLeaders.count, 0)
    assert.match(renderPartitionReport(r), /^FAIL .*Belief overlaps: 1 \(lock L: b granted at line 7 while a \(since line 6\) believed until line 8, 1 ms\)/)
  })

  it('locks: a holder told too late (lockLost after the next grant) overlaps; one killed first or told first does not', () => {
    const late = check([...hosts, acquire(100, 'a', 1n), acquire(300, 'b', 2n), [450, 'a', { type: 'event', event: 'lockLost', name: 'L', reason: 'lease' }]])
    assert.equal(late.beliefOverlaps.count, 1)
    assert.equal(late.beliefOverlaps.maxMs, 150)
    const never = check([...hosts, acquire(100, 'a', 1n), acquire(300, 'b', 2n), release(400, 'b')])
    assert.equal(never.beliefOverlaps.worst?.stale.endedId, undefined, 'a was never told: it believes to the end')
    assert.equal(never.beliefOverlaps.maxMs, 100)
    const killed = check([...hosts, acquire(100, 'a', 1n), [200, 'a', { type: 'process', what: 'kill' }], acquire(250, 'b', 2n)])
    const told = check([...hosts, acquire(100, 'a', 1n), [200, 'a', { type: 'event', event: 'lockLost', name: 'L', reason: 'lease' }], acquire(250, 'b', 2n)])
    assert.equal(killed.failures + told.failures, 0)
  })

  it('leadership: two leaders believing at once are dual leaders; standing down at the election is not', () => {
    const elected = (at: number, p: string): Row => [at, p, { type: 'event', event: 'leaderElected', group: 'g', member: p }]
    const r = check([...hosts, elected(100, 'a'), elected(300, 'b'), [305, 'a', { type: 'event', event: 'leadershipLost', group: 'g', reason: 'lease' }]])
    assert.equal(r.dualLeaders.count, 1)
    assert.equal(r.dualLeaders.maxMs, 5)
    assert.equal(r.beliefOverlaps.count, 1)
    assert.match(renderPartitionReport(r), /dual leaders: 1 \(leadership g: b granted/)
    const ok = check([...hosts, elected(100, 'a'), [300, 'a', { type: 'op', op: 'standDown', phase: 'invoke', resource: 'g' }], elected(300, 'b')])
    assert.equal(ok.failures, 0, renderPartitionReport(ok))
  })

  it('fencing: the register accepting a lower token, and grant tokens not growing, are violations', () => {
    const fence = (at: number, writer: string, token: bigint, accepted: boolean): Row => [at, 'register', {
      type: 'fence',
      register: 'R',
      writer,
      token,
      accepted,
    }]
    const ok = check([...hosts, fence(1, 'a', 5n, true), fence(2, 'a', 5n, true), fence(3, 'b', 4n, false), fence(4, 'b', 6n, true)])
    assert.equal(ok.fencingViolations.count, 0)
    const stale = check([...hosts, fence(1, 'a', 5n, true), fence(2, 'b', 6n, true), fence(3, 'a', 5n, true)])
    assert.equal(stale.fencingViolations.count, 1)
    assert.deepEqual(stale.fencingViolations.items[0], {
      what: 'stale-accepted',
      resource: 'R',
      id: 8,
      token: 5n,
      process: 'register',
      previousId: 7,
      previousToken: 6n,
    })
    const backwards = check([...hosts, acquire(1, 'a', 5n), release(2, 'a'), acquire(3, 'b', 4n), release(4, 'b'), acquire(5, 'a', 4n)])
    assert.deepEqual(backwards.fencingViolations.items.map((v) => [v.what, v.id, v.token, v.previousToken]), [['tokens-backwards', 8, 4n, 5n], [
      'tokens-backwards',
      10,
      4n,
      5n,
    ]])
    const same = check([...hosts, acquire(1, 'a', 5n), release(2, 'a'), acquire(3, 'b', 5n)])
    assert.equal(same.fencingViolations.count, 1, 'two holders with one token cannot be told apart')
    assert.match(renderPartitionReport(backwards), /lock L granted to b with token 4 at line 8, not above 5 at line 6/)
  })

  it('membership: a cut member seen gone and back in time passes, with its latencies measured', () => {
    const r = check(membership(), bounds)
    assert.equal(r.failures, 0, renderPartitionReport(r))
    assert.equal(r.cuts, 1)
    assert.deepEqual(r.detection.items.map((d) => [d.observer, d.member, d.ms]), [['w1', 'c', 2_000]])
    assert.deepEqual(r.recovery.items.map((x) => [x.observer, x.via, x.member, x.ms]).sort(), [['c', 'self', 'c', 1_000], ['w1', 'watch', 'c', 1_500], [
      'w5',
      'watch',
      'a',
      1_600,
    ]])
    assert.match(renderPartitionReport(r), /^PASS: 22 records, 1 cuts\..*worst w1 \(watch\) took 2000 ms to see c gone from g after the cut of line 15/)
  })

  it('membership: a healthy majority-side member reported gone is a false down, by a watcher, by isUp or by itself', () => {
    const watcher = check([...membership(), seen(12_000, 'w1', 'b', false), seen(12_400, 'w1', 'b', true)], bounds)
    assert.equal(watcher.falseDowns.count, 1)
    assert.deepEqual(watcher.falseDowns.worst, { group: 'g', member: 'b', observer: 'w1', via: 'watch', id: 23, at: 12_000, ms: 400 })
    const isUp = (at: number, value: boolean): Row => [at, 'w1', { type: 'op', op: 'isUp', phase: 'ok', resource: 'g', member: 'a', value }]
    const api = check([...membership(), isUp(500, true), isUp(2_000, false), isUp(2_100, false), isUp(3_000, true)], bounds)
    assert.deepEqual(api.falseDowns.items.map((f) => [f.via, f.member, f.at, f.ms]), [['isUp', 'a', 2_000, 1_000]])
    const self = check([...membership(), [2_000, 'b', { type: 'event', event: 'membershipLost', group: 'g', reason: 'lease lapsed' }]], bounds)
    assert.deepEqual(self.falseDowns.items.map((f) => [f.via, f.member]), [['self', 'b']])
    assert.equal(self.lost.length, 1, 'and never rejoined')
    // A cut member seen gone only after the heal (detection lagging) is still recovering; gone again once seen back is a false down.
    const lagging: Row[] = [
      ...hosts,
      [10, 'c', { type: 'op', op: 'join', phase: 'ok', resource: 'g' }],
      seen(20, 'w1', 'c', true),
      cut(1_000),
      heal(3_000),
      seen(
        4_000,
        'w1',
        'c',
        false,
      ),
      seen(6_000, 'w1', 'c', true),
    ]
    assert.equal(check(lagging, bounds).failures, 0, renderPartitionReport(check(lagging, bounds)))
    assert.deepEqual(check([...lagging, seen(7_000, 'w1', 'c', false), seen(7_100, 'w1', 'c', true)], bounds).falseDowns.items.map((f) => [f.member, f.at]), [[
      'c',
      7_000,
    ]])
    // A member that left, or was killed, is gone for real.
    const left = check([...membership(), [12_000, 'b', { type: 'op', op: 'leave', phase: 'invoke', resource: 'g' }], seen(12_100, 'w1', 'b', false)])
    const killed = check([...membership(), [12_000, 'b', { type: 'process', what: 'kill' }], seen(14_000, 'w1', 'b', false)])
    assert.equal(left.failures + killed.failures, 0)
  })

  it('membership: a cut member never reported gone is missed, or late past the bound; a cut too short to notice is not', () => {
    const missed = check(without(membership(), (r) => r[0] === 3_000), bounds)
    assert.equal(missed.detection.missed.length, 1)
    assert.match(renderPartitionReport(missed), /missed: 1 \(w1 \(watch\) never saw c gone from g after the cut of line 15\)/)
    const late = check(membership().map((r) => (r[0] === 3_000 ? seen(8_000, 'w1', 'c', false) : r)), bounds)
    assert.deepEqual(late.detection.late.map((d) => d.ms), [7_000])
    assert.equal(late.failures, 1)
    // A cut that takes the cluster's leader allows the election on top.
    const election = { ...bounds, electionMs: 3_000 }
    const takesLeader = (rows: Row[]): Row[] =>
      rows.map((r) => (r[0] === 1_000 ? [1_000, 'nemesis', { ...cut(1_000)[2], takesLeader: true } as HistoryDraft] : r))
    assert.equal(check(membership().map((r) => (r[0] === 3_000 ? seen(8_000, 'w1', 'c', false) : r)), election).failures, 1)
    assert.equal(check(takesLeader(membership().map((r) => (r[0] === 3_000 ? seen(8_000, 'w1', 'c', false) : r))), election).failures, 0)
    const short = check([
      ...hosts,
      ...['a', 'c'].map((p): Row => [10, p, { type: 'op', op: 'join', phase: 'ok', resource: 'g' }]),
      seen(20, 'w1', 'c', true),
      cut(1_000),
      heal(3_000),
    ], bounds)
    assert.equal(short.failures, 0, renderPartitionReport(short))
  })

  it("sides: a cut's `majority` (a single server's side) is the majority, however few hosts it has", () => {
    const sides = (majority?: number): Row[] =>
      membership().map((r) => (r[0] === 1_000 ? [1_000, 'nemesis', { type: 'nemesis', what: 'cut', sides: [['n1', 'n2'], ['n3', 'n4', 'n5']], majority }] : r))
    // By size, n3-n5 are the majority: w5 on n5 must see a (n1) gone, and w1 is cut off.
    assert.deepEqual(check(sides(), bounds).detection.items.map((d) => [d.observer, d.member, d.ms]), [['w5', 'a', 3_000]])
    // Named, n1-n2 are: w1 must see c (n5) gone, and w5 is cut off.
    const served = check(sides(0), bounds)
    assert.equal(served.failures, 0, renderPartitionReport(served))
    assert.deepEqual(served.detection.items.map((d) => [d.observer, d.member, d.ms]), [['w1', 'c', 2_000]])
  })

  it('membership: a member never seen back after the heal is lost; one seen back late is late', () => {
    const neverSeen = check(without(membership(), (r) => r[0] === 11_500), bounds)
    assert.deepEqual(neverSeen.lost.map((l) => [l.what, l.observer, l.member, l.lastId]), [['member', 'w1', 'c', 17]])
    const neverRejoined = check(without(membership(), (r) => r[0] === 11_000), bounds)
    assert.deepEqual(neverRejoined.lost.map((l) => [l.via, l.member]), [['self', 'c']])
    const slow = check(membership().map((r) => (r[0] === 11_500 ? seen(14_000, 'w1', 'c', true) : r)), bounds)
    assert.deepEqual(slow.recovery.late.map((x) => [x.observer, x.ms]), [['w1', 4_000]])
    assert.match(renderPartitionReport(neverSeen), /Lost: 1 \(w1 \(watch\) never saw c back in g after line 17 \(heal: line 19\)\)/)
    // The harness stops every process cleanly at the end of a run: recovery is still owed before those exits.
    const stopped = (rows: Row[]): Row[] => [
      ...rows,
      ...['a', 'b', 'c'].map((p): Row => [20_000, p, { type: 'process', what: 'exit' }]),
      seen(20_100, 'w1', 'a', false),
      ...['w1', 'w5'].map((p): Row => [20_200, p, { type: 'process', what: 'exit' }]),
    ]
    assert.equal(check(stopped(membership()), bounds).failures, 0, renderPartitionReport(check(stopped(membership()), bounds)))
    assert.deepEqual(check(stopped(without(membership(), (r) => r[0] === 11_500)), bounds).lost.map((l) => [l.observer, l.member]), [['w1', 'c']])
    const slowStopped = check(stopped(membership().map((r) => (r[0] === 11_500 ? seen(14_000, 'w1', 'c', true) : r))), bounds)
    assert.deepEqual(slowStopped.recovery.late.map((x) => [x.observer, x.ms]), [['w1', 4_000]])
  })

  it('locks and leadership after the heal: never granted again is lost; granted, or still held, is not', () => {
    const rows = [
      ...hosts,
      acquire(100, 'c', 1n),
      [1_900, 'c', { type: 'event', event: 'lockLost', name: 'L', reason: 'lease' }] as Row,
      cut(1_000),
      heal(5_000),
    ]
    const lost = check([...rows, acquire(5_100, 'a', undefined, 'invoke')])
    assert.deepEqual(lost.lost.map((l) => [l.what, l.resource]), [['lock', 'L']])
    assert.match(renderPartitionReport(lost), /lock L never granted again after the heal of line 9/)
    const waiting = check([...rows.slice(0, -1), acquire(4_000, 'a', undefined, 'invoke'), heal(5_000)])
    assert.equal(waiting.lost.length, 1, 'an acquire waiting through the heal counts as trying')
    const granted = check([...rows, acquire(5_100, 'a', undefined, 'invoke'), acquire(5_600, 'a', 2n)])
    assert.equal(granted.failures, 0)
    assert.deepEqual(granted.recovery.items.map((x) => [x.what, x.ms]), [['lock', 600]])
    const held = check([...hosts, acquire(100, 'a', 1n), cut(1_000), heal(5_000), acquire(5_100, 'b', undefined, 'invoke')])
    assert.equal(held.failures, 0, 'a (majority side) still holds it')
    const leader = check([...hosts, [100, 'c', { type: 'event', event: 'leaderElected', group: 'g', member: 'c' }], cut(1_000), [2_000, 'c', {
      type: 'event',
      event: 'leadershipLost',
      group: 'g',
      reason: 'lost',
    }], heal(5_000)])
    assert.deepEqual(leader.lost.map((l) => [l.what, l.resource]), [['leadership', 'g']])
    // settleMs: a heal followed by a cut sooner than that is not judged; the next heal, followed by a quiet tail, is.
    const flap: Row[] = [...rows, acquire(5_100, 'a', undefined, 'invoke'), cut(6_000), heal(7_000)]
    assert.equal(check(flap).lost.length, 2, 'both heals, without settleMs')
    assert.deepEqual(check(flap, { settleMs: 2_000 }).lost.map((l) => [l.what, l.healId]), [['lock', 12]])
    assert.equal(check([...flap, acquire(7_500, 'a', 2n)], { settleMs: 2_000 }).failures, 0)
  })

  it('leaders: time without a leader on the served side (cluster records) is allowed to detection and recovery, and excuses what it causes', () => {
    const leaders = (at: number, ...hosts: string[]): Row => [at, 'monitor', { type: 'cluster', leaders: hosts }]
    const lateSeen = membership().map((r) => (r[0] === 3_000 ? seen(8_000, 'w1', 'c', false) : r))
    // Detection 7 s after the cut, bound 5 s: late while n1 (majority side) leads throughout, in time when the leader was cut off
    // with c (n5) and the majority elected n2 3 s later. Measured, the outage replaces electionMs.
    assert.equal(check([...lateSeen, leaders(0, 'n1')], { ...bounds, electionMs: 3_000 }).detection.late.length, 1)
    const elected = check([...lateSeen, leaders(0, 'n5'), leaders(4_000, 'n2')], bounds)
    assert.equal(elected.failures, 0, renderPartitionReport(elected))
    assert.deepEqual(elected.leaderless.items.map((o) => [o.at, o.ms]), [[1_000, 3_000]])
    assert.match(renderPartitionReport(elected), /Without a leader: 1 stretches, longest 3000 ms \(from line \d+\)\./)
    // A leader that took office again 2.25 s into the cut (0.25 s without one) restarted every session's clock: 7 s is in time.
    assert.equal(check([...lateSeen, leaders(0, 'n1'), leaders(3_000), leaders(3_250, 'n1')], bounds).failures, 0)
    assert.equal(check([...lateSeen, leaders(0, 'n1'), leaders(1_500), leaders(1_750, 'n1')], bounds).detection.late.length, 1)
    // etcd's new leader gives every lease its TTL plus an election timeout (leaderGraceMs), only when one took office in the cut.
    const newLeader = [...lateSeen, leaders(0, 'n5'), leaders(2_000, 'n2')]
    assert.equal(check(newLeader, bounds).detection.late.length, 1)
    assert.equal(check(newLeader, { ...bounds, leaderGraceMs: 1_500 }).failures, 0)
    assert.equal(check([...lateSeen, leaders(0, 'n1')], { ...bounds, leaderGraceMs: 1_500 }).detection.late.length, 1)
    // After the heal the ensemble had no leader for 2 s: c back 4 s after the heal is 2 s after service came back, within 3 s.
    const slowBack = membership().map((r) => (r[0] === 11_500 ? seen(14_000, 'w1', 'c', true) : r))
    assert.deepEqual(check(slowBack, bounds).recovery.late.map((x) => x.ms), [4_000])
    const postHeal = check([...slowBack, leaders(0, 'n1'), leaders(10_000), leaders(12_000, 'n2')], bounds)
    assert.equal(postHeal.failures, 0, renderPartitionReport(postHeal))
    const c = postHeal.recovery.items.find((x) => x.observer === 'w1' && x.member === 'c')
    assert.deepEqual([c?.ms, c?.leaderlessMs], [4_000, 2_000])
    // b (n2, never cut off) seen gone during that outage, and just after it before seen back since: the outage's, not false downs.
    const bGone = [
      ...membership(),
      seen(11_000, 'w1', 'b', false),
      seen(11_800, 'w1', 'b', true),
      seen(12_200, 'w1', 'b', false),
      seen(12_500, 'w1', 'b', true),
    ]
    assert.equal(check(bGone, bounds).falseDowns.count, 2)
    assert.equal(check([...bGone, leaders(0, 'n1'), leaders(10_000), leaders(12_000, 'n2')], bounds).falseDowns.count, 0)
    // Seen present after the outage and then gone is a false down again.
    const after = [...bGone, seen(12_700, 'w1', 'b', false), seen(13_000, 'w1', 'b', true), leaders(0, 'n1'), leaders(10_000), leaders(12_000, 'n2')]
    assert.deepEqual(check(after, bounds).falseDowns.items.map((f) => f.id), [after.findIndex((r) => r[0] === 12_700) + 1])
    // A lock nobody was granted after the heal is not lost while the cluster never led again.
    const rows: Row[] = [
      ...hosts,
      acquire(100, 'c', 1n),
      [1_900, 'c', { type: 'event', event: 'lockLost', name: 'L', reason: 'lease' }],
      cut(1_000),
      heal(5_000),
      acquire(5_100, 'a', undefined, 'invoke'),
    ]
    assert.equal(check([...rows, leaders(0, 'n1')]).lost.length, 1)
    assert.equal(check([...rows, leaders(0, 'n1'), leaders(4_900)]).lost.length, 0)
  })

  it('etcd bounds: a flap round of the leader shorter than the request timeout is not judged; a longer window is', () => {
    // The etcd run's seed 470402163 (flap of the leader): a released during a cut; raft dropped the request (no leader), so it
    // was unanswered until the client's 4 s timeout, past the round's heal of 1.2 s. The lock was free only after the next heal.
    const etcd = PARTITION_BACKENDS.etcd3.check
    const fail = (at: number): Row => [at, 'a', { type: 'op', op: 'release', phase: 'fail', resource: 'L', error: 'no answer within 4000 ms' }]
    const rows: Row[] = [...hosts, acquire(100, 'a', 1n), cut(1_000), release(1_500, 'a'), acquire(1_600, 'b', undefined, 'invoke'), heal(4_700)]
    const flap: Row[] = [...rows, fail(5_700), cut(5_900), heal(9_600), acquire(10_000, 'b', 2n)]
    assert.deepEqual(check(flap).lost.map((l) => [l.what, l.healId]), [['lock', 10]], 'the round is judged without settleMs')
    assert.equal(check(flap, etcd).lost.length, 0, renderPartitionReport(check(flap, etcd)))
    // The same, with the next cut 4 s after the heal: the release had its answer (or its timeout) in the window, and nobody got the lock.
    const gap: Row[] = [...rows, fail(5_700), cut(8_700), heal(9_600), acquire(10_000, 'b', 2n)]
    assert.deepEqual(check(gap, etcd).lost.map((l) => [l.what, l.healId]), [['lock', 10]])
  })

  /**
   * The service-group workload: a, b, c joined to group g and topic t; w1 (majority side) watches g and asks isUp of every
   * service every 250 ms. c (n5) is cut off from 1 s to 10 s: its isUp turns down at `down` and up at `up`, its watch at 3 s
   * and 11.5 s. b (n2) is never cut off; isUp says it down once at `bDown`, if given.
   */
  const services = (o: { down?: number; up?: number; bDown?: number } = {}): Row[] => {
    const down = o.down ?? 2_750
    const up = o.up ?? 11_000
    const isUp = (at: number, member: string, value: boolean): Row => [at, 'w1', { type: 'op', op: 'isUp', phase: 'ok', resource: 't', member, value }]
    const rows: Row[] = [
      ...hosts,
      ...['a', 'b', 'c'].flatMap((p): Row[] => [[10, p, { type: 'op', op: 'join', phase: 'ok', resource: 'g' }], [12, p, {
        type: 'op',
        op: 'join',
        phase: 'ok',
        resource: 't',
      }]]),
      ...['a', 'b', 'c'].map((m) => seen(20, 'w1', m, true)),
      cut(1_000),
      seen(3_000, 'w1', 'c', false),
      heal(10_000),
      seen(11_500, 'w1', 'c', true),
    ]
    // a's join reaches w1's isUp view only at 750 ms (no fault: a join takes a moment to propagate).
    for (let at = 500; at <= 16_000; at += 250) rows.push(isUp(at, 'a', at >= 750), isUp(at, 'b', at !== o.bDown), isUp(at, 'c', at < down || at >= up))
    return rows
  }
  const sgBounds = { detectWithinMs: 5_000, recoverWithinMs: 3_000 }

  it('service group: isUp seeing a cut service go and come back within the membership bounds, agreeing with the watch, passes', () => {
    const r = check(services(), sgBounds)
    assert.equal(r.failures, 0, renderPartitionReport(r))
    assert.deepEqual(r.detection.items.filter((d) => d.via === 'isUp').map((d) => [d.observer, d.member, d.ms]), [['w1', 'c', 1_750]])
    assert.deepEqual(r.recovery.items.filter((x) => x.via === 'isUp').map((x) => [x.member, x.ms]), [['c', 1_000]])
    // isUp turned 250 ms before the watch, and came back 500 ms before it: both within the bounds.
    assert.deepEqual(r.disagreements.items.map((d) => [d.member, d.isUp, d.at, d.ms, d.beyondMs]), [['c', false, 2_750, 250, 0], ['c', true, 11_000, 500, 0]])
    assert.match(
      renderPartitionReport(r),
      /isUp: 0 false downs, 1 detections \(worst 1750 ms, 0 missed, 0 late\), 1 recoveries \(worst 1000 ms, 0 late\), 0 never back; disagreements with the watch: 2, longest 500 ms; beyond the bounds: 0\.$/,
    )
  })

  it('service group: isUp reporting a healthy service down is a false down (and, outside the allowances, a disagreement)', () => {
    const r = check(services({ bDown: 14_000 }), sgBounds)
    assert.deepEqual(r.falseDowns.items.map((f) => [f.via, f.observer, f.member, f.at, f.ms]), [['isUp', 'w1', 'b', 14_000, 250]])
    assert.deepEqual(r.disagreements.beyond.map((d) => [d.member, d.isUp, d.at, d.beyondMs]), [['b', false, 14_000, 250]])
    assert.equal(r.failures, 2)
    assert.match(renderPartitionReport(r), /false downs: 1 \(w1 \(isUp\) saw healthy b leave t at line \d+, for 250 ms\)/)
    // Within a cut's detection allowance the disagreement is not a finding of its own; the false down still is.
    const early = check(services({ bDown: 4_000 }), sgBounds)
    assert.deepEqual([early.falseDowns.count, early.disagreements.count, early.disagreements.beyond.length], [1, 3, 0])
  })

  it('service group: a cut service whose liveness lapses after the heal is recovering until seen back since, not falsely down', () => {
    // c (on n5) is cut off for 2 s, shorter than its liveness: nobody sees it go. Its service's coordinator (c/sg) finds the
    // membership lapsed only after the heal (TCP's back-off held its connection down; a paused client runs again), so w1's isUp
    // says up, then down, then up once the service reports again (PostgreSQL partition runs: a flap's heal before the
    // connection came back, 465 ms; a client paused 4.9 s, 3687 ms).
    const ask = (invokeAt: number, okAt: number, value: boolean): Row[] => [
      [invokeAt, 'w1', { type: 'op', op: 'isUp', phase: 'invoke', resource: 't', member: 'c' }],
      [okAt, 'w1', { type: 'op', op: 'isUp', phase: 'ok', resource: 't', member: 'c', value }],
    ]
    const lapse: Row = [3_300, 'c/sg', { type: 'event', event: 'membershipLost', group: 't', reason: 'the connection was lost' }]
    const rows = (o: { askedBackAt: number; lapse: boolean }): Row[] => [
      ...hosts,
      start('c/sg', 'n5'),
      [10, 'c', { type: 'op', op: 'join', phase: 'ok', resource: 't' }],
      ...ask(400, 500, true),
      cut(1_000),
      heal(3_000),
      ...ask(o.askedBackAt, 3_100, true),
      ...(o.lapse ? [lapse] : []),
      ...ask(3_450, 3_500, false),
      ...ask(4_150, 4_200, true),
    ]
    const r = check(rows({ askedBackAt: 3_050, lapse: true }), sgBounds)
    assert.equal(r.failures, 0, renderPartitionReport(r))
    assert.deepEqual(r.recovery.items.map((x) => [x.via, x.member, x.ms]), [['isUp', 'c', 1_200]])
    // Seen back after the heal with no lapse reported since: gone again is a false down.
    assert.deepEqual(check(rows({ askedBackAt: 3_050, lapse: false }), sgBounds).falseDowns.items.map((f) => [f.member, f.at, f.ms]), [['c', 3_500, 700]])
    // An answer to a question asked before the heal (a paused or cut-off observer's) is no sighting after it.
    assert.equal(check(rows({ askedBackAt: 2_900, lapse: false }), sgBounds).failures, 0)
    // The lapse reported before the heal (client-side expiry runs ahead of the backend's): seen present after the heal, the member
    // is back only once its coordinator is (PostgreSQL full form: gone 261 ms, between the heal and c1/sg's reconnect).
    const early: Row[] = [...rows({ askedBackAt: 3_050, lapse: false }), [2_800, 'c/sg', lapse[2]]]
    assert.equal(check(early, sgBounds).falseDowns.count, 0, renderPartitionReport(check(early, sgBounds)))
    const back: Row = [3_400, 'c/sg', { type: 'event', event: 'connectionStateChanged', state: 'reconnected', previous: 'lost' }]
    assert.equal(check([...early, back, ...ask(3_420, 3_430, true)], sgBounds).falseDowns.count, 1, 'seen present after its coordinator came back')
    // A flap: the lapse reported in its first round, the coordinator back only after the second round's heal. Seen present
    // between that heal and its return, then gone: still recovering from the first round's loss.
    const flap: Row[] = [
      ...without(rows({ askedBackAt: 3_050, lapse: false }), (r) => r[0] >= 3_050),
      [1_500, 'c/sg', lapse[2]],
      cut(3_100),
      heal(3_300),
      ...ask(3_320, 3_330, true),
      ...ask(3_450, 3_500, false),
      [3_600, 'c/sg', { type: 'event', event: 'connectionStateChanged', state: 'reconnected', previous: 'lost' }],
      ...ask(4_150, 4_200, true),
    ]
    assert.equal(check(flap, sgBounds).falseDowns.count, 0, renderPartitionReport(check(flap, sgBounds)))
    // Back from that loss before the second round began: the loss is over, and gone after seen present is a false down.
    const backEarly = flap.map((r): Row => (r[0] === 3_600 ? [3_050, r[1], r[2]] : r))
    assert.equal(check(backEarly, sgBounds).falseDowns.count, 1)
  })

  it('service group: isUp seeing a cut service gone past the bound is late, and disagrees with the watch beyond the bounds', () => {
    const r = check(services({ down: 7_000 }), sgBounds)
    assert.deepEqual(r.detection.late.map((d) => [d.via, d.member, d.ms]), [['isUp', 'c', 6_000]])
    assert.deepEqual(r.disagreements.beyond.map((d) => [d.member, d.isUp, d.at, d.ms, d.beyondMs]), [['c', true, 3_000, 4_000, 1_000]])
    assert.equal(r.failures, 2, renderPartitionReport(r))
    assert.match(
      renderPartitionReport(r),
      /beyond the bounds: 1 \(w1's isUp said c up in t while its watch of g said the opposite, from line \d+ for 4000 ms \(1000 ms beyond the bounds\)\)/,
    )
  })

  it('service group: a service isUp never sees back after the heal is lost; one seen back late is late', () => {
    const never = check(services({ up: Infinity }), sgBounds)
    assert.deepEqual(never.lost.map((l) => [l.what, l.via, l.member]), [['member', 'isUp', 'c']])
    assert.deepEqual(never.disagreements.beyond.map((d) => [d.member, d.isUp, d.at, d.beyondMs]), [['c', false, 11_500, 3_000]])
    const slow = check(services({ up: 14_000 }), sgBounds)
    assert.deepEqual(slow.recovery.late.map((x) => [x.via, x.member, x.ms]), [['isUp', 'c', 4_000]])
    assert.deepEqual(slow.disagreements.beyond.map((d) => [d.member, d.isUp, d.at, d.ms, d.beyondMs]), [['c', false, 11_500, 2_500, 1_000]])
    assert.equal(slow.failures, 2, renderPartitionReport(slow))
  })

  it("known bugs: a memcached overlap is excused only when the stale holder's process was paused, not when a network cut left it silent", () => {
    // a (n1) holds L; a cut takes n1 off alone, and b (n2) is granted L while a, silent, still believes.
    const during = (paused?: true): Row[] => [
      ...hosts,
      acquire(100, 'a'),
      [1_000, 'nemesis', { type: 'nemesis', what: 'cut', sides: [['n1'], ['n2', 'n3', 'n4', 'n5']], ...(paused && { paused }) }],
      acquire(3_000, 'b'),
      heal(5_000),
      [5_100, 'a', { type: 'event', event: 'lockLost', name: 'L', reason: 'lease' }],
    ]
    const judge = (rows: Row[]): ReturnType<typeof verdict> => verdict('memcached', checkPartitionHistory(history(rows)), history(rows))
    const paused = judge(during(true))
    assert.deepEqual([...paused.known], [['memcached-paused-holder', 1]])
    assert.deepEqual(paused.unknown, [])
    const cutOff = judge(during())
    assert.equal(cutOff.known.size, 0)
    assert.equal(cutOff.unknown.length, 1, 'a holder cut off by the network must be told in time')
    assert.match(cutOff.unknown[0]!, /lock overlap on L: b granted .* while a believed, 2100 ms/)
  })

  it('histories it cannot judge are refused by name', () => {
    assert.throws(() => check([...hosts, heal(1)]), /heal of line 6 heals no cut/)
    assert.throws(() => check([...hosts, cut(1)]), /cut of line 6 is never healed/)
    assert.throws(() => check([...hosts, cut(1), cut(2), heal(3)]), /begins inside the cut of line 6/)
    assert.throws(() => check([cut(1), [2, 'x', { type: 'op', op: 'join', phase: 'ok', resource: 'g' }], heal(3)]), PartitionHistoryError)
  })

  it('history: the writer appends one JSON line per record with the shared clock; the reader refuses malformed lines', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-history-'))
    try {
      const path = join(dir, 'history.jsonl')
      const w = new HistoryWriter(path, 'n1-locks-1')
      const before = historyClockMs()
      w.write({ type: 'process', what: 'start', host: 'n1', pid: process.pid })
      w.write({ type: 'op', op: 'acquire', phase: 'ok', resource: 'L', token: 2n ** 64n })
      w.write({ type: 'process', what: 'kill', process: 'n2-locks-1' })
      assert.throws(() => w.write({ type: 'op', op: 'getMembers', phase: 'ok', resource: 'g', value: Array(500).fill('member-x') }), /exceeds 4096/)
      w.close()
      const got = readHistory(path)
      assert.deepEqual(got.map((e) => [e.id, e.process, e.type, 'token' in e ? e.token : undefined]), [[1, 'n1-locks-1', 'process', undefined], [
        2,
        'n1-locks-1',
        'op',
        2n ** 64n,
      ], [3, 'n2-locks-1', 'process', undefined]])
      assert.ok(got[0]!.at >= before && got[2]!.at >= got[0]!.at && got[2]!.at <= Date.now() + 1)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    const bad = (line: string, why: RegExp): void => {
      assert.throws(() => parseHistory(`{"type":"nemesis","what":"heal","at":1,"process":"n"}\n${line}`), (e: unknown) => {
        assert.ok(e instanceof HistoryFormatError)
        assert.equal(e.line, 2)
        assert.match(e.message, why)
        return true
      })
    }
    bad('{"type":"op","op":"acquire","phase":"ok","resource":"L","at":1,"proc', /history line 2: not JSON \(a line cut short\?\)/)
    bad('[1]', /not a JSON object/)
    bad('{"type":"vote","at":1,"process":"a"}', /unknown record type "vote"/)
    bad('{"type":"process","what":"start","at":1,"process":"a"}', /names no `host`/)
    bad('{"type":"op","op":"acquire","phase":"ok","resource":"L","token":5,"at":1,"process":"a"}', /`token` is not a decimal string/)
    bad('{"type":"op","op":"acquire","phase":"done","resource":"L","at":1,"process":"a"}', /`phase`/)
    bad('{"type":"event","event":"lockLost","reason":"x","at":1,"process":"a"}', /a lockLost event has no `name`/)
    bad('{"type":"event","event":"lockStolen","at":1,"process":"a"}', /unknown event "lockStolen"/)
    bad('{"type":"nemesis","what":"cut","sides":[["n1","n2"],["n2"]],"at":1,"process":"n"}', /a host is on two sides/)
    bad('{"type":"nemesis","what":"cut","sides":[["n1"],["n2"]],"takesLeader":"yes","at":1,"process":"n"}', /`takesLeader`/)
    bad('{"type":"nemesis","what":"cut","sides":[["n1"],["n2"]],"majority":2,"at":1,"process":"n"}', /`majority`/)
    bad('{"type":"fence","register":"R","writer":"a","token":"1","at":"soon","process":"r"}', /`at` is not a finite number/)
  })
})
