/**
 * The public surface is reported in api/*.api.md (API Extractor, from the built dist/*.d.ts of
 * every entry point, ".", "./servicegroup" and "./web"), so that an accidental export or a breaking change
 * shows in review; docs/reference/ is the API reference api-documenter writes from the same
 * model. This fails when the committed reports or reference differ from the build: run npm run api.
 * It also fails on a type a public signature uses that its entry point does not export
 * (ae-forgotten-export is a warning in api/*.json, not a note in the report).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'

const BIN = 'node_modules/@microsoft/api-extractor/bin/api-extractor'
const DOCUMENTER = 'node_modules/@microsoft/api-documenter/bin/api-documenter'

/** Every file under `dir`, by its path relative to it. */
function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, name)
    if (name.endsWith('.md')) out.set(name, readFileSync(path, 'utf8'))
  }
  return out
}

/** Each entry point's API Extractor configuration (api/NAME.json), its report and its reference folder. */
const ENTRIES = [
  { config: 'main', report: 'rollcall', reference: 'rollcall' },
  { config: 'servicegroup', report: 'rollcall-servicegroup', reference: 'servicegroup' },
  { config: 'web', report: 'rollcall-web', reference: 'web' },
]

/** API Extractor's note in a report on a type a signature uses that the entry point does not export; group 1 is its name. */
const FORGOTTEN = /\(ae-forgotten-export\) The symbol "(\w+)" needs to be exported/g

/** True when another entry point's committed report exports `name`. */
function exportedBySibling(name: string, report: string): boolean {
  const declared = new RegExp(`^export (?:declare )?(?:abstract )?(?:class|interface|type|function|const|enum) ${name}\\b`, 'm')
  return ENTRIES.some((e) => e.report !== report && declared.test(readFileSync(`api/${e.report}.api.md`, 'utf8')))
}

describe('package: API report', () => {
  for (const { config: entry, report, reference } of ENTRIES) {
    it(`package: api/${report}.api.md matches the built declarations`, () => {
      assert.ok(existsSync('dist/index.d.ts'), 'dist/ is missing: run npm run build first')
      // Without --local, API Extractor exits non-zero when the report it derives differs from the committed one.
      const run = spawnSync(process.execPath, [BIN, 'run', '-c', `api/${entry}.json`], { encoding: 'utf8' })
      assert.equal(run.status, 0, `The API report is stale or the declarations have warnings: run npm run api and review the diff.\n${run.stdout}${run.stderr}`)
      assert.doesNotMatch(run.stdout, /Warning:/, `API Extractor warns: run npm run api and fix the warnings.\n${run.stdout}`)
      // rollcall/web's signatures name types of the other entries (a Coordinator, a ServiceGroup): its report notes them
      // (api/web.json), and each must be exported by a sibling entry; a type no entry exports is a fault.
      const borrowed = [...readFileSync(`api/${report}.api.md`, 'utf8').matchAll(FORGOTTEN)].map((m) => m[1]!)
      assert.deepEqual(borrowed.filter((name) => !exportedBySibling(name, report)), [], `types api/${report}.api.md uses that no entry point exports`)
      // The run above wrote the doc model; the reference written from it must be the committed one.
      const out = mkdtempSync(join(tmpdir(), 'rollcall-reference-'))
      try {
        const doc = spawnSync(process.execPath, [DOCUMENTER, 'markdown', '-i', `node_modules/.cache/api-model/${entry}`, '-o', out], { encoding: 'utf8' })
        assert.equal(doc.status, 0, `${doc.stdout}${doc.stderr}`)
        const committed = tree(`docs/reference/${reference}`)
        const fresh = tree(out)
        const stale = [...new Set([...committed.keys(), ...fresh.keys()])].filter((f) => committed.get(f) !== fresh.get(f))
        assert.deepEqual(stale, [], `docs/reference/ is stale (${stale.length} files differ): run npm run api`)
      } finally {
        rmSync(out, { recursive: true, force: true })
      }
    })
  }
})
