/**
 * Which of a partition run's findings are known, unfixed bugs (test/fault/support/known.ts) and
 * which are new. A finding is attributed to a known bug only when it has that bug's signature
 * (backend, class of finding, and where it happened relative to the cuts); everything else is
 * new and fails the test. Under FAULT_STRICT=1 nothing is excused.
 */
import { cutsOf, type Cut, type FalseDown, type FencingViolation, type Lost, type Overlap,
  type PartitionReport } from '../../fault/support/partition-checker.js'
import type { HistoryEntry } from '../../fault/support/partition-history.js'
import type { KnownBug } from '../../fault/support/known.js'
import type { PartitionBackend } from './run.js'

/** How long after a heal the sentinels may take to demote a master that was cut off (docs/drivers.md measured 10.3-11.5 s). */
const REDIS_DEMOTION_MS = 15_000

/** A run's findings, split. */
export interface Verdict {
  /** Known bug → how many findings it explains. */
  known: Map<KnownBug, number>
  /** Findings no known bug explains, one line each. */
  unknown: string[]
}

/** Splits `report`'s findings (see the file's doc). */
export function verdict(backend: PartitionBackend['name'], report: PartitionReport, history: readonly HistoryEntry[]): Verdict {
  const strict = process.env.FAULT_STRICT === '1'
  const known = new Map<KnownBug, number>()
  const unknown: string[] = []
  const hostOf = new Map<string, string>()
  const at = new Map<number, number>()
  for (const e of history) {
    at.set(e.id, e.at)
    if (e.type === 'process' && e.what === 'start') hostOf.set(e.process, e.host!)
  }
  const cuts = cutsOf(history)
  const excuse = (bug: KnownBug | undefined, line: string): void => {
    if (bug && !strict) known.set(bug, (known.get(bug) ?? 0) + 1)
    else unknown.push(line)
  }
  /** During a cut, or within `afterMs` of its heal. */
  const nearCut = (t: number, afterMs: number): Cut | undefined => cuts.find((c) => c.at <= t && t <= c.healAt + afterMs)

  for (const o of report.beliefOverlaps.items as Overlap[]) {
    const pair = [hostOf.get(o.stale.process), hostOf.get(o.granted.process)]
    let bug: KnownBug | undefined
    // Redis: one of the two was cut off with the old master (the stale holder, or the one it granted to), and the grant came
    // during that cut or before the sentinels demoted the old master after the heal (up to about 11.5 s later: docs/drivers.md).
    const withOldMaster = cuts.some((c) =>
      c.at <= o.granted.at && o.granted.at <= c.healAt + REDIS_DEMOTION_MS && pair.some((h) => h !== undefined && c.cutOff.has(h))
    )
    if (backend === 'redis' && withOldMaster) bug = 'redis-sentinel-failover'
    // memcached: the stale holder's process was paused (pause-client) when the next grant came, so it could not be told. A holder
    // cut off by the network must be told in time, silent or not.
    const cut = nearCut(o.granted.at, 0)
    const paused = cut?.paused === true && pair[0] !== undefined && cut.cutOff.has(pair[0])
    if (backend === 'memcached' && paused) bug = 'memcached-paused-holder'
    excuse(
      bug,
      `${o.kind} overlap on ${o.resource}: ${o.granted.process} granted (line ${o.granted.beganId}) while ${o.stale.process} believed, ${Math.round(o.ms)} ms`,
    )
  }
  for (const f of report.fencingViolations.items as FencingViolation[]) {
    const bug = backend === 'redis' && f.what === 'tokens-backwards' && nearCut(at.get(f.id)!, 30_000) ? 'redis-sentinel-failover' : undefined
    excuse(bug, `fencing ${f.what} on ${f.resource}: token ${f.token} of ${f.process} (line ${f.id}) after ${f.previousToken} (line ${f.previousId})`)
  }
  for (const d of report.falseDowns.items as FalseDown[]) {
    // Redis: observer and member were cut off with the old master, which went on serving them (the member's beats kept it listed there),
    // and after the heal the observer moved to the promoted master, where the member had lapsed: its view turns from the old master's
    // to the cluster's.
    const hosts = [hostOf.get(d.observer), hostOf.get(d.member)]
    const withOldMaster = cuts.some((c) =>
      c.takesLeader && hosts.every((h) => h !== undefined && c.cutOff.has(h)) && c.healAt <= d.at && d.at <= c.healAt + REDIS_DEMOTION_MS
    )
    excuse(
      backend === 'redis' && withOldMaster ? 'redis-sentinel-failover' : undefined,
      `false down: ${d.observer} (${d.via}) saw ${d.member} leave ${d.group} at line ${d.id} for ${Math.round(d.ms)} ms`,
    )
  }
  for (const d of report.detection.missed) unknown.push(`missed: ${d.observer} (${d.via}) never saw ${d.member} gone after the cut of line ${d.cutId}`)
  for (const d of report.detection.late) unknown.push(`late: ${d.observer} (${d.via}) saw ${d.member} gone ${d.ms} ms after the cut of line ${d.cutId}`)
  for (const r of report.recovery.late) {
    unknown.push(`late recovery: ${r.observer} (${r.via}) saw ${r.member} back ${r.ms} ms after the heal of line ${r.healId}`)
  }
  for (const l of report.lost as Lost[]) unknown.push(`lost: ${l.what} ${l.member ?? ''} ${l.resource} (last line ${l.lastId})`)
  for (const d of report.disagreements.beyond) {
    unknown.push(
      `disagreement: ${d.observer}'s isUp said ${d.member} ${d.isUp ? 'up' : 'down'} against its watch from line ${d.id}, ${
        Math.round(d.beyondMs)
      } ms beyond the bounds`,
    )
  }
  return { known, unknown }
}
