/**
 * The package as a consumer gets it: `npm pack`, the tarball installed into a fresh project, a
 * file that uses the root export, `rollcall/servicegroup` and `rollcall/web` type-checked with skipLibCheck off
 * under `node16` and `bundler` resolution, then run through `import` and through `require`. On
 * memory:// the program leads (withLeadership(), campaign() and resign(), watchElectedAsLeader()'s
 * unsubscribe), holds a fenced lock through withLock(), and traces itself on diagnostics_channel;
 * the type checks include bring-your-own-client shapes, with no client package installed.
 *
 * scripts/run-tests.mjs runs it on every runtime of its matrix (Node 20, 22 and 24, Bun): the
 * programs run on the runtime running this file.
 *
 * It also checks what the install costs: no backend client and no native SQLite engine are
 * installed for a coordination-only consumer (they are optional peers), and the tarball carries
 * neither images nor source maps that point at files it does not ship.
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import ts from 'typescript'

const ROOT = process.cwd()
const TSC = resolve(ROOT, 'node_modules/typescript/bin/tsc')
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> }

/** Uses both entry points; `expected` is what run() must print. */
const APP_TS = `
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel'
import { connect, Coordinator, DriverUnavailableError, LeadershipLostError, RollcallError, TRACING_CHANNELS, type ElectionLostTrace, type ElectionWonTrace,
  type GroupTrace, type LeaderEvent, type Leadership, type Lock } from 'rollcall'
import { openCatalog, parseIni, type IniDocument } from 'rollcall/servicegroup'
import { createStatusHandler, registerMetrics, type MetricsRegistry } from 'rollcall/web'
import { MetricsUnavailableError } from 'rollcall'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** rollcall's group.join spans and election moments as a tracer subscribed to them sees them; returns the unsubscribe. */
function traceInto(traces: string[], won: Map<string, bigint | undefined>): () => void {
  const join = tracingChannel<unknown, GroupTrace>(TRACING_CHANNELS.groupJoin)
  const ignore = (): void => undefined
  const spans = {
    start: (p: GroupTrace): void => void traces.push('join start ' + p.group + ' by ' + p.memberId + ' on ' + p.backend + ' ' + p.url + ' rejoin ' + p.rejoin),
    end: ignore,
    asyncStart: ignore,
    asyncEnd: (p: GroupTrace): void => void traces.push('join end ' + p.group + ' ' + (p.error instanceof RollcallError ? p.error.code : 'joined')),
    error: ignore,
  }
  join.subscribe(spans)
  const onWon = (message: unknown): void => {
    const p = message as ElectionWonTrace
    won.set(p.group, p.term)
    traces.push('won ' + p.group + ' term ' + typeof p.term)
  }
  const onLost = (message: unknown): void => void traces.push('lost ' + (message as ElectionLostTrace).group + ': ' + (message as ElectionLostTrace).reason)
  subscribe(TRACING_CHANNELS.electionWon, onWon)
  subscribe(TRACING_CHANNELS.electionLost, onLost)
  return () => {
    join.unsubscribe(spans)
    unsubscribe(TRACING_CHANNELS.electionWon, onWon)
    unsubscribe(TRACING_CHANNELS.electionLost, onLost)
  }
}

/** Leadership three ways on one coordinator: withLeadership(), a campaign's handle, a watch and its unsubscribe. */
async function lead(c: Coordinator, won: Map<string, bigint | undefined>): Promise<object> {
  let ledSignal: AbortSignal | undefined
  const led = await c.withLeadership('leaders', (signal: AbortSignal, term: bigint | undefined) => {
    ledSignal = signal
    return { leading: c.isLeader('leaders'), aborted: signal.aborted, term: typeof term, termIsWon: term === won.get('leaders') }
  })
  const afterLed = { aborted: ledSignal?.aborted, leading: c.isLeader('leaders') }
  const campaign: Leadership = await c.campaign('campaigners')
  const during = {
    active: campaign.active,
    aborted: campaign.signal.aborted,
    leader: await c.getLeader('campaigners'),
    term: typeof campaign.term,
    termIsWon: campaign.term === won.get('campaigners'),
  }
  await campaign.resign()
  const reason: unknown = campaign.signal.reason
  const resigned = {
    active: campaign.active,
    reason: reason instanceof LeadershipLostError ? reason.code + ': ' + reason.message : String(reason),
    leader: await c.getLeader('campaigners'),
  }
  let unwatch!: () => Promise<void>
  const elected = await new Promise<LeaderEvent>((resolve) => {
    unwatch = c.watchElectedAsLeader('watched', resolve)
  })
  const leading = c.isLeader('watched')
  await unwatch()
  await unwatch()
  const watched = { elected, leading, afterUnwatch: c.isLeader('watched'), leader: await c.getLeader('watched') }
  return { led, afterLed, campaign: { during, resigned }, watched }
}

/** withLock() hands fn the hold's signal and the held Lock, whose fencing token grows with each holder. */
async function fence(c: Coordinator): Promise<object> {
  const tokens: Array<bigint | undefined> = []
  const first = await c.withLock('fenced', (signal: AbortSignal, lock: Lock) => {
    const token: bigint | undefined = lock.fencingToken
    tokens.push(token)
    return { sameSignal: signal === lock.signal, aborted: signal.aborted, acquired: lock.acquired, token: typeof token }
  })
  await c.withLock('fenced', (_signal, lock) => void tokens.push(lock.fencingToken))
  return { fencing: c.capabilities.has('fencing'), ...first, grows: tokens[0]! < tokens[1]! }
}

export async function run(): Promise<string> {
  const c: Coordinator = await connect('memory://', { memberId: 'consumer-1', watchIntervalMs: 50 })
  const traces: string[] = []
  const won = new Map<string, bigint | undefined>()
  const untrace = traceInto(traces, won)
  try {
    await c.joinGroupCreate('consumers', { zone: 'az1' })
    const members: string[] = await c.getMembers('consumers')
    const lock: Lock = await c.acquireLock('consumer-lock')
    const held = lock.acquired
    await lock.release()
    const leadership = await lead(c, won)
    const fenced = await fence(c)
    const doc: IniDocument = parseIni('[DEFAULT]\\nservicegroup_driver = tooz\\n')
    let catalog = 'opened'
    try {
      await (await openCatalog('sqlite://')).close()
    } catch (err) {
      catalog = err instanceof DriverUnavailableError ? err.code : String(err)
    }
    const redis = await connect('redis://127.0.0.1:1').then(
      () => 'connected',
      (err: unknown) => (err instanceof DriverUnavailableError ? err.message : String(err)),
    )
    // prom-client is not installed here: metrics name the fix; the status handler works without it.
    const registry: MetricsRegistry = { registerMetric: () => undefined, removeSingleMetric: () => undefined }
    const metrics = await registerMetrics(c, { registry }).then(
      () => 'registered',
      (err: unknown) => (err instanceof MetricsUnavailableError ? err.code + ': ' + err.message : String(err)),
    )
    const status = await createStatusHandler({ coordinator: c, basePath: '/status' })
    const server = createServer((req, res) => status(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const health = await fetch('http://127.0.0.1:' + (server.address() as AddressInfo).port + '/status/healthz')
    await status.close()
    server.close()
    return JSON.stringify({ members, held, sections: [...doc.keys()], catalog, redis, metrics, health: health.status, leadership, fenced, traces })
  } finally {
    untrace()
    await c.stop()
  }
}

run().then((out) => console.log(out), (err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
`

/**
 * The same program through require (Node >= 20.19 loads the ESM package synchronously): APP_TS
 * transpiled to CommonJS, its imports made require() calls.
 */
const APP_CJS = ts.transpileModule(APP_TS, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText

/** Type errors a consumer must get: misspelt or mistyped connect() options. */
const TYPO_TS = `
import { connect, SerializationError, type Coordinator, type Leadership, type MemberJoinedEvent, type MemberLeftCallback, type MysqlOwnPool, type OwnClients,
  type PgOwnClient, type PgOwnPool, type RedisOptions, type RedisOwnClient } from 'rollcall'
export async function typos(signal: AbortSignal): Promise<void> {
  // @ts-expect-error a misspelt common option
  await connect('memory://', { watchIntervalMss: 5 })
  // @ts-expect-error a misspelt Redis option
  await connect('redis://127.0.0.1:6379', { membershipTimeotMs: 5 })
  // @ts-expect-error a Redis option given a string
  await connect('redis://127.0.0.1:6379', { membershipTimeoutMs: '5' })
  await connect('redis://127.0.0.1:6379', { membershipTimeoutMs: 5_000, signal })
  await using c = await connect('zookeeper://127.0.0.1:2181', { sessionTimeoutMs: 5_000, signal })
  // @ts-expect-error a Redis option is not a ZooKeeper option
  await connect('kazoo://127.0.0.1:2181', { lockTimeoutMs: 5_000 })
  const url: string = 'redis://127.0.0.1:6379'
  await connect(url, { lockTimeoutMs: 5_000 })
  // @ts-expect-error a URL typed string still refuses a name no driver has
  await connect(url, { lockTimeotMs: 5_000 })
  void c
}

/** Typed capabilities through a group handle, validated by parse. */
interface Worker { zone: string; slots: number }
export async function typedGroup(c: Coordinator): Promise<RedisOptions> {
  const workers = c.group('workers', { parse: (v: unknown): Worker => v as Worker })
  await workers.join({ zone: 'az1', slots: 4 })
  // @ts-expect-error slots is a number
  await workers.update({ zone: 'az1', slots: '4' })
  // @ts-expect-error a Worker has no name
  await workers.join({ zone: 'az1', slots: 4, name: 'x' })
  const caps = await workers.getMemberCapabilities('w-1')
  const slots: number = caps.slots
  // @ts-expect-error a read value is a Worker, not any
  const wrong: string = caps.slots
  for (const [, v] of await workers.getMembersWithCapabilities()) if (!(v instanceof SerializationError)) void v.zone.toUpperCase()
  const untyped = await c.getMembersWithCapabilities('workers')
  const asserted = c.group<Worker>('workers')
  void untyped, asserted, slots, wrong
  return { membershipTimeoutMs: 5_000 }
}

/** Typed watching: the join payload carries the member's capabilities as a Worker. */
export async function typedWatch(c: Coordinator): Promise<() => Promise<void>> {
  const workers = c.group('workers', { parse: (v: unknown): Worker => v as Worker })
  const unwatchJoined: () => Promise<void> = await workers.watchJoined(({ group, member, capabilities }) => {
    const slots: number = capabilities.slots
    // @ts-expect-error a Worker has no region
    void capabilities.region
    // @ts-expect-error zone is a string, not a number
    const zone: number = capabilities.zone
    void group, member, slots, zone
  })
  const joined = (e: MemberJoinedEvent<Worker>): string => e.capabilities.zone
  await workers.watchJoined(joined)
  // @ts-expect-error a callback for other capabilities does not fit this group
  await workers.watchJoined((e: MemberJoinedEvent<{ region: string }>) => e.capabilities.region)
  const left: MemberLeftCallback<Worker> = ({ capabilities }) => {
    // @ts-expect-error a leaving member's capabilities may be undefined (they did not pass parse)
    void capabilities.zone
    return capabilities?.slots
  }
  await workers.watchLeft(left)
  return unwatchJoined
}

/** Bring your own client, typed by its shape: neither ioredis, pg nor mysql2 is installed here. */
export async function ownClients(redis: RedisOwnClient, pool: PgOwnPool, pg: PgOwnClient, mysql: MysqlOwnPool): Promise<void> {
  await connect('redis://?namespace=app', { client: redis, memberId: 'w-1' })
  await connect('postgresql://', { client: pool })
  await connect('postgresql://', { client: pg })
  await connect('mysql://', { client: mysql })
  // @ts-expect-error ZooKeeper takes no client of the application's
  await connect('zookeeper://127.0.0.1:2181', { client: redis })
  // @ts-expect-error nor does memory://
  await connect('memory://', { client: redis })
  // @ts-expect-error an ioredis client is neither a pg Pool nor a pg Client
  await connect('postgresql://', { client: redis })
  // @ts-expect-error a pg Pool is not a mysql2 pool
  await connect('mysql://', { client: pool })
  // @ts-expect-error a mysql2 pool is not an ioredis client
  await connect('redis://', { client: mysql })
  // @ts-expect-error an object with a status alone is not an ioredis client
  await connect('redis://', { client: { status: 'ready' } })
  const byScheme: OwnClients['postgresql'] = Math.random() < 0.5 ? pool : pg
  void byScheme
}

/** Leadership and fencing tokens: a term or a token is undefined on drivers without fencing. */
export async function leaderTypes(c: Coordinator): Promise<void> {
  await using leadership: Leadership = await c.campaign('schedulers')
  // @ts-expect-error a term may be undefined
  const term: bigint = leadership.term
  // @ts-expect-error withLeadership's fn gets (signal, term), not the Leadership
  await c.withLeadership('schedulers', (l: Leadership) => l.term)
  const ran: number = await c.withLeadership('schedulers', (signal, t) => (signal.aborted || t === undefined ? 0 : 1))
  const unwatch: () => Promise<void> = c.watchElectedAsLeader('schedulers', ({ group, member }) => group + member)
  await c.withLock('fenced', (_signal, lock) => {
    // @ts-expect-error a fencing token may be undefined
    const token: bigint = lock.fencingToken
    void token
  })
  void term, ran, unwatch
}
`

/**
 * Whether this runtime, as the consumer's program runs it (no flags), has a SQLite of its own: Bun
 * (bun:sqlite) and Node 22.13 and later (node:sqlite) do; before, node:sqlite is absent or behind
 * --experimental-sqlite.
 */
const BUILTIN_SQLITE = process.versions.bun !== undefined
  || spawnSync(process.execPath, ['--input-type=module', '-e', "await import('node:sqlite')"], { encoding: 'utf8', timeout: 30_000 }).status === 0

/** With better-sqlite3 not installed, the catalog opens on the runtime's own SQLite or names the package to install. */
const EXPECTED = {
  members: ['consumer-1'],
  held: true,
  sections: ['DEFAULT'],
  catalog: BUILTIN_SQLITE ? 'opened' : 'DRIVER_UNAVAILABLE',
  redis: 'The redis driver needs the npm package "ioredis"; install it with: npm install ioredis',
  metrics:
    'METRICS_UNAVAILABLE: Prometheus metrics need the npm package "prom-client" (an optional peer of rollcall); install it with: npm install prom-client',
  health: 200,
  // On memory:// (which has fencing): each way of leading holds the term the election.won channel published, a bigint.
  leadership: {
    led: { leading: true, aborted: false, term: 'bigint', termIsWon: true },
    afterLed: { aborted: true, leading: false },
    campaign: {
      during: { active: true, aborted: false, leader: 'consumer-1', term: 'bigint', termIsWon: true },
      resigned: { active: false, reason: 'LEADERSHIP_LOST: Leadership of group "campaigners" ended: resigned', leader: null },
    },
    watched: { elected: { group: 'watched', member: 'consumer-1' }, leading: true, afterUnwatch: false, leader: null },
  },
  fenced: { fencing: true, sameSignal: true, aborted: false, acquired: true, token: 'bigint', grows: true },
  // joinGroupCreate() on a new group: a join that finds no group (its span carries the error), then the join after creating it.
  traces: [
    'join start consumers by consumer-1 on memory memory:// rejoin false',
    'join end consumers GROUP_NOT_FOUND',
    'join start consumers by consumer-1 on memory memory:// rejoin false',
    'join end consumers joined',
    'won leaders term bigint',
    'lost leaders: resigned',
    'won campaigners term bigint',
    'lost campaigners: resigned',
    'won watched term bigint',
    'lost watched: this member stopped running for leader',
  ],
}

function tsconfig(resolution: 'node16' | 'bundler'): object {
  return {
    compilerOptions: {
      target: 'ES2022',
      module: resolution === 'node16' ? 'node16' : 'esnext',
      moduleResolution: resolution,
      lib: ['ES2022', 'ESNext.Disposable'],
      strict: true,
      exactOptionalPropertyTypes: true,
      skipLibCheck: false,
      types: ['node'],
      outDir: `out-${resolution}`,
      noEmit: resolution === 'bundler',
    },
    files: ['app.ts', 'typos.ts'],
  }
}

describe('package: the packed tarball as a consumer installs it', () => {
  let dir = ''
  let app = ''
  let installSeconds = 0
  let installOutput = ''
  /** Both type checks run at once (each takes seconds on a busy machine): resolution → tsc output, or '' when it passed. */
  const checks = new Map<string, Promise<string>>()

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rollcall-consumer-'))
    assert.ok(existsSync(join(ROOT, 'dist/index.js')), 'dist/ is built (npm test builds it first)')
    // --ignore-scripts: `prepack` would rebuild dist/, which npm test has just done.
    const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' })) as Array<
      { filename: string; files: Array<{ path: string }> }
    >
    const tarball = join(dir, packed[0]!.filename)
    app = join(dir, 'app')
    mkdirSync(app)
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
    const started = Date.now()
    // The cache that installed this repository holds everything the tarball needs; --prefer-offline
    // asks the registry only for what it lacks.
    // Warnings shown: npm 11 warns about a package's install scripts (a `prepare` among them).
    const install = spawnSync('npm', [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=warn',
      tarball,
      `@types/node@${pkg.devDependencies['@types/node']}`,
    ], { cwd: app, encoding: 'utf8' })
    assert.equal(install.status, 0, install.stderr)
    installOutput = `${install.stdout}${install.stderr}`
    installSeconds = (Date.now() - started) / 1000
    writeFileSync(join(app, 'app.ts'), APP_TS)
    writeFileSync(join(app, 'typos.ts'), TYPO_TS)
    writeFileSync(join(app, 'app.cjs'), APP_CJS)
    writeFileSync(join(app, 'files.json'), JSON.stringify(packed[0]!.files.map((f) => f.path)))
    for (const resolution of ['node16', 'bundler'] as const) {
      writeFileSync(join(app, `tsconfig.${resolution}.json`), JSON.stringify(tsconfig(resolution)))
      checks.set(
        resolution,
        new Promise((done) => {
          execFile(
            process.execPath,
            [TSC, '-p', `tsconfig.${resolution}.json`],
            { cwd: app, encoding: 'utf8' },
            (err, stdout, stderr) => done(err ? `${stdout}${stderr}` : ''),
          )
        }),
      )
    }
  })

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('package: ships no images and no source maps that point at unshipped sources', () => {
    const files = JSON.parse(readFileSync(join(app, 'files.json'), 'utf8')) as string[]
    assert.ok(files.includes('dist/index.js') && files.includes('dist/index.d.ts') && files.includes('README.md'))
    assert.deepEqual(files.filter((f) => /\.(png|jpe?g|gif|svg)$/i.test(f)), [])
    const maps = files.filter((f) => f.endsWith('.map'))
    const shippedSources = files.filter((f) => f.startsWith('src/'))
    assert.ok(maps.length === 0 || shippedSources.length > 0, `${maps.length} .map files ship without the src/ they point at`)
  })

  it('package: installing it runs nothing: no install script, no npm warning about one', () => {
    const { scripts = {} } = JSON.parse(readFileSync(join(app, 'node_modules/rollcall/package.json'), 'utf8')) as { scripts?: Record<string, string> }
    const run = ['preinstall', 'install', 'postinstall', 'prepare'].filter((s) => s in scripts)
    assert.deepEqual(run, [], 'the published package.json has scripts that run on install')
    assert.doesNotMatch(installOutput, /install-scripts|rollcall@[^\s]* \(/, 'npm warned about an install script')
  })

  it('package: a coordination-only install has no backend client and nothing compiled', () => {
    const installed = readdirSync(join(app, 'node_modules'))
    for (const optional of ['ioredis', 'pg', 'mysql2', 'node-zookeeper-client', 'better-sqlite3', 'prom-client']) {
      assert.ok(!installed.includes(optional), `${optional} is an optional peer, not installed by default`)
    }
    const built = installed.filter((name) => existsSync(join(app, 'node_modules', name, 'build')))
    assert.deepEqual(built, [], 'no package compiled anything')
    assert.ok(installSeconds < 60, `install took ${installSeconds} s`)
  })

  for (const resolution of ['node16', 'bundler'] as const) {
    it(`package: the types compile with skipLibCheck off under ${resolution} resolution`, async () => {
      assert.equal(await checks.get(resolution), '', `tsc (${resolution}) failed`)
    })
  }

  it('package: the program runs through import', async () => {
    await checks.get('node16')
    const out = join(app, 'out-node16', 'app.js')
    assert.ok(existsSync(out), 'tsc emitted app.js')
    const r = spawnSync(process.execPath, [out], { cwd: app, encoding: 'utf8', timeout: 30_000 })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), EXPECTED)
    // The catalog on node:sqlite drops Node's warning about it.
    assert.doesNotMatch(r.stderr, /ExperimentalWarning|experimental feature/)
  })

  it('package: the program runs through require', () => {
    const r = spawnSync(process.execPath, ['app.cjs'], { cwd: app, encoding: 'utf8', timeout: 30_000 })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), EXPECTED)
    assert.doesNotMatch(r.stderr, /Error/, 'require(esm) loads the package without an error on stderr')
  })
})
