/**
 * Helpers of the web tests: HTTP calls with a bounded wait, an SSE reader, the built CLI as a
 * child process (killed by PID when a test ends), and temporary directories removed after.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { waitFor } from '../support/wait.js'

export const BIN = 'dist/cli/bin.js'

/** Bounds of the web tests, in one place. */
export const WEB_TIMING = {
  requestMs: 10_000,
  /** A change the page must show: pushed or polled within about a second; generous bound. */
  liveMs: 8_000,
  /** A process to start and print its URL. */
  startMs: 20_000,
  /** A process asked to stop (or running to its --duration) to exit. */
  exitMs: 60_000,
} as const

/** Children started by each test, killed before its directories are removed (and at exit, whatever happens). */
const owned = new WeakMap<object, Set<ChildProcess>>()
const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL')
})

function own(t: object, child: ChildProcess): void {
  let set = owned.get(t)
  if (!set) owned.set(t, set = new Set())
  set.add(child)
  live.add(child)
  child.once('exit', () => {
    set.delete(child)
    live.delete(child)
  })
}

/**
 * A temporary directory removed when the test ends, after the test's children are killed (a
 * service still writing into it would make the removal fail). A removal that still fails is not
 * the test's failure.
 */
export function tempDir(t: TestContext | { after(fn: () => unknown): void }, prefix = 'rollcall-web-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  t.after(async () => {
    const children = [...(owned.get(t) ?? [])]
    for (const c of children) c.kill('SIGKILL')
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)))))
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
    } catch {
      // Left in the system temp directory; nothing depends on it.
    }
  })
  return dir
}

/** A response, read whole. */
export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  json: any
}

/** One HTTP request with node:http (so that odd requests can be sent as they are); bounded. */
export function call(base: string, method: string, path: string, options: { body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, base), { method, headers: options.headers, timeout: WEB_TIMING.requestMs }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => (text += d))
      res.on('end', () => {
        let json: unknown
        try {
          json = text ? JSON.parse(text) : undefined
        } catch {
          json = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
      })
    })
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${WEB_TIMING.requestMs} ms`)))
    req.on('error', reject)
    if (options.body !== undefined) req.end(options.body)
    else req.end()
  })
}

/** A JSON write with a token. */
export function send(base: string, method: string, path: string, body: unknown, token?: string): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  return call(base, method, path, { body: body === undefined ? undefined : JSON.stringify(body), headers })
}

/** An open event stream that records every event. */
export interface EventStream {
  events: { event: string; data: any }[]
  /** Resolves with the first recorded event (past or future) that matches. */
  next(event: string, match: (data: any) => boolean, ms?: number): Promise<any>
  close(): void
}

/** Opens `v1/events` under `base` (with `query`, e.g. `?prefix=a`) and parses its frames. */
export function openEvents(base: string, query = ''): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const events: { event: string; data: any }[] = []
    const req = httpRequest(new URL(`v1/events${query}`, base), { headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`events: status ${res.statusCode}`))
      let buf = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        buf += d
        let i: number
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i)
          buf = buf.slice(i + 2)
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event && data !== undefined) events.push({ event, data: JSON.parse(data) })
        }
      })
      res.on('error', () => undefined)
      resolve({
        events,
        next: (event, match, ms = WEB_TIMING.liveMs) => waitFor(`event ${event}`, () => events.find((e) => e.event === event && match(e.data))?.data, ms),
        close: () => req.destroy(),
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** The built CLI as a child: its output so far, and the URL it printed. */
export interface CliProcess {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves when it exits; rejects if that takes longer than WEB_TIMING.exitMs (every wait is bounded). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** The first `http://…/` URL printed on stdout. */
  url(ms?: number): Promise<string>
}

/** Runs `rollcall ARGS` from dist/; SIGKILLed by PID when the test ends if still running. */
export function cli(t: TestContext, args: string[], env: Record<string, string | undefined> = {}, nodeFlags: string[] = []): CliProcess {
  const child = spawn(process.execPath, [...nodeFlags, BIN, ...args], {
    env: { ...process.env, ROLLCALL_URL: undefined, ROLLCALL_CONFIG: undefined, ROLLCALL_API_TOKEN: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  own(t, child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += d))
  child.stderr!.on('data', (d) => (err += d))
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined
  const bounded = (): Promise<{ code: number | null; signal: NodeJS.Signals | null }> => (exited ??= Promise.race([
    exit,
    new Promise<never>((_r, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`rollcall ${args.join(' ')} did not exit within ${WEB_TIMING.exitMs} ms; stderr: ${err.slice(-1000)}`)),
        WEB_TIMING.exitMs,
      )
      void exit.then(() => clearTimeout(timer))
    }),
  ]))
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return {
    child,
    get exited() {
      return bounded()
    },
    stdout: () => out,
    stderr: () => err,
    url: (ms = WEB_TIMING.startMs) =>
      waitFor(
        `a URL from rollcall ${args[0]} (stderr so far: ${err.slice(-500)})`,
        () => {
          if (child.exitCode !== null) throw new Error(`rollcall ${args.join(' ')} exited with ${child.exitCode}: ${err}`)
          return /http:\/\/[^\s]+\//.exec(out)?.[0]
        },
        ms,
        50,
      ),
  }
}

/** A service-group configuration (tooz over file:// in `dir`, SQLite catalog beside it); returns its path. */
export function writeConfig(dir: string, options: { timeoutSeconds?: number; reportIntervalSeconds?: number; token?: string } = {}): string {
  const timeout = options.timeoutSeconds ?? 3
  const file = join(dir, 'rollcall.conf')
  writeFileSync(
    file,
    [
      '[DEFAULT]',
      'servicegroup_driver = tooz',
      `report_interval = ${options.reportIntervalSeconds ?? 1}`,
      `service_down_time = ${timeout + 1}`,
      `servicegroup_tooz_url = file://${join(dir, 'coordination')}?timeout=${timeout}&watch_interval=0.2`,
      '[database]',
      'connection = sqlite:///rollcall.sqlite',
      ...(options.token ? ['[api]', `token = ${options.token}`] : []),
      '',
    ].join('\n'),
  )
  return file
}

/** `rollcall service run` as a child; resolves once it says it joined. */
export async function startService(t: TestContext, config: string, s: { binary: string; host: string; topic: string; zone?: string }): Promise<CliProcess> {
  const p = cli(t, ['service', 'run', '--config', config, '--binary', s.binary, '--host', s.host, '--topic', s.topic, ...(s.zone ? ['--zone', s.zone] : [])])
  await waitFor(
    `${s.host}/${s.binary} to join`,
    () => {
      if (p.child.exitCode !== null) throw new Error(`service run exited with ${p.child.exitCode}: ${p.stderr()}`)
      return /joined/.test(p.stderr())
    },
    WEB_TIMING.startMs,
    50,
  )
  return p
}
