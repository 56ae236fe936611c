/**
 * servicegroup: `rollcall service list` over 5,000 services, per driver, and the scheduler's hot
 * path (isUp per service after a list). Never part of `npm test`.
 *
 *   node --import tsx bench/servicegroup.bench.ts [--quick] [--target db-sqlite,tooz-redis,...]
 *
 * Per target it records the list latency (first, "cold", when a tooz or zk view is built; then
 * p50/p99 warm), the backend round trips each list costs (catalog statements + driver reads),
 * and the per-call cost of isUp on a fresh view. Services are registered in one topic; liveness
 * is written the cheapest way each backend allows (db: one report each; mc: one set each; zk: one
 * ephemeral node each, all in one session; tooz: the members written in tooz's layout by the raw
 * thin client, as bench/group-read.bench.ts does). Results: bench/results/servicegroup.json.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { dumps } from '../src/index.js'
import { createServiceGroup, openCatalog, type Catalog, type ServiceGroup, type ServiceGroupOptions, type ServiceRecord } from '../src/servicegroup/index.js'
import { McDriver } from '../src/servicegroup/drivers/mc.js'
import { ZkDriver } from '../src/servicegroup/drivers/zk.js'
import { silentLogger } from '../src/index.js'
import { serverUrl } from '../test/support/backends.js'
import { uniq, type BenchBackend } from './lib/backends.js'
import { inBatches, load1, readResult, writeResult } from './lib/context.js'
import { rawBackend } from './lib/raw.js'
import { now, repeat, round, summarize } from './lib/stats.js'

const SCENARIO = 'servicegroup'
const TITLE = 'Service groups: service list over N services, and isUp on the hot path'

interface Target {
  sql: 'sqlite' | 'postgresql' | 'mysql'
  options: () => Omit<ServiceGroupOptions, 'catalog'>
  /** Makes every record live in the driver's backend. */
  populate(catalog: Catalog, records: ServiceRecord[], topic: string, options: Omit<ServiceGroupOptions, 'catalog'>): Promise<() => Promise<void>>
}

const timing = { reportIntervalSeconds: 10, serviceDownTimeSeconds: 600 }
const zkPrefix = `/${uniq('sgbench')}`
const memcached = (): string => serverUrl('memcached').replace('memcached://', '')
const zookeeper = (): string => serverUrl('zookeeper').replace('zookeeper://', '')

async function dbPopulate(catalog: Catalog, records: ServiceRecord[]): Promise<() => Promise<void>> {
  await inBatches(records, 8, (r) => catalog.update(r.id, { reportCount: 1 }))
  return async () => {}
}

function toozTarget(backend: BenchBackend): Target {
  return {
    sql: 'sqlite',
    options: () => ({ ...timing, driver: 'tooz', toozUrl: `${serverUrl(backend)}?timeout=600` }),
    async populate(_catalog, records, topic) {
      const raw = rawBackend(backend, serverUrl(backend))
      const at = new Date().toISOString()
      const members = records.map((r, i) => ({
        id: `${topic}-${i}`,
        caps: dumps({ host: r.host, binary: r.binary, topic, availability_zone: null, version: 0, pid: 1, reported_at: at }),
      }))
      await raw.populate(topic, members, 600)
      return async () => {
        await raw.drop(topic, members.map((m) => m.id)).catch(() => undefined)
        await raw.close()
      }
    },
  }
}

const TARGETS: Record<string, Target> = {
  'db-sqlite': { sql: 'sqlite', options: () => ({ ...timing, driver: 'db' }), populate: dbPopulate },
  'db-postgresql': { sql: 'postgresql', options: () => ({ ...timing, driver: 'db' }), populate: dbPopulate },
  'db-mysql': { sql: 'mysql', options: () => ({ ...timing, driver: 'db' }), populate: dbPopulate },
  'mc-memcached': {
    sql: 'sqlite',
    options: () => ({ ...timing, driver: 'mc', memcacheServers: [memcached()] }),
    async populate(_c, records) {
      const mc = new McDriver({ servers: [memcached()], serviceDownTimeSeconds: 600 })
      await inBatches(records, 64, (r) => mc.report(r))
      return async () => {
        await inBatches(records, 64, (r) => mc.leave(r.host, r.topic))
        await mc.close()
      }
    },
  },
  'zk-zookeeper': {
    sql: 'sqlite',
    options: () => ({ ...timing, driver: 'zk', zookeeper: { address: zookeeper(), recvTimeoutMs: 30_000, sgPrefix: zkPrefix } }),
    async populate(_c, records) {
      const zk = new ZkDriver({ address: zookeeper(), recvTimeoutMs: 30_000, sgPrefix: zkPrefix, logger: silentLogger })
      await zk.start()
      await inBatches(records, 64, (r) => zk.report(r))
      // Closing the session deletes every node at once.
      return () => zk.close()
    },
  },
  'tooz-redis': toozTarget('redis'),
  'tooz-memcached': toozTarget('memcached'),
  'tooz-zookeeper': toozTarget('zookeeper'),
  'tooz-etcd3': toozTarget('etcd3'),
}

async function openBenchCatalog(kind: Target['sql']): Promise<{ catalog: Catalog; cleanup: () => Promise<void> }> {
  const tablePrefix = `bench_${Math.random().toString(36).slice(2, 8)}_`
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-sgbench-'))
    const catalog = await openCatalog(`sqlite:///${join(dir, 'services.sqlite')}`, { tablePrefix })
    return {
      catalog,
      cleanup: async () => {
        await catalog.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  }
  const catalog = await openCatalog(serverUrl(kind), { tablePrefix })
  return {
    catalog,
    cleanup: async () => {
      await catalog.dropTables()
      await catalog.close()
    },
  }
}

async function measure(name: string, target: Target, n: number, quick: boolean): Promise<Record<string, unknown>> {
  const { catalog, cleanup } = await openBenchCatalog(target.sql)
  let depopulate: () => Promise<void> = async () => {}
  let sg: ServiceGroup | undefined
  try {
    const topic = uniq('compute')
    const t0 = now()
    const records = await inBatches(
      Array.from({ length: n }, (_, i) => i),
      8,
      (i) => catalog.register({ host: `compute-${String(i).padStart(6, '0')}`, binary: 'nova-compute', topic }),
    )
    const registerMs = now() - t0
    const options = target.options()
    const t1 = now()
    depopulate = await target.populate(catalog, records, topic, options)
    const populateMs = now() - t1
    sg = await createServiceGroup({ ...options, catalog })
    const counts = (): { queries: number; reads: number } => ({ queries: catalog.queryCount, reads: sg!.driver.stats.reads })
    const delta = (a: { queries: number; reads: number }): { catalogStatements: number; driverReads: number } => {
      const b = counts()
      return { catalogStatements: b.queries - a.queries, driverReads: b.reads - a.reads }
    }
    let c = counts()
    const c0 = now()
    const first = await sg.list({ topic })
    const coldMs = now() - c0
    const cold = delta(c)
    const up = first.filter((s) => s.state === 'up').length
    if (up !== n) throw new Error(`${name}: ${up} of ${n} services read up`)
    c = counts()
    const warm = await repeat(() => sg!.list({ topic }), { minRuns: 3, maxRuns: quick ? 5 : 30, budgetMs: quick ? 1_000 : 15_000, warmup: 1 })
    const warmRuns = warm.length + 1
    const warmCost = delta(c)
    // The scheduler's hot path: isUp per service, after a list (batched view fresh where there is one).
    c = counts()
    const h0 = now()
    for (const r of records) await sg.isUp(r)
    const hotMs = now() - h0
    const hot = delta(c)
    c = counts()
    const m0 = now()
    await sg.isUpMany(records)
    const manyMs = now() - m0
    const many = delta(c)
    return {
      services: n,
      setup: { registerMs: round(registerMs, 1), populateMs: round(populateMs, 1) },
      listCold: { ms: round(coldMs, 2), ...cold },
      listWarm: {
        ...summarize(warm),
        catalogStatementsPerList: round(warmCost.catalogStatements / warmRuns, 2),
        driverReadsPerList: round(warmCost.driverReads / warmRuns, 2),
      },
      isUpHotPath: { usPerCall: round((hotMs * 1000) / n, 2), driverReads: hot.driverReads },
      isUpMany: { ms: round(manyMs, 2), driverReads: many.driverReads },
    }
  } finally {
    await sg?.close({ leave: false })
    await depopulate().catch(() => undefined)
    await cleanup().catch(() => undefined)
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2)
  const quick = argv.includes('--quick')
  const at = argv.indexOf('--target')
  const names = at >= 0 ? argv[at + 1]!.split(',') : Object.keys(TARGETS)
  const n = quick ? 200 : 5_000
  for (const name of names) {
    const target = TARGETS[name]
    if (!target) throw new Error(`unknown target ${name}; known: ${Object.keys(TARGETS).join(', ')}`)
    const takenAt = new Date().toISOString()
    const l = load1()
    console.log(`[servicegroup] ${name}: ${n} services (load ${l})`)
    const errors: string[] = []
    let data: Record<string, unknown> = {}
    try {
      data = await measure(name, target, n, quick)
      console.log(`[servicegroup] ${name}: ${JSON.stringify(data)}`)
    } catch (err) {
      errors.push(String((err as Error).message).slice(0, 600))
      console.log(`[servicegroup] ${name} failed: ${(err as Error).message}`)
    }
    const r = readResult(SCENARIO, TITLE, { services: n })
    r.backends[name] = { takenAt, load1: l, quick, data, ...(errors.length ? { errors } : {}) }
    writeResult(r)
  }
  process.exit(0)
}

await main()
