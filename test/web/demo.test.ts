/**
 * `rollcall demo` (what `npm start` runs), from dist/, for a bounded time: it must show, through
 * its own JSON API, the services it started; play its script (SIGKILL → down after the backend
 * timeout, SIGTERM → down at once, restart → up); and clean up after itself (children, temp dir).
 * Once on the embedded default (SQLite + file://), once against the real Redis. SIGKILLed, the
 * demo leaves nothing running: its services are watched (src/cli/child.ts) and end with it.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { describe, it, type TestContext } from 'node:test'
import { serverUrl } from '../support/backends.js'
import { descendants } from '../support/processes.js'
import { waitFor } from '../support/wait.js'
import { call, cli, type CliProcess, WEB_TIMING } from './support.js'

/** How long the demo's services may outlive a SIGKILLed demo: its watchdogs end them within about 0.3 s; generous bound. */
const ORPHANS_GONE_MS = 5_000

/** How long a demo asked to stop (SIGTERM) has when a test ends: it gives its services 5 s, then SIGKILLs them. */
const CLEANUP_STOP_MS = 15_000

interface DemoEvent {
  t: number
  event: string
  [k: string]: unknown
}

function events(stdout: string): DemoEvent[] {
  return stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as DemoEvent)
}

/**
 * True while `pid` runs: process.kill(pid, 0) succeeds and it is not a zombie. A SIGKILLed demo's
 * children are reparented to PID 1, which in some containers never reaps them: exited, they stay
 * zombies, and kill(pid, 0) still succeeds on a zombie.
 */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return process.platform !== 'linux'
  }
}

/**
 * `rollcall demo ARGS`, cleaned up when the test ends, however it ends (a failure, a timeout):
 * asked to stop (SIGTERM: it stops its services, deletes its groups on a shared backend and
 * removes its directory), SIGKILLed only if it has not exited within CLEANUP_STOP_MS; then its
 * services must be gone (any left are SIGKILLed by PID, and the test fails: a leak) and its
 * directory is removed if still there.
 */
function startDemo(t: TestContext, args: string[]): CliProcess {
  let demo: CliProcess | undefined
  // Registered before cli()'s own cleanup (a SIGKILL), which runs after this one (hooks run in order).
  t.after(async () => {
    if (!demo) return
    const child = demo.child
    if (child.exitCode === null && child.signalCode === null) {
      const exit = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), CLEANUP_STOP_MS)
      await exit
      clearTimeout(timer)
    }
    const log = events(demo.stdout())
    const pids = log.filter((e) => e.event === 'started').map((e) => Number(e.pid))
    try {
      await waitFor("the demo's services to be gone after it", () => pids.every((p) => !alive(p)), ORPHANS_GONE_MS, 100)
    } catch (err) {
      for (const p of pids.filter(alive)) process.kill(p, 'SIGKILL')
      throw err
    } finally {
      const dir = log.find((e) => e.event === 'setup')?.dir
      if (typeof dir === 'string') rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
    }
  })
  demo = cli(t, args)
  return demo
}

async function servicesUp(url: string): Promise<{ topic: string; host: string; state: string }[] | undefined> {
  const r = await call(url, 'GET', '/v1/services')
  const rows = r.json?.services as { topic: string; host: string; state: string }[] | undefined
  return rows && rows.length === 5 && rows.every((s) => s.state === 'up') ? rows : undefined
}

/** Waits for the five services up; a timeout carries the demo's own log, which says which service did not come up and why. */
async function fiveUp(url: string, demo: CliProcess): Promise<{ topic: string; host: string; state: string }[]> {
  try {
    return await waitFor('the five demo services up', () => servicesUp(url), 30_000, 250)
  } catch (err) {
    throw new Error(`${(err as Error).message}; the demo's log: ${demo.stdout().slice(-3000)} ${demo.stderr().slice(-1000)}`)
  }
}

describe('web: demo', { concurrency: 2 }, () => {
  it('web: demo: on the embedded default it runs its services, plays its script, and cleans up on SIGTERM', { timeout: 120_000 }, async (t) => {
    const demo = startDemo(t, ['demo', '--listen', '127.0.0.1:0', '--duration', '100', '--json'])
    const url = await demo.url()
    const rows = await fiveUp(url, demo)
    assert.deepEqual(rows.map((r) => `${r.topic}/${r.host}`), ['api/node-1', 'api/node-2', 'worker/node-1', 'worker/node-2', 'worker/node-3'])
    const page = await call(url, 'GET', '/')
    assert.match(page.text, /rollcall demo/)
    const state = async (topic: string, host: string): Promise<string | undefined> =>
      ((await call(url, 'GET', `/v1/services?topic=${topic}&host=${host}`)).json.services[0] as { state: string } | undefined)?.state
    await waitFor('the SIGKILLed worker to be down', async () => (await state('worker', 'node-2')) === 'down', 25_000, 250)
    await waitFor('the SIGTERMed api server to be down', async () => (await state('api', 'node-2')) === 'down', 10_000, 250)
    await waitFor('the restarted worker to be up', async () => (await state('worker', 'node-2')) === 'up', 25_000, 250)
    demo.child.kill('SIGTERM')
    const exit = await demo.exited
    assert.equal(exit.code, 0, demo.stderr())
    const log = events(demo.stdout())
    const kinds = log.map((e) => e.event)
    for (const k of ['setup', 'started', 'listening', 'ready', 'killed', 'terminated', 'state', 'stopping']) {
      assert.ok(kinds.includes(k), `no ${k} event in ${kinds.join(',')}`)
    }
    const killed = log.find((e) => e.event === 'killed')!
    const termed = log.find((e) => e.event === 'terminated')!
    const downAfterKill = log.find((e) => e.event === 'state' && e.topic === 'worker' && e.host === 'node-2' && e.state === 'down')!
    const downAfterTerm = log.find((e) => e.event === 'state' && e.topic === 'api' && e.host === 'node-2' && e.state === 'down')!
    assert.ok(downAfterTerm.t - termed.t < 5, `SIGTERM: down ${downAfterTerm.t - termed.t} s later (leave: at once)`)
    assert.ok(downAfterKill.t - killed.t >= 1, `SIGKILL: down ${downAfterKill.t - killed.t} s later (the backend timeout, not at once)`)
    const dir = String(log.find((e) => e.event === 'setup')!.dir)
    assert.equal(existsSync(dir), false, `${dir} was removed`)
    const pids = log.filter((e) => e.event === 'started').map((e) => Number(e.pid))
    await waitFor('every demo child to be gone', () => pids.every((p) => !alive(p)), 10_000, 100)
  })

  it('web: demo: --url runs the same against a real Redis, and ends by itself after --duration', { timeout: 90_000 }, async (t) => {
    // A namespace of its own: /v1/groups lists every group under it, and the shared one holds those of every other test.
    const demo = startDemo(t, [
      'demo',
      '--url',
      `${serverUrl('redis')}?namespace=demo_${Math.random().toString(36).slice(2, 10)}`,
      '--listen',
      '127.0.0.1:0',
      '--duration',
      '30',
      '--json',
    ])
    const url = await demo.url()
    const rows = await fiveUp(url, demo)
    assert.ok(rows.every((r) => /^(api|worker)-demo-[a-z0-9]+$/.test(r.topic)), 'topics get a random suffix on a shared backend')
    const groups = (await call(url, 'GET', '/v1/groups')).json.groups as { group: string; members: unknown[] }[]
    const mine = groups.filter((g) => rows.some((r) => r.topic === g.group))
    assert.equal(mine.reduce((n, g) => n + g.members.length, 0), 5)
    const setup = events(demo.stdout()).find((e) => e.event === 'setup')!
    assert.match(String(setup.url), /^redis:\/\/127\.0\.0\.1:\d+\?namespace=demo_[a-z0-9]+&timeout=5$/)
    const exit = await demo.exited
    assert.equal(exit.code, 0, demo.stderr())
    assert.ok(events(demo.stdout()).some((e) => e.event === 'stopping'))
  })

  it('web: demo: SIGKILLed, it leaves nothing running: its services and their watchdogs end within 5 s', { timeout: 90_000 }, async (t) => {
    const demo = startDemo(t, ['demo', '--listen', '127.0.0.1:0', '--duration', '80', '--json'])
    const url = await demo.url()
    // Up: each runs as a service (joined, its signal handlers installed), not merely spawned.
    await fiveUp(url, demo)
    const started = events(demo.stdout()).filter((e) => e.event === 'started')
    assert.equal(started.length, 5, demo.stdout())
    const everything = descendants(demo.child.pid!)
    const exit = new Promise((resolve) => demo.child.once('exit', resolve))
    const killedAt = performance.now()
    demo.child.kill('SIGKILL')
    await exit
    // The services running when the demo died: all five, less any its script had SIGKILLed itself (6 s after they were up).
    const log = events(demo.stdout())
    const scripted = log.filter((e) => e.event === 'killed' || e.event === 'terminated')
    const pids = started.filter((s) => !scripted.some((k) => k.topic === s.topic && k.host === s.host)).map((s) => Number(s.pid))
    for (const p of pids) assert.ok(everything.includes(p), `service ${p} was running when the demo was killed`)
    assert.ok(everything.length > pids.length, `the services' watchdogs were running too: ${everything.join(', ')}`)
    await waitFor(`the demo's services (${pids.join(', ')}) and watchdogs to end`, () => everything.every((p) => !alive(p)), ORPHANS_GONE_MS, 20)
    t.diagnostic(
      `${pids.length} services and ${everything.length - pids.length} other processes gone ${Math.round(performance.now() - killedAt)} ms after SIGKILL`,
    )
  })

  it('web: demo: bad options are usage errors', async (t) => {
    const bad = cli(t, ['demo', '--listen', 'nowhere'])
    assert.equal((await bad.exited).code, 2)
    assert.match(bad.stderr(), /--listen takes HOST:PORT/)
    const dur = cli(t, ['demo', '--duration', '-1'])
    assert.equal((await dur.exited).code, 2)
  })
})
