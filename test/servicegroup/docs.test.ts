/** docs/servicegroup.md, docs/migration.md and docs/deprecation.md stay true to the code. */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { DEPRECATION_CODES, DRIVER_NAMES, SETTINGS, TIMING_DEFAULTS, ZOOKEEPER_DEFAULTS, loadConfig, parseIni,
  type SettingSpec } from '../../src/servicegroup/index.js'
import { serviceCommands } from '../../src/cli/commands/service.js'
import { migrateCommands } from '../../src/cli/commands/migrate.js'
import { fencedBlocks } from '../support/doc-blocks.js'

const sg = readFileSync('docs/servicegroup.md', 'utf8')
const migration = readFileSync('docs/migration.md', 'utf8')
const deprecation = readFileSync('docs/deprecation.md', 'utf8')

/** The options-table row docs/servicegroup.md must hold for a setting. */
function row(s: SettingSpec): string {
  return `| \`[${s.section}] ${s.key}\` | ${s.default === '' ? '(unset)' : `\`${s.default}\``} | ${s.unit} | \`${s.env}\` | ${s.doc} |`
}

describe('servicegroup: docs', () => {
  it('docs: every setting has its row (default, unit, environment variable, meaning) in servicegroup.md, and no other setting is listed', () => {
    for (const s of SETTINGS) assert.ok(sg.includes(row(s)), `docs/servicegroup.md lacks or misstates:\n${row(s)}`)
    const config = sg.slice(sg.indexOf('## Configuration'), sg.indexOf('## The catalog'))
    const listed = [...config.matchAll(/^\| `\[(\w+)\] (\w+)` \|/gm)].map((m) => `${m[1]}.${m[2]}`)
    assert.deepEqual(listed, SETTINGS.map((s) => `${s.section}.${s.key}`))
    assert.equal(SETTINGS.find((s) => s.key === 'report_interval')!.default, String(TIMING_DEFAULTS.reportIntervalSeconds))
    assert.equal(SETTINGS.find((s) => s.key === 'recv_timeout')!.default, String(ZOOKEEPER_DEFAULTS.recvTimeoutMs))
  })

  it('docs: every driver has a column in the drivers table', () => {
    const header = sg.split('\n').find((l) => l.startsWith('| | `db`'))
    assert.ok(header, 'no drivers table')
    for (const d of DRIVER_NAMES) assert.ok(header.includes(`\`${d}\``), `no column for ${d}`)
  })

  it('docs: every servicegroup_tooz_url example is accepted by the configuration check', async () => {
    const table = sg.slice(sg.indexOf('### `servicegroup_tooz_url` for each backend'), sg.indexOf('## Configuration'))
    const urls = [...table.matchAll(/^\| [^|]+\| `([a-z0-9+]+:\/\/[^`]*)`/gm)].map((m) => m[1]!)
    assert.ok(urls.length >= 8, `found ${urls.length} URLs`)
    for (const url of urls) {
      await loadConfig({ env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: url } }).catch((err: Error) =>
        assert.fail(`${url}: ${err.message}`)
      )
    }
  })

  it('docs: every CLI command is documented with its options', () => {
    for (const c of [...serviceCommands, ...migrateCommands]) {
      assert.ok(sg.includes(`\`rollcall ${c.name}`), `docs/servicegroup.md does not show rollcall ${c.name}`)
      for (const opt of Object.keys(c.options ?? {})) {
        if (['config', 'config-file', 'config-dir', 'set', 'verbose'].includes(opt)) continue
        const line = sg.split('\n').find((l) => l.includes(`\`rollcall ${c.name}`) && l.includes(`--${opt}`))
        assert.ok(line, `docs/servicegroup.md does not show --${opt} of rollcall ${c.name}`)
      }
    }
  })

  it('docs: every INI snippet of migration.md and servicegroup.md parses and validates', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-docs-'))
    try {
      const snippets = fencedBlocks(['docs/servicegroup.md', 'docs/migration.md'], ['ini']).map((b) => b.code)
      assert.ok(snippets.length >= 5)
      for (const [i, text] of snippets.entries()) {
        parseIni(text, `snippet ${i}`)
        const file = join(dir, `s${i}.conf`)
        writeFileSync(file, text)
        await loadConfig({ file, env: {} }).catch((err: Error) => assert.fail(`snippet ${i}: ${err.message}\n${text}`))
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('docs: deprecation.md names both warning codes, and migration.md uses the migrate command as the CLI spells it', () => {
    for (const code of Object.values(DEPRECATION_CODES)) assert.ok(deprecation.includes(code), code)
    assert.match(migration, /rollcall migrate check --from mc --to tooz/)
    assert.match(migration, /report_to_previous_driver = mc/)
  })
})
