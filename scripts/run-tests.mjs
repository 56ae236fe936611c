#!/usr/bin/env node
// Runs the test files with node's own runner (whose closing lines CI reads), TypeScript through
// tsx. `node scripts/run-tests.mjs [filter...]` runs only files whose path contains a filter.
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'

const filters = process.argv.slice(2)
const files = []
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p)
    else if (name.endsWith('.test.ts') && (filters.length === 0 || filters.some((f) => p.includes(f)))) files.push(p)
  }
}
walk('test')
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`)
  process.exit(1)
}
const concurrency = process.env.ROLLCALL_TEST_CONCURRENCY ?? '4'
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files], {
  stdio: 'inherit',
})
process.exit(r.status ?? 1)
