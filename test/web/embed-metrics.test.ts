/**
 * registerMetrics(): rollcall's metrics on the application's own prom-client Registry, scraped
 * with registry.metrics() after a join on a real Redis, and taken off again by close().
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Counter, Registry } from 'prom-client'
import { connect, InvalidArgumentError, type Coordinator } from '../../src/index.js'
import { METRIC_NAMES, registerMetrics } from '../../src/web/public.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'
import { WEB_TIMING } from './support.js'

/** The value of one series in a Prometheus text scrape, or undefined when it is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('web: metrics on the application registry', () => {
  let app: Coordinator
  let observer: Coordinator

  before(async () => {
    // A namespace of the test's own: the shared one holds the thousands of groups the rest of the
    // suite has made, and the first refresh reads every group it has not seen (at load 15 over 8 s).
    const url = `${serverUrl('redis')}?namespace=${rid('embed_ns')}`
    app = await connect(url, { memberId: rid('app') })
    observer = await connect(url, { memberId: rid('metrics') })
  })

  after(async () => {
    await app?.stop()
    await observer?.stop()
  })

  it("web: metrics: the app's registry carries rollcall's metrics with values after a join, beside the app's own, and close() takes them off", async () => {
    const registry = new Registry()
    const own = new Counter({ name: 'app_jobs_total', help: 'Jobs done by the app.', registers: [registry] })
    own.inc(3)
    const group = rid('embed')
    const metrics = await registerMetrics(observer, { registry, refreshMs: 100, heartbeatProbeMs: 100 })
    try {
      assert.deepEqual(metrics.names, METRIC_NAMES)
      await app.joinGroupCreate(group, { role: 'worker' })
      const text = await waitFor('the join to show in the scrape', async () => {
        const t = await registry.metrics()
        return sample(t, `rollcall_group_members{group="${group}"}`) === 1 && (sample(t, 'rollcall_heartbeat_duration_seconds_count') ?? 0) >= 1 ? t : undefined
      }, WEB_TIMING.liveMs)
      assert.equal(sample(text, 'rollcall_backend_connection_state{state="connected"}'), 1)
      assert.equal(sample(text, 'rollcall_backend_connection_state{state="lost"}'), 0)
      assert.ok((sample(text, 'rollcall_groups{members="some"}') ?? 0) >= 1, text)
      assert.equal(sample(text, 'app_jobs_total'), 3, 'the app metric is still there')
      assert.ok(!text.includes('process_cpu_user_seconds_total'), "default metrics are the app's choice, not added by rollcall")
      for (const name of METRIC_NAMES) assert.ok(text.includes(`# HELP ${name} `), `${name} is registered`)
      await app.leaveGroup(group)
      await waitFor(
        'the leave to show',
        async () => sample(await registry.metrics(), `rollcall_group_members{group="${group}"}`) === undefined,
        WEB_TIMING.liveMs,
      )
    } finally {
      await metrics.close()
    }
    const afterClose = await registry.metrics()
    assert.ok(!afterClose.includes('rollcall_'), afterClose)
    assert.equal(sample(afterClose, 'app_jobs_total'), 3)
    const again = await registerMetrics(observer, { registry, groups: false })
    assert.ok((await registry.metrics()).includes('rollcall_backend_connection_state{state="connected"} 1'), 'registers again after close()')
    await again.close()
  })

  it('web: metrics: a missing registry or source is a typed error naming the fix', async () => {
    // @ts-expect-error no registry
    await assert.rejects(registerMetrics(observer, {}), (err: unknown) => err instanceof InvalidArgumentError && /new Registry\(\)/.test(err.message))
    await assert.rejects(registerMetrics({}, { registry: new Registry() }), InvalidArgumentError)
  })
})
