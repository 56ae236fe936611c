/** Configuration: the INI file, ROLLCALL_* variables, overrides; every validation error names its setting. */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { InvalidConfigError, SETTINGS, loadConfig, parseIni } from '../../src/servicegroup/index.js'

function file(t: TestContext, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-conf-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'rollcall.conf')
  writeFileSync(path, text)
  return path
}

describe('servicegroup: configuration', () => {
  it('config: the INI parser — sections, comments, "=" and ":", quotes, continuation lines, last value wins', () => {
    const doc = parseIni([
      '# a comment',
      '; another',
      '',
      '[DEFAULT]',
      'servicegroup_driver = tooz',
      'report_interval: 5',
      'report_interval = 7',
      'servicegroup_tooz_url = "redis://127.0.0.1:6379?timeout=5#x"',
      '[memcache]',
      'servers = a:1,',
      '  b:2',
      '[other]',
      'x=1',
    ].join('\n'))
    assert.equal(doc.get('DEFAULT')!.get('servicegroup_driver')!.value, 'tooz')
    assert.equal(doc.get('DEFAULT')!.get('report_interval')!.value, '7')
    assert.equal(doc.get('DEFAULT')!.get('servicegroup_tooz_url')!.value, 'redis://127.0.0.1:6379?timeout=5#x')
    assert.equal(doc.get('memcache')!.get('servers')!.value, 'a:1,\nb:2')
    assert.equal(doc.get('other')!.get('x')!.line, 13)
  })

  it('config: INI syntax errors name the file and line', () => {
    assert.throws(
      () => parseIni('[DEFAULT]\nthis line is wrong\n', 'x.conf'),
      (e: unknown) => e instanceof InvalidConfigError && e.setting === 'x.conf:2' && /x\.conf:2/.test(e.message),
    )
    assert.throws(() => parseIni('report_interval = 1\n', 'x.conf'), /x\.conf:1: "report_interval" comes before any \[section\]/)
    assert.throws(() => parseIni('[DEFAULT]\n  indented\n', 'x.conf'), /x\.conf:2/)
  })

  it("config: defaults with nothing set — db driver, Nova's timings, a SQLite file in the working directory", async () => {
    const { config, warnings } = await loadConfig({ env: {}, cwd: '/srv/app' })
    assert.equal(config.driver, 'db')
    assert.deepEqual([config.reportIntervalSeconds, config.serviceDownTimeSeconds, config.initialReportDelaySeconds], [10, 60, 5])
    assert.equal(config.database.connection, 'sqlite:////srv/app/rollcall.sqlite')
    assert.deepEqual(config.api.listen, { host: '127.0.0.1', port: 7979 })
    assert.deepEqual(warnings, [])
  })

  it('config: the file, then ROLLCALL_* variables, then overrides; the SQLite file sits beside the config file', async (t) => {
    const path = file(t, '[DEFAULT]\nreport_interval = 4\nservice_down_time = 30\n[database]\nconnection = sqlite:///state/services.db\n')
    const { config } = await loadConfig({
      file: path,
      env: { ROLLCALL_REPORT_INTERVAL: '3', ROLLCALL_SERVICE_DOWN_TIME: '20' },
      overrides: { service_down_time: '12' },
    })
    assert.equal(config.reportIntervalSeconds, 3)
    assert.equal(config.serviceDownTimeSeconds, 12)
    assert.equal(config.file, path)
    assert.equal(config.database.baseDir, join(path, '..'))
    const viaEnv = await loadConfig({ env: { ROLLCALL_CONFIG: path } })
    assert.equal(viaEnv.config.reportIntervalSeconds, 4)
    const noDb = await loadConfig({ file: file(t, '[DEFAULT]\n') })
    assert.match(noDb.config.database.connection, /^sqlite:\/\/\/.*rollcall-conf-.*\/rollcall\.sqlite$/)
  })

  it('config: every setting has exactly one ROLLCALL_* variable, and each variable is read', async () => {
    const envs = SETTINGS.map((s) => s.env)
    assert.equal(new Set(envs).size, envs.length)
    assert.ok(envs.every((e) => /^ROLLCALL_[A-Z_]+$/.test(e)))
    const { config } = await loadConfig({
      env: {
        ROLLCALL_SERVICEGROUP_DRIVER: 'zk',
        ROLLCALL_INITIAL_REPORT_DELAY: '1',
        ROLLCALL_REPORT_TO_PREVIOUS_DRIVER: 'mc',
        ROLLCALL_MEMCACHE_SERVERS: '127.0.0.1:11211',
        ROLLCALL_ZOOKEEPER_ADDRESS: 'zk1:2181,zk2:2181',
        ROLLCALL_ZOOKEEPER_RECV_TIMEOUT: '6000',
        ROLLCALL_ZOOKEEPER_SG_PREFIX: '/sg',
        ROLLCALL_DATABASE_CONNECTION: 'mysql://u:p@db/nova?charset=utf8',
        ROLLCALL_DATABASE_TABLE_PREFIX: 'rc_',
        ROLLCALL_API_TOKEN: 's3cret',
        ROLLCALL_API_LISTEN: '0.0.0.0:9000',
        ROLLCALL_SERVICEGROUP_TOOZ_URL: 'memory://',
        ROLLCALL_API_ALLOWED_HOSTS: 'Status.Example.com, rc',
      },
    })
    assert.equal(config.driver, 'zk')
    assert.equal(config.reportToPreviousDriver, 'mc')
    assert.deepEqual(config.zookeeper, { address: 'zk1:2181,zk2:2181', recvTimeoutMs: 6000, sgPrefix: '/sg' })
    assert.deepEqual(config.memcacheServers, ['127.0.0.1:11211'])
    assert.deepEqual(config.database, { connection: 'mysql://u:p@db/nova?charset=utf8', tablePrefix: 'rc_', baseDir: process.cwd() })
    assert.deepEqual(config.api, { token: 's3cret', allowedHosts: ['status.example.com', 'rc'], listen: { host: '0.0.0.0', port: 9000 } })
    assert.equal(config.initialReportDelaySeconds, 1)
  })

  const bad: [string, Record<string, string>, string][] = [
    ['an unknown driver', { ROLLCALL_SERVICEGROUP_DRIVER: 'etcd' }, '[DEFAULT] servicegroup_driver'],
    ['a report_interval that is not a number', { ROLLCALL_REPORT_INTERVAL: 'ten' }, '[DEFAULT] report_interval'],
    ['a negative report_interval', { ROLLCALL_REPORT_INTERVAL: '-1' }, '[DEFAULT] report_interval'],
    ['service_down_time 0', { ROLLCALL_SERVICE_DOWN_TIME: '0' }, '[DEFAULT] service_down_time'],
    ['a bad initial_report_delay', { ROLLCALL_INITIAL_REPORT_DELAY: 'soon' }, '[DEFAULT] initial_report_delay'],
    ['tooz without a URL', { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz' }, '[DEFAULT] servicegroup_tooz_url'],
    [
      'a tooz URL with an unknown scheme',
      { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'consul://h:8500' },
      '[DEFAULT] servicegroup_tooz_url',
    ],
    [
      'a tooz URL with an unknown option',
      { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://h:6379?timeuot=5' },
      '[DEFAULT] servicegroup_tooz_url',
    ],
    [
      'a tooz URL with a bad option value',
      { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://h:6379?timeout=soon' },
      '[DEFAULT] servicegroup_tooz_url',
    ],
    ['a malformed tooz URL', { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'not a url' }, '[DEFAULT] servicegroup_tooz_url'],
    ['an unknown previous driver', { ROLLCALL_REPORT_TO_PREVIOUS_DRIVER: 'db' }, '[DEFAULT] report_to_previous_driver'],
    ['a previous driver equal to the driver', {
      ROLLCALL_SERVICEGROUP_DRIVER: 'mc',
      ROLLCALL_MEMCACHE_SERVERS: 'h:11211',
      ROLLCALL_REPORT_TO_PREVIOUS_DRIVER: 'mc',
    }, '[DEFAULT] report_to_previous_driver'],
    ['mc without servers', { ROLLCALL_SERVICEGROUP_DRIVER: 'mc' }, '[memcache] servers'],
    ['a previous mc driver without servers', {
      ROLLCALL_SERVICEGROUP_DRIVER: 'tooz',
      ROLLCALL_SERVICEGROUP_TOOZ_URL: 'memory://',
      ROLLCALL_REPORT_TO_PREVIOUS_DRIVER: 'mc',
    }, '[memcache] servers'],
    ['a memcache server without a port', { ROLLCALL_MEMCACHE_SERVERS: 'cache1' }, '[memcache] servers'],
    ['zk without an address', { ROLLCALL_SERVICEGROUP_DRIVER: 'zk' }, '[zookeeper] address'],
    ['a bad zookeeper address', { ROLLCALL_ZOOKEEPER_ADDRESS: 'zk1:99999' }, '[zookeeper] address'],
    ['a bad recv_timeout', { ROLLCALL_ZOOKEEPER_RECV_TIMEOUT: '4s' }, '[zookeeper] recv_timeout'],
    ['a relative sg_prefix', { ROLLCALL_ZOOKEEPER_SG_PREFIX: 'servicegroups' }, '[zookeeper] sg_prefix'],
    ['a database URL of an unknown kind', { ROLLCALL_DATABASE_CONNECTION: 'oracle://u:pw@db/x' }, '[database] connection'],
    ['a table prefix with a dash', { ROLLCALL_DATABASE_TABLE_PREFIX: 'my-app' }, '[database] table_prefix'],
    ['a bad api listen address', { ROLLCALL_API_LISTEN: 'localhost' }, '[api] listen'],
  ]
  for (const [what, env, setting] of bad) {
    it(`config: ${what} is refused, naming ${setting}, the value and where it came from`, async () => {
      const value = Object.values(env).at(-1)!
      await assert.rejects(loadConfig({ env }), (err: unknown) => {
        assert.ok(err instanceof InvalidConfigError, String(err))
        assert.equal(err.code, 'INVALID_CONFIG')
        assert.equal(err.setting, setting)
        assert.ok(err.message.includes(setting), err.message)
        assert.ok(/ROLLCALL_[A-Z_]+/.test(err.message), `no source in: ${err.message}`)
        if (!/pw@|:p@/.test(value)) assert.ok(err.message.includes(value.split('?')[0]!.split(',')[0]!) || value === '', `no value in: ${err.message}`)
        return true
      })
    })
  }

  it('config: errors from a file say the file and line', async (t) => {
    const path = file(t, '[DEFAULT]\n\nreport_interval = often\n')
    await assert.rejects(
      loadConfig({ file: path, env: {} }),
      new RegExp(`\\[DEFAULT\\] report_interval = "often" \\(from ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3\\)`),
    )
    await assert.rejects(loadConfig({ file: `${path}.missing`, env: {} }), { code: 'INVALID_CONFIG', setting: '--config' })
    await assert.rejects(loadConfig({ env: {}, overrides: { 'nosuch.key': '1' } }), { code: 'INVALID_CONFIG', setting: 'nosuch.key' })
  })

  it('config: credentials never appear in errors or warnings', async () => {
    for (
      const env of [
        { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://admin:hunter2@h:6379?timeuot=1' },
        { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'nosuch://admin:hunter2@h:6379' },
        { ROLLCALL_DATABASE_CONNECTION: 'oracle://admin:hunter2@db/x' },
      ]
    ) {
      await assert.rejects(loadConfig({ env }), (err: Error) => !err.message.includes('hunter2') && err.message.includes('***'))
    }
    const { warnings } = await loadConfig({
      env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://admin:hunter2@h:6379?timeout=90' },
    })
    assert.ok(warnings.length > 0 && warnings.every((w) => !w.message.includes('hunter2')))
  })

  it('config: service_down_time ≤ report_interval is raised to 2.5 × report_interval, with a warning', async () => {
    const { config, warnings } = await loadConfig({ env: { ROLLCALL_REPORT_INTERVAL: '10', ROLLCALL_SERVICE_DOWN_TIME: '10' } })
    assert.equal(config.serviceDownTimeSeconds, 25)
    assert.equal(warnings[0]!.setting, '[DEFAULT] service_down_time')
    assert.match(warnings[0]!.message, /Setting service_down_time to: 25/)
  })

  it('config: a tooz timeout shorter than two reports, or longer than service_down_time, is explained', async () => {
    const short = await loadConfig({ env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://h:6379?timeout=5' } })
    assert.equal(short.warnings.length, 1)
    assert.match(short.warnings[0]!.message, /membership timeout \(5 s\) is shorter than two report intervals \(2 × report_interval = 20 s\)/)
    const zkDefault = await loadConfig({ env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'kazoo://h:2181' } })
    assert.match(zkDefault.warnings[0]!.message, /zookeeper membership timeout \(10 s\)/, 'the zookeeper default (10 s) is read from the driver')
    const fits = await loadConfig({
      env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'kazoo://h:2181', ROLLCALL_REPORT_INTERVAL: '4' },
    })
    assert.deepEqual(fits.warnings, [], '10 s fits report_interval 4 and service_down_time 60')
    const tooLong = await loadConfig({
      env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'memcached://h:11211?membership_timeout=90&timeout=5' },
    })
    assert.match(tooLong.warnings[0]!.message, /\(90 s\) is longer than service_down_time \(60 s\).*stays up for up to 90 s/)
    const defaults = await loadConfig({ env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://h:6379' } })
    assert.deepEqual(defaults.warnings, [], 'redis default (30 s) fits')
    const migrating = await loadConfig({
      env: {
        ROLLCALL_SERVICEGROUP_DRIVER: 'tooz',
        ROLLCALL_SERVICEGROUP_TOOZ_URL: 'redis://h:6379?timeout=30',
        ROLLCALL_REPORT_TO_PREVIOUS_DRIVER: 'mc',
        ROLLCALL_MEMCACHE_SERVERS: 'h:11211',
      },
    })
    assert.match(migrating.warnings[0]!.message, /readers still on mc; rollcall migrate check reports/)
    assert.deepEqual(
      (await loadConfig({ env: { ROLLCALL_SERVICEGROUP_DRIVER: 'tooz', ROLLCALL_SERVICEGROUP_TOOZ_URL: 'memory://' } })).warnings,
      [],
      'memory:// never expires',
    )
  })

  it('config: a misspelt key in a known section is reported; other sections and keys (a whole nova.conf) are ignored', async (t) => {
    const path = file(t, '[DEFAULT]\nservicegroup_drvier = tooz\nmy_ip = 10.0.0.1\n[database]\nmax_pool_size = 5\n[libvirt]\nvirt_type = kvm\n')
    const { warnings } = await loadConfig({ file: path, env: {} })
    assert.equal(warnings.length, 1)
    assert.match(warnings[0]!.message, /:2: unknown setting \[DEFAULT\] servicegroup_drvier is ignored; did you mean servicegroup_driver\?/)
  })
})
