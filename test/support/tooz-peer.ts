/**
 * A real Python tooz member (Debian's python3-tooz 3.1, run with /usr/bin/python3) for interop
 * tests: `const py = await ToozPeer.start(t, url, 'py-1'); await py.call('join_group', { group })`.
 * Operations are those of test/support/tooz-peer.py. Bytes travel as { __bytes__: hex }.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { TestContext } from 'node:test'

/** What tooz raised, when an operation failed. */
export class ToozPeerError extends Error {
  constructor(readonly toozError: string, message: string) {
    super(`${toozError}: ${message}`)
  }
}

/** A running Python tooz coordinator. */
export class ToozPeer {
  readonly #child: ChildProcessWithoutNullStreams
  readonly #replies: ((line: string) => void)[] = []
  #stderr = ''

  private constructor(child: ChildProcessWithoutNullStreams) {
    this.#child = child
    createInterface({ input: child.stdout }).on('line', (line) => this.#replies.shift()?.(line))
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (d: string) => (this.#stderr += d))
  }

  /** Starts a Python member; it is stopped when the test ends. */
  static async start(t: TestContext, url: string, memberId: string): Promise<ToozPeer> {
    const child = spawn('/usr/bin/python3', ['test/support/tooz-peer.py', url, memberId], { stdio: ['pipe', 'pipe', 'pipe'] })
    const peer = new ToozPeer(child)
    t.after(() => peer.stop())
    const ready = await peer.#next(20_000)
    if (!ready.ok) throw new Error(`tooz peer failed to start: ${JSON.stringify(ready)} ${peer.#stderr}`)
    return peer
  }

  /** Runs one tooz operation; rejects with ToozPeerError when tooz raised. */
  async call(op: string, args: Record<string, unknown> = {}, timeoutMs = 20_000): Promise<any> {
    this.#child.stdin.write(`${JSON.stringify({ op, ...args })}\n`)
    const reply = await this.#next(timeoutMs)
    if (!reply.ok) throw new ToozPeerError(String(reply.error), String(reply.message))
    return reply.result
  }

  /** Stops the tooz coordinator (leaving its groups) and ends the process. */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return
    this.#child.stdin.end(`${JSON.stringify({ op: 'stop' })}\n`)
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#child.kill('SIGKILL')
        resolve()
      }, 10_000)
      this.#child.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  /** Kills the process without letting tooz clean up. */
  kill(): void {
    this.#child.kill('SIGKILL')
  }

  #next(timeoutMs: number): Promise<{ ok: boolean; result?: unknown; error?: string; message?: string }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`tooz peer did not answer within ${timeoutMs} ms; stderr: ${this.#stderr}`)), timeoutMs)
      const onExit = (): void => {
        clearTimeout(timer)
        reject(new Error(`tooz peer exited; stderr: ${this.#stderr}`))
      }
      this.#child.once('exit', onExit)
      this.#replies.push((line) => {
        clearTimeout(timer)
        this.#child.off('exit', onExit)
        resolve(JSON.parse(line))
      })
    })
  }
}

/** Decodes { __bytes__: hex } values as the peer sends them. */
export function fromPeer(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromPeer)
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>
    if (Object.keys(o).length === 1 && typeof o.__bytes__ === 'string') return new Uint8Array(Buffer.from(o.__bytes__, 'hex'))
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, fromPeer(v)]))
  }
  return value
}
