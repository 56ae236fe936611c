/**
 * The report loop on a fake clock (Nova's _report_state and join timer tests, made about the one
 * loop every driver shares): timing, the latch, logging once per outage, and that nothing a
 * report throws can stop the loop. The driver here is a script of outcomes; the real drivers are
 * exercised against real servers in drivers/*.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BackendError, ConnectionError, ServiceNotFoundError } from '../../src/index.js'
import { Reporter, type ServiceGroupDriver, type ServiceRecord } from '../../src/servicegroup/index.js'
import { FakeTimers, settle } from './fake-timers.js'
import { recordingLogger, serviceRecord } from './support.js'

function record(): ServiceRecord {
  return serviceRecord({ id: 1, host: 'fake-host', binary: 'nova-compute', topic: 'compute', version: 0, reportCount: 10 })
}

/** A driver whose report() follows a script: undefined = succeed, an Error = throw it, a Promise = wait for it. */
function scripted(script: (n: number) => Error | Promise<void> | undefined): ServiceGroupDriver & { reports: number } {
  const d = {
    name: 'db' as const,
    backendName: 'the services table',
    reportsOnJoin: false,
    needsServiceRecord: true,
    keepsReportTime: false,
    stats: { reads: 0, writes: 0 },
    reports: 0,
    async start() {},
    async report() {
      const outcome = script(d.reports++)
      if (outcome instanceof Error) throw outcome
      await outcome
    },
    async isUp() {
      return true
    },
    async getAll() {
      return { isUp: () => true, reportedAt: () => null }
    },
    async leave() {},
    async close() {},
  }
  return d
}

describe('servicegroup: reporter', () => {
  it('reporter: first report after the initial delay, then one every interval (Nova test_join: add_timer_args(1, fn, initial_delay=5))', async () => {
    const timers = new FakeTimers()
    const driver = scripted(() => undefined)
    const r = new Reporter({ driver, service: record(), intervalMs: 1_000, initialDelayMs: 5_000, logger: recordingLogger(), timers })
    r.start()
    assert.deepEqual(timers.calls, [{ kind: 'timeout', ms: 5_000 }])
    await timers.advance(4_999)
    assert.equal(driver.reports, 0)
    await timers.advance(1)
    assert.equal(driver.reports, 1)
    assert.deepEqual(timers.calls[1], { kind: 'interval', ms: 1_000 })
    await timers.advance(3_000)
    assert.equal(driver.reports, 4)
    await r.stop()
    assert.equal(timers.pending, 0)
  })

  it('reporter: report_interval 0 schedules nothing (Nova: no heartbeats at all)', () => {
    const timers = new FakeTimers()
    new Reporter({ driver: scripted(() => undefined), service: record(), intervalMs: 0, initialDelayMs: 5_000, logger: recordingLogger(), timers }).start()
    assert.deepEqual(timers.calls, [])
  })

  for (
    const [what, error, level, text] of [
      [
        'a timeout (Nova MessagingTimeout)',
        new ConnectionError('conductor timed out'),
        'warn',
        'Lost connection to the services table for reporting service status.',
      ],
      ['an unexpected error (Nova RuntimeError)', new Error('boom'), 'error', 'Unexpected error while reporting service status'],
      [
        'a deleted record (Nova ServiceNotFound)',
        new ServiceNotFoundError('with id 1'),
        'error',
        'The services table record for the nova-compute service on host fake-host is gone.',
      ],
    ] as const
  ) {
    it(`reporter: ${what} is swallowed, sets the latch and is logged`, async () => {
      const timers = new FakeTimers()
      const logger = recordingLogger()
      const lost: unknown[] = []
      const r = new Reporter({
        driver: scripted(() => error),
        service: record(),
        intervalMs: 1_000,
        initialDelayMs: 0,
        logger,
        timers,
        onLost: (e) => lost.push(e.error),
      })
      r.start()
      await timers.advance(0)
      assert.equal(r.disconnected, true)
      assert.equal(logger.lines.length, 1)
      assert.equal(logger.lines[0]!.level, level)
      assert.ok(logger.lines[0]!.msg.startsWith(text), logger.lines[0]!.msg)
      assert.deepEqual(lost, [error])
      await timers.advance(3_000)
      assert.equal(r.counts.failures, 4, 'the loop stopped after a failure')
      assert.equal(lost.length, 1, 'onLost fired more than once for one outage')
      // Outages are logged once; the others (that need an operator or a fix) at every report.
      assert.equal(logger.lines.length, error instanceof ConnectionError ? 1 : 4)
      await r.stop()
    })
  }

  it('reporter: recovery clears the latch and is logged once; a second outage is logged again', async () => {
    const timers = new FakeTimers()
    const logger = recordingLogger()
    const outcome = [undefined, 'x', 'x', undefined, undefined, 'x', undefined]
    const r = new Reporter({
      driver: scripted((n) => (outcome[n] ? new ConnectionError('down') : undefined)),
      service: record(),
      intervalMs: 1_000,
      initialDelayMs: 0,
      logger,
      timers,
    })
    r.start()
    await timers.advance(6_000)
    assert.equal(r.counts.reports, 7)
    assert.deepEqual(logger.lines.map((l) => l.level), ['warn', 'info', 'warn', 'info'])
    assert.equal(r.disconnected, false)
    await r.stop()
  })

  it('reporter: a slow report is never overlapped by the next tick, and stop() waits for it', async () => {
    const timers = new FakeTimers()
    let release!: () => void
    const slow = new Promise<void>((r) => (release = r))
    const driver = scripted((n) => (n === 0 ? slow : undefined))
    const r = new Reporter({ driver, service: record(), intervalMs: 1_000, initialDelayMs: 0, logger: recordingLogger(), timers })
    r.start()
    await timers.advance(3_500)
    assert.equal(driver.reports, 1, 'ticks overlapped a running report')
    release()
    await settle()
    await timers.advance(1_000)
    assert.equal(driver.reports, 2)
    await r.stop()
  })

  it('reporter: a non-Error thrown value is still caught and latched', async () => {
    const timers = new FakeTimers()
    const logger = recordingLogger()
    const driver = scripted(() => undefined)
    driver.report = async () => {
      throw 'a string' // eslint-disable-line no-throw-literal
    }
    const r = new Reporter({ driver, service: record(), intervalMs: 1_000, initialDelayMs: 0, logger, timers })
    r.start()
    await timers.advance(2_000)
    assert.equal(r.disconnected, true)
    assert.equal(r.counts.failures, 3)
    await r.stop()
  })

  it('reporter: BackendError (not retryable) is an unexpected error, logged with its stack', async () => {
    const timers = new FakeTimers()
    const logger = recordingLogger()
    const r = new Reporter({
      driver: scripted(() => new BackendError('no such table: services')),
      service: record(),
      intervalMs: 1_000,
      initialDelayMs: 0,
      logger,
      timers,
    })
    r.start()
    await timers.advance(0)
    assert.equal(logger.lines[0]!.level, 'error')
    assert.match(String(logger.lines[0]!.fields?.stack), /BackendError: no such table/)
    await r.stop()
  })
})
