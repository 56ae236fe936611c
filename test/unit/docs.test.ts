/** Generated docs and the driver registry stay true to the code. */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { BUILTIN_DRIVERS, loadDriver, type OptionSpecs } from '../../src/index.js'
import { renderDriversDoc } from '../../scripts/gen-docs.js'
import { renderOptionTypes } from '../../scripts/gen-option-types.js'

describe('unit: docs and registry', () => {
  it('docs: docs/drivers.md is what `npm run docs` generates from the declarations', async () => {
    assert.equal(readFileSync('docs/drivers.md', 'utf8'), await renderDriversDoc(), 'docs/drivers.md is stale: run npm run docs')
  })

  it('docs: src/coordination/config/driver-options.ts (RedisOptions, ...) is what `npm run docs` generates from the declarations', async () => {
    assert.equal(readFileSync('src/coordination/config/driver-options.ts', 'utf8'), await renderOptionTypes(), 'driver-options.ts is stale: run npm run docs')
  })

  it('registry: every driver file is registered, and every driver documents itself', async () => {
    // A driver is a folder with an index.ts (or memory.ts, one file); sql/ and kit/ are shared parts.
    const shared = new Set(['sql', 'kit'])
    const files = readdirSync('src/coordination/drivers', { withFileTypes: true })
      .filter((e) => (e.isDirectory() && !shared.has(e.name)) || (e.isFile() && e.name.endsWith('.ts')))
      .map((e) => e.name.replace(/\.ts$/, ''))
    const registered = new Set<string>()
    for (const scheme of Object.keys(BUILTIN_DRIVERS)) {
      const def = await loadDriver(scheme)
      registered.add(def.name)
      assert.ok(def.summary.length > 20, `${def.name}: summary`)
      assert.ok(def.urlForms.length > 0, `${def.name}: urlForms`)
      assert.ok(def.consistency.length > 20, `${def.name}: consistency`)
      for (const [name, spec] of Object.entries(def.options as OptionSpecs)) assert.ok(spec.doc.length > 3, `${def.name}: option ${name} has no doc`)
    }
    assert.deepEqual([...registered].sort(), files.sort())
  })
})
