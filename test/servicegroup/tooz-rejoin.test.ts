/**
 * The tooz driver after a lost connection (issue 27, the partition harness's isUp workload): the
 * membership the connection took with it is reported again as soon as the connection is back,
 * not at the next report (up to report_interval later), and one that was only presumed lost (the
 * backend kept it) is kept alive from then on. A service made to leave from elsewhere while
 * connected still stays down until its next report. Real Redis and PostgreSQL behind a TCP proxy.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { ToozDriver } from '../../src/servicegroup/drivers/tooz.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { rid, waitFor } from '../support/wait.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { serviceRecord } from './support.js'

/** Liveness of the reporting process, in seconds: its key lapses this long after the cut. */
const LIVENESS_S = 2

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }

/** A reporter on `reporterUrl` that has reported a service, and an observer on `directUrl` that sees it up; both closed after the test. */
async function reported(t: TestContext, reporterUrl: string, directUrl: string) {
  const reporter = new ToozDriver({ url: `${reporterUrl}?timeout=${LIVENESS_S}`, logger: quiet, memberId: rid('sg') })
  const observer = new ToozDriver({ url: `${directUrl}?timeout=${LIVENESS_S}`, logger: quiet, memberId: rid('obs'), resyncMs: 100 })
  await reporter.start()
  t.after(() => reporter.close())
  await observer.start()
  t.after(() => observer.close())
  const service = serviceRecord()
  await reporter.report(service)
  assert.equal(await observer.isUp(service), true)
  return { reporter, observer, service }
}

describe('servicegroup: tooz rejoin', () => {
  it('tooz: a service whose membership lapsed while its link was cut is up again once the link is back, without a report', { timeout: 60_000 }, async (t) => {
    const direct = serverUrl('redis')
    const target = new URL(direct.replace(/^redis:/, 'http:'))
    const proxy = await TcpProxy.start(Number(target.port))
    t.after(() => proxy.close())
    const { observer, service } = await reported(t, `redis://127.0.0.1:${proxy.port}`, direct)

    proxy.cut()
    // The key lapses on the server: the observer sees the service down (else nothing was lost).
    await waitFor('the observer to see the cut-off service down', async () => !(await observer.isUp(service)) || undefined, LIVENESS_S * 1_000 + 10_000, 100)
    proxy.restore()
    const healedAt = Date.now()
    // Nobody calls report(): only the driver's own reaction to the returning connection can bring it back.
    await waitFor('the service up again', async () => (await observer.isUp(service)) || undefined, 15_000, 100)
    t.diagnostic(`up again ${Date.now() - healedAt} ms after the link came back`)
  })
  it(
    'tooz: a service presumed lost while the server kept it (its answers cut off, not its beats) stays up once the link is back',
    { timeout: 60_000 },
    async (t) => {
      // The PostgreSQL partition run (drop-out of the server for 3.6 s): a beat reached the server, which extended the service's
      // row, but its answer did not, so the reporting process presumed the row lapsed; its report after the heal found the row
      // still there (MemberExistsError), nothing beat it any more, and the service read down from its lapse for 20 s.
      const direct = serverUrl('postgresql')
      const target = new URL(direct)
      const proxy = await TcpProxy.start(Number(target.port))
      t.after(() => proxy.close())
      const viaProxy = new URL(direct)
      viaProxy.port = String(proxy.port)
      const { reporter, observer, service } = await reported(t, viaProxy.href, direct)

      let downAt: number | undefined
      let watching = true
      const watched = (async () => {
        while (watching && downAt === undefined) {
          if (!(await observer.isUp(service))) downAt = Date.now()
          await sleep(100)
        }
      })()
      const lost = new Promise<void>((resolve) => {
        reporter.coordinator.on('connectionStateChanged', ({ state }) => state === 'lost' && resolve())
      })
      proxy.pause({ repliesOnly: true })
      await lost
      // Back at once, while the row the last beat extended still lives: the service must not lapse from here on.
      proxy.resume()
      const healedAt = Date.now()
      await sleep(LIVENESS_S * 3_000)
      watching = false
      await watched
      assert.equal(downAt, undefined, `the service read down ${downAt! - healedAt} ms after the link came back`)
    },
  )
})
