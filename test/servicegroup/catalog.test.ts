/** The services catalog on SQLite, PostgreSQL and MariaDB (random table prefixes, dropped after each test). */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SCHEMA_VERSION, openCatalog, parseCatalogUrl } from '../../src/servicegroup/index.js'
import { catalogUrl, type SqlBackend } from './support.js'

describe('servicegroup: catalog', { concurrency: 6 }, () => {
  for (const kind of ['sqlite', 'postgresql', 'mysql'] as SqlBackend[]) {
    it(`catalog-${kind}: concurrent registrations of one host and binary from separate connections make one record`, async (t) => {
      const { url, tablePrefix } = catalogUrl(t, kind)
      const catalogs = await Promise.all([0, 1, 2].map(() => openCatalog(url, { tablePrefix })))
      t.after(() => Promise.all(catalogs.map((c) => c.close())))
      const records = await Promise.all(
        Array.from({ length: 30 }, (_, i) => catalogs[i % 3]!.register({ host: 'node-1', binary: 'worker', topic: 'work', version: i % 5 })),
      )
      assert.equal(new Set(records.map((r) => r.id)).size, 1)
      const [only] = await catalogs[0]!.list()
      assert.equal((await catalogs[0]!.list()).length, 1)
      assert.equal(only!.version, 4, 'the version only rises')
      const other = await catalogs[1]!.register({ host: 'node-1', binary: 'api', topic: 'api' })
      assert.notEqual(other.id, only!.id)
    })

    it(`catalog-${kind}: records read back with their types; deleted records vanish and the name can be registered again`, async (t) => {
      const { url, tablePrefix } = catalogUrl(t, kind)
      const c = await openCatalog(url, { tablePrefix })
      t.after(() => c.close())
      const before = Date.now()
      const r = await c.register({ host: 'h', binary: 'b', topic: 't', availabilityZone: 'az1' })
      assert.deepEqual({ ...r, createdAt: undefined }, {
        id: r.id,
        host: 'h',
        binary: 'b',
        topic: 't',
        availabilityZone: 'az1',
        disabled: false,
        disabledReason: null,
        forcedDown: false,
        version: 0,
        reportCount: 0,
        lastSeenUp: null,
        createdAt: undefined,
        updatedAt: null,
        deletedAt: null,
      })
      assert.ok(Math.abs(r.createdAt.getTime() - before) < 5_000, `created_at ${r.createdAt.toISOString()} is not the server's now (UTC)`)
      const changed = await c.update(r.id, { disabled: true, disabledReason: 'maint', forcedDown: true })
      assert.deepEqual([changed.disabled, changed.disabledReason, changed.forcedDown], [true, 'maint', true])
      assert.deepEqual(await c.find('h', 'b'), changed)
      const deleted = await c.delete(r.id)
      assert.equal(deleted.id, r.id)
      await assert.rejects(c.get(r.id), { code: 'SERVICE_NOT_FOUND' })
      await assert.rejects(c.update(r.id, { disabled: false }), { code: 'SERVICE_NOT_FOUND' })
      await assert.rejects(c.delete(r.id), { code: 'SERVICE_NOT_FOUND' })
      assert.equal(await c.find('h', 'b'), undefined)
      const again = await c.register({ host: 'h', binary: 'b', topic: 't' })
      assert.notEqual(again.id, r.id)
      assert.deepEqual((await c.list({ host: 'h' })).map((x) => x.id), [again.id])
    })

    it(`catalog-${kind}: the schema is created once, versioned, and upgrades are serialised across connections`, async (t) => {
      const { url, tablePrefix } = catalogUrl(t, kind)
      const catalogs = await Promise.all([0, 1, 2, 3].map(() => openCatalog(url, { tablePrefix })))
      t.after(() => Promise.all(catalogs.map((c) => c.close())))
      assert.deepEqual(await Promise.all(catalogs.map((c) => c.migrate())), [SCHEMA_VERSION, SCHEMA_VERSION, SCHEMA_VERSION, SCHEMA_VERSION])
      assert.equal(catalogs[0]!.tables.schema, `${tablePrefix}services_schema`)
    })

    it(`catalog-${kind}: list filters by topic, host and binary in one statement`, async (t) => {
      const { url, tablePrefix } = catalogUrl(t, kind)
      const c = await openCatalog(url, { tablePrefix })
      t.after(() => c.close())
      for (let i = 0; i < 6; i++) await c.register({ host: `h${i % 3}`, binary: i < 3 ? 'a' : 'b', topic: i % 2 ? 'odd' : 'even' })
      const q = c.queryCount
      assert.equal((await c.list({ topic: 'odd' })).length, 3)
      assert.equal((await c.list({ host: 'h0', binary: 'b' })).length, 1)
      assert.equal(c.queryCount - q, 2)
    })
  }

  it('catalog: SQLAlchemy-style URLs are understood; anything else names [database] connection', () => {
    assert.deepEqual(parseCatalogUrl('sqlite:///state/x.db', '/etc/rollcall'), {
      dialect: 'sqlite',
      target: '/etc/rollcall/state/x.db',
      shownAs: 'sqlite:///state/x.db',
    })
    assert.equal(parseCatalogUrl('sqlite:////var/lib/x.db').target, '/var/lib/x.db')
    assert.equal(parseCatalogUrl('sqlite://').target, ':memory:')
    assert.equal(parseCatalogUrl('postgresql+psycopg2://nova:pw@db/nova').target, 'postgresql://nova:pw@db/nova')
    assert.equal(parseCatalogUrl('postgresql+psycopg2://nova:pw@db/nova').shownAs, 'postgresql+psycopg2://***@db/nova')
    assert.equal(parseCatalogUrl('mysql+pymysql://nova:pw@db/nova?charset=utf8').target, 'mysql://nova:pw@db/nova')
    assert.equal(parseCatalogUrl('mariadb://u@db/x').dialect, 'mysql')
    assert.throws(
      () => parseCatalogUrl('mongodb://u:pw@db/x'),
      (e: Error & { setting?: string }) => e.setting === '[database] connection' && !e.message.includes(':pw@'),
    )
  })

  it('catalog: an unreachable database fails with a retryable connection error naming it, without the password', async () => {
    await assert.rejects(
      openCatalog('postgresql://u:hunter2@127.0.0.1:1/x'),
      (e: Error & { code?: string; retryable?: boolean }) =>
        e.code === 'CONNECTION_FAILED' && e.retryable === true && e.message.includes('127.0.0.1:1') && !e.message.includes('hunter2'),
    )
  })
})
