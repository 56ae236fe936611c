/**
 * src/ has no import cycle, type-only imports included: scripts/import-cycles.mjs builds the
 * import graph and lists its strongly connected components (issue 30).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { it } from 'node:test'

it('src/ has no import cycle', () => {
  const run = spawnSync(process.execPath, ['scripts/import-cycles.mjs', 'src'], { encoding: 'utf8' })
  assert.equal(run.status, 0, run.stdout + run.stderr)
  assert.match(run.stdout, /^0 import cycles among \d+ files$/m)
})
