/**
 * The checker of a partition run's history (partition-history.ts), issue 27. It extends the ideas
 * of test/support/lock-checker.ts (a holder's hold ends when it releases, learns of the loss, or is
 * killed; fencing tokens must grow) from file order to real time on the shared clock, and adds the
 * membership views of watchers and the service-group API.
 *
 * Beliefs. A process believes it holds a lock from its acquire `ok` until it writes the release's
 * `invoke` (before calling release()), hears `lockLost`, or exits or is killed; it believes it
 * leads a group from `leaderElected` until `standDown`'s invoke, `leadershipLost`, exit or kill.
 * A belief is the half-open interval [begin, end): a handover whose new grant has exactly the time
 * at which the old holder stopped believing is NOT an overlap. The old holder writes its end before
 * it lets go, and the new grant follows from the letting go, so in a correct system end <= grant
 * always, and equal times (the clock's resolution) are no evidence of two beliefs at once; a grant
 * 1 µs before the end is.
 *
 * Sides. During a cut (nemesis `cut` to `heal`) a host on the side the cut names as its `majority`
 * (the nemesis names the side with more than half of the servers), or else on the side with more
 * than half of all hosts, is on the majority; every
 * other host is cut off (with no majority side, every host is). Outside cuts every host is on the
 * majority. An observer that is cut off is not asked to be right.
 *
 * Leaders. Where the history has `cluster` records (a cluster that elects), the served side is
 * served only while a node on it leads: a stretch without one (an outage: the majority's election
 * after a cut of its leader, or the ensemble's own after a heal) renews and expires nothing and
 * grants nothing. An outage cuts every host off, as a cut with no majority would; a cut's
 * detection bound counts from when the served side's leader last took office within it (the end
 * of its last outage there: a new leader gives every session and lease a fresh timeout), not from
 * the cut; a heal's recovery bounds, and the judging of
 * locks and leaderships granted again, count from the end of an outage under way at the heal.
 * Without cluster records a cut that takes the leader adds `electionMs` to the detection bound.
 *
 * Views. Who sees whom (`via`): `watch` (memberJoined/memberLeft events and getMembers snapshots of
 * a watcher), `isUp` (the service-group API's answer; its group is the topic, joined by the
 * service-group API's `join`), `self` (a member's own join `ok`, `membershipLost`, `rejoined`). A
 * view series is one (via, observer, group, member). False downs, detection and recovery hold
 * every view to the same bounds, so isUp's are the membership bounds.
 *
 * Agreement. An observer's isUp of a member and its watch of the same member (in any group) must
 * agree, except where the bounds let one of them lag: from a cut to its detection bound, from a
 * heal to its recovery bound, and while the observer is cut off. Compared only while the member
 * is joined to both the group and the topic, each view has seen it present since it joined (a
 * join takes a moment to reach a view, as a join is no fault), and the observer is alive. A
 * disagreement is one stretch of the two views differing; its time outside those allowances is a
 * finding.
 */
import type { HistoryEntry } from './partition-history.js'

/** Bounds from the issue's targets; without them latencies are only measured. */
export interface PartitionCheckOptions {
  /**
   * Every majority-side observer must see a cut member gone within this many ms of the cut (the
   * membership timeout + 2 s, plus the cluster's leader election when the cut takes its leader).
   * A cut shorter than this need not be noticed at all.
   */
  detectWithinMs?: number
  /**
   * Added to detectWithinMs for a cut that takes the cluster's leader (`takesLeader`): the
   * majority's own leader election. Only for histories without `cluster` records (their outages are measured).
   */
  electionMs?: number
  /**
   * What a leader taking office adds to every lease beyond its TTL (etcd renews each for TTL plus
   * one election timeout): added to the detection bound of a cut within which the served side's
   * leader took office (histories with `cluster` records).
   */
  leaderGraceMs?: number
  /** Every observer must see a member that was cut off (or that it lost sight of while cut off) back within this many ms of the heal. */
  recoverWithinMs?: number
  /**
   * A heal followed by the next cut within less than this many ms is not judged for locks and
   * leaderships never granted again (the next heal's window is): a single server's flap cuts every
   * client off, and a round's heal is shorter than their reconnect and election; a cluster's flap
   * of its leader leaves requests sent while it had none unanswered until their client's timeout.
   * Default: every window is judged.
   */
  settleMs?: number
}

/** How an observer saw a member (see the file's doc). */
export type Via = 'watch' | 'isUp' | 'self'

/** A holder that still believed it held a lock (led a group) when another process was granted it. */
export interface Overlap {
  kind: 'lock' | 'leadership'
  /** The lock or group. */
  resource: string
  /** The holder that had not been told: its grant's line, and the line that ended its belief (undefined: never, to the end of the history). */
  stale: { process: string; beganId: number; endedId: number | undefined }
  /** The one granted meanwhile: its grant's line and time. */
  granted: { process: string; beganId: number; at: number }
  /** How long both believed (> 0 except when the history ends at the grant). */
  ms: number
}

/** A fencing failure: the register accepted a stale token, or a grant's token did not exceed an earlier grant's (tokens went backwards). */
export interface FencingViolation {
  what: 'stale-accepted' | 'tokens-backwards'
  /** The register or lock. */
  resource: string
  /** The offending line (fence record or acquire ok), its token and process. */
  id: number
  token: bigint
  process: string
  /** The line it should have exceeded (the highest accepted or granted before it). */
  previousId: number
  previousToken: bigint
}

/** A healthy member (joined, alive, not cut off, not recovering from a cut) that a majority-side observer saw go. */
export interface FalseDown {
  group: string
  member: string
  observer: string
  via: Via
  /** The line and time of the report. */
  id: number
  at: number
  /** Until the observer saw it again (or the history ended). */
  ms: number
}

/** How long one majority-side observer took to see a cut member gone (`ms` undefined: it never did before the heal). */
export interface Detection {
  /** The cut's line. */
  cutId: number
  group: string
  member: string
  observer: string
  via: Via
  /** The report's line. */
  id: number | undefined
  ms: number | undefined
}

/** Time from a heal to: an observer seeing a member back, the next grant of a lock, the next election of a group. */
export interface Recovery {
  what: 'member' | 'lock' | 'leadership'
  /** The heal's line. */
  healId: number
  /** The group or lock. */
  resource: string
  member?: string
  observer?: string
  via?: Via
  /** The line of the sighting, grant or election. */
  id: number
  /** From the heal. */
  ms: number
  /** Of `ms`, how long the cluster had no leader after the heal (members: not held against recoverWithinMs). */
  leaderlessMs?: number
}

/**
 * One stretch during which an observer's isUp and watch views of a member differed (from the
 * sighting that made them differ to the one that made them agree, or the end of the comparison).
 */
export interface Disagreement {
  observer: string
  member: string
  /** The group watched and the topic asked about. */
  group: string
  topic: string
  /** What isUp said meanwhile (the watch said the opposite). */
  isUp: boolean
  /** The line and time of the sighting that began it. */
  id: number
  at: number
  ms: number
  /** Its time outside the allowances (see the file's doc); > 0 is a finding. */
  beyondMs: number
}

/** Something that did not come back after a heal: a member an observer never saw again, a lock never granted again, a group with no leader again. */
export interface Lost {
  what: 'member' | 'lock' | 'leadership'
  /** The heal after which it did not come back (undefined: a member lost outside any cut). */
  healId: number | undefined
  resource: string
  member?: string
  observer?: string
  via?: Via
  /** The last line that shows it gone or waiting (the report of the member gone, the heal). */
  lastId: number
}

/** Findings of one class: how many, the longest (with the record), and all of them. */
export interface Tally<T> {
  count: number
  /** Undefined when nothing of the class has a duration. */
  maxMs: number | undefined
  worst: T | undefined
  items: T[]
}

/** The checker's verdict on one run. */
export interface PartitionReport {
  records: number
  cuts: number
  beliefOverlaps: Tally<Overlap>
  /** The belief overlaps on leadership (also counted in beliefOverlaps). */
  dualLeaders: Tally<Overlap>
  fencingViolations: Tally<FencingViolation>
  falseDowns: Tally<FalseDown>
  /** Every detection measured; `missed`: never seen gone (cut long enough); `late`: seen after detectWithinMs (+ electionMs). */
  detection: Tally<Detection> & { missed: Detection[]; late: Detection[] }
  /** Every recovery measured; `late`: a member seen back after recoverWithinMs. */
  recovery: Tally<Recovery> & { late: Recovery[] }
  lost: Lost[]
  /** Every stretch of isUp and watch views disagreeing; `beyond`: those lasting past the allowances (needs both bounds). */
  disagreements: Tally<Disagreement> & { beyond: Disagreement[] }
  /** Stretches without a leader on the served side (histories with `cluster` records): measured, not findings. */
  leaderless: Tally<Outage & { ms: number }>
  /** Number of findings that fail the run (overlaps, fencing, false downs, missed, late, lost, disagreements beyond). */
  failures: number
}

/** Thrown for a history the checker cannot judge (a heal without a cut, a cut never healed, a member with no host). */
export class PartitionHistoryError extends Error {
  override readonly name = 'PartitionHistoryError'
}

type Entry<T extends HistoryEntry['type']> = Extract<HistoryEntry, { type: T }>

/** A cut of a history and its heal. */
export interface Cut {
  id: number
  at: number
  takesLeader: boolean
  healId: number
  healAt: number
  /** Hosts on the majority side (empty: there is none). */
  majority: ReadonlySet<string>
  /** Hosts on every other side. */
  cutOff: ReadonlySet<string>
  /** The cut-off hosts' processes are paused (SIGSTOP), not cut off by the network. */
  paused: boolean
}

interface Belief {
  kind: 'lock' | 'leadership'
  resource: string
  process: string
  began: HistoryEntry
  ended: HistoryEntry | undefined
}

interface Sighting {
  at: number
  id: number
  present: boolean
  /** When the question it answers was asked: an isUp's invoke (the answer may come from a view read before it); else `at`. */
  askedAt: number
}

interface Series {
  via: Via
  observer: string
  group: string
  member: string
  seen: Sighting[]
}

function tally<T extends object>(items: T[]): Tally<T> {
  const msOf = (i: T): number | undefined => (i as { ms?: number }).ms
  let worst: T | undefined
  for (const i of items) if (msOf(i) !== undefined && (worst === undefined || msOf(i)! > msOf(worst)!)) worst = i
  return { count: items.length, maxMs: worst && msOf(worst), worst, items }
}

/** The cuts of a valid history, each with its heal; the majority side as the cut record says (see the file's doc). */
export function cutsOf(h: readonly HistoryEntry[]): Cut[] {
  const cuts: Cut[] = []
  let open: Entry<'nemesis'> & { what: 'cut' } | undefined
  for (const e of h) {
    if (e.type !== 'nemesis') continue
    if (e.what === 'cut') {
      if (open) throw new PartitionHistoryError(`the cut of line ${e.id} begins inside the cut of line ${open.id}: heal each cut before the next`)
      open = e
    } else {
      if (!open) throw new PartitionHistoryError(`the heal of line ${e.id} heals no cut`)
      const hosts = open.sides.flat()
      const majority = (open.majority === undefined ? open.sides.find((s) => s.length * 2 > hosts.length) : open.sides[open.majority]) ?? []
      const cutOff = hosts.filter((x) => !majority.includes(x))
      cuts.push({
        id: open.id,
        at: open.at,
        takesLeader: open.takesLeader === true,
        healId: e.id,
        healAt: e.at,
        majority: new Set(majority),
        cutOff: new Set(cutOff),
        paused: open.paused === true,
      })
      open = undefined
    }
  }
  if (open) throw new PartitionHistoryError(`the cut of line ${open.id} is never healed: the nemesis must heal before the run ends`)
  return cuts
}

/** A stretch during which the served side had no leader (see the file's doc: Leaders). */
export interface Outage {
  at: number
  endAt: number
  /** The line that began it (a `cluster` record, a cut or a heal). */
  id: number
}

/** The outages of a history with `cluster` records, in time order; none without them. */
function outagesOf(h: readonly HistoryEntry[], cuts: readonly Cut[]): Outage[] {
  const records = h.filter((e): e is Entry<'cluster'> => e.type === 'cluster')
  if (records.length === 0) return []
  // Before the first record nothing is known: taken as led.
  const from = records[0]!.at
  const points = [...records.map((r) => ({ at: r.at, id: r.id })), ...cuts.flatMap((c) => [{ at: c.at, id: c.id }, { at: c.healAt, id: c.healId }])]
    .filter((p) => p.at >= from)
    .sort((a, b) => a.at - b.at || a.id - b.id)
  const served = (t: number): boolean => {
    const leaders = records.findLast((r) => r.at <= t)!.leaders
    const cut = cuts.find((c) => c.at <= t && t < c.healAt)
    // A cut with no majority side cuts every host off already: its time is no outage of a served side.
    if (cut?.majority.size === 0) return true
    return leaders.some((l) => !cut || cut.majority.has(l))
  }
  const out: Outage[] = []
  points.forEach((p, i) => {
    if (served(p.at)) return
    const endAt = points.slice(i + 1).find((q) => q.at > p.at)?.at ?? Infinity
    const last = out.at(-1)
    if (last && last.endAt >= p.at) last.endAt = Math.max(last.endAt, endAt)
    else out.push({ at: p.at, endAt, id: p.id })
  })
  return out
}

/** Every belief in a lock or a leadership, in order of grant. */
function beliefsOf(h: readonly HistoryEntry[]): Belief[] {
  const out: Belief[] = []
  const open = new Map<string, Belief>()
  const key = (kind: string, resource: string, process: string): string => JSON.stringify([kind, resource, process])
  const end = (kind: Belief['kind'], resource: string, e: HistoryEntry): void => {
    const b = open.get(key(kind, resource, e.process))
    if (!b) return
    b.ended = e
    open.delete(key(kind, resource, e.process))
  }
  const begin = (kind: Belief['kind'], resource: string, e: HistoryEntry): void => {
    end(kind, resource, e) // a second grant to the same process replaces its first
    const b: Belief = { kind, resource, process: e.process, began: e, ended: undefined }
    open.set(key(kind, resource, e.process), b)
    out.push(b)
  }
  for (const e of h) {
    if (e.type === 'op' && e.op === 'acquire' && e.phase === 'ok') begin('lock', e.resource, e)
    else if (e.type === 'op' && e.op === 'release' && e.phase === 'invoke') end('lock', e.resource, e)
    else if (e.type === 'event' && e.event === 'lockLost') end('lock', e.name, e)
    else if (e.type === 'event' && e.event === 'leaderElected') begin('leadership', e.group, e)
    else if (e.type === 'op' && e.op === 'standDown' && e.phase === 'invoke') end('leadership', e.resource, e)
    else if (e.type === 'event' && e.event === 'leadershipLost') end('leadership', e.group, e)
    else if (e.type === 'process' && e.what !== 'start') {
      for (const b of [...open.values()]) if (b.process === e.process) end(b.kind, b.resource, e)
    }
  }
  return out
}

const endOf = (b: Belief): number => b.ended?.at ?? Infinity

function overlapsOf(beliefs: readonly Belief[], endAt: number): Overlap[] {
  const out: Overlap[] = []
  // Per resource, in order of grant, against the beliefs still held at each grant (a run has thousands of grants).
  const held = new Map<string, Belief[]>()
  for (const later of beliefs) {
    const k = JSON.stringify([later.kind, later.resource])
    // Half-open [began, ended): an end at exactly the new grant's time is a handover, not an overlap.
    const active = (held.get(k) ?? []).filter((b) => later.began.at < endOf(b))
    for (const stale of active) {
      if (stale.process === later.process) continue
      out.push({
        kind: later.kind,
        resource: later.resource,
        stale: { process: stale.process, beganId: stale.began.id, endedId: stale.ended?.id },
        granted: { process: later.process, beganId: later.began.id, at: later.began.at },
        ms: Math.min(endOf(stale), endOf(later), endAt) - later.began.at,
      })
    }
    held.set(k, [...active, later])
  }
  return out
}

function fencingOf(h: readonly HistoryEntry[]): FencingViolation[] {
  const out: FencingViolation[] = []
  const highest = new Map<string, { id: number; token: bigint }>()
  const check = (what: FencingViolation['what'], resource: string, e: HistoryEntry, token: bigint, bad: (top: bigint) => boolean): void => {
    const k = `${what}\0${resource}`
    const top = highest.get(k)
    if (top && bad(top.token)) out.push({ what, resource, id: e.id, token, process: e.process, previousId: top.id, previousToken: top.token })
    if (!top || token > top.token) highest.set(k, { id: e.id, token })
  }
  for (const e of h) {
    // The register may accept its highest token again (the same holder writing twice), never a lower one.
    if (e.type === 'fence' && e.accepted) check('stale-accepted', e.register, e, e.token, (top) => e.token < top)
    // Each grant must exceed every earlier grant's token: two holders with one token cannot be told apart.
    if (e.type === 'op' && e.op === 'acquire' && e.phase === 'ok' && e.token !== undefined) {
      check('tokens-backwards', e.resource, e, e.token, (top) => e.token! <= top)
    }
  }
  return out
}

/** Every view series, from the history in time order. */
function seriesOf(h: readonly HistoryEntry[]): Series[] {
  const joiners = new Map<string, Set<string>>()
  for (const e of h) {
    if (e.type === 'op' && e.op === 'join' && e.phase === 'ok') joiners.set(e.resource, (joiners.get(e.resource) ?? new Set()).add(e.process))
  }
  const all = new Map<string, Series>()
  const see = (via: Via, observer: string, group: string, member: string, e: HistoryEntry, present: boolean, askedAt = e.at): void => {
    const k = JSON.stringify([via, observer, group, member])
    let s = all.get(k)
    if (!s) all.set(k, s = { via, observer, group, member, seen: [] })
    s.seen.push({ at: e.at, id: e.id, present, askedAt })
  }
  /** The isUp questions under way: (observer, topic, member) → when asked. */
  const asked = new Map<string, number>()
  for (const e of h) {
    if (e.type === 'op' && e.op === 'isUp') {
      const k = JSON.stringify([e.process, e.resource, e.member])
      if (e.phase === 'invoke') asked.set(k, e.at)
      else if (e.phase === 'ok') see('isUp', e.process, e.resource, e.member!, e, e.value === true, asked.get(k) ?? e.at)
      if (e.phase !== 'invoke') asked.delete(k)
    } else if (e.type === 'event') {
      if (e.event === 'memberJoined' || e.event === 'memberLeft') see('watch', e.process, e.group, e.member, e, e.event === 'memberJoined')
      else if (e.event === 'membershipLost' || e.event === 'rejoined') see('self', e.process, e.group, e.process, e, e.event === 'rejoined')
    } else if (e.type === 'op' && e.phase === 'ok') {
      if (e.op === 'join') see('self', e.process, e.resource, e.process, e, true)
      else if (e.op === 'getMembers') {
        const listed = new Set(e.value as string[])
        for (const m of listed) see('watch', e.process, e.resource, m, e, true)
        for (const m of joiners.get(e.resource) ?? []) if (!listed.has(m)) see('watch', e.process, e.resource, m, e, false)
      }
    }
  }
  return [...all.values()]
}

/** When each process's membership of each group began and ended (leave invoked, exit or kill). */
function membershipsOf(h: readonly HistoryEntry[]): Map<string, { from: number; to: number }[]> {
  const spans = new Map<string, { from: number; to: number }[]>()
  const key = (process: string, group: string): string => JSON.stringify([process, group])
  const close = (k: string, at: number): void => {
    const last = spans.get(k)?.at(-1)
    if (last && last.to === Infinity) last.to = at
  }
  for (const e of h) {
    if (e.type === 'op' && e.op === 'join' && e.phase === 'ok') {
      const k = key(e.process, e.resource)
      close(k, e.at)
      spans.set(k, [...(spans.get(k) ?? []), { from: e.at, to: Infinity }])
    } else if (e.type === 'op' && e.op === 'leave' && e.phase === 'invoke') close(key(e.process, e.resource), e.at)
    else if (e.type === 'process' && e.what !== 'start') {
      for (const k of spans.keys()) if ((JSON.parse(k) as string[])[0] === e.process) close(k, e.at)
    }
  }
  return spans
}

/** A view's state at each of its sightings: present until the next sighting says otherwise. */
const stateAt = (s: Series, t: number): Sighting | undefined => {
  let last: Sighting | undefined
  for (const y of s.seen) {
    if (y.at > t) break
    last = y
  }
  return last
}

/**
 * Disagreements between each observer's isUp and watch views of one member (see the file's doc).
 * `compared(t)`: the two may be compared at t; `allowed(t)`: a lag at t is within the bounds.
 * Both are constant between consecutive `edges`.
 */
function disagreementsOf(
  isUp: Series,
  watch: Series,
  edges: readonly number[],
  compared: (t: number) => boolean,
  allowed: (t: number) => boolean,
): Disagreement[] {
  const times = [...new Set([...edges, ...isUp.seen.map((y) => y.at), ...watch.seen.map((y) => y.at)])].sort((a, b) => a - b)
  const out: Disagreement[] = []
  let open: Disagreement | undefined
  for (const [i, t] of times.entries()) {
    const a = stateAt(isUp, t)
    const b = stateAt(watch, t)
    const differ = compared(t) && a !== undefined && b !== undefined && a.present !== b.present
    if (differ && !open) {
      const began = a.at >= b.at ? a : b
      out.push(
        open = {
          observer: isUp.observer,
          member: isUp.member,
          group: watch.group,
          topic: isUp.group,
          isUp: a.present,
          id: began.id,
          at: t,
          ms: 0,
          beyondMs: 0,
        },
      )
    } else if (!differ) open = undefined
    if (open && i + 1 < times.length) {
      const next = times[i + 1]!
      open.ms += next - t
      if (!allowed(t)) open.beyondMs += next - t
    }
  }
  return out
}

/**
 * Checks one run's history (in any order: it is sorted by time, then line). Throws
 * PartitionHistoryError when the history cannot be judged; otherwise returns the findings.
 */
export function checkPartitionHistory(history: readonly HistoryEntry[], options: PartitionCheckOptions = {}): PartitionReport {
  const h = [...history].sort((a, b) => a.at - b.at || a.id - b.id)
  const endAt = h.at(-1)?.at ?? 0
  const cuts = cutsOf(h)
  const outages = outagesOf(h, cuts)
  const measuresLeaders = h.some((e) => e.type === 'cluster')
  const inOutage = (t: number): boolean => outages.some((o) => o.at <= t && t < o.endAt)
  /** When the cluster is served again at or after `t`: the end of the outage under way then, else `t`. */
  const servedFrom = (t: number): number => outages.find((o) => o.at <= t && t < o.endAt)?.endAt ?? t
  const hosts = new Map<string, string>()
  for (const e of h) if (e.type === 'process' && e.what === 'start') hosts.set(e.process, e.host!)
  const hostOf = (process: string): string => {
    const host = hosts.get(process)
    if (host === undefined) throw new PartitionHistoryError(`process ${process} has no start record naming its host, so its side of a cut is unknown`)
    return host
  }
  const cutOff = (process: string, cut: Cut): boolean => !cut.majority.has(hostOf(process))
  const cutAt = (t: number): Cut | undefined => cuts.find((c) => c.at <= t && t < c.healAt)
  const spans = membershipsOf(h)
  const memberAt = (process: string, group: string, t: number, until = t): boolean =>
    (spans.get(JSON.stringify([process, group])) ?? []).some((s) => s.from <= t && until < s.to)
  // A clean `exit` (the harness stops every client at the end of a run) ends what can be asked of a process, not its duty: a
  // member that must come back must do so before it or its observer exits. A `kill` is a death: nothing is owed after it.
  const exits = new Map<string, number>()
  for (const e of h) if (e.type === 'process' && e.what === 'exit' && !exits.has(e.process)) exits.set(e.process, e.at)
  const exitAt = (process: string): number => exits.get(process) ?? Infinity
  /** Joined from `t` through `until` (a membership ended by a clean exit at `until` counts). */
  const joinedThrough = (process: string, group: string, t: number, until: number): boolean =>
    t <= until && (spans.get(JSON.stringify([process, group])) ?? []).some((s) => s.from <= t && until <= s.to && (until < s.to || until === exitAt(process)))

  const beliefs = beliefsOf(h)
  const overlaps = overlapsOf(beliefs, endAt)
  const series = seriesOf(h)

  // A leader taking office gives every session and lease a fresh timeout (ZooKeeper restarts each session's clock, etcd renews
  // every lease), so a cut member's expiry runs from the last time the served side's leader did within the cut: the end of its
  // last outage there. ZooKeeper full form: a cut of a follower, then the leader, short of acks on a loaded machine, lost its
  // quorum and was elected again 3 s into the cut; the cut member's session expired 12 s after that, at the heal.
  const ledSince = (c: Cut): number => outages.filter((o) => o.at < c.healAt && o.endAt > c.at).reduce((t, o) => Math.max(t, Math.min(o.endAt, c.healAt)), c.at)
  const electionOf = (c: Cut): number => {
    if (!measuresLeaders) return c.takesLeader ? options.electionMs ?? 0 : 0
    const since = ledSince(c)
    return since - c.at + (since > c.at ? options.leaderGraceMs ?? 0 : 0)
  }
  const detectBound = (c: Cut): number => (options.detectWithinMs ?? 0) + electionOf(c)

  // The memberships each process reported lost (membershipLost), by (process, group), in time order.
  const losses = new Map<string, HistoryEntry[]>()
  for (const e of h) {
    if (e.type === 'event' && e.event === 'membershipLost') {
      const k = JSON.stringify([e.process, e.group])
      losses.set(k, [...(losses.get(k) ?? []), e])
    }
  }
  /** The process that keeps `member` in a view and reports its loss: for isUp, its service-group coordinator (`<member>/sg`, client.ts), when it has one. */
  const keeperOf = (via: Via, member: string): string => (via === 'isUp' && hosts.has(`${member}/sg`) ? `${member}/sg` : member)

  // False downs: a present → gone turn, seen by an observer not cut off, of a member joined, alive, not cut off, and
  // not recovering. A member cut off in an earlier cut recovers until this observer has seen it back, in answer to a question
  // asked after the heal (an isUp asked before it, by an observer cut off or paused, answers from before) and after the last
  // loss of this membership that the member itself reported since the cut began: its liveness may lapse in the cut's wake,
  // after the heal (TCP's retransmission back-off holds its connection down a while longer; a paused member finds out when
  // it runs again), and a view that still showed it present then had not caught up. The lapse is the cut's, its recovery
  // held to recoverWithinMs.
  const falseDowns: FalseDown[] = []
  for (const s of series) {
    let wasPresent = false
    s.seen.forEach((x, i) => {
      const turn = wasPresent && !x.present
      wasPresent = x.present
      if (!turn) return
      const now = cutAt(x.at)
      if (now && (cutOff(s.observer, now) || cutOff(s.member, now))) return
      if (inOutage(x.at) || !memberAt(s.member, s.group, x.at)) return
      // The member's last isolation over by now: a cut of its host (to the end of an outage under way at its heal), or an outage.
      const before = [
        ...cuts.filter((c) => cutOff(s.member, c)).map((c) => ({ at: c.at, healAt: servedFrom(c.healAt) })),
        ...outages.map((o) => ({ at: o.at, healAt: o.endAt })),
      ].filter((c) => c.healAt <= x.at).sort((a, b) => a.healAt - b.healAt || b.at - a.at).at(-1)
      if (before) {
        const keeper = keeperOf(s.via, s.member)
        // After its own reported loss the member is back only once its keeper is (reconnected, or rejoined the group): until then
        // the backend may still list it, its liveness not yet run out there, and a view that saw it present had not caught up.
        // The loss counts if it came during this isolation, or if the keeper had not come back from it when the isolation began
        // (memcached full form: a flap of the server, the service lost in an early round and back only after the last heal).
        const lastLoss = (losses.get(JSON.stringify([keeper, s.group])) ?? []).filter((l) => l.at <= x.at && l.id !== x.id).at(-1)
        const returned = lastLoss && h.find((e) =>
          e.process === keeper && e.at >= lastLoss.at && e.type === 'event'
          && ((e.event === 'connectionStateChanged' && (e.state === 'reconnected' || e.state === 'connected'))
            || (e.event === 'rejoined' && e.group === s.group))
        )
        const current = lastLoss !== undefined && (lastLoss.at >= before.at || returned === undefined || returned.at >= before.at)
        const since = Math.max(before.healAt, current ? returned?.at ?? Infinity : -Infinity)
        if (!s.seen.some((y) => y.present && y.askedAt >= since && y.at < x.at)) return
      }
      const back = s.seen.slice(i + 1).find((y) => y.present)
      falseDowns.push({ group: s.group, member: s.member, observer: s.observer, via: s.via, id: x.id, at: x.at, ms: (back?.at ?? endAt) - x.at })
    })
  }

  // Detection: each majority-side observer that saw a cut member present when the cut began must see it gone before the heal.
  const detections: Detection[] = []
  const missed: Detection[] = []
  const late: Detection[] = []
  for (const c of cuts) {
    if (c.majority.size === 0) continue
    const bound = options.detectWithinMs === undefined ? undefined : detectBound(c)
    for (const s of series) {
      if (s.via === 'self' || cutOff(s.observer, c) || !cutOff(s.member, c) || !memberAt(s.member, s.group, c.at)) continue
      if (s.seen.filter((y) => y.at < c.at).at(-1)?.present !== true) continue
      const gone = s.seen.find((y) => !y.present && y.at >= c.at && y.at < c.healAt)
      const d: Detection = { cutId: c.id, group: s.group, member: s.member, observer: s.observer, via: s.via, id: gone?.id, ms: gone && gone.at - c.at }
      if (gone) detections.push(d)
      if (gone && bound !== undefined && d.ms! > bound) late.push(d)
      if (!gone && (bound === undefined || c.healAt - c.at >= bound)) missed.push(d)
    }
  }

  // Recovery: after each heal, every sight lost while the member or the observer was cut off comes back; and locks and leaderships
  // are granted again (or still held).
  const recoveries: Recovery[] = []
  const lost: Lost[] = []
  cuts.forEach((c, n) => {
    const windowEnd = cuts[n + 1]?.at ?? Infinity
    // Recovery counts from when the cluster is served again: an outage under way at the heal is the cluster's own election.
    const servedAt = Math.min(servedFrom(c.healAt), windowEnd)
    const leaderlessMs = servedAt - c.healAt
    for (const s of series) {
      if (!cutOff(s.member, c) && !cutOff(s.observer, c)) continue
      // Only members that stayed joined and alive from the cut to the end of this window (or to their or the observer's exit) must come back.
      if (!joinedThrough(s.member, s.group, c.at, Math.min(windowEnd, endAt, exitAt(s.member), exitAt(s.observer)))) continue
      const gone = s.seen.find((y) => !y.present && y.at >= c.at && y.at < windowEnd)
      if (!gone) continue
      const back = s.seen.find((y) => y.present && y.at > gone.at && y.at < windowEnd)
      const who = { resource: s.group, member: s.member, observer: s.observer, via: s.via }
      if (back) recoveries.push({ what: 'member', healId: c.healId, ...who, id: back.id, ms: Math.max(0, back.at - c.healAt), leaderlessMs })
    }
    const heldAtEnd = (kind: Belief['kind'], resource: string): boolean => {
      const t = Math.min(windowEnd, endAt)
      return beliefs.some((b) => b.kind === kind && b.resource === resource && b.began.at <= t && endOf(b) >= t)
    }
    const inWindow = (e: HistoryEntry): boolean => e.at >= c.healAt && e.at < windowEnd
    const judged = servedAt < windowEnd && (options.settleMs === undefined || windowEnd - servedAt >= options.settleMs)
    const locks = new Set(h.flatMap((e) => (e.type === 'op' && e.op === 'acquire' ? [e.resource] : [])))
    for (const lock of locks) {
      const acquires = h.filter((e): e is Entry<'op'> => e.type === 'op' && e.op === 'acquire' && e.resource === lock)
      const grant = acquires.find((e) => e.phase === 'ok' && inWindow(e))
      if (grant) {
        recoveries.push({ what: 'lock', healId: c.healId, resource: lock, id: grant.id, ms: grant.at - c.healAt })
        continue
      }
      // Someone tried after the heal, or was still waiting at it (an invoke with no later reply of that process before the heal).
      const tried = acquires.some((e) =>
        e.phase === 'invoke'
        && (inWindow(e) || (e.at < c.healAt && !acquires.some((r) => r.process === e.process && r.phase !== 'invoke' && r.at >= e.at && r.at < c.healAt)))
      )
      if (judged && tried && !heldAtEnd('lock', lock)) lost.push({ what: 'lock', healId: c.healId, resource: lock, lastId: c.healId })
    }
    const groups = new Set(beliefs.filter((b) => b.kind === 'leadership').map((b) => b.resource))
    for (const group of groups) {
      const elected = beliefs.find((b) => b.kind === 'leadership' && b.resource === group && inWindow(b.began))
      if (elected) recoveries.push({ what: 'leadership', healId: c.healId, resource: group, id: elected.began.id, ms: elected.began.at - c.healAt })
      else if (judged && !heldAtEnd('leadership', group)) lost.push({ what: 'leadership', healId: c.healId, resource: group, lastId: c.healId })
    }
  })
  // Members never seen back: the last sighting says gone, yet the member is joined and alive to the end (or to its or the observer's
  // exit) and the observer not killed. Lost whether or not a cut caused it (a member dropped for good on the majority side is also a
  // false down).
  const killed = new Set(h.flatMap((e) => (e.type === 'process' && e.what === 'kill' ? [e.process] : [])))
  for (const s of series) {
    const last = s.seen.at(-1)!
    if (last.present || killed.has(s.observer) || !joinedThrough(s.member, s.group, last.at, Math.min(endAt, exitAt(s.member), exitAt(s.observer)))) continue
    const healId = cuts.filter((c) => c.healAt <= last.at).at(-1)?.healId ?? cuts.find((c) => c.at <= last.at && last.at < c.healAt)?.healId
    lost.push({ what: 'member', healId, resource: s.group, member: s.member, observer: s.observer, via: s.via, lastId: last.id })
  }
  const lateBack = recoveries.filter((r) =>
    r.what === 'member' && options.recoverWithinMs !== undefined && r.ms - (r.leaderlessMs ?? 0) > options.recoverWithinMs
  )

  // Agreement of isUp with the watch, per observer and member (see the file's doc). Findings need both bounds.
  const ends = new Map<string, number>()
  for (const e of h) if (e.type === 'process' && e.what !== 'start' && !ends.has(e.process)) ends.set(e.process, e.at)
  const disagreements: Disagreement[] = []
  for (const u of series.filter((x) => x.via === 'isUp')) {
    for (const w of series.filter((x) => x.via === 'watch' && x.observer === u.observer && x.member === u.member)) {
      const edges = [
        ...cuts.flatMap((c) => [c.at, c.healAt, c.at + detectBound(c), servedFrom(c.healAt) + (options.recoverWithinMs ?? 0)]),
        ...outages.flatMap((o) => [o.at, o.endAt, o.endAt + (options.recoverWithinMs ?? 0)]),
        ...[u.group, w.group].flatMap((g) => (spans.get(JSON.stringify([u.member, g])) ?? []).flatMap((x) => [x.from, x.to])),
        ends.get(u.observer) ?? Infinity,
      ].filter(Number.isFinite)
      // A view has caught up with a membership once it has seen the member present since the membership began.
      const caughtUp = (s: Series, t: number): boolean => {
        const span = (spans.get(JSON.stringify([s.member, s.group])) ?? []).find((x) => x.from <= t && t < x.to)
        return span !== undefined && s.seen.some((y) => y.present && span.from <= y.at && y.at <= t)
      }
      const compared = (t: number): boolean =>
        t < (ends.get(u.observer) ?? Infinity) && caughtUp(u, t) && caughtUp(w, t) && !(cutAt(t) && cutOff(u.observer, cutAt(t)!))
      const allowed = (t: number): boolean =>
        cuts.some((c) => (c.at <= t && t < c.at + detectBound(c)) || (c.healAt <= t && t < servedFrom(c.healAt) + (options.recoverWithinMs ?? 0)))
        || outages.some((o) => o.at <= t && t < o.endAt + (options.recoverWithinMs ?? 0))
      disagreements.push(...disagreementsOf(u, w, edges, compared, allowed))
    }
  }
  const beyond = options.detectWithinMs === undefined || options.recoverWithinMs === undefined ? [] : disagreements.filter((d) => d.beyondMs > 0)

  const fencing = fencingOf(h)
  return {
    records: h.length,
    cuts: cuts.length,
    beliefOverlaps: tally(overlaps),
    dualLeaders: tally(overlaps.filter((o) => o.kind === 'leadership')),
    fencingViolations: tally(fencing),
    falseDowns: tally(falseDowns),
    detection: { ...tally(detections), missed, late },
    recovery: { ...tally(recoveries), late: lateBack },
    lost,
    disagreements: { ...tally(disagreements), beyond },
    leaderless: tally(outages.map((o) => ({ ...o, ms: Math.min(o.endAt, endAt) - o.at }))),
    failures: overlaps.length + fencing.length + falseDowns.length + missed.length + late.length + lateBack.length + lost.length + beyond.length,
  }
}

const ms = (n: number | undefined): string => (n === undefined ? '-' : `${Math.round(n)} ms`)

/** One finding, short, naming its lines. */
function show(x: Overlap | FencingViolation | FalseDown | Detection | Recovery | Lost | Disagreement): string {
  if ('beyondMs' in x) {
    return `${x.observer}'s isUp said ${x.member} ${
      x.isUp ? 'up' : 'down'
    } in ${x.topic} while its watch of ${x.group} said the opposite, from line ${x.id} for ${ms(x.ms)} (${ms(x.beyondMs)} beyond the bounds)`
  }
  if ('stale' in x) {
    return `${x.kind} ${x.resource}: ${x.granted.process} granted at line ${x.granted.beganId} while ${x.stale.process} (since line ${x.stale.beganId}) believed until ${
      x.stale.endedId === undefined ? 'the end' : `line ${x.stale.endedId}`
    }, ${ms(x.ms)}`
  }
  if ('previousToken' in x) {
    return x.what === 'stale-accepted'
      ? `register ${x.resource} accepted token ${x.token} of ${x.process} at line ${x.id} after token ${x.previousToken} at line ${x.previousId}`
      : `lock ${x.resource} granted to ${x.process} with token ${x.token} at line ${x.id}, not above ${x.previousToken} at line ${x.previousId}`
  }
  if ('cutId' in x) {
    return `${x.observer} (${x.via}) ${
      x.ms === undefined ? 'never saw' : `took ${ms(x.ms)} to see`
    } ${x.member} gone from ${x.group} after the cut of line ${x.cutId}`
  }
  if ('lastId' in x) {
    return x.what === 'member'
      ? `${x.observer} (${x.via}) never saw ${x.member} back in ${x.resource} after line ${x.lastId}${
        x.healId === undefined ? '' : ` (heal: line ${x.healId})`
      }`
      : `${x.what} ${x.resource} never ${x.what === 'lock' ? 'granted' : 'won'} again after the heal of line ${x.healId}`
  }
  if ('healId' in x) {
    return `${x.what} ${x.member ?? x.resource}${x.observer ? ` seen by ${x.observer} (${x.via})` : ''} ${ms(x.ms)} after the heal (line ${x.id})`
  }
  return `${x.observer} (${x.via}) saw healthy ${x.member} leave ${x.group} at line ${x.id}, for ${ms(x.ms)}`
}

const some = (label: string, items: readonly Parameters<typeof show>[0][]): string =>
  `${label}: ${items.length}${items.length ? ` (${items.slice(0, 3).map(show).join('; ')}${items.length > 3 ? '; ...' : ''})` : ''}`

/** One view's share of the report: its false downs, detections and recoveries. */
function via(r: PartitionReport, v: Via): string {
  const of = <T extends { via?: Via }>(items: readonly T[]): T[] => items.filter((x) => x.via === v)
  const worst = (items: readonly { ms?: number }[]): string =>
    ms(items.reduce<number | undefined>((m, x) => (x.ms === undefined || (m ?? -1) >= x.ms ? m : x.ms), undefined))
  const detections = of(r.detection.items)
  const recoveries = of(r.recovery.items)
  return `${of(r.falseDowns.items).length} false downs, ${detections.length} detections (worst ${worst(detections)}, ${of(r.detection.missed).length} missed, ${
    of(r.detection.late).length
  } late), ${recoveries.length} recoveries (worst ${worst(recoveries)}, ${of(r.recovery.late).length} late), ${of(r.lost).length} never back`
}

/** The report as one paragraph: verdict, each class's count and worst, and the first offenders with their lines. */
export function renderPartitionReport(r: PartitionReport): string {
  return [
    `${r.failures === 0 ? 'PASS' : `FAIL (${r.failures} findings)`}: ${r.records} records, ${r.cuts} cuts.`,
    `${some('Belief overlaps', r.beliefOverlaps.items)}, max ${ms(r.beliefOverlaps.maxMs)};`,
    `${some('dual leaders', r.dualLeaders.items)};`,
    `${some('fencing violations', r.fencingViolations.items)};`,
    `${some('false downs', r.falseDowns.items)}.`,
    `Detection of cut members: ${r.detection.count} measured, worst ${r.detection.worst ? show(r.detection.worst) : '-'};`,
    `${some('missed', r.detection.missed)}; ${some('late', r.detection.late)}.`,
    `Recovery after heal: ${r.recovery.count} measured, worst ${r.recovery.worst ? show(r.recovery.worst) : '-'}; ${some('late', r.recovery.late)}.`,
    `${some('Lost', r.lost)}.`,
    ...(r.leaderless.count
      ? [`Without a leader: ${r.leaderless.count} stretches, longest ${ms(r.leaderless.maxMs)} (from line ${r.leaderless.worst!.id}).`]
      : []),
    `isUp: ${via(r, 'isUp')}; disagreements with the watch: ${r.disagreements.count}, longest ${ms(r.disagreements.maxMs)}; ${
      some('beyond the bounds', r.disagreements.beyond)
    }.`,
  ].join(' ')
}
