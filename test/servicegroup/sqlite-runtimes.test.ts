/**
 * The SQLite catalog on the runtime running this file, through the built CLI: scripts/run-tests.mjs
 * runs it on Node 20 (better-sqlite3, built here for Node 20), and in its runtime matrix on Node 22
 * and 24 (node:sqlite: this repository's better-sqlite3 is built for another Node ABI, so the
 * catalog falls back) and Bun (bun:sqlite; Bun cannot load better-sqlite3). The CLI registers a
 * service (`service run`) and lists it, with exit status 0 and no ExperimentalWarning on stderr,
 * and the engine it chose is the one this runtime must fall back to.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'

const BIN = resolve('dist/cli/bin.js')

/** The engine this runtime must end up with, given that node_modules holds a better-sqlite3 built for Node 20. */
const EXPECTED_ENGINE = process.versions.bun !== undefined
  ? 'bun:sqlite'
  : Number(process.versions.node.split('.')[0]) === 20
  ? 'better-sqlite3'
  : 'node:sqlite'

/** This runtime, as the report names it. */
const RUNTIME = process.versions.bun !== undefined ? `Bun ${process.versions.bun}` : `Node ${process.versions.node}`

function cli(dir: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ROLLCALL_CONFIG: join(dir, 'rollcall.conf') }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_') && k !== 'ROLLCALL_CONFIG') delete env[k]
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('servicegroup: the SQLite catalog on this runtime', () => {
  it(`sqlite: on ${RUNTIME} the CLI's catalog is ${EXPECTED_ENGINE}: it registers and lists, silently`, { timeout: 180_000 }, (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-sqlite-runtime-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'rollcall.conf'), `[database]\nconnection = sqlite:///${join(dir, 'catalog.sqlite')}\n`)
    const run = cli(dir, ['service', 'run', '--binary', 'rollcall-rt', '--', 'true'])
    assert.equal(run.status, 0, run.stderr)
    const list = cli(dir, ['service', 'list', '--json'])
    assert.equal(list.status, 0, list.stderr)
    const rows = JSON.parse(list.stdout) as Array<{ binary: string }>
    assert.deepEqual(rows.map((r) => r.binary), ['rollcall-rt'])
    for (const r of [run, list]) assert.doesNotMatch(r.stderr, /ExperimentalWarning|experimental feature/)
    const probe = spawnSync(process.execPath, [
      '--eval',
      `import(${JSON.stringify(resolve('dist/servicegroup/catalog/sqlite-engine.js'))}).then(async (m) => console.log((await m.loadSqliteEngine()).name))`,
    ], { encoding: 'utf8', timeout: 60_000 })
    assert.equal(probe.stdout.trim(), EXPECTED_ENGINE, probe.stderr)
  })
})
