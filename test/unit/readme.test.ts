/** The README's library example runs as printed (against the test Redis). */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { serverUrl } from '../support/backends.js'

describe('unit: readme', () => {
  it('readme: the "Use it in your code" example runs as printed', () => {
    const readme = readFileSync('README.md', 'utf8')
    const section = readme.slice(readme.indexOf('## Use it in your code'))
    const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
    assert.ok(code, 'no ts block in the section')
    const dir = mkdtempSync(join(process.cwd(), 'node_modules', '.readme-'))
    const file = join(dir, 'example.mts')
    // The only change: the package name resolves to this checkout's source, and the URL to the test server.
    writeFileSync(file, code.replace("from 'rollcall'", `from '${join(process.cwd(), 'src/index.ts')}'`).replace('redis://127.0.0.1:6379', serverUrl('redis')))
    const out = execFileSync(process.execPath, ['--import', 'tsx', file], { encoding: 'utf8', timeout: 30_000 })
    assert.match(out, /api-1/)
    assert.match(out, /zone: 'az1'/)
    assert.match(out, /holding the lock, fencing token/)
  })
})
