/**
 * What the memcached tests need beyond test/support/servers.ts and proxy.ts: a private memcached
 * started with extra flags (idle_timeout, TLS), and a proxy in front of a real server that records
 * the commands clients send (to count round trips). Both listen on 127.0.0.1 only and are ended,
 * by PID, by the test that made them; the shared server is never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer, connect, type Server, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { serverUrl } from '../support/backends.js'
import { freePort } from '../support/servers.js'
import { waitFor } from '../support/wait.js'

/** host and port of the shared memcached, from .backends/urls.json. */
export function sharedMemcached(): { host: string; port: number; url: string } {
  const url = serverUrl('memcached')
  const m = /^memcached:\/\/([^:/]+):(\d+)/.exec(url)
  if (!m) throw new Error(`unexpected memcached URL ${url}`)
  return { host: m[1]!, port: Number(m[2]), url }
}

/** A memcached of the test's own on a free port, started with `extra` flags (servers.ts has none). */
export class PrivateMemcached {
  #child: ChildProcess | undefined
  private constructor(readonly port: number, readonly extra: string[]) {}

  static async start(t: TestContext, extra: string[] = []): Promise<PrivateMemcached> {
    const mc = new PrivateMemcached(await freePort(), extra)
    t.after(() => mc.kill())
    await mc.restart()
    return mc
  }

  get url(): string {
    return `memcached://127.0.0.1:${this.port}`
  }

  get pid(): number | undefined {
    return this.#child?.pid
  }

  /** Starts it again (after kill()) on the same port. */
  async restart(): Promise<void> {
    const root = process.getuid?.() === 0 ? ['-u', 'nobody'] : []
    this.#child = spawn('memcached', ['-l', '127.0.0.1', '-p', String(this.port), '-U', '0', '-m', '16', ...root, ...this.extra], { stdio: 'ignore' })
    await waitFor(`memcached on ${this.port}`, () =>
      new Promise<boolean>((resolve) => {
        const s = connect(this.port, '127.0.0.1')
        s.once('connect', () => {
          s.destroy()
          resolve(true)
        })
        s.once('error', () => resolve(false))
      }), 10_000)
  }

  /** SIGKILLs it (by the pid this helper started) and waits for it to exit. */
  async kill(): Promise<void> {
    const child = this.#child
    this.#child = undefined
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await once(child, 'exit')
  }
}

const COMMAND = /^(get|gets|set|add|cas|delete|touch|mg|ms|md|stats|version)( |$)/

/** A TCP proxy to a real server that records the command lines clients send through it. */
export class RecordingProxy {
  readonly #server: Server
  readonly #pairs = new Set<[Socket, Socket]>()
  /** Command lines clients sent (first word of a known command), while recording. */
  readonly commands: string[] = []
  recording = false
  private constructor(server: Server, readonly port: number) {
    this.#server = server
  }

  static async start(t: TestContext, target: { host: string; port: number }): Promise<RecordingProxy> {
    let proxy: RecordingProxy | undefined
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host)
      const pair: [Socket, Socket] = [client, upstream]
      proxy!.#pairs.add(pair)
      client.on('data', (d: Buffer) => {
        if (proxy!.recording) proxy!.commands.push(...d.toString('latin1').split('\r\n').filter((l) => COMMAND.test(l)))
        upstream.write(d)
      })
      upstream.on('data', (d) => client.write(d))
      const end = (): void => {
        proxy!.#pairs.delete(pair)
        client.destroy()
        upstream.destroy()
      }
      client.on('close', end).on('error', end)
      upstream.on('close', end).on('error', end)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    proxy = new RecordingProxy(server, (server.address() as { port: number }).port)
    t.after(() => proxy!.close())
    return proxy
  }

  get url(): string {
    return `memcached://127.0.0.1:${this.port}`
  }

  /** Records the command lines sent while `fn` runs. */
  async record<T>(fn: () => Promise<T>): Promise<{ result: T; commands: string[] }> {
    this.commands.length = 0
    this.recording = true
    try {
      const result = await fn()
      return { result, commands: [...this.commands] }
    } finally {
      this.recording = false
    }
  }

  async close(): Promise<void> {
    for (const [client, upstream] of this.#pairs) {
      client.destroy()
      upstream.destroy()
    }
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }
}
