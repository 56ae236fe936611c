/**
 * Lock safety and leadership safety under random SIGKILLs, on every backend whose locks (and
 * elections) reach across processes. Eight contender processes (test/fault/support/contender.ts)
 * loop taking one lock and run for leader of one group, for a fixed time, while the test SIGKILLs
 * one of them every second or two (the lock holder or the leader half the time) and starts a
 * replacement. Every step goes to one O_APPEND log; test/support/lock-checker.ts then verifies
 * that no two holders' intervals overlap (a killed holder's ends at its kill: what it held must be
 * freed, by its lease lapsing or its session ending, before anyone enters again), that at most
 * one member believed it led at any instant, and that fencing tokens strictly increase where the
 * backend issues them. Servers are the shared ones, except in the server-fault variants (backends
 * whose waiters are woken: Redis, etcd), whose private servers are restarted and cut as well.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { AppendLog, checkExclusive, readLog, type CheckReport, type LogLine } from '../support/lock-checker.js'
import { TcpProxy } from '../support/proxy.js'
import { startEtcd, startRedis, type PrivateServer } from '../support/servers.js'
import { rid } from '../support/wait.js'
import { declares, faultBackends, withQuery, type FaultBackend } from './support/backends.js'
import { killChild, repeat, sleep, spawnContender, stopChild, type RunOutcome, type Scope, testTimeout } from './support/harness.js'
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
  /** Contenders that exited by themselves (not our SIGKILL, not the final SIGTERM): holds they began were never ended in the log. */
  died: string[]
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

/** A server fault injected between SIGKILLs (every other tick of the run), on the server or proxy that `url` names. */
interface ServerFaults {
  url: string
  /** Hurts the server (alternating kinds). */
  fault(): Promise<void>
  /** Faults so far. */
  faults: number
}

async function contention(scope: Scope, b: FaultBackend, server?: ServerFaults): Promise<RunReport> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-locklog-'))
  scope.defer(() => rmSync(dir, { recursive: true, force: true }))
  const logPath = join(dir, 'log')
  const log = new AppendLog(logPath)
  scope.defer(() => log.close())
  const url = withQuery(server?.url ?? b.config.url, `timeout=${LEASE_S}`)
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
  const died: string[] = []
  let ending = false
  const add = async (): Promise<void> => {
    const child = await spawnContender(spec())
    live.add(child)
    let stderr = ''
    child.stderr!.on('data', (d: string) => (stderr = (stderr + d).slice(-1_000)))
    child.once('exit', (code, sig) => {
      live.delete(child)
      if (!ending && sig !== 'SIGKILL') died.push(`contender pid ${child.pid} exited by itself (${sig ?? code}): ${stderr.trim() || 'no stderr'}`)
    })
  }
  // Start them a few at a time: eight TypeScript processes at once take a while on two cores.
  for (let i = 0; i < CONTENDERS; i += 4) await Promise.all(Array.from({ length: Math.min(4, CONTENDERS - i) }, add))
  const endAt = Date.now() + SECONDS * 1000
  const respawns: Promise<void>[] = []
  let kills = 0
  for (let tick = 0; Date.now() < endAt; tick++) {
    await sleep(1_000 + Math.random() * 1_000)
    if (Date.now() >= endAt) break
    if (server && tick % 2 === 1) {
      // Contenders still starting must be connected first: one that cannot connect exits.
      await Promise.all(respawns)
      await server.fault()
      server.faults += 1
      continue
    }
    const lines = readLog(logPath)
    const pick = Math.random()
    const target = pick < 0.5 ? current(lines, 'enter', ['exit', 'lost']) : pick < 0.75 ? current(lines, 'lead', ['unlead']) : undefined
    const victims = [...live]
    const victim = victims.find((c) => c.pid === target) ?? victims[Math.floor(Math.random() * victims.length)]
    if (!victim) continue
    // The victim is frozen before the kill line is written, so no line of its can follow that line (a victim still
    // running there could release, take the lock again and log it, and then die holding what the log says it never
    // took back); from the kill line on it may be dead.
    await stopChild(victim)
    log.write('kill', victim.pid!)
    await killChild(victim)
    kills += 1
    respawns.push(add())
  }
  await Promise.all(respawns)
  ending = true
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
    died,
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

function outcome(report: CheckReport, kills: number, died: readonly string[]): RunOutcome {
  // A contender that died by itself left its hold unended in the log: say so first, it explains any "violation" after it.
  if (died.length > 0) throw new Error(`${died.join(' | ')}; ${report.violations.length} violation(s): ${report.violations.slice(0, 5).join(' | ')}`)
  if (report.violations.length > 0) throw new Error(`${report.violations.length} violation(s): ${report.violations.slice(0, 5).join(' | ')}`)
  if (report.holds < 2) throw new Error(`only ${report.holds} holds in the run: too little contention to check anything`)
  return {
    ms: report.worstTakeoverAfterKillMs,
    counts: { holds: report.holds, 'holders killed while holding': report.killedInside, 'holds ended by a loss report': report.lostInside, 'SIGKILLs': kills },
  }
}

/**
 * A private server behind a proxy, hurt as well as the contenders: odd ticks alternately SIGKILL +
 * restart the server and cut every connection for half a second (wake-up subscribers and watches
 * included: releases announced meanwhile are lost). Waiters must get through by polling or by
 * reading the queue again, never stick. The server keeps its data across the restart (Redis: every
 * write fsynced; etcd: its WAL), so that the locks, their waiter queues and the fencing counters
 * survive, and exclusion is owed across it.
 */
async function serverFaults(scope: Scope, start: () => Promise<PrivateServer>): Promise<ServerFaults> {
  const server = await start()
  scope.defer(() => server.stop())
  const proxy = await TcpProxy.start(server.port)
  scope.defer(() => proxy.close())
  let next = 0
  return {
    url: server.url.replace(`:${server.port}`, `:${proxy.port}`),
    faults: 0,
    async fault() {
      if (next++ % 2 === 0) {
        await server.restart()
      } else {
        proxy.cut()
        await sleep(500)
        proxy.restore()
      }
    },
  }
}

/** The backends whose lock waiters have a wake-up path that a server fault can break, and their private servers. */
const WAKE_UPS: { backend: string; how: string; start: () => Promise<PrivateServer> }[] = [
  { backend: 'redis', how: 'a private Redis (appendfsync always)', start: () => startRedis({ fsyncEveryWrite: true }) },
  { backend: 'etcd3', how: 'a private etcd', start: startEtcd },
]

describe('fault: lock and leadership safety', { concurrency: 2 }, () => {
  for (const { backend, how, start } of WAKE_UPS) {
    const b = backends.find((x) => x.name === backend)
    if (!b) continue
    it(
      `${backend}: fault: ${CONTENDERS} processes contend on one lock for ${SECONDS} s through server restarts, cuts and SIGKILLs; no overlap; none stuck`,
      {
        timeout: testTimeout(SECONDS * 1000 + 180_000, RUNS),
      },
      async (t) => {
        await repeat(t, {
          writer,
          scenario: `lock.safety.${backend}-server-faults`,
          backend,
          runs: RUNS,
          runTimeoutMs: SECONDS * 1000 + 180_000,
          title: `${CONTENDERS} processes take one lock in turn for ${SECONDS} s on ${how} behind a proxy; every 1-2 s either a `
            + `contender is SIGKILLed or the server is hurt (all connections cut for 0.5 s, or SIGKILL + restart), so wake-ups are lost and `
            + `subscribers and watches reconnect. No overlapping holds, strictly increasing fencing tokens, and the lock keeps changing hands.`,
          measure: 'holder SIGKILLed → next holder enters',
        }, async (scope) => {
          const faults = await serverFaults(scope, start)
          const r = await contention(scope, b, faults)
          const out = outcome(r.lock!, r.kills, r.died)
          // Holds after the last fault show that no waiter was left stuck by a lost wake-up.
          if (r.lock!.holds < 4 * (faults.faults + 1)) throw new Error(`only ${r.lock!.holds} holds around ${faults.faults} server faults: waiters got stuck`)
          return { ...out, counts: { ...out.counts, 'server faults': faults.faults } }
        })
      },
    )
  }

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
        return outcome(r.lock!, r.kills, r.died)
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
        return outcome(r.leader, r.kills, r.died)
      })
    })
  }
})
