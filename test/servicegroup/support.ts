/**
 * Helpers of the service-group tests: catalogs on every SQL backend with random table prefixes
 * (dropped after the test), the driver targets the suite loops over, services in their own
 * processes, and a logger that records what it is told.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { Logger } from '../../src/index.js'
import { createServiceGroup, openCatalog, type Catalog, type DriverName, type ServiceGroup, type ServiceGroupOptions,
  type ServiceRecord } from '../../src/servicegroup/index.js'
import { backend, serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import type { PrivateServer } from '../support/servers.js'
import { TIMING } from '../support/timing.js'
import { rid } from '../support/wait.js'

/** The SQL backends of the catalog. */
export type SqlBackend = 'sqlite' | 'postgresql' | 'mysql'

/** Short timings for tests (seconds, as in the INI file). */
export const SG_TIMING = {
  reportIntervalSeconds: 0.5,
  serviceDownTimeSeconds: 3,
  initialReportDelaySeconds: 0.1,
  /** ZooKeeper session timeout of the zk driver, ms (the test servers allow 1–60 s). */
  zkRecvTimeoutMs: 2_000,
} as const

/** A catalog connection URL (+ prefix) that several processes can share; removed after the test. */
export function catalogUrl(t: TestContext, kind: SqlBackend): { url: string; tablePrefix: string } {
  const tablePrefix = `t_${Math.random().toString(36).slice(2, 10)}_`
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-sg-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    return { url: `sqlite:///${join(dir, 'rollcall.sqlite')}`, tablePrefix }
  }
  t.after(async () => {
    const c = await openCatalog(kind === 'postgresql' ? serverUrl('postgresql') : serverUrl('mysql'), { tablePrefix, migrate: false })
    await c.dropTables().finally(() => c.close())
  })
  return { url: kind === 'postgresql' ? serverUrl('postgresql') : serverUrl('mysql'), tablePrefix }
}

/** An open catalog, closed (and its tables dropped) after the test. */
export async function openTestCatalog(t: TestContext, kind: SqlBackend = 'sqlite'): Promise<Catalog> {
  const { url, tablePrefix } = catalogUrl(t, kind)
  const c = await openCatalog(url, { tablePrefix })
  t.after(() => c.close())
  return c
}

/** Everything a ServiceGroup of one target needs except the catalog. */
export type TargetOptions = Omit<ServiceGroupOptions, 'catalog'>

/** One driver on one backend, as the suite runs it. */
export interface Target {
  /** `<driver>-<backend>`, the test-title prefix. */
  name: string
  driver: DriverName
  /** The catalog backend (db: the driver's backend; others: a shared SQLite file). */
  sql: SqlBackend
  /** Services in other processes see each other (false only for memory://). */
  crossProcess: boolean
  /** How long after a SIGKILL the service must read down, at most (before slack). */
  deathBoundMs: number
  /** Options for one test (fresh names: a tooz URL per test for memory://). */
  options(): TargetOptions
  /**
   * A private server to stop and restart, and options pointing at it (or at a proxy in front of
   * it); absent where there is no server to take away.
   */
  outage?(t: TestContext): Promise<{ options: TargetOptions; catalog?: { url: string; tablePrefix: string }; down(): Promise<void>; up(): Promise<void> }>
}

const base = {
  reportIntervalSeconds: SG_TIMING.reportIntervalSeconds,
  serviceDownTimeSeconds: SG_TIMING.serviceDownTimeSeconds,
  initialReportDelaySeconds: SG_TIMING.initialReportDelaySeconds,
}
const dbBound = (SG_TIMING.serviceDownTimeSeconds + SG_TIMING.reportIntervalSeconds) * 1000
const toozBound = TIMING.expirySeconds * 1000 + TIMING.watchIntervalMs * 5

/** Builds a ServiceGroup on `catalog`, closed after the test. */
export async function openGroup(t: TestContext, catalog: Catalog, options: TargetOptions & { logger?: Logger } = {}): Promise<ServiceGroup> {
  const sg = await createServiceGroup({ ...options, catalog })
  t.after(() => sg.close())
  return sg
}

/** Stops `server` after the test. */
function owned(t: TestContext, server: PrivateServer): PrivateServer {
  t.after(() => server.stop())
  return server
}

/** The driver targets, by name. */
export const TARGETS: Record<string, () => Target> = {
  'db-sqlite': () => ({
    name: 'db-sqlite',
    driver: 'db',
    sql: 'sqlite',
    crossProcess: true,
    deathBoundMs: dbBound,
    options: () => ({ ...base, driver: 'db' }),
    // No server to stop: another connection holding the write lock past the busy timeout is SQLite's outage.
    async outage(t) {
      const catalog = catalogUrl(t, 'sqlite')
      const Database = (await import('better-sqlite3')).default
      let holder: InstanceType<typeof Database> | undefined
      t.after(() => holder?.close())
      return {
        options: { ...base, driver: 'db' },
        catalog,
        down: async () => {
          holder = new Database(catalog.url.replace('sqlite:///', ''))
          holder.exec('BEGIN EXCLUSIVE')
        },
        up: async () => {
          holder?.exec('COMMIT')
          holder?.close()
          holder = undefined
        },
      }
    },
  }),
  ...Object.fromEntries((['postgresql', 'mysql'] as const).map((kind) => [`db-${kind}`, (): Target => ({
    name: `db-${kind}`,
    driver: 'db',
    sql: kind,
    crossProcess: true,
    deathBoundMs: dbBound,
    options: () => ({ ...base, driver: 'db' }),
    async outage(t) {
      const shared = catalogUrl(t, kind)
      const target = new URL(shared.url)
      const proxy = await TcpProxy.start(Number(target.port))
      t.after(() => proxy.close())
      target.port = String(proxy.port)
      return {
        options: { ...base, driver: 'db' },
        catalog: { url: target.toString(), tablePrefix: shared.tablePrefix },
        down: async () => proxy.cut(),
        up: async () => proxy.restore(),
      }
    },
  })])),
  'mc-memcached': () => ({
    name: 'mc-memcached',
    driver: 'mc',
    sql: 'sqlite',
    crossProcess: true,
    deathBoundMs: dbBound,
    options: () => ({ ...base, driver: 'mc', memcacheServers: [serverUrl('memcached').replace('memcached://', '')] }),
    async outage(t) {
      const { startMemcached } = await import('../support/servers.js')
      const server = owned(t, await startMemcached())
      return { options: { ...base, driver: 'mc', memcacheServers: [`127.0.0.1:${server.port}`] }, down: async () => server.kill(), up: () => server.start() }
    },
  }),
  'zk-zookeeper': () => {
    // One prefix per test file: readers and writers of a test must share it.
    const sgPrefix = `/${rid('sg')}`
    return {
      name: 'zk-zookeeper',
      driver: 'zk',
      sql: 'sqlite',
      crossProcess: true,
      deathBoundMs: SG_TIMING.zkRecvTimeoutMs * 1.5,
      options: () => ({
        ...base,
        driver: 'zk',
        zookeeper: { address: serverUrl('zookeeper').replace('zookeeper://', ''), recvTimeoutMs: SG_TIMING.zkRecvTimeoutMs, sgPrefix },
      }),
      async outage(t) {
        const { startZookeeper } = await import('../support/servers.js')
        const server = owned(t, await startZookeeper())
        return {
          options: {
            ...base,
            driver: 'zk',
            zookeeper: { address: `127.0.0.1:${server.port}`, recvTimeoutMs: SG_TIMING.zkRecvTimeoutMs, sgPrefix: '/servicegroups' },
          },
          down: async () => server.kill(),
          up: () => server.start(),
        }
      },
    }
  },
  'tooz-memory': () => {
    const url = backend('memory').url
    return {
      name: 'tooz-memory',
      driver: 'tooz',
      sql: 'sqlite',
      crossProcess: false,
      deathBoundMs: 0,
      options: () => ({ ...base, driver: 'tooz', toozUrl: url }),
    }
  },
  ...Object.fromEntries((['redis', 'memcached', 'zookeeper', 'etcd3'] as const).map((b) => [`tooz-${b}`, (): Target => ({
    name: `tooz-${b}`,
    driver: 'tooz',
    sql: 'sqlite',
    crossProcess: true,
    deathBoundMs: toozBound,
    options: () => ({ ...base, driver: 'tooz', toozUrl: `${backend(b).fastUrl}&watch_interval=${TIMING.watchIntervalMs / 1000}` }),
    async outage(t) {
      const servers = await import('../support/servers.js')
      const start = { redis: servers.startRedis, memcached: servers.startMemcached, zookeeper: servers.startZookeeper, etcd3: servers.startEtcd }[b]
      const server = owned(t, await start())
      return {
        options: { ...base, driver: 'tooz', toozUrl: `${server.url}?timeout=${TIMING.expirySeconds}&watch_interval=${TIMING.watchIntervalMs / 1000}` },
        down: async () => server.kill(),
        up: () => server.start(),
      }
    },
  })])),
}

/** A service in its own process; resolves once it has joined. Killed (SIGKILL) after the test. */
export async function spawnService(
  t: TestContext,
  args: TargetOptions & { catalogUrl: string; tablePrefix: string; host: string; binary: string; topic: string },
): Promise<{ child: ChildProcess; id: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/servicegroup/service-process.ts', JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let out = ''
  let err = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d))
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  try {
    while (!/joined \d+/.test(out)) {
      await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`service process exited before joining: ${out}${err}`)
    }
  } finally {
    clearTimeout(timer)
  }
  return { child, id: Number(/joined (\d+)/.exec(out)![1]) }
}

/** Waits for a child to exit. */
export async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
}

/** One recorded log line. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error'
  msg: string
  fields?: Record<string, unknown>
}

/** A logger that keeps every line. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = []
  const at = (level: LogLine['level']) => (msg: string, fields?: Record<string, unknown>): void => void lines.push({ level, msg, fields })
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

/** A catalog record as a driver is handed it, not stored anywhere: `fields` override the defaults. */
export function serviceRecord(fields: Partial<ServiceRecord> = {}): ServiceRecord {
  return {
    id: 0,
    host: rid('host'),
    binary: 'rollcall-test',
    topic: rid('topic'),
    availabilityZone: null,
    disabled: false,
    disabledReason: null,
    forcedDown: false,
    version: 1,
    reportCount: 0,
    lastSeenUp: null,
    createdAt: new Date(),
    updatedAt: null,
    deletedAt: null,
    ...fields,
  }
}
