/**
 * Safe at the edges (issue 11), as a user meets them: the built CLI, its output read through a
 * real pipe, real Redis. Output survives a pipe; credentials of any shape stay hidden; malformed
 * numbers, files and keys fail fast with a typed error and the invalid-input exit status (8).
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { loadConfig, openServiceGroup } from '../../src/servicegroup/index.js'
import { serverUrl } from '../support/backends.js'
import { rid } from '../support/wait.js'

const BIN = 'dist/cli/bin.js'
const redis = serverUrl('redis')

interface Run {
  code: number | null
  stdout: string
  stderr: string
  ms: number
}

/** Runs the CLI with stdout and stderr as pipes, as `rollcall ... | jq` does. */
function run(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000): Promise<Run> {
  return collect(
    spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ROLLCALL_URL: redis, ROLLCALL_CONFIG: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
    timeoutMs,
  )
}

/**
 * Runs `rollcall ARGS | { sleep S; cat; }` in bash: stdout is a kernel pipe (64 KiB, where Node's
 * own stdio pipes are socket pairs that hold more) read by a consumer that starts late, as a busy
 * `jq` does. The status is the CLI's own (PIPESTATUS), the output what came out of the pipe.
 */
function runPiped(args: string[], readerDelaySeconds: number, timeoutMs = 60_000): Promise<Run> {
  const script = `"$@" | { sleep ${readerDelaySeconds}; cat; }; exit "\${PIPESTATUS[0]}"`
  return collect(
    spawn('bash', ['-c', script, 'bash', process.execPath, BIN, ...args], { env: { ...process.env, ROLLCALL_CONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] }),
    timeoutMs,
  )
}

function collect(child: ChildProcess, timeoutMs: number): Promise<Run> {
  const t0 = performance.now()
  const out: Buffer[] = []
  let stderr = ''
  child.stdout!.on('data', (d: Buffer) => out.push(d))
  child.stderr!.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr, ms: performance.now() - t0 })
    })
  )
}

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-edges-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const SECRET_PARTS = ['Gh7', 'kP#2x', 'SECRET']

describe('cli: edges', { concurrency: 4 }, () => {
  it('cli: more than 1 MiB of JSON reaches the end of a pipe whole', { timeout: 120_000 }, async (t) => {
    const g = rid('big')
    const members: Coordinator[] = []
    t.after(() => Promise.all(members.map((c) => c.stop())))
    for (let i = 0; i < 4; i++) {
      const c = await connect(redis, { memberId: rid(`m${i}`) })
      members.push(c)
      if (i === 0) await c.joinGroupCreate(g, { blob: 'x'.repeat(300_000), i })
      else await c.joinGroup(g, { blob: 'y'.repeat(300_000), i })
    }
    const r = await run(['group', 'members', g, '--json'])
    assert.equal(r.code, 0, r.stderr)
    assert.ok(r.stdout.length > 1024 * 1024, `${r.stdout.length} bytes through the pipe`)
    const rows = JSON.parse(r.stdout) as { capabilities: { i: number } }[]
    assert.deepEqual(rows.map((row) => row.capabilities.i).sort(), [0, 1, 2, 3])
  })

  it('cli: service list --json of 600 services (over 64 KiB) reaches the end of a pipe whole', { timeout: 120_000 }, async (t) => {
    const dir = tempDir(t)
    const conf = join(dir, 'rollcall.conf')
    writeFileSync(conf, `[database]\nconnection = sqlite:///${join(dir, 'catalog.sqlite')}\n`)
    const sg = await openServiceGroup((await loadConfig({ file: conf, env: {} })).config)
    try {
      for (let i = 0; i < 600; i++) {
        await sg.register({ host: `compute-${String(i).padStart(4, '0')}.rack-${i % 40}.example.org`, binary: 'nova-compute', topic: 'compute' })
      }
    } finally {
      await sg.close({ leave: false })
    }
    // A reader that starts 2 s late: the CLI must wait for it, not exit with the rest unwritten.
    const r = await runPiped(['service', 'list', '--json', '--config', conf], 2)
    assert.equal(r.code, 0, r.stderr)
    t.diagnostic(`${r.stdout.length} bytes of JSON through the pipe`)
    // It was cut at 65,536 bytes (the pipe's buffer) with exit status 0.
    assert.ok(r.stdout.length > 64 * 1024, `${r.stdout.length} bytes through the pipe`)
    const rows = JSON.parse(r.stdout) as { host: string }[]
    assert.equal(rows.length, 600)
    assert.equal(new Set(rows.map((row) => row.host)).size, 600)
  })

  it('cli: ROLLCALL_URL with a raw "/", "#" or a "::" typo: exit 8, the password never printed', async () => {
    for (const url of ['redis://:Gh7/kP#2x@127.0.0.1:6379', 'redis::SECRET@127.0.0.1:6379', 'redis://u:Gh7?kP#2x@127.0.0.1']) {
      const r = await run(['group', 'list'], { ROLLCALL_URL: url })
      assert.equal(r.code, 8, `${url}: ${r.stderr}`)
      for (const part of SECRET_PARTS) assert.ok(!r.stderr.includes(part) && !r.stdout.includes(part), `${url} printed ${part}: ${r.stderr}`)
      assert.match(r.stderr, /127\.0\.0\.1/, 'the host is named')
    }
  })

  it('cli: durations that are not finite or past the timer limit: exit 8 naming the limit, no crash', async () => {
    for (const value of ['1e309', '2200000']) {
      const r = await run(['group', 'list'], { ROLLCALL_URL: `${redis}?timeout=${value}` })
      assert.equal(r.code, 8, r.stderr)
      assert.match(r.stderr, /timeout/)
      assert.doesNotMatch(r.stderr, /RangeError|unexpected error/)
    }
    const lock = await run(['lock', rid('l'), '--timeout', '1e309', '--', 'true'])
    assert.equal(lock.code, 2, lock.stderr)
    assert.match(lock.stderr, /2147483\.647/)
  })

  it('cli: [database] connection and servicegroup_tooz_url with a raw "/" or "#" in the password: exit 8, never printed', async (t) => {
    const dir = tempDir(t)
    const cases = [
      '[database]\nconnection = postgresql://nova:Gh7/kP#2x@127.0.0.1/nova\n',
      '[database]\nconnection = mysql://nova:Gh7?kP#2x@127.0.0.1/nova\n',
      '[DEFAULT]\nservicegroup_driver = tooz\nservicegroup_tooz_url = redis://:Gh7/kP#2x@127.0.0.1:6379\n',
      '[DEFAULT]\nservicegroup_driver = tooz\nservicegroup_tooz_url = redis::SECRET@127.0.0.1:6379\n',
    ]
    for (const [i, text] of cases.entries()) {
      const file = join(dir, `c${i}.conf`)
      writeFileSync(file, text)
      const r = await run(['service', 'list', '--config', file])
      assert.equal(r.code, 8, `${text}: ${r.stderr}`)
      for (const part of SECRET_PARTS) assert.ok(!r.stderr.includes(part), `${text} printed ${part}: ${r.stderr}`)
    }
  })

  it('cli: a configuration file that is a device, a FIFO, a directory or over 1 MiB is refused at once', async (t) => {
    const dir = tempDir(t)
    const fifo = join(dir, 'fifo.conf')
    execFileSync('mkfifo', [fifo])
    const big = join(dir, 'big.conf')
    writeFileSync(big, `[DEFAULT]\n# ${'x'.repeat(1024 * 1024)}\n`)
    mkdirSync(join(dir, 'dir.conf'))
    for (const file of ['/dev/zero', '/dev/urandom', fifo, join(dir, 'dir.conf'), big]) {
      const r = await run(['service', 'list', '--config', file], {}, 60_000)
      assert.equal(r.code, 8, `${file}: ${r.stderr}`)
      assert.match(r.stderr, /not a regular file|larger than 1048576 bytes/, file)
      // Well under a second when idle (a stat, no read); it never returned before (killed at 60 s).
      assert.ok(r.ms < 30_000, `${file} took ${Math.round(r.ms)} ms`)
    }
  })

  it('cli: a 1 MB unknown key in a known section costs nothing', async (t) => {
    const dir = tempDir(t)
    const file = join(dir, 'rollcall.conf')
    writeFileSync(file, `[DEFAULT]\n${'k'.repeat(1_000_000)} = 1\nreport_intervall = 10\n`)
    const small = join(dir, 'small.conf')
    writeFileSync(small, `[DEFAULT]\nreport_intervall = 10\n`)
    // The same command on a small file first: what the key costs is the difference, whatever the load.
    const baseline = await run(['service', 'list', '--config', small], {}, 60_000)
    assert.equal(baseline.code, 0, baseline.stderr)
    const r = await run(['service', 'list', '--config', file], {}, 60_000)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /report_intervall is ignored; did you mean report_interval\?/, 'short keys still get a suggestion')
    // Well under a second more on an idle machine; over 30 s more before suggestions were limited to near-length keys.
    assert.ok(r.ms - baseline.ms < 10_000, `took ${Math.round(r.ms)} ms against ${Math.round(baseline.ms)} ms for a small file`)
  })

  it('cli: serve refuses a token that cannot be sent in a header, without printing it', async () => {
    const r = await run(['serve', '--listen', '127.0.0.1:0'], { ROLLCALL_API_TOKEN: 'tok with Zq9 space' }, 20_000)
    assert.equal(r.code, 8, r.stderr)
    assert.match(r.stderr, /\[api\] token.*visible ASCII without spaces/)
    assert.ok(!r.stderr.includes('Zq9'))
  })
})

/** Issue 28, item 7 and 8: what an operator's files hold and are called reaches the terminal only as it should. */
describe('cli: configuration files an operator provides', { concurrency: 4 }, () => {
  it('cli: a 1 MiB line of "a", spaces, then "x" is refused at once (exit 8, file and line named), not after 15 minutes of CPU', async (t) => {
    const file = join(tempDir(t), 'long.conf')
    writeFileSync(file, `[DEFAULT]\na${' '.repeat(1024 * 1024 - 20)}x\n`)
    const r = await run(['service', 'list', '--config', file], {}, 60_000)
    assert.equal(r.code, 8, `status ${r.code} after ${Math.round(r.ms)} ms: ${r.stderr.slice(0, 500)}`)
    assert.match(r.stderr, /long\.conf:2: it has no "=" or ":"/)
    assert.ok(r.stderr.length < 1000, `${r.stderr.length} characters of error`)
  })

  it('cli: a line without "=" is not echoed, and user:password@ in [memcache] servers or [zookeeper] address is never printed', async (t) => {
    const dir = tempDir(t)
    const cases = [
      '[api]\ntoken Sup3rS3cretTokenValue1234\n',
      '[DEFAULT]\nservicegroup_driver = mc\n[memcache]\nservers = 127.0.0.1:11211,nova:Sup3rS3cret@127.0.0.1:11212\n',
      '[DEFAULT]\nservicegroup_driver = mc\nmemcached_servers = nova:Sup3rS3cret@127.0.0.1:11211\n',
      '[DEFAULT]\nservicegroup_driver = zk\n[zookeeper]\naddress = nova:Sup3rS3cret@127.0.0.1:2181\n',
      '[DEFAULT]\nservicegroup_driver = zk\n[zookeeper]\naddress = 127.0.0.1:2181,\n  Sup3rS3cret@127.0.0.1\n',
    ]
    for (const [i, text] of cases.entries()) {
      const file = join(dir, `c${i}.conf`)
      writeFileSync(file, text)
      const r = await run(['service', 'list', '--config', file])
      assert.equal(r.code, 8, `${text}: ${r.stderr}`)
      assert.ok(r.stderr.includes(`c${i}.conf:`), `${text}: ${r.stderr}`)
      assert.ok(!r.stderr.includes('Sup3rS3cret'), `${text} printed the secret: ${r.stderr}`)
      if (i > 0) assert.match(r.stderr, /"[^"]*\*\*\*@127\.0\.0\.1[^"]*" has a user name or password before "@"/, r.stderr)
    }
  })

  it('cli: --config-dir file names reach the terminal with control characters escaped', async (t) => {
    const dir = tempDir(t)
    const name = 'e\x1b[31mvil\x9b2J\u202e.conf'
    const shown = 'e\\u001b[31mvil\\u009b2J\\u202e.conf'
    // A warning (a misspelt key) names the file...
    writeFileSync(join(dir, name), `[database]\nconnection = sqlite:///${join(dir, 'c.sqlite')}\n[DEFAULT]\nreport_intervall = 5\n`)
    const warned = await run(['service', 'list', '--config-dir', dir])
    assert.equal(warned.code, 0, warned.stderr)
    assert.ok(warned.stderr.includes(`${shown}:4: unknown setting [DEFAULT] report_intervall`), warned.stderr)
    // ...and so does an error.
    writeFileSync(join(dir, name), '[DEFAULT]\nservice_down_time = soon\n')
    const refused = await run(['service', 'list', '--config-dir', dir])
    assert.equal(refused.code, 8, refused.stderr)
    assert.ok(refused.stderr.includes(`(from ${join(dir, shown)}:2)`), refused.stderr)
    for (const r of [warned, refused]) assert.doesNotMatch(r.stderr, /[\x1b\x9b\u202e]/)
  })

  it('cli: --config-dir given twice reads both directories in order, later ones overriding earlier ones key by key (as oslo.config does)', async (t) => {
    const dir = tempDir(t)
    const [d1, d2] = [join(dir, 'one'), join(dir, 'two')]
    mkdirSync(d1)
    mkdirSync(d2)
    writeFileSync(
      join(d1, 'a.conf'),
      `[database]\nconnection = sqlite:///${join(dir, 'c.sqlite')}\n[DEFAULT]\nservice_down_time = later\nreport_intervall = 1\n`,
    )
    writeFileSync(join(d2, 'b.conf'), '[DEFAULT]\nservice_down_time = 60\nservice_down_tme = 1\n')
    const both = await run(['service', 'list', '--config-dir', d1, '--config-dir', d2])
    assert.equal(both.code, 0, both.stderr)
    // Both were read: each file's misspelt key is reported; two's service_down_time replaced one's.
    assert.match(both.stderr, /one\/a\.conf:5: unknown setting \[DEFAULT\] report_intervall/)
    assert.match(both.stderr, /two\/b\.conf:3: unknown setting \[DEFAULT\] service_down_tme/)
    const reversed = await run(['service', 'list', '--config-dir', d2, '--config-dir', d1])
    assert.equal(reversed.code, 8, reversed.stderr)
    assert.match(reversed.stderr, /Invalid \[DEFAULT\] service_down_time = "later" \(from .*one\/a\.conf:4\)/)
  })
})
