/**
 * --command-timeout: a backend that answers the connect and then never answers a request costs
 * the command the timeout it was given, status 7, and a message naming the option; on a terminal,
 * a wait past a second says what it waits for. The built binary, a real Redis behind the
 * fault-injecting proxy, which stalls the one request the command makes (SMEMBERS, the group list).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'

const BIN = resolve('dist/cli/bin.js')

interface Run {
  code: number | null
  stdout: string
  stderr: string
  elapsedMs: number
}

/** Runs `argv` with no ROLLCALL_* in its environment, killing it after 60 s (a hang detector). */
function run(argv: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
  const started = Date.now()
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  return new Promise((done) =>
    child.on('exit', (code) => {
      clearTimeout(timer)
      done({ code, stdout, stderr, elapsedMs: Date.now() - started })
    })
  )
}

describe('cli: --command-timeout', () => {
  let proxy: TcpProxy
  let url: string

  before(async () => {
    const redis = new URL(serverUrl('redis'))
    proxy = await TcpProxy.start(Number(redis.port))
    proxy.stallOn('smembers')
    redis.port = String(proxy.port)
    url = redis.toString()
  })

  after(() => proxy.close())

  it('cli: a request the server never answers fails after --command-timeout with status 7, naming the option', async () => {
    // Connecting works through the proxy (only the request stalls), so this is not --dial-timeout.
    const r = await run([process.execPath, BIN, 'group', 'list', '--url', url, '--command-timeout', '1', '--dial-timeout', '30'])
    assert.equal(r.code, 7, r.stderr)
    assert.match(r.stderr, /did not answer within 1 s \(--command-timeout\)/)
    assert.doesNotMatch(r.stderr, /--dial-timeout/)
    // Generous bound: the 1 s timeout plus start-up and stop, far below the 30 s of no timeout.
    assert.ok(r.elapsedMs >= 1000 && r.elapsedMs < 15_000, `took ${r.elapsedMs} ms`)
    // Off a terminal the wait prints no progress line.
    assert.doesNotMatch(r.stderr, /waiting for/)
  })

  it('cli: on a terminal, a wait past 1 s shows what it waits for', async () => {
    // script(1) gives the CLI a pseudo-terminal, as an operator's shell would.
    const command = [process.execPath, BIN, 'group', 'list', '--url', url, '--command-timeout', '3'].map((a) => `'${a}'`).join(' ')
    const r = await run(['script', '-qec', command, '/dev/null'])
    assert.equal(r.code, 7, r.stdout)
    assert.match(r.stdout, /waiting for redis:\/\/127\.0\.0\.1:\d+ \(\d+ s\)/)
    assert.match(r.stdout, /did not answer within 3 s \(--command-timeout\)/)
  })
})
