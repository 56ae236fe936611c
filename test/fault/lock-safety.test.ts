/**
 * Lock safety and leadership safety under random SIGKILLs, on every backend whose locks (and
 * elections) reach across processes. Eight contender processes (test/fault/support/contender.ts)
 * loop taking one lock and run for leader of one group, for a fixed time, while the test SIGKILLs
 * one of them every second or two (the lock holder or the leader half the time) and starts a
 * replacement. Every step goes to one O_APPEND log; test/support/lock-checker.ts then verifies
 * that no two holders' intervals overlap (a killed holder's ends at its kill: what it held must be
 * freed, by its lease lapsing or its session ending, before anyone enters again), that at most
 * one member believed it led at any instant, and that fencing tokens strictly increase where the
 * backend issues them. Servers are the shared ones: only contenders are harmed.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { AppendLog, checkExclusive, readLog, type CheckReport, type LogLine } from '../support/lock-checker.js'
import { rid } from '../support/wait.js'
import { declares, faultBackends, withQuery, type FaultBackend } from './support/backends.js'
import { killChild, repeat, sleep, spawnContender, type RunOutcome, type Scope, testTimeout } from './support/harness.js'
import { FAULT_FULL, positiveInt, ResultsWriter } from './support/results.js'

const writer = new ResultsWriter(import.meta.url)
const backends = await faultBackends()

const CONTENDERS = 8
/** Seconds of contention per run: FAULT_LOCK_SECONDS, default 8 (60 in the full suite). */
const SECONDS = positiveInt(process.env.FAULT_LOCK_SECONDS, FAULT_FULL ? 60 : 8)
/** Runs per backend: one long run is worth more than many short ones here. */
const RUNS = positiveInt(process.env.FAULT_LOCK_RUNS, 1)
/** Liveness and lock lease of the contenders, seconds: what a killed holder's lock waits for. */
const LEASE_S = 4

interface RunReport {
  lock?: CheckReport
  leader?: CheckReport
  kills: number
}

/** The current holder of a resource, from the log so far. */
function current(lines: readonly LogLine[], begin: 'enter' | 'lead', ends: readonly string[]): number | undefined {
  let holder: number | undefined
  for (const l of lines) {
    if (l.kind === begin) holder = l.pid
    else if (holder === l.pid && (ends.includes(l.kind) || l.kind === 'kill')) holder = undefined
  }
  return holder
}

async function contention(scope: Scope, b: FaultBackend): Promise<RunReport> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-locklog-'))
  scope.defer(() => rmSync(dir, { recursive: true, force: true }))
  const logPath = join(dir, 'log')
  const log = new AppendLog(logPath)
  scope.defer(() => log.close())
  const url = withQuery(b.config.url, `timeout=${LEASE_S}`)
  const withLocks = declares(b, ['locks'])
  const withLeader = declares(b, ['leaderElection', 'groups'])
  const spec = (): Parameters<typeof spawnContender>[0] => ({
    url,
    memberId: rid('c'),
    log: logPath,
    holdMs: [20, 120],
    termMs: [300, 1_500],
    ...(withLocks ? { lock: name } : {}),
    ...(withLeader ? { group } : {}),
  })
  const name = rid('l')
  const group = rid('g')
  const live = new Set<ChildProcess>()
  scope.defer(() => Promise.all([...live].map((c) => killChild(c))))
  const add = async (): Promise<void> => {
    const child = await spawnContender(spec())
    live.add(child)
    child.once('exit', () => live.delete(child))
  }
  // Start them a few at a time: eight TypeScript processes at once take a while on two cores.
  for (let i = 0; i < CONTENDERS; i += 4) await Promise.all(Array.from({ length: Math.min(4, CONTENDERS - i) }, add))
  const endAt = Date.now() + SECONDS * 1000
  const respawns: Promise<void>[] = []
  let kills = 0
  while (Date.now() < endAt) {
    await sleep(1_000 + Math.random() * 1_000)
    if (Date.now() >= endAt) break
    const lines = readLog(logPath)
    const pick = Math.random()
    const target = pick < 0.5 ? current(lines, 'enter', ['exit', 'lost']) : pick < 0.75 ? current(lines, 'lead', ['unlead']) : undefined
    const victims = [...live]
    const victim = victims.find((c) => c.pid === target) ?? victims[Math.floor(Math.random() * victims.length)]
    if (!victim) continue
    // The kill line goes first: from it on, the victim may be dead.
    log.write('kill', victim.pid!)
    await killChild(victim)
    kills += 1
    respawns.push(add())
  }
  await Promise.all(respawns)
  // Stop cleanly: each writes its closing lines, then releases and leaves.
  await Promise.all([...live].map(async (c) => {
    const gone = new Promise((r) => c.once('exit', r))
    c.kill('SIGTERM')
    await Promise.race([gone, sleep(15_000).then(() => killChild(c))])
  }))
  const lines = readLog(logPath)
  return {
    lock: withLocks ? checkExclusive(lines, 'lock', { fencing: b.caps.has('fencing') }) : undefined,
    leader: withLeader ? checkExclusive(lines, 'leader') : undefined,
    kills,
  }
}

/** Contention runs, by backend and run number, shared by the lock test and the leadership test. */
const runs = new Map<string, Promise<RunReport>>()

function shared(scope: Scope, b: FaultBackend, n: number): Promise<RunReport> {
  const key = `${b.name}#${n}`
  let run = runs.get(key)
  if (!run) {
    run = contention(scope, b)
    runs.set(key, run)
  }
  return run
}

function skipFor(b: FaultBackend, needed: 'locks' | 'leaderElection'): string | undefined {
  const missing = [needed, 'acrossProcesses'].filter((c) => !b.caps.has(c as 'locks'))
  return missing.length ? `unsupported by ${b.name}: ${missing.join(', ')}` : undefined
}

function outcome(report: CheckReport, kills: number): RunOutcome {
  if (report.violations.length > 0) throw new Error(`${report.violations.length} violation(s): ${report.violations.slice(0, 5).join(' | ')}`)
  if (report.holds < 2) throw new Error(`only ${report.holds} holds in the run: too little contention to check anything`)
  return {
    ms: report.worstTakeoverAfterKillMs,
    counts: { holds: report.holds, 'holders killed while holding': report.killedInside, 'holds ended by a loss report': report.lostInside, 'SIGKILLs': kills },
  }
}

describe('fault: lock and leadership safety', { concurrency: 2 }, () => {
  for (const b of backends) {
    it(`${b.name}: fault: ${CONTENDERS} processes contend on one lock for ${SECONDS} s with random SIGKILLs; no two holders overlap; fencing tokens increase`, {
      skip: skipFor(b, 'locks'),
      timeout: testTimeout(SECONDS * 1000 + 180_000, RUNS),
    }, async (t) => {
      await repeat(t, {
        writer,
        scenario: 'lock.safety',
        backend: b.name,
        runs: RUNS,
        runTimeoutMs: SECONDS * 1000 + 180_000,
        title: `${CONTENDERS} processes take one lock in turn for ${SECONDS} s; one is SIGKILLed every 1-2 s (the holder half the time). The shared log shows `
          + `no overlapping holds, and fencing tokens strictly increase where the backend has them.`,
        measure: 'holder SIGKILLed → next holder enters',
      }, async (scope, n) => {
        const r = await shared(scope, b, n)
        return outcome(r.lock!, r.kills)
      })
    })
    it(`${b.name}: fault: ${CONTENDERS} candidates under random SIGKILLs; at most one believes it leads at any instant`, {
      skip: skipFor(b, 'leaderElection'),
      timeout: testTimeout(SECONDS * 1000 + 180_000, RUNS),
    }, async (t) => {
      await repeat(t, {
        writer,
        scenario: 'leader.safety',
        backend: b.name,
        runs: RUNS,
        runTimeoutMs: SECONDS * 1000 + 180_000,
        title: `The same ${CONTENDERS} processes run for leader of one group, standing down after 0.3-1.5 s; the leader is SIGKILLed a quarter of the time. `
          + `The log shows at most one leader at any instant.`,
        measure: 'leader SIGKILLed → next leader elected',
      }, async (scope, n) => {
        const r = await shared(scope, b, n)
        assert.ok(r.leader, 'the contention run checked leadership')
        return outcome(r.leader, r.kills)
      })
    })
  }
})
