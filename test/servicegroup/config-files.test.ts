/**
 * oslo.config's conventions for configuration files, through the CLI: --config-file repeatable
 * (later files override earlier ones), --config-dir, a miscased [default] section and a repeated
 * --config reported instead of silently ignored.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'

const BIN = resolve('dist/cli/bin.js')

function rollcall(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('servicegroup: configuration files as oslo.config reads them', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-conf-'))
  const base = join(dir, 'base.conf')
  const bad = join(dir, 'override.conf')
  writeFileSync(base, '[DEFAULT]\nreport_interval = 10\n\n[database]\nconnection = sqlite:///catalog.sqlite\n')
  writeFileSync(bad, '[DEFAULT]\nreport_interval = often\n')

  it('config: --config-file repeats, and the later file overrides the earlier one', () => {
    const later = rollcall(['service', 'list', '--config-file', base, '--config-file', bad], dir)
    assert.equal(later.code, 8)
    assert.ok(later.stderr.includes(`report_interval] = "often"`) || later.stderr.includes('often'), later.stderr)
    assert.ok(later.stderr.includes(`${bad}:2`), later.stderr)
    const earlier = rollcall(['service', 'list', '--config-file', bad, '--config-file', base, '--json'], dir)
    assert.equal(earlier.code, 0, earlier.stderr)
    assert.deepEqual(JSON.parse(earlier.stdout), [])
  })

  it('config: --config-dir reads its *.conf files in name order, after --config-file', () => {
    const d = join(dir, 'nova.conf.d')
    mkdirSync(d)
    writeFileSync(join(d, '10-first.conf'), '[DEFAULT]\nreport_interval = often\n')
    writeFileSync(join(d, '20-second.conf'), '[DEFAULT]\nreport_interval = 5\n')
    writeFileSync(join(d, 'README'), 'not a config file\n')
    const ok = rollcall(['service', 'list', '--config-file', base, '--config-dir', d, '--json'], dir)
    assert.equal(ok.code, 0, ok.stderr)
    writeFileSync(join(d, '30-third.conf'), '[DEFAULT]\nreport_interval = never\n')
    const last = rollcall(['service', 'list', '--config-file', base, '--config-dir', d], dir)
    assert.equal(last.code, 8)
    assert.ok(last.stderr.includes('30-third.conf:2'), last.stderr)
  })

  it('config: a lowercase [default] section is reported, not silently ignored', () => {
    const file = join(dir, 'lower.conf')
    writeFileSync(file, '[default]\nreport_interval = 5\n\n[database]\nconnection = sqlite:///catalog.sqlite\n')
    const r = rollcall(['service', 'list', '--config', file, '--json'], dir)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /section \[default\] is not \[DEFAULT\].*ignored; write \[DEFAULT\]/)
    assert.ok(r.stderr.includes(`${file}:2`), r.stderr)
  })

  it('config: a repeated --config is a usage error that points at --config-file', () => {
    const r = rollcall(['service', 'list', '--config', base, '--config', bad], dir)
    assert.equal(r.code, 2)
    assert.match(r.stderr, /--config was given 2 times.*repeat --config-file/)
  })
})
