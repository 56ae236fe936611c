/** The coordination commands of the CLI, run as a user runs them: the built binary, a real Redis. */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'

const BIN = 'dist/cli/bin.js'
const url = serverUrl('redis')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function run(
  args: string[],
  options: { env?: Record<string, string>; timeoutMs?: number; stdin?: boolean } = {},
): Promise<Run> & { child: ReturnType<typeof spawn>; output: () => string; errors: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ROLLCALL_URL: url, ...options.env },
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (d) => (stdout += d))
  child.stderr!.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
  const done = new Promise<Run>((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  )
  return Object.assign(done, { child, output: () => stdout, errors: () => stderr })
}

describe('cli: coordination commands', { concurrency: 4 }, () => {
  it('cli: group create, list, members --json, delete', async () => {
    const g = rid('cli-g')
    assert.equal((await run(['group', 'create', g])).code, 0)
    const list = await run(['group', 'list', '--json'])
    assert.equal(list.code, 0)
    assert.ok((JSON.parse(list.stdout) as string[]).includes(g))
    const members = await run(['group', 'members', g, '--json'])
    assert.deepEqual(JSON.parse(members.stdout), [])
    assert.equal((await run(['group', 'create', g])).code, 4, 'exists → conflict status')
    assert.equal((await run(['group', 'delete', g])).code, 0)
    const missing = await run(['group', 'members', g])
    assert.equal(missing.code, 3)
    assert.match(missing.stderr, /does not exist/)
  })

  it('cli: group join --for stays joined with its capabilities, then leaves', async (t) => {
    const g = rid('cli-g')
    // Watched in-process: a CLI reader would spend seconds of the 3 s window starting up on a busy machine.
    const observer = await connect(url, { memberId: rid('observer') })
    t.after(() => observer.stop())
    const joiner = run(['group', 'join', g, '--create', '--member', 'worker-1', '--capabilities', '{"zone":"az1","n":2}', '--for', '3'])
    const seen = await waitFor(
      'the member to be listed',
      async () => {
        const members = await observer.getMembersWithCapabilities(g).catch(() => new Map<string, unknown>())
        return members.size ? [...members] : undefined
      },
      30_000,
      100,
    )
    assert.deepEqual(seen, [['worker-1', { zone: 'az1', n: 2 }]])
    assert.equal((await joiner).code, 0, 'leaves by itself after --for')
    assert.deepEqual(await observer.getMembers(g), [])
  })

  it('cli: group members --json lists members with their capabilities', async (t) => {
    const g = rid('cli-g')
    const member = await connect(url, { memberId: rid('worker') })
    t.after(() => member.stop())
    await member.joinGroupCreate(g, { zone: 'az2', n: 3 })
    const r = await run(['group', 'members', g, '--json'])
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), [{ member: member.memberId, capabilities: { zone: 'az2', n: 3 } }])
  })

  it('cli: watch prints join and leave events as JSON lines', async () => {
    const g = rid('cli-g')
    assert.equal((await run(['group', 'create', g])).code, 0)
    const watcher = run(['watch', g])
    // Not a fixed sleep: on a busy machine the watcher may take longer to start than any guess.
    await waitFor('the watch to be in place', () => watcher.errors().includes(`watching ${g}`), 30_000, 50)
    assert.equal((await run(['group', 'join', g, '--member', 'w-1', '--for', '1'])).code, 0)
    const lines = await waitFor(
      'joined and left lines',
      () => {
        const events = watcher.output().trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { event: string; member: string })
        return events.some((e) => e.event === 'left') ? events : undefined
      },
      30_000,
      100,
    )
    watcher.child.kill('SIGINT')
    assert.equal((await watcher).code, 130, 'Ctrl-C is 130, as everywhere')
    assert.deepEqual(lines.map((e) => [e.event, e.member]), [['joined', 'w-1'], ['left', 'w-1']])
  })

  it('cli: lock runs the command holding the lock; a second, non-blocking, fails with status 5', async () => {
    const name = rid('cli-l')
    // The holder runs until told: a busy machine may take seconds to start the second process.
    const holder = run(['lock', name, '--', 'sh', '-c', 'echo holding; read _; exit 7'], { stdin: true })
    await waitFor('the holder to start', () => holder.output().includes('holding'), 30_000, 50)
    const second = await run(['lock', name, '--nonblock', '--', 'true'])
    assert.equal(second.code, 5)
    assert.match(second.stderr, /held by someone else/)
    holder.child.stdin!.end('done\n')
    const first = await holder
    assert.equal(first.code, 7, "the command's exit status is ours")
    const third = await run(['lock', name, '--timeout', '5', '--', 'sh', '-c', 'echo again'])
    assert.equal(third.code, 0)
    assert.equal(third.stdout.trim(), 'again')
  })

  it('cli: leader shows (none), and null with --json', async () => {
    const g = rid('cli-g')
    await run(['group', 'create', g])
    assert.equal((await run(['leader', g])).stdout.trim(), '(none)')
    assert.deepEqual(JSON.parse((await run(['leader', g, '--json'])).stdout), { group: g, leader: null })
  })

  it('cli: bad input gets a clear message and its own status; passwords never printed', async () => {
    const unknown = await run(['group', 'frobnicate'])
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /unknown command/)
    const noArg = await run(['group', 'members'])
    assert.equal(noArg.code, 2)
    const badUrl = await run(['group', 'list', '--url', 'nope'])
    assert.equal(badUrl.code, 8)
    assert.match(badUrl.stderr, /not a backend URL/)
    const badOpt = await run(['group', 'list', '--url', 'redis://127.0.0.1:6379?colour=blue'])
    assert.equal(badOpt.code, 8)
    assert.match(badOpt.stderr, /Unknown option "colour".*known options/)
    const secret = await run(['group', 'list', '--url', 'redis://admin:s3cr3t-pw@127.0.0.1:1?socket_connect_timeout=1&timeout=1'])
    assert.equal(secret.code, 7)
    assert.doesNotMatch(secret.stderr + secret.stdout, /s3cr3t-pw/)
    assert.match(secret.stderr, /redis:\/\/\*\*\*@127\.0\.0\.1:1/, 'the user name is hidden with the password')
    const noUrl = await run(['group', 'list'], { env: { ROLLCALL_URL: '' } })
    assert.equal(noUrl.code, 2)
    assert.match(noUrl.stderr, /--url/)
  })
})
