/**
 * The public surface is reported in api/*.api.md (API Extractor, from the built dist/*.d.ts of
 * both entry points, "." and "./servicegroup"), so that an accidental export or a breaking change
 * shows in review. This fails when the committed reports differ from the build: run npm run api.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'

const BIN = 'node_modules/@microsoft/api-extractor/bin/api-extractor'

describe('package: API report', () => {
  for (const entry of ['main', 'servicegroup']) {
    it(`package: api/${entry === 'main' ? 'rollcall' : 'rollcall-servicegroup'}.api.md matches the built declarations`, () => {
      assert.ok(existsSync('dist/index.d.ts'), 'dist/ is missing: run npm run build first')
      // Without --local, API Extractor exits non-zero when the report it derives differs from the committed one.
      const run = spawnSync(process.execPath, [BIN, 'run', '-c', `api/${entry}.json`], { encoding: 'utf8' })
      assert.equal(run.status, 0, `The API report is stale or the declarations have warnings: run npm run api and review the diff.\n${run.stdout}${run.stderr}`)
      assert.doesNotMatch(run.stdout, /Warning:/, `API Extractor warns: run npm run api and fix the warnings.\n${run.stdout}`)
    })
  }
})
