/**
 * A COMMAND run by `lock`, `elect` or `service run` lives no longer than rollcall (issue 26): it
 * runs in a process group of its own, and when rollcall dies, SIGKILL included, that whole group
 * (grandchildren too) is gone within a second: well before the lock or leadership expires and
 * another member is granted it. The built CLI, real Redis and SQLite; processes are read from /proc.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { GROUP_KILL_GRACE_MS } from '../../src/cli/child.js'
import { serverUrl } from '../support/backends.js'
import { descendants, processes } from '../support/processes.js'
import { rid, waitFor } from '../support/wait.js'

const BIN = resolve('dist/cli/bin.js')

/** What the issue allows between rollcall's death and its command's. */
const GONE_WITHIN_MS = 1000

/** Redis with a 2 s lock and leader expiry: a dead holder's lock or leadership passes on after about that. */
function redisUrl(): string {
  const u = new URL(serverUrl('redis'))
  u.searchParams.set('timeout', '2')
  return u.toString()
}

/** Those of `pids`, and the members of process group `pgid`, that still run (a zombie has exited). */
function alive(pids: readonly number[], pgid: number): number[] {
  const table = processes()
  const left = new Set(pids.filter((p) => table.has(p) && table.get(p)!.state !== 'Z'))
  for (const [p, info] of table) if (info.pgid === pgid && info.state !== 'Z') left.add(p)
  return [...left]
}

/** Polls every 10 ms until none of `pids` nor of group `pgid` runs; resolves to the time that took. */
async function goneAfterMs(pids: readonly number[], pgid: number, sinceMs: number, limitMs: number): Promise<number> {
  for (;;) {
    const left = alive(pids, pgid)
    const elapsedMs = performance.now() - sinceMs
    if (left.length === 0) return elapsedMs
    if (elapsedMs > limitMs) assert.fail(`after ${Math.round(elapsedMs)} ms, still running: ${left.join(', ')}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

interface Cli {
  child: ChildProcess
  exited: Promise<{ code: number | null; stderr: string }>
  stderr(): string
}

/** Starts the built CLI; the test ends it (SIGKILL) if it is still running at the end. */
function cli(t: TestContext, args: string[], env: NodeJS.ProcessEnv = {}): Cli {
  const clean: NodeJS.ProcessEnv = { ...process.env }
  for (const k of Object.keys(clean)) if (k.startsWith('ROLLCALL_')) delete clean[k]
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...clean, ROLLCALL_CONFIG: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stdout!.resume()
  child.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<{ code: number | null; stderr: string }>((ok) => child.on('exit', (code) => ok({ code, stderr })))
  t.after(() => void child.kill('SIGKILL'))
  return { child, exited, stderr: () => stderr }
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-supervise-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * A command that writes its pid to `pidFile`, starts a grandchild in the background and waits on
 * another: `sh -c 'sleep 300 & sleep 300'`. `prelude` runs first (e.g. `trap "" TERM`).
 */
function jobArgs(pidFile: string, prelude = ':'): string[] {
  return ['sh', '-c', `${prelude}; echo $$ > ${pidFile}; sleep 300 & sleep 300`]
}

/** Waits for the command of `rollcall` to run both its sleeps; returns its pid and every process rollcall started. */
async function running(rollcall: Cli, pidFile: string): Promise<{ commandPid: number; started: number[] }> {
  const commandPid = await waitFor(
    `the command to start (rollcall said: ${rollcall.stderr()})`,
    () => {
      if (!existsSync(pidFile)) return undefined
      const pid = Number(readFileSync(pidFile, 'utf8'))
      return descendants(pid).length >= 2 ? pid : undefined
    },
    60_000,
    20,
  )
  const started = descendants(rollcall.child.pid!)
  return { commandPid, started }
}

/**
 * SIGKILLs rollcall and asserts that its command's group is gone within a second, and the
 * watchdog soon after (it waits out the grace when exited members are not yet reaped); resolves
 * to the time the group took.
 */
async function killAndExpectGone(t: TestContext, rollcall: Cli, run: { commandPid: number; started: number[] }): Promise<number> {
  assert.equal(processes().get(run.commandPid)?.pgid, run.commandPid, 'the command leads a process group of its own')
  const group = [run.commandPid, ...descendants(run.commandPid)]
  const killedAt = performance.now()
  rollcall.child.kill('SIGKILL')
  const ms = await goneAfterMs(group, run.commandPid, killedAt, GONE_WITHIN_MS)
  const watchdogMs = await goneAfterMs(run.started, run.commandPid, killedAt, 30_000)
  t.diagnostic(`command group gone ${Math.round(ms)} ms after SIGKILL, the watchdog ${Math.round(watchdogMs)} ms`)
  return ms
}

describe('cli: a command lives no longer than rollcall', () => {
  it('cli: lock: SIGKILL of rollcall ends the command and its grandchildren within 1 s', async (t) => {
    const pidFile = join(tempDir(t), 'pid')
    const rollcall = cli(t, ['lock', rid('sup-lock'), '--url', redisUrl(), '--', ...jobArgs(pidFile)])
    await killAndExpectGone(t, rollcall, await running(rollcall, pidFile))
  })

  it('cli: elect: SIGKILL of rollcall ends the command and its grandchildren within 1 s', async (t) => {
    const pidFile = join(tempDir(t), 'pid')
    const rollcall = cli(t, ['elect', rid('sup-elect'), '--member', 'e1', '--url', redisUrl(), '--', ...jobArgs(pidFile)])
    await killAndExpectGone(t, rollcall, await running(rollcall, pidFile))
  })

  it('cli: service run: SIGKILL of rollcall ends the command and its grandchildren within 1 s', async (t) => {
    const dir = tempDir(t)
    const pidFile = join(dir, 'pid')
    const rollcall = cli(t, ['service', 'run', '--binary', 'job', '--host', rid('node'), '--', ...jobArgs(pidFile)], {
      ROLLCALL_DATABASE_CONNECTION: `sqlite:///${join(dir, 'catalog.sqlite')}`,
      ROLLCALL_REPORT_INTERVAL: '1',
    })
    await killAndExpectGone(t, rollcall, await running(rollcall, pidFile))
  })

  it('cli: a command that ignores SIGTERM is killed once the grace has passed, still within 1 s', async (t) => {
    const pidFile = join(tempDir(t), 'pid')
    const rollcall = cli(t, ['lock', rid('sup-lock'), '--url', redisUrl(), '--', ...jobArgs(pidFile, 'trap "" TERM')])
    const ms = await killAndExpectGone(t, rollcall, await running(rollcall, pidFile))
    // It outlived its SIGTERM: SIGKILL, sent after the grace, ended it.
    assert.ok(ms >= GROUP_KILL_GRACE_MS, `gone after ${Math.round(ms)} ms, before the ${GROUP_KILL_GRACE_MS} ms grace`)
  })

  it('cli: elect on two hosts: the second leader starts its command only after the dead first one is gone', { timeout: 120_000 }, async (t) => {
    const dir = tempDir(t)
    const group = rid('sup-sched')
    const url = redisUrl()
    const pidFile = join(dir, 'e1.pid')
    const e1 = cli(t, ['elect', group, '--member', 'e1', '--url', url, '--', ...jobArgs(pidFile)])
    const first = await running(e1, pidFile)
    const e2Started = join(dir, 'e2.started')
    const e2 = cli(t, [
      'elect',
      group,
      '--member',
      'e2',
      '--url',
      url,
      '--',
      'sh',
      '-c',
      `date +%s%3N > ${e2Started}.tmp && mv ${e2Started}.tmp ${e2Started}; exec sleep 300`,
    ])
    await waitFor('e2 to campaign', () => /campaigning/.test(e2.stderr()), 60_000, 50)
    assert.ok(!existsSync(e2Started), 'e2 ran its command while e1 led')
    await killAndExpectGone(t, e1, first)
    const goneAtMs = Date.now()
    await waitFor(`e2 to be elected (it said: ${e2.stderr()})`, () => existsSync(e2Started), 60_000, 20)
    const startedAtMs = Number(readFileSync(e2Started, 'utf8'))
    t.diagnostic(`e2's command started ${startedAtMs - goneAtMs} ms after e1's command group was seen gone`)
    assert.ok(startedAtMs >= goneAtMs, `e2's command started at ${startedAtMs}, e1's group was still seen running at ${goneAtMs}`)
  })

  it('cli: a normal exit leaves nothing behind: what the command left in its group, and the watchdog, are gone', async (t) => {
    const dir = tempDir(t)
    const pidFile = join(dir, 'pid')
    const go = join(dir, 'go')
    const body = `echo $$ > ${pidFile}; sleep 300 & sleep 300 & while [ ! -e ${go} ]; do sleep 0.05; done; exit 3`
    const rollcall = cli(t, ['lock', rid('sup-lock'), '--url', redisUrl(), '--', 'sh', '-c', body])
    const run = await running(rollcall, pidFile)
    writeFileSync(go, '')
    const { code, stderr } = await rollcall.exited
    assert.equal(code, 3, stderr)
    assert.deepEqual(alive(run.started, run.commandPid), [], 'left running after rollcall exited')
  })

  it('cli: Ctrl-C (SIGINT to rollcall) reaches the whole group: status 130, nothing left', async (t) => {
    const pidFile = join(tempDir(t), 'pid')
    const rollcall = cli(t, ['lock', rid('sup-lock'), '--url', redisUrl(), '--', ...jobArgs(pidFile)])
    const run = await running(rollcall, pidFile)
    const interruptedAt = performance.now()
    rollcall.child.kill('SIGINT')
    const { code, stderr } = await rollcall.exited
    const ms = performance.now() - interruptedAt
    assert.equal(code, 130, stderr)
    // The sleep sh waits for got SIGINT too (sh alone would wait out its 300 s), as from a terminal.
    assert.ok(ms < 60_000, `rollcall exited ${Math.round(ms)} ms after SIGINT`)
    assert.deepEqual(alive(run.started, run.commandPid), [], 'left running after rollcall exited')
  })

  it('cli: Ctrl-Z (SIGTSTP to rollcall) stops rollcall and the whole group; SIGCONT continues them', async (t) => {
    const pidFile = join(tempDir(t), 'pid')
    const rollcall = cli(t, ['lock', rid('sup-lock'), '--url', redisUrl(), '--', ...jobArgs(pidFile)])
    const run = await running(rollcall, pidFile)
    const states = (): string[] => {
      const table = processes()
      return [rollcall.child.pid!, run.commandPid, ...descendants(run.commandPid, table)].map((p) => table.get(p)?.state ?? '?')
    }
    rollcall.child.kill('SIGTSTP')
    await waitFor(`rollcall and its command to stop (states ${states().join(' ')})`, () => states().every((s) => s === 'T'), 30_000, 20)
    rollcall.child.kill('SIGCONT')
    await waitFor(`rollcall and its command to continue (states ${states().join(' ')})`, () => states().every((s) => s !== 'T'), 30_000, 20)
    rollcall.child.kill('SIGTERM')
    const { code, stderr } = await rollcall.exited
    assert.equal(code, 143, stderr)
    assert.deepEqual(alive(run.started, run.commandPid), [], 'left running after rollcall exited')
  })
})
