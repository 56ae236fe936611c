/**
 * The conformance suite once more, against the built package (dist/, as npm ships it and a
 * consumer imports it through package.json's `exports`) rather than src/: on memory:// (the whole
 * API, drivers loaded lazily from dist/) and on Redis (a network driver and its client). The
 * other suites cover every backend on src/. npm test builds dist/ first; run `npm run build`
 * before running this file alone, or it tests a stale build. Node only: the redirection is a
 * module resolve hook (test/support/as-shipped.mjs), which Bun does not run; there the first case
 * fails and says so.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { it } from 'node:test'

const DIST_ENTRY = new URL('../../dist/index.js', import.meta.url)
if (!existsSync(DIST_ENTRY)) throw new Error(`${DIST_ENTRY.pathname} does not exist: run \`npm run build\` (npm test builds first)`)

const AS_SHIPPED = new URL('../support/as-shipped.mjs', import.meta.url).href
await import(AS_SHIPPED)
// Member processes the cases spawn import the package as shipped too.
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import=${AS_SHIPPED}`.trim()

it('dist: the suite below imports the built package, not src/', async () => {
  const library = await import('../../src/index.js')
  const shipped = (await import(DIST_ENTRY.href)) as typeof library
  const why =
    'src/index.js did not resolve to dist/index.js: the resolve hook of test/support/as-shipped.mjs is not in effect (it needs node:module register(), which Bun lacks)'
  assert.equal(library.connect, shipped.connect, why)
  assert.equal(library.RollcallError, shipped.RollcallError, why)
})

const { describeConformance } = await import('./suite.js')
await describeConformance('memory')
await describeConformance('redis')
