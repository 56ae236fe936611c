/**
 * A nova.conf as operators have it (the shape of Nova's sample config generator output: every
 * option commented out with its default, many sections, a few lines set): the mc driver finds its
 * memcached servers under the names Nova read, in Nova's precedence.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { InvalidConfigError, loadConfig } from '../../src/servicegroup/index.js'
import { serverUrl } from '../support/backends.js'

const SAMPLE = readFileSync('test/servicegroup/fixtures/nova.conf', 'utf8')

/** The sample with its placeholders filled (an empty string leaves the line out). */
function novaConf(fill: { memcachedServers?: string; cacheEnabled?: string; cacheServers?: string }): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-nova-'))
  const file = join(dir, 'nova.conf')
  writeFileSync(file, SAMPLE
    .replace('@MEMCACHED_SERVERS@', fill.memcachedServers ? `memcached_servers = ${fill.memcachedServers}` : '')
    .replace('@CACHE_ENABLED@', fill.cacheEnabled ? `enabled = ${fill.cacheEnabled}` : '')
    .replace('@CACHE_SERVERS@', fill.cacheServers ? `memcache_servers = ${fill.cacheServers}` : '')
    .replace('@DATABASE@', `sqlite:///${join(dir, 'nova.sqlite')}`))
  return file
}

describe('servicegroup: nova.conf memcache settings', () => {
  it('nova.conf: [cache] memcache_servers with [cache] enabled = true', async () => {
    const { config, warnings } = await loadConfig({ file: novaConf({ cacheEnabled: 'true', cacheServers: '10.0.0.5:11211,10.0.0.6:11211' }), env: {} })
    assert.equal(config.driver, 'mc')
    assert.deepEqual(config.memcacheServers, ['10.0.0.5:11211', '10.0.0.6:11211'])
    assert.deepEqual(warnings, [])
  })

  it('nova.conf: [DEFAULT] memcached_servers comes before [cache], as in Nova', async () => {
    const { config } = await loadConfig({ file: novaConf({ memcachedServers: '10.0.0.9:11211', cacheEnabled: 'True', cacheServers: '10.0.0.5:11211' }), env: {} })
    assert.deepEqual(config.memcacheServers, ['10.0.0.9:11211'])
  })

  it('nova.conf: [cache] enabled = True alone means oslo.cache\'s default localhost:11211', async () => {
    const { config } = await loadConfig({ file: novaConf({ cacheEnabled: 'True' }), env: {} })
    assert.deepEqual(config.memcacheServers, ['localhost:11211'])
  })

  it('nova.conf: [cache] memcache_servers without enabled is ignored as Nova ignores it, and the error says so', async () => {
    const file = novaConf({ cacheServers: '10.0.0.5:11211' })
    await assert.rejects(loadConfig({ file, env: {} }), (err: Error) => {
      assert.ok(err instanceof InvalidConfigError)
      assert.match(err.message, /\[DEFAULT\] memcached_servers.*\[cache\] memcache_servers with \[cache\] enabled = true/)
      return true
    })
    // [keystone_authtoken] memcached_servers (in the sample) is another service's setting: never read.
    const { config } = await loadConfig({ file, env: {}, overrides: { servicegroup_driver: 'db' } })
    assert.deepEqual(config.memcacheServers, [])
  })

  it('nova.conf: rollcall service list reads it with the mc driver against a real memcached', () => {
    const memcached = new URL(serverUrl('memcached'))
    const file = novaConf({ cacheEnabled: 'true', cacheServers: `${memcached.hostname}:${memcached.port}` })
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
    const r = spawnSync(process.execPath, [resolve('dist/cli/bin.js'), 'service', 'list', '--config', file, '--json'], { env, encoding: 'utf8', timeout: 60_000 })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), [])
  })
})
