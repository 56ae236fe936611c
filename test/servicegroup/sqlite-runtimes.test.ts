/**
 * The SQLite catalog on the runtimes a user runs the CLI with, through the built CLI: Node 22
 * (node:sqlite, with this repository's better-sqlite3 installed but built for another Node ABI)
 * and Bun (bun:sqlite; Bun cannot load better-sqlite3). Each registers a service (`service run`)
 * and lists it, with exit status 0 and no ExperimentalWarning on stderr.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { runtime, type RuntimeName } from '../support/runtimes.js'

const BIN = resolve('dist/cli/bin.js')

function cli(exe: string, dir: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ROLLCALL_CONFIG: join(dir, 'rollcall.conf') }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_') && k !== 'ROLLCALL_CONFIG') delete env[k]
  const r = spawnSync(exe, [BIN, ...args], { cwd: dir, env, encoding: 'utf8', timeout: 60_000 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('servicegroup: the SQLite catalog on other runtimes', { concurrency: 2 }, () => {
  for (const [name, engine] of [['node22', 'node:sqlite'], ['bun', 'bun:sqlite']] as const satisfies ReadonlyArray<readonly [RuntimeName, string]>) {
    it(`sqlite: on ${name} the CLI falls back to ${engine}: it registers and lists, silently`, { timeout: 360_000 }, (t) => {
      const exe = runtime(name)
      const dir = mkdtempSync(join(tmpdir(), `rollcall-${name}-`))
      t.after(() => rmSync(dir, { recursive: true, force: true }))
      writeFileSync(join(dir, 'rollcall.conf'), `[database]\nconnection = sqlite:///${join(dir, 'catalog.sqlite')}\n`)
      const run = cli(exe, dir, ['service', 'run', '--binary', 'rollcall-rt', '--', 'true'])
      assert.equal(run.status, 0, run.stderr)
      const list = cli(exe, dir, ['service', 'list', '--json'])
      assert.equal(list.status, 0, list.stderr)
      const rows = JSON.parse(list.stdout) as Array<{ binary: string }>
      assert.deepEqual(rows.map((r) => r.binary), ['rollcall-rt'])
      for (const r of [run, list]) assert.doesNotMatch(r.stderr, /ExperimentalWarning|experimental feature/)
      const probe = spawnSync(exe, [
        '--eval',
        `import(${JSON.stringify(resolve('dist/servicegroup/catalog/sqlite-engine.js'))}).then(async (m) => console.log((await m.loadSqliteEngine()).name))`,
      ], { encoding: 'utf8', timeout: 60_000 })
      assert.equal(probe.stdout.trim(), engine, probe.stderr)
    })
  }
})
