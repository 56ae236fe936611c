/**
 * The CLI behaves like the tools it stands beside (flock, etcdctl, sh): exit statuses of a
 * COMMAND, not-found statuses, help for command groups, Ctrl-C, and bounded waits. The built
 * binary, a real Redis. First-day messages (issue 26): an error names commands, not library calls;
 * a misspelt URL option gets the suggestion the same typo gets in code; a wrong value is described
 * in plain English; connect() takes a URL object.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
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
  options: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Run> & { child: ReturnType<typeof spawn>; output: () => string; errors: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ROLLCALL_URL: url, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] })
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

describe('cli: conventions', { concurrency: 4 }, () => {
  it('cli: a command killed by a signal gives 128+N; only a real loss gives 9', async () => {
    const term = await run(['lock', rid('cli-l'), '--', 'sh', '-c', 'kill -TERM $$'])
    assert.equal(term.code, 143)
    assert.doesNotMatch(term.stderr, /lost/)
    const kill = await run(['elect', rid('cli-e'), '--', 'sh', '-c', 'kill -KILL $$'])
    assert.equal(kill.code, 137)
  })

  it('cli: a command that cannot run gives 127 (not found) or 126 (not executable)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-cli-'))
    const notExec = join(dir, 'script.sh')
    writeFileSync(notExec, '#!/bin/sh\necho hi\n')
    chmodSync(notExec, 0o644)
    const missing = await run(['lock', rid('cli-l'), '--', join(dir, 'no-such-command')])
    assert.equal(missing.code, 127)
    assert.match(missing.stderr, /cannot run .*no-such-command.*not found/)
    const denied = await run(['lock', rid('cli-l'), '--', notExec])
    assert.equal(denied.code, 126)
    assert.match(denied.stderr, /permission denied/)
  })

  it('cli: a command without "--" is told where the "--" goes', async () => {
    const name = rid('cli-l')
    const r = await run(['lock', name, 'echo', 'hi'])
    assert.equal(r.code, 2)
    assert.ok(r.stderr.includes(`rollcall lock ${name} -- echo hi`), r.stderr)
  })

  it('cli: "waiting for lock" only while actually waiting', async () => {
    const name = rid('cli-l')
    const free = await run(['lock', name, '--', 'true'])
    assert.equal(free.code, 0)
    assert.doesNotMatch(free.stderr, /waiting/)
    const holder = run(['lock', name, '--', 'sh', '-c', 'echo holding; exec sleep 60'])
    await waitFor('the holder to start', () => holder.output().includes('holding'), 30_000, 50)
    const waiter = run(['lock', name, '--timeout', '60', '--', 'echo', 'acquired'])
    await waitFor('the waiter to say it waits', () => /waiting for lock/.test(waiter.errors()), 30_000, 50)
    holder.child.kill('SIGTERM')
    assert.equal((await holder).code, 143)
    const w = await waiter
    assert.equal(w.code, 0)
    assert.equal(w.stdout.trim(), 'acquired')
  })

  it('cli: leader of a missing group is "not found" (3); --json prints the documented object', async () => {
    const missing = await run(['leader', rid('cli-g')])
    assert.equal(missing.code, 3)
    assert.match(missing.stderr, /does not exist/)
    const g = rid('cli-g')
    assert.equal((await run(['group', 'create', g])).code, 0)
    assert.deepEqual(JSON.parse((await run(['leader', g, '--json'])).stdout), { group: g, leader: null })
  })

  it('cli: elect runs COMMAND while leader, one leader at a time, and passes its status on', async () => {
    const g = rid('cli-e')
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-elect-'))
    const log = join(dir, 'log')
    const body = `echo start-$0 >> ${log}; sleep 1; echo end-$0 >> ${log}; exit 4`
    const a = run(['elect', g, '--member', 'a', '--', 'sh', '-c', body, 'a'])
    const b = run(['elect', g, '--member', 'b', '--', 'sh', '-c', body, 'b'])
    const [ra, rb] = await Promise.all([a, b])
    assert.equal(ra.code, 4)
    assert.equal(rb.code, 4)
    const { readFileSync } = await import('node:fs')
    const lines = readFileSync(log, 'utf8').trim().split('\n')
    assert.equal(lines.length, 4)
    // Never two leaders at once: each start is followed by its own end.
    assert.equal(lines[0]!.slice(6), lines[1]!.slice(4))
    assert.equal(lines[2]!.slice(6), lines[3]!.slice(4))
    assert.match(ra.stdout + rb.stdout, /^a$/m, 'the elected member id is printed')
  })

  it("cli: group --help and service --help list their commands; a command's --help lists its options", async () => {
    for (const word of ['group', 'service']) {
      const r = await run([word, '--help'])
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`${word} list`))
    }
    const lock = await run(['lock', '--help'])
    assert.equal(lock.code, 0)
    assert.match(lock.stdout, /--timeout SECONDS/)
    assert.match(lock.stdout, /--dial-timeout SECONDS/)
  })

  it('cli: Ctrl-C gives 130 for watch and group join', async () => {
    const g = rid('cli-g')
    assert.equal((await run(['group', 'create', g])).code, 0)
    for (const args of [['watch', g], ['group', 'join', g]]) {
      const p = run(args)
      if (args[0] === 'watch') await new Promise((r) => setTimeout(r, 300))
      await waitFor(
        'the command to be connected',
        async () => {
          const members = await run(['group', 'members', g, '--json'])
          return args[0] === 'watch' ? true : members.code === 0 && (JSON.parse(members.stdout) as unknown[]).length > 0
        },
        30_000,
        200,
      )
      await new Promise((r) => setTimeout(r, args[0] === 'watch' ? 1500 : 0))
      p.child.kill('SIGINT')
      assert.equal((await p).code, 130, `${args.join(' ')}: ${p.errors()}`)
    }
  })

  it('cli: a server that accepts and never answers fails within --dial-timeout with status 7', async () => {
    const sockets: Socket[] = []
    const server = createServer((s) => sockets.push(s))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as { port: number }
    try {
      const started = Date.now()
      const r = await run(['group', 'list', '--url', `redis://127.0.0.1:${port}`, '--dial-timeout', '1'])
      const elapsedMs = Date.now() - started
      assert.equal(r.code, 7)
      assert.match(r.stderr, /no answer within 1 s \(--dial-timeout\)/)
      assert.ok(elapsedMs < 10_000, `took ${elapsedMs} ms`)
    } finally {
      sockets.forEach((s) => s.destroy())
      server.close()
    }
  })
})

describe('cli: first-day messages', { concurrency: 4 }, () => {
  it('cli: a missing group names the commands that list and create groups, not a library call', async () => {
    const group = rid('nosuch')
    const r = await run(['leader', group])
    assert.equal(r.code, 3, r.stderr)
    assert.equal(
      r.stderr.trim(),
      `rollcall: Group "${group}" does not exist; rollcall group list shows the groups there are, rollcall group create ${group} creates it`,
    )
    assert.doesNotMatch(r.stderr, /joinGroupCreate/)
  })

  it('cli: a misspelt URL option gets the suggestion the same typo gets in code', async () => {
    for (
      const [typo, meant, inCode, meantInCode] of [
        ['membership_timout', 'membership_timeout', 'membershipTimout', 'membershipTimeoutMs'],
        ['watch_intervl', 'watch_interval', 'watchIntervl', 'watchIntervalMs'],
      ] as const
    ) {
      const r = await run(['leader', rid('g'), '--url', `${url}?${typo}=5`])
      assert.equal(r.code, 8, r.stderr)
      assert.match(r.stderr, new RegExp(`^rollcall: Unknown option "${typo}" in the redis URL \\(did you mean ${meant}\\?\\); known options: `))
      const err = await connect(url, { [inCode]: 5 } as object).then(() => undefined, (e: unknown) => e as Error)
      assert.match(String(err?.message), new RegExp(`^Unknown option "${inCode}" for the redis driver \\(did you mean ${meantInCode}\\?\\); known options: `))
    }
    // The other spelling, in the wrong place: a programmatic name in the URL, a URL key in code.
    const r = await run(['leader', rid('g'), '--url', `${url}?membershipTimeoutMs=5000`])
    assert.match(r.stderr, /\(did you mean membership_timeout\?\)/)
    const err = await connect(url, { membership_timeout: 5 } as object).then(() => undefined, (e: unknown) => e as Error)
    assert.match(String(err?.message), /\(did you mean membershipTimeoutMs\?\)/)
  })

  it('cli: a wrong option value is described in English ("an object", never "a object")', async () => {
    const err = await connect(url, { signal: {} } as object).then(() => undefined, (e: unknown) => e as Error)
    assert.match(String(err?.message), /must be an AbortSignal .*, not an object$/)
  })

  it('connect() takes a URL object as it takes the string', async () => {
    const c = await connect(new URL(`${url}?timeout=5`), { memberId: rid('m') })
    try {
      const g = rid('g')
      await c.joinGroupCreate(g)
      assert.deepEqual(await c.getMembers(g), [c.memberId])
    } finally {
      await c.stop()
    }
    const err = await connect(new URL(`${url}?membership_timout=5`)).then(() => undefined, (e: unknown) => e as Error)
    assert.match(String(err?.message), /did you mean membership_timeout\?/)
  })
})
