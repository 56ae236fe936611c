/**
 * `rollcall service list` as openstack's CLI users expect it (-f table|json|csv|value, -c
 * COLUMN), its --json (the os-services API's snake_case records), and no configuration at all.
 * The built binary, a SQLite catalog in a temporary directory.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { before, describe, it } from 'node:test'
import { loadConfig, openServiceGroup } from '../../src/servicegroup/index.js'

const BIN = resolve('dist/cli/bin.js')

function rollcall(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('servicegroup: service list formats', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-list-'))
  const conf = join(dir, 'rollcall.conf')

  before(async () => {
    writeFileSync(conf, '[database]\nconnection = sqlite:///catalog.sqlite\n')
    const { config } = await loadConfig({ file: conf, env: {} })
    const sg = await openServiceGroup(config)
    try {
      await sg.register({ host: 'node-a', binary: 'nova-compute', topic: 'compute' })
      await sg.register({ host: 'node-b', binary: 'nova-conductor', topic: 'conductor' })
    } finally {
      await sg.close({ leave: false })
    }
  })

  it('service list: -f csv with -c columns, in the order given', () => {
    const r = rollcall(['service', 'list', '--config', conf, '-f', 'csv', '-c', 'Host', '-c', 'status'], dir)
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(r.stdout.trim().split('\n'), ['"Host","Status"', '"node-a","enabled"', '"node-b","enabled"'])
  })

  it('service list: -f value prints bare values; -f json keys rows by heading', () => {
    const value = rollcall(['service', 'list', '--config', conf, '-f', 'value', '-c', 'Binary'], dir)
    assert.equal(value.code, 0, value.stderr)
    assert.deepEqual(value.stdout.trim().split('\n'), ['nova-compute', 'nova-conductor'])
    const json = rollcall(['service', 'list', '--config', conf, '-f', 'json', '-c', 'Host', '-c', 'Updated At'], dir)
    assert.deepEqual(JSON.parse(json.stdout), [{ Host: 'node-a', 'Updated At': '-' }, { Host: 'node-b', 'Updated At': '-' }])
  })

  it('service list: --json keeps the os-services API records; bad -f and -c are usage errors', () => {
    const r = rollcall(['service', 'list', '--config', conf, '--json'], dir)
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[]
    assert.deepEqual(Object.keys(rows[0]!).slice(0, 9), ['id', 'binary', 'host', 'zone', 'status', 'state', 'updated_at', 'disabled_reason', 'forced_down'])
    const badFormat = rollcall(['service', 'list', '--config', conf, '-f', 'yaml'], dir)
    assert.equal(badFormat.code, 2)
    assert.match(badFormat.stderr, /table, json, csv, value/)
    const badColumn = rollcall(['service', 'list', '--config', conf, '-c', 'Colour'], dir)
    assert.equal(badColumn.code, 2)
    assert.match(badColumn.stderr, /"Updated At"/)
  })

  it('service list: without any configuration it refuses instead of creating ./rollcall.sqlite', () => {
    const empty = mkdtempSync(join(tmpdir(), 'rollcall-noconf-'))
    const r = rollcall(['service', 'list'], empty)
    assert.equal(r.code, 8)
    assert.match(r.stderr, /No configuration found.*--config/)
    assert.deepEqual(readdirSync(empty), [], 'nothing was created')
    assert.ok(!existsSync(join(empty, 'rollcall.sqlite')))
  })
})
