/**
 * A nova.conf as operators have it: Nova's sample config generator output, as Debian 12 ships it
 * (package nova-common 2:26.2.2-1~deb12u5, Nova 26.2.2 "Zed", file /usr/share/nova-common/nova.conf,
 * which the package's postinst installs as /etc/nova/nova.conf). It is oslo-config-generator's
 * output (every option commented out with its default under "# From nova.conf", "# From oslo.db",
 * ...) with the few lines Debian's packaging sets (state_path, [database] connection, ...). It is
 * committed byte for byte (Apache-2.0 text generated from Nova's options; 10,164 lines, 354 KB,
 * under the reader's 1 MiB limit), and each test edits it as an operator would: uncommenting a
 * line and giving it a value, or adding a line Nova 26 no longer lists ([DEFAULT]
 * memcached_servers, which older Nova releases read and upgraded nova.conf files still carry).
 * The mc driver finds its memcached servers under the names Nova read, in Nova's precedence.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { InvalidConfigError, loadConfig } from '../../src/servicegroup/index.js'
import { serverUrl } from '../support/backends.js'

const FIXTURE = 'test/servicegroup/fixtures/nova.conf'
const SAMPLE = readFileSync(FIXTURE, 'utf8')
/** The MD5 that nova-common 2:26.2.2-1~deb12u5's DEBIAN/md5sums lists for usr/share/nova-common/nova.conf. */
const DEBIAN_MD5 = '575b02a4258ac2556622f6eeeeef157c'

/** One operator edit: set `key = value` in `[section]`. */
type Edit = readonly [section: string, key: string, value: string]

/**
 * The sample as an operator leaves it after `edits`: the first line of the section that sets or
 * comments out the key (`#key = default`) becomes `key = value`; a key the sample does not list
 * is added under the section header. A section missing from the sample throws (the fixture changed).
 */
function operatorEdit(text: string, edits: readonly Edit[]): string {
  const lines = text.split('\n')
  for (const [section, key, value] of edits) {
    const start = lines.indexOf(`[${section}]`)
    if (start < 0) throw new Error(`the sample has no [${section}] section`)
    let end = lines.findIndex((l, i) => i > start && /^\[[^\]]+\]$/.test(l))
    if (end < 0) end = lines.length
    const at = lines.findIndex((l, i) => i > start && i < end && new RegExp(`^#?${key} =`).test(l))
    if (at >= 0) lines[at] = `${key} = ${value}`
    else lines.splice(start + 1, 0, `${key} = ${value}`)
  }
  return lines.join('\n')
}

/** A nova.conf in a fresh directory: the sample with `edits`, and its catalog in that directory. */
function novaConf(edits: readonly Edit[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-nova-'))
  const file = join(dir, 'nova.conf')
  writeFileSync(
    file,
    operatorEdit(SAMPLE, [['database', 'connection', `sqlite:///${join(dir, 'nova.sqlite')}`], ['DEFAULT', 'servicegroup_driver', 'mc'], ...edits]),
  )
  return file
}

describe('servicegroup: nova.conf memcache settings', () => {
  it("nova.conf: the fixture is Debian's generated file, byte for byte", () => {
    assert.equal(createHash('md5').update(readFileSync(FIXTURE)).digest('hex'), DEBIAN_MD5)
  })

  it('nova.conf: [cache] memcache_servers with [cache] enabled = true', async () => {
    const { config, warnings } = await loadConfig({
      file: novaConf([['cache', 'enabled', 'true'], ['cache', 'memcache_servers', '10.0.0.5:11211,10.0.0.6:11211']]),
      env: {},
    })
    assert.equal(config.driver, 'mc')
    assert.deepEqual(config.memcacheServers, ['10.0.0.5:11211', '10.0.0.6:11211'])
    // The other 58 sections and the lines Debian set are Nova's business, not worth a warning.
    assert.deepEqual(warnings, [])
  })

  it('nova.conf: [DEFAULT] memcached_servers comes before [cache], as in Nova', async () => {
    const { config } = await loadConfig({
      file: novaConf([['DEFAULT', 'memcached_servers', '10.0.0.9:11211'], ['cache', 'enabled', 'True'], ['cache', 'memcache_servers', '10.0.0.5:11211']]),
      env: {},
    })
    assert.deepEqual(config.memcacheServers, ['10.0.0.9:11211'])
  })

  it("nova.conf: [cache] enabled = True alone means oslo.cache's default localhost:11211", async () => {
    const { config } = await loadConfig({ file: novaConf([['cache', 'enabled', 'True']]), env: {} })
    assert.deepEqual(config.memcacheServers, ['localhost:11211'])
  })

  it('nova.conf: [cache] memcache_servers without enabled is ignored as Nova ignores it, and the error says so', async () => {
    const file = novaConf([['cache', 'memcache_servers', '10.0.0.5:11211'], ['keystone_authtoken', 'memcached_servers', 'controller:11211']])
    await assert.rejects(loadConfig({ file, env: {} }), (err: Error) => {
      assert.ok(err instanceof InvalidConfigError)
      assert.match(err.message, /\[DEFAULT\] memcached_servers.*\[cache\] memcache_servers with \[cache\] enabled = true/)
      return true
    })
    // [keystone_authtoken] memcached_servers is another service's setting: never read.
    const { config } = await loadConfig({ file, env: {}, overrides: { servicegroup_driver: 'db' } })
    assert.deepEqual(config.memcacheServers, [])
  })

  it('nova.conf: rollcall service list reads it with the mc driver against a real memcached', () => {
    const memcached = new URL(serverUrl('memcached'))
    const file = novaConf([['cache', 'enabled', 'true'], ['cache', 'memcache_servers', `${memcached.hostname}:${memcached.port}`]])
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
    const r = spawnSync(process.execPath, [resolve('dist/cli/bin.js'), 'service', 'list', '--config', file, '--json'], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    })
    assert.equal(r.status, 0, r.stderr)
    // Nothing on stderr but the mc driver's deprecation notice: the other 10,000 lines pass quietly.
    assert.deepEqual(r.stderr.split('\n').filter((l) => l !== '' && !l.includes('[ROLLCALL_DEP_MC]') && !l.startsWith('(Use `node --trace-deprecation')), [])
    assert.deepEqual(JSON.parse(r.stdout), [])
  })
})
