/**
 * Nova's nova/tests/unit/servicegroup/test_db_servicegroup.py and test_api.py, ported: the db
 * driver on a real SQLite catalog, time driven by an explicit clock where Nova mocked utcnow.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createServiceGroup, type ServiceRecord } from '../../src/servicegroup/index.js'
import { DbDriver, dbIsUp } from '../../src/servicegroup/drivers/db.js'
import { FakeTimers } from './fake-timers.js'
import { openTestCatalog, recordingLogger } from './support.js'

const DOWN_TIME = 15

function at(base: Date, seconds: number): Date {
  return new Date(base.getTime() + seconds * 1000)
}

describe('servicegroup: Nova db driver tests', () => {
  it('db: test_is_up — up at 0 s and at exactly service_down_time, down 1 s later, and updated_at cannot revive it', () => {
    const now = new Date('2024-05-01T12:00:00Z')
    const service = { host: 'fake-host', topic: 'compute', createdAt: now, updatedAt: now, lastSeenUp: now, forcedDown: false }
    assert.equal(dbIsUp(service, DOWN_TIME, now.getTime()), true)
    assert.equal(dbIsUp(service, DOWN_TIME, at(now, 15).getTime()), true, 'the bound is inclusive')
    assert.equal(dbIsUp(service, DOWN_TIME, at(now, 16).getTime()), false)
    // "disable/enable while down": updated_at moves, last_seen_up does not.
    assert.equal(dbIsUp({ ...service, updatedAt: at(now, 16) }, DOWN_TIME, at(now, 16).getTime()), false)
    // Never reported: created_at counts.
    assert.equal(dbIsUp({ ...service, lastSeenUp: null, createdAt: at(now, 16) }, DOWN_TIME, at(now, 16).getTime()), true)
  })

  it('db: Liberty boundaries — last_seen_up 15 s ago up, 14 s ago up, 18 s ago down; skew ahead counts up to the bound', () => {
    const now = Date.parse('2015-06-01T00:00:00Z')
    const ago = (s: number): { host: string; topic: string; lastSeenUp: Date; createdAt: Date } => ({
      host: 'h',
      topic: 't',
      lastSeenUp: new Date(now - s * 1000),
      createdAt: new Date(0),
    })
    assert.equal(dbIsUp(ago(15), DOWN_TIME, now), true)
    assert.equal(dbIsUp(ago(14), DOWN_TIME, now), true)
    assert.equal(dbIsUp(ago(18), DOWN_TIME, now), false)
    assert.equal(dbIsUp(ago(-15), DOWN_TIME, now), true, 'a beat 15 s in the future (clock skew) is fresh')
    assert.equal(dbIsUp(ago(-16), DOWN_TIME, now), false)
  })

  it('db: times as Nova rows carry them — naive strings are UTC, microseconds accepted', () => {
    const now = Date.parse('2016-11-02T22:40:40Z')
    assert.equal(dbIsUp({ host: 'h', topic: 't', lastSeenUp: '2016-11-02T22:40:31.000000', createdAt: '2016-01-01 00:00:00' }, DOWN_TIME, now), true)
    assert.equal(dbIsUp({ host: 'h', topic: 't', lastSeenUp: '2016-11-02T22:40:24.999999', createdAt: '2016-01-01 00:00:00' }, DOWN_TIME, now), false)
    assert.equal(dbIsUp({ host: 'h', topic: 't', lastSeenUp: '2016-11-02T23:40:31+01:00', createdAt: null }, DOWN_TIME, now), true)
  })

  for (const driver of ['db', 'mc'] as const) {
    it(`${driver}: test_join — the report timer is (report_interval=1, initial_delay=5) and join resolves to undefined`, async (t) => {
      const catalog = await openTestCatalog(t)
      const timers = new FakeTimers()
      const sg = await createServiceGroup({ catalog, driver, reportIntervalSeconds: 1, memcacheServers: ['127.0.0.1:1'], timers })
      t.after(() => sg.close({ leave: false }))
      const svc = await sg.register({ host: 'fake-host', binary: 'nova-compute', topic: 'fake-topic' })
      assert.equal(await sg.join('fake-host', 'fake-topic', svc), undefined)
      assert.deepEqual(timers.calls, [{ kind: 'timeout', ms: 5_000 }])
      await timers.advance(5_000)
      assert.deepEqual(timers.calls[1], { kind: 'interval', ms: 1_000 })
    })

    it(`${driver}: join without a service record is refused (Nova: "service is a mandatory argument")`, async (t) => {
      const catalog = await openTestCatalog(t)
      const sg = await createServiceGroup({ catalog, driver, memcacheServers: ['127.0.0.1:1'] })
      t.after(() => sg.close())
      await assert.rejects(sg.join('fake-host', 'fake-topic'), { name: 'TypeError', message: /service is a mandatory argument/ })
    })
  }

  it('db: test_report_state — report_count 10 → 11 in one save, last_seen_up set by the store, latch stays off', async (t) => {
    const catalog = await openTestCatalog(t)
    const driver = new DbDriver({ catalog, serviceDownTimeSeconds: DOWN_TIME })
    let svc = await catalog.register({ host: 'fake-host', binary: 'nova-compute', topic: 'compute' })
    svc = await catalog.update(svc.id, { reportCount: 10 })
    const seen = svc.lastSeenUp
    const queries = catalog.queryCount
    await driver.report(svc)
    assert.equal(catalog.queryCount - queries, 1, 'one save')
    assert.equal(svc.reportCount, 11)
    assert.equal((await catalog.get(svc.id)).reportCount, 11)
    assert.ok(svc.lastSeenUp && seen && svc.lastSeenUp.getTime() >= seen.getTime())
  })

  it('db: the store moves last_seen_up only when report_count rises (admin saves and replays do not)', async (t) => {
    const catalog = await openTestCatalog(t)
    const svc = await catalog.register({ host: 'h', binary: 'b', topic: 't' })
    assert.equal(svc.lastSeenUp, null)
    const first = await catalog.update(svc.id, { reportCount: 1 })
    assert.ok(first.lastSeenUp)
    await new Promise((r) => setTimeout(r, 20))
    for (const changes of [{ disabled: true, disabledReason: 'x' }, { forcedDown: true }, { reportCount: 1 }, { reportCount: 0 }]) {
      const after = await catalog.update(svc.id, changes)
      assert.equal(after.lastSeenUp!.getTime(), first.lastSeenUp.getTime(), `${JSON.stringify(changes)} moved last_seen_up`)
      assert.ok(after.updatedAt!.getTime() > first.lastSeenUp.getTime(), 'updated_at is bumped by any save')
    }
    const next = await catalog.update(svc.id, { reportCount: 2 })
    assert.ok(next.lastSeenUp!.getTime() > first.lastSeenUp.getTime())
  })

  for (
    const [what, breakIt, level, message] of [
      [
        'test_report_state_error_handling_timeout (the database cannot be reached)',
        async (c: Awaited<ReturnType<typeof openTestCatalog>>) => c.close(),
        'warn',
        /^Lost connection to the services table/,
      ],
      [
        'test_report_state_unexpected_error',
        async (c: Awaited<ReturnType<typeof openTestCatalog>>) => c.dropTables(),
        'error',
        /^Unexpected error while reporting service status/,
      ],
      [
        'test_report_state_service_not_found',
        async (c: Awaited<ReturnType<typeof openTestCatalog>>, s: ServiceRecord) => void (await c.delete(s.id)),
        'error',
        /^The services table record for the nova-compute service on host fake-host is gone\./,
      ],
    ] as const
  ) {
    it(`db: ${what} — the report does not throw and the latch is set`, async (t) => {
      const catalog = await openTestCatalog(t)
      const logger = recordingLogger()
      const timers = new FakeTimers()
      const sg = await createServiceGroup({ catalog, driver: 'db', reportIntervalSeconds: 1, logger, timers })
      t.after(() => sg.close({ leave: false }))
      const svc = await sg.register({ host: 'fake-host', binary: 'nova-compute', topic: 'compute' })
      await sg.join('fake-host', 'compute', svc)
      await timers.advance(5_000)
      assert.equal(sg.health()[0]!.disconnected, false)
      await breakIt(catalog, svc)
      await timers.advance(1_000)
      assert.equal(sg.health()[0]!.disconnected, true)
      const line = logger.lines.find((l) => l.level === level)
      assert.ok(line && message.test(line.msg), JSON.stringify(logger.lines))
    })
  }

  it("db: test_get_updated_time — the record's updated_at, unchanged", async (t) => {
    const catalog = await openTestCatalog(t)
    const sg = await createServiceGroup({ catalog, driver: 'db' })
    t.after(() => sg.close())
    const updated = '2016-11-02T22:40:31.000000'
    const time = await sg.getUpdatedTime({ host: 'h', topic: 't', updatedAt: updated, createdAt: updated })
    assert.equal(time!.toISOString(), '2016-11-02T22:40:31.000Z')
    assert.equal(await sg.getUpdatedTime({ host: 'h', topic: 't', updatedAt: null }), null)
  })
})

describe('servicegroup: Nova API tests (test_api.py, test_service.py)', () => {
  it("api: test_service_is_up — the driver's verdict, exactly; forced_down is false without asking", async (t) => {
    const catalog = await openTestCatalog(t)
    const sg = await createServiceGroup({ catalog, driver: 'db', serviceDownTimeSeconds: DOWN_TIME })
    t.after(() => sg.close())
    const fresh = { host: 'fake-host', topic: 'compute', forcedDown: false, createdAt: new Date(), lastSeenUp: new Date() }
    const stale = { ...fresh, lastSeenUp: new Date(Date.now() - 60_000) }
    assert.equal(await sg.isUp(fresh), true)
    assert.equal(await sg.isUp(stale), false)
    // A record whose times would throw if read proves the driver is not consulted.
    assert.equal(await sg.isUp({ host: 'fake-host', topic: 'compute', forcedDown: true, lastSeenUp: 'not a time' }), false)
    await assert.rejects(sg.isUp({ host: 'fake-host', topic: 'compute', forcedDown: false, lastSeenUp: 'not a time' }), TypeError)
  })

  it('api: test_join — a driver that needs no record (tooz) joins with none and resolves to undefined', async (t) => {
    const catalog = await openTestCatalog(t)
    const sg = await createServiceGroup({ catalog, driver: 'tooz', toozUrl: `memory://${Math.random()}` })
    t.after(() => sg.close())
    assert.equal(await sg.join('fake-host', 'fake-topic'), undefined)
    assert.equal(await sg.isUp({ host: 'fake-host', topic: 'fake-topic' }), true)
  })

  it('api: test_service_with_min_down_time — 10/10 becomes 25, with a warning', async (t) => {
    const catalog = await openTestCatalog(t)
    const logger = recordingLogger()
    const sg = await createServiceGroup({ catalog, reportIntervalSeconds: 10, serviceDownTimeSeconds: 10, logger })
    t.after(() => sg.close())
    assert.equal(sg.settings.serviceDownTimeSeconds, 25)
    assert.match(logger.lines[0]!.msg, /Report interval must be less than service down time.*Setting service_down_time to: 25/)
    const sg2 = await createServiceGroup({ catalog, reportIntervalSeconds: 10, serviceDownTimeSeconds: 11 })
    t.after(() => sg2.close())
    assert.equal(sg2.settings.serviceDownTimeSeconds, 11)
  })
})
