/**
 * The tooz driver's views during an outage (issue 11): every watched topic's view fails to
 * refresh on every resync, and the log gets one line for it, then one saying it recovered, not a
 * line per topic per resync. Real Redis behind a TCP proxy that cuts the link.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ToozDriver } from '../../src/servicegroup/drivers/tooz.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { rid, waitFor } from '../support/wait.js'
import { serviceRecord } from './support.js'

describe('servicegroup: tooz warnings', () => {
  it('tooz-warnings: failed resyncs of 5 topics during an outage are one line, then one recovery line', { timeout: 60_000 }, async (t) => {
    const target = new URL(serverUrl('redis').replace(/^redis:/, 'http:'))
    const proxy = await TcpProxy.start(Number(target.port))
    t.after(() => proxy.close())
    const lines: { level: string; msg: string }[] = []
    const logger = {
      debug: () => {},
      info: (msg: string) => lines.push({ level: 'info', msg }),
      warn: (msg: string) => lines.push({ level: 'warn', msg }),
      error: (msg: string) => lines.push({ level: 'error', msg }),
    }
    const driver = new ToozDriver({ url: `redis://127.0.0.1:${proxy.port}?timeout=30&watch_interval=0.1`, logger, memberId: rid('sg'), resyncMs: 100 })
    await driver.start()
    t.after(() => driver.close())
    const topics = Array.from({ length: 5 }, () => rid('topic'))
    for (const topic of topics) {
      await driver.report(serviceRecord({ topic }))
      await driver.watch(topic, () => {})
    }
    proxy.cut()
    await new Promise((r) => setTimeout(r, 3_000))
    proxy.restore()
    // The views' background reads are the coordinator's (Coordinator.viewGroup): their failures reach
    // the log through its collapsed warnings, keyed by the kind of failure, never by topic.
    await waitFor('the recovery line', async () => lines.some((l) => l.level === 'info' && l.msg.startsWith('Recovered after')) || undefined, 20_000, 100)
    const warns = lines.filter((l) => l.level === 'warn')
    t.diagnostic(
      `${warns.length} warning lines for 3 s of outage with 5 watched topics; all lines: ${
        JSON.stringify(lines.map((l) => `${l.level}: ${l.msg.slice(0, 90)}`))
      }`,
    )
    assert.ok(warns.length >= 1 && warns.length <= 3, `one line per kind of failure, not one per topic per read: ${warns.length}`)
    assert.ok(warns.every((l) => !topics.some((topic) => l.msg.includes(topic))), 'no line names a topic: they are not per topic')
    const recovered = lines.find((l) => l.level === 'info' && l.msg.startsWith('Recovered after'))!
    assert.match(recovered.msg, /^Recovered after \d+(\.\d)? s \((\d+) repeats of this warning were not logged\): /)
    // 5 topics re-read every 100 ms for 3 s: the failures were many, and counted rather than logged.
    assert.ok(Number(/\((\d+) repeats/.exec(recovered.msg)![1]) >= 5, `the repeats were counted: ${recovered.msg}`)
  })
})
