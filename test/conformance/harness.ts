/**
 * The conformance suite's harness: fresh coordinators per test (stopped when it ends), random
 * names, and capability gating. A case that needs a capability runs where the driver declares it;
 * where it does not, its twin runs instead and must show the capability really is absent, so a
 * wrong declaration fails the suite either way. Nothing is gated on a driver's name.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { it, type TestContext } from 'node:test'
import { connect, loadDriver, parseBackendUrl, type Capability, type ConnectOptions, type Coordinator } from '../../src/index.js'
import { backend, type Backend, type BackendConfig } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { rid } from '../support/wait.js'
import { TcpProxy } from '../support/proxy.js'

/** What every case file receives. */
export interface Harness {
  readonly name: Backend
  readonly config: BackendConfig
  readonly caps: ReadonlySet<Capability>
  /** A started coordinator, stopped after the test. `fast` uses the short-liveness URL. */
  open(t: TestContext, options?: ConnectOptions & { fast?: boolean }): Promise<Coordinator>
  /** A test that needs every capability in `caps`; `twin` runs (and must pass) where one is missing. */
  gated(caps: Capability | Capability[], title: string, fn: (t: TestContext) => Promise<void>, twin?: (t: TestContext) => Promise<void>): void
  /** A plain test. */
  test(title: string, fn: (t: TestContext) => Promise<void>): void
  /** A ported test that cannot run here, listed as skipped with the reason. */
  skip(title: string, reason: string): void
  /** A started coordinator on the fast URL, reaching its server through a fault proxy (network backends only). */
  openProxied(t: TestContext, options?: ConnectOptions): Promise<{ coordinator: Coordinator; proxy: TcpProxy }>
  /** A member in another process, joined to `group` (and leading it, with `lead`), that can be killed. */
  spawnMember(t: TestContext, group: string, member: string, options?: { fast?: boolean; capabilities?: unknown; lead?: boolean }): Promise<ChildProcess>
}

/**
 * No case may hang its file: a wait that never settles now keeps the process alive (as it
 * must), so a case stuck on one fails after this long instead of stalling the whole run.
 */
const CASE_TIMEOUT_MS = 180_000

/** Builds the harness for one backend (reads the driver's declared capabilities). */
export async function harness(name: Backend): Promise<Harness> {
  const config = backend(name)
  const def = await loadDriver(parseBackendUrl(config.url).scheme)
  const caps = new Set<Capability>(def.capabilities)
  const title = (area: string): string => `${name}: ${area}`
  const h: Harness = {
    name,
    config,
    caps,
    async open(t, options = {}) {
      const { fast, ...rest } = options
      const c = await connect(fast ? config.fastUrl : config.url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs, ...rest })
      t.after(() => c.stop())
      return c
    },
    gated(needed, area, fn, twin) {
      const list = Array.isArray(needed) ? needed : [needed]
      const missing = list.filter((c) => !caps.has(c))
      if (missing.length === 0) it(title(area), { timeout: CASE_TIMEOUT_MS }, fn)
      else if (twin) it(title(`${area} [without ${missing.join(', ')}: shown absent]`), { timeout: CASE_TIMEOUT_MS }, twin)
      else it(title(area), { skip: `unsupported by ${name}: ${missing.join(', ')}` }, () => {})
    },
    test(area, fn) {
      it(title(area), { timeout: CASE_TIMEOUT_MS }, fn)
    },
    skip(area, reason) {
      it(title(area), { skip: reason }, () => {})
    },
    async openProxied(t, options = {}) {
      const at = /(\/\/|@)(127\.0\.0\.1|localhost|\[::1\]):(\d+)/.exec(config.fastUrl)
      if (!at) throw new Error(`${name}: no loopback host:port in ${config.fastUrl} to put a proxy in front of`)
      // An IPv6 server is reached over IPv6 through the proxy too.
      const host = at[2] === '[::1]' ? '[::1]' : '127.0.0.1'
      const proxy = await TcpProxy.start(Number(at[3]), host === '[::1]' ? '::1' : '127.0.0.1')
      t.after(() => proxy.close())
      const url = config.fastUrl.replace(at[0], `${at[1]}${host}:${proxy.port}`)
      const coordinator = await connect(url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
      t.after(() => coordinator.stop())
      return { coordinator, proxy }
    },
    async spawnMember(t, group, member, options = {}) {
      const url = options.fast ? config.fastUrl : config.url
      const child = spawn(process.execPath, [
        '--import',
        'tsx',
        'test/support/member-process.ts',
        url,
        group,
        member,
        JSON.stringify(options.capabilities ?? null),
        ...(options.lead ? ['lead'] : []),
      ], { stdio: ['ignore', 'pipe', 'inherit'] })
      t.after(() => {
        if (child.exitCode === null) child.kill('SIGKILL')
      })
      let out = ''
      child.stdout!.setEncoding('utf8')
      child.stdout!.on('data', (d: string) => (out += d))
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      const ready = options.lead ? 'leading' : 'joined'
      while (!out.includes(ready)) {
        const [code] = await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])
        if (child.exitCode !== null || child.signalCode !== null || typeof code === 'number') {
          throw new Error(`member process exited (or was killed after 15 s) before ${options.lead ? 'leading' : 'joining'}: ${out}`)
        }
      }
      clearTimeout(timer)
      return child
    },
  }
  return h
}
