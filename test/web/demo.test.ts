/**
 * `rollcall demo` (what `npm start` runs), from dist/, for a bounded time: it must show, through
 * its own JSON API, the services it started; play its script (SIGKILL → down after the backend
 * timeout, SIGTERM → down at once, restart → up); and clean up after itself (children, temp dir).
 * Once on the embedded default (SQLite + file://), once against the real Redis.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'
import { serverUrl } from '../support/backends.js'
import { waitFor } from '../support/wait.js'
import { call, cli, type CliProcess, WEB_TIMING } from './support.js'

interface DemoEvent {
  t: number
  event: string
  [k: string]: unknown
}

function events(stdout: string): DemoEvent[] {
  return stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as DemoEvent)
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
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
    const demo = cli(t, ['demo', '--listen', '127.0.0.1:0', '--duration', '100', '--json'])
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
    const demo = cli(t, [
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

  it('web: demo: bad options are usage errors', async (t) => {
    const bad = cli(t, ['demo', '--listen', 'nowhere'])
    assert.equal((await bad.exited).code, 2)
    assert.match(bad.stderr(), /--listen takes HOST:PORT/)
    const dur = cli(t, ['demo', '--duration', '-1'])
    assert.equal((await dur.exited).code, 2)
  })
})
