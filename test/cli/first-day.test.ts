/**
 * First-day messages (issue 26) as a CLI user meets them: the built binary, a real Redis. An error
 * names commands, not library calls; a misspelt URL option gets the suggestion the same typo gets
 * in code; a wrong value is described in plain English; connect() takes a URL object.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { rid } from '../support/wait.js'

const BIN = 'dist/cli/bin.js'
const url = serverUrl('redis')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

function run(args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ROLLCALL_URL: url, ROLLCALL_CONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  )
}

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
