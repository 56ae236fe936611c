/**
 * `rollcall service ...` and `rollcall migrate check`, run as a user runs them (a process per
 * command), on SQLite, PostgreSQL and MariaDB catalogs and with the tooz and mc drivers.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { backend, serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { catalogUrl, type SqlBackend } from './support.js'

interface Run {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

type Env = Record<string, string>

function rollcall(args: string[], env: Env, timeoutMs = 90_000): Promise<Run> & { child: ReturnType<typeof spawn> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/bin.ts', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d) => (stdout += d))
  child.stderr!.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  const done = new Promise<Run>((resolve) =>
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  )
  return Object.assign(done, { child })
}

/** Settings of a fast catalog-backed configuration, as environment variables. */
function envFor(t: TestContext, kind: SqlBackend, extra: Env = {}): Env {
  const { url, tablePrefix } = catalogUrl(t, kind)
  return {
    ROLLCALL_CONFIG: '',
    ROLLCALL_DATABASE_CONNECTION: url,
    ROLLCALL_DATABASE_TABLE_PREFIX: tablePrefix,
    // Generous: each command is a process start, slow on a loaded machine; leaving is what makes a service down here.
    ROLLCALL_REPORT_INTERVAL: '1',
    ROLLCALL_SERVICE_DOWN_TIME: '30',
    ...extra,
  }
}

interface Row {
  id: number
  binary: string
  host: string
  zone: string | null
  status: string
  state: string
  updated_at: string | null
  disabled_reason: string | null
  forced_down: boolean
}

async function list(env: Env, ...args: string[]): Promise<Row[]> {
  const r = await rollcall(['service', 'list', '--json', ...args], env)
  assert.equal(r.code, 0, r.stderr)
  return JSON.parse(r.stdout) as Row[]
}

describe('cli: service commands', { concurrency: 4 }, () => {
  for (const kind of ['sqlite', 'postgresql', 'mysql'] as SqlBackend[]) {
    it(`cli-${kind}: service run, list (plain, --long, --json), disable, force-down, enable, show, delete`, { timeout: 240_000 }, async (t) => {
      const env = envFor(t, kind)
      const host = rid('node')
      const runner = rollcall(['service', 'run', '--binary', 'rollcall-worker', '--host', host, '--zone', 'az1'], env, 180_000)
      t.after(() => runner.child.kill('SIGKILL'))
      const [row] = await waitFor(
        'the service to be listed up',
        async () => {
          const up = (await list(env)).filter((r) => r.state === 'up')
          return up.length ? up : undefined
        },
        60_000,
        200,
      ).catch(async (err: Error) => {
        runner.child.kill('SIGKILL')
        throw new Error(`${err.message}; service run said: ${(await runner).stderr}`)
      })
      assert.deepEqual(Object.keys(row!), [
        'id',
        'binary',
        'host',
        'zone',
        'status',
        'state',
        'updated_at',
        'disabled_reason',
        'forced_down',
        'topic',
        'version',
        'report_count',
        'last_seen_up',
        'created_at',
      ])
      assert.deepEqual([row!.binary, row!.host, row!.zone, row!.status, row!.state, row!.disabled_reason, row!.forced_down], [
        'rollcall-worker',
        host,
        'az1',
        'enabled',
        'up',
        null,
        false,
      ])
      const plain = await rollcall(['service', 'list'], env)
      assert.match(plain.stdout, /^ID\s+Binary\s+Host\s+Zone\s+Status\s+State\s+Updated At\n/)
      assert.match(plain.stdout, new RegExp(`rollcall-worker\\s+${host}\\s+az1\\s+enabled\\s+up\\s+\\d{4}-`))
      const long = await rollcall(['service', 'list', '--long'], env)
      assert.match(long.stdout, /Updated At\s+Disabled Reason\s+Forced Down\n/)

      assert.equal((await rollcall(['service', 'disable', `${host}/rollcall-worker`, '--reason', 'kernel upgrade'], env)).code, 0)
      let [r] = await list(env)
      assert.deepEqual([r!.status, r!.state, r!.disabled_reason], ['disabled', 'up', 'kernel upgrade'])
      assert.equal((await rollcall(['service', 'force-down', String(row!.id)], env)).code, 0)
      ;[r] = await list(env)
      assert.deepEqual([r!.state, r!.forced_down], ['down', true])
      assert.equal((await rollcall(['service', 'force-down', String(row!.id), '--unset'], env)).code, 0)
      assert.equal((await rollcall(['service', 'enable', String(row!.id)], env)).code, 0)
      ;[r] = await list(env)
      assert.deepEqual([r!.status, r!.state, r!.forced_down, r!.disabled_reason], ['enabled', 'up', false, null])
      const show = await rollcall(['service', 'show', String(row!.id), '--json'], env)
      assert.equal((JSON.parse(show.stdout) as Row).host, host)

      runner.child.kill('SIGTERM')
      const ended = await runner
      assert.equal(ended.code, 0, ended.stderr)
      ;[r] = await list(env)
      assert.equal(r!.state, 'down', 'not down at once after SIGTERM')

      assert.equal((await rollcall(['service', 'delete', String(row!.id)], env)).code, 0)
      assert.deepEqual(await list(env), [])
      const missing = await rollcall(['service', 'show', String(row!.id)], env)
      assert.equal(missing.code, 3)
      assert.match(missing.stderr, /not found/)
    })
  }

  it('cli: service run -- COMMAND is up exactly while the command runs and exits with its status', { timeout: 180_000 }, async (t) => {
    const env = envFor(t, 'sqlite')
    const host = rid('node')
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-cli-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const stop = join(dir, 'stop')
    const script = `setInterval(() => require('node:fs').existsSync(${JSON.stringify(stop)}) && process.exit(3), 50)`
    const job = rollcall(['service', 'run', '--binary', 'job', '--host', host, '--', process.execPath, '-e', script], env)
    t.after(() => job.child.kill('SIGKILL'))
    await waitFor('up while the command runs', async () => (await list(env)).some((r) => r.host === host && r.state === 'up'), 60_000, 200)
    writeFileSync(stop, '')
    const done = await job
    assert.equal(done.code, 3, done.stderr)
    const [r] = await list(env)
    assert.equal(r!.state, 'down', 'still up after the command ended')
  })

  it("cli: service run forwards SIGTERM to its command and exits with the command's status", { timeout: 180_000 }, async (t) => {
    const env = envFor(t, 'sqlite')
    const host = rid('node')
    const script = 'process.on("SIGTERM", () => process.exit(42)); console.log("ready"); setInterval(() => {}, 1000)'
    const job = rollcall(['service', 'run', '--binary', 'job', '--host', host, '--', process.execPath, '-e', script], env)
    t.after(() => job.child.kill('SIGKILL'))
    let out = ''
    job.child.stdout!.on('data', (d) => (out += d))
    await waitFor('the command to start', () => out.includes('ready'), 60_000, 50)
    assert.ok((await list(env)).some((r) => r.host === host && r.state === 'up'))
    job.child.kill('SIGTERM')
    const done = await job
    assert.equal(done.code, 42, done.stderr)
    assert.match(done.stdout, /ready/)
  })

  it('cli: service list with the tooz driver (redis)', { timeout: 180_000 }, async (t) => {
    const env = envFor(t, 'sqlite', { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: `${backend('redis').fastUrl}&watch_interval=0.2` })
    const host = rid('node')
    const runner = rollcall(['service', 'run', '--binary', 'api', '--host', host], env)
    t.after(() => runner.child.kill('SIGKILL'))
    await waitFor('up under tooz', async () => (await list(env)).some((r) => r.host === host && r.state === 'up'), 60_000, 200)
    runner.child.kill('SIGTERM')
    assert.equal((await runner).code, 0)
    const [r] = await list(env)
    assert.equal(r!.state, 'down')
  })

  it('cli: configuration errors exit 8 naming the setting; bad usage exits 2', async (t) => {
    const env = envFor(t, 'sqlite')
    const bad = await rollcall(['service', 'list', '--set', 'report_interval=often'], env)
    assert.equal(bad.code, 8)
    assert.match(bad.stderr, /\[DEFAULT\] report_interval = "often" \(from the command line\)/)
    const tooz = await rollcall(['service', 'list'], {
      ...env,
      ROLLCALL_SERVICEGROUP_DRIVER: 'tooz',
      ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://u:hunter2@127.0.0.1:6379?timeuot=1',
    })
    assert.equal(tooz.code, 8)
    assert.doesNotMatch(tooz.stderr, /hunter2/)
    assert.equal((await rollcall(['service', 'run'], env)).code, 2)
    assert.equal((await rollcall(['service', 'show', 'nonsense'], env)).code, 2)
  })

  it('cli: migrate check exits 1 listing services up on mc but down on tooz, and 0 once both agree', { timeout: 240_000 }, async (t) => {
    const memcached = serverUrl('memcached').replace('memcached://', '')
    const toozUrl = `${backend('redis').fastUrl}&watch_interval=0.2`
    const env = envFor(t, 'sqlite', { ROLLCALL_MEMCACHE_SERVERS: memcached, ROLLCALL_SERVICEGROUP_TOOZ_URL: toozUrl, ROLLCALL_INITIAL_REPORT_DELAY: '0' })
    const host = rid('node')
    const topic = rid('topic')
    const old = rollcall(['service', 'run', '--binary', 'worker', '--host', host, '--topic', topic], { ...env, ROLLCALL_SERVICEGROUP_DRIVER: 'mc' })
    t.after(() => old.child.kill('SIGKILL'))
    await waitFor('the mc service', async () => (await list({ ...env, ROLLCALL_SERVICEGROUP_DRIVER: 'mc' })).some((r) => r.state === 'up'), 60_000, 200)
    const check = await rollcall(['migrate', 'check', '--from', 'mc', '--to', 'tooz', '--topic', topic], env)
    assert.equal(check.code, 1, check.stderr)
    assert.match(check.stdout, new RegExp(`worker\\s+${host}\\s+${topic}\\s+up\\s+down`))
    assert.match(check.stdout, /1 services checked; 1 disagree between mc and tooz/)
    // Restart it the migration way: tooz, still reporting to mc.
    old.child.kill('SIGTERM')
    await old
    const both = rollcall(['service', 'run', '--binary', 'worker', '--host', host, '--topic', topic], {
      ...env,
      ROLLCALL_SERVICEGROUP_DRIVER: 'tooz',
      ROLLCALL_REPORT_TO_PREVIOUS_DRIVER: 'mc',
    })
    t.after(() => both.child.kill('SIGKILL'))
    // Up on both first: until it has joined, both drivers agree that it is down (and a SIGTERM sent
    // before the CLI has loaded would kill it outright).
    for (const driver of ['tooz', 'mc']) {
      await waitFor(
        `the service up on ${driver}`,
        async () => (await list({ ...env, ROLLCALL_SERVICEGROUP_DRIVER: driver })).some((r) => r.state === 'up'),
        60_000,
        200,
      )
    }
    const agreed = await waitFor(
      'agreement',
      async () => {
        const r = await rollcall(['migrate', 'check', '--from', 'mc', '--to', 'tooz', '--topic', topic, '--json'], env)
        return r.code === 0 ? r : undefined
      },
      60_000,
      300,
    )
    assert.deepEqual(JSON.parse(agreed.stdout), { from: 'mc', to: 'tooz', checked: 1, disagreements: [] })
    both.child.kill('SIGTERM')
    assert.equal((await both).code, 0)
  })
})
