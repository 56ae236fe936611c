/**
 * Exit status 9 means one thing: the lock was really lost while COMMAND ran. Two real losses, each
 * through the built binary against a real Redis: the lock broken on the backend by another client
 * (as an operator would with tooz's break_), and the backend session cut (behind the
 * fault-injecting proxy) for longer than the lock's timeout. In both, COMMAND is stopped with
 * SIGTERM and the message says the lock was lost.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, it } from 'node:test'
import { connect } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { rid, waitFor } from '../support/wait.js'

const BIN = resolve('dist/cli/bin.js')

/** Lock and membership timeout of the CLI's URL, in seconds: a loss is noticed within about this. */
const TIMEOUT_SECONDS = 2

/** `rollcall lock NAME --url URL -- COMMAND` running a command that says it holds, then sleeps 60 s. */
function holdLock(url: string, name: string): Promise<{ code: number | null; stdout: string; stderr: string; elapsedMs: number }> & { output: () => string } {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
  const child = spawn(process.execPath, [BIN, 'lock', name, '--url', url, '--', 'sh', '-c', 'echo holding; exec sleep 60'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let holdingAt = 0
  child.stdout.on('data', (d) => {
    stdout += d
    if (!holdingAt && stdout.includes('holding')) holdingAt = Date.now()
  })
  child.stderr.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
  const done = new Promise<{ code: number | null; stdout: string; stderr: string; elapsedMs: number }>((ok) =>
    child.on('exit', (code) => {
      clearTimeout(timer)
      ok({ code, stdout, stderr, elapsedMs: Date.now() - holdingAt })
    })
  )
  return Object.assign(done, { output: () => stdout })
}

/** `url` with a short lock and membership timeout, so that a loss is noticed in seconds. */
function withTimeout(url: string): string {
  const u = new URL(url)
  u.searchParams.set('timeout', String(TIMEOUT_SECONDS))
  return u.toString()
}

describe('cli: a lost lock gives status 9', () => {
  it('cli: lock broken on the backend by another client: COMMAND is stopped, status 9', async () => {
    const url = withTimeout(serverUrl('redis'))
    const name = rid('cli-lost')
    const holder = holdLock(url, name)
    await waitFor('the command to run under the lock', () => holder.output().includes('holding'), 30_000, 50)
    const other = await connect(url)
    try {
      assert.equal(await other.getLock(name).break(), true, 'the lock was held')
    } finally {
      await other.stop()
    }
    const r = await holder
    assert.equal(r.code, 9, r.stderr)
    assert.match(r.stderr, new RegExp(`lock ${name} was lost; stopping the command`))
    // Far less than the command's 60 s sleep: it was stopped, not waited for.
    assert.ok(r.elapsedMs < 30_000, `took ${r.elapsedMs} ms`)
  })

  it('cli: backend session cut for longer than the lock timeout: COMMAND is stopped, status 9', async () => {
    const redis = new URL(serverUrl('redis'))
    const proxy = await TcpProxy.start(Number(redis.port))
    try {
      redis.port = String(proxy.port)
      const name = rid('cli-lost')
      const holder = holdLock(withTimeout(redis.toString()), name)
      await waitFor('the command to run under the lock', () => holder.output().includes('holding'), 30_000, 50)
      proxy.cut()
      const r = await holder
      assert.equal(r.code, 9, r.stderr)
      assert.match(r.stderr, new RegExp(`lock ${name} was lost; stopping the command`))
      assert.ok(r.elapsedMs < 30_000, `took ${r.elapsedMs} ms`)
      // The loss was real: the key expires on the server (within the lock timeout), and another
      // client takes the lock.
      const other = await connect(withTimeout(serverUrl('redis')))
      try {
        const lock = other.getLock(name)
        assert.equal(await lock.acquire({ timeoutMs: 10_000 }), true)
        await lock.release()
      } finally {
        await other.stop()
      }
    } finally {
      await proxy.close()
    }
  })
})
