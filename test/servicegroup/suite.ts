/**
 * The service-group driver suite, written once and run against every driver on real servers:
 * `describeServiceGroup('tooz-redis')` in test/servicegroup/drivers/<target>.test.ts is all a
 * target needs. Cases needing several processes run where the backend crosses processes; an
 * outage case runs where there is a server (or a proxy in front of one) to take away; the
 * events case runs where the driver has push views, and its twin checks NotSupportedError.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, it, type TestContext } from 'node:test'
import type { Logger } from '../../src/index.js'
import { openCatalog, type ServiceGroup, type ServiceRecord } from '../../src/servicegroup/index.js'
import { TIMING } from '../support/timing.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import { SG_TIMING, TARGETS, catalogUrl, exited, openGroup, recordingLogger, spawnService, type Target } from './support.js'

const SLACK_MS = TIMING.expirySlackMs
const CASE = { timeout: 90_000 }

/** Registers every case for one target. */
export function describeServiceGroup(name: keyof typeof TARGETS): void {
  const target = TARGETS[name]!()
  const title = (area: string): string => `${target.name}: ${area}`

  /** A catalog URL shared by this test's processes, and a writer and a reader on it. */
  async function pair(
    t: TestContext,
    readerLogger?: Logger,
  ): Promise<{ shared: { url: string; tablePrefix: string }; writer: ServiceGroup; reader: ServiceGroup }> {
    const shared = catalogUrl(t, target.sql)
    const open = async (logger?: Logger): Promise<ServiceGroup> => {
      const catalog = await openCatalog(shared.url, { tablePrefix: shared.tablePrefix })
      t.after(() => catalog.close())
      return openGroup(t, catalog, { ...target.options(), logger })
    }
    return { shared, writer: await open(), reader: await open(readerLogger) }
  }

  async function upWithin(sg: ServiceGroup, record: ServiceRecord, want: boolean, ms: number, what: string): Promise<number> {
    const started = Date.now()
    await waitFor(what, async () => (await sg.isUp(await sg.catalog.get(record.id))) === want, ms, 50)
    return Date.now() - started
  }

  describe(`${target.name} service-group driver`, { concurrency: 4 }, () => {
    it(title('join: a joined service is up for another reader, and getAll lists it'), CASE, async (t) => {
      const { writer, reader } = await pair(t)
      const [host, topic] = [rid('host'), rid('topic')]
      const record = await writer.register({ host, binary: 'rollcall-test', topic, availabilityZone: 'az1' })
      assert.equal(await writer.join(host, topic, record), undefined)
      await upWithin(reader, record, true, TIMING.eventMs, 'the joined service to read up')
      const all = await reader.getAll(topic)
      assert.deepEqual(all.map((s) => [s.record.host, s.state, s.status]), [[host, 'up', 'enabled']])
      assert.deepEqual(await reader.isUpMany([record, { ...record, forcedDown: true }]), [true, false])
    })

    it(title('hot path: reads are batched per topic, and a fresh view answers isUp without a read or a log'), CASE, async (t) => {
      const logger = recordingLogger()
      const { writer, reader } = await pair(t, logger)
      const topic = rid('topic')
      const records = await Promise.all(Array.from({ length: 40 }, (_, i) => reader.register({ host: `h${i}-${rid('x')}`, binary: 'rollcall-test', topic })))
      await writer.join(records[0]!.host, topic, records[0]!)
      await upWithin(reader, records[0]!, true, TIMING.eventMs, 'the joined service to read up')
      const reads = (): number => reader.driver.stats.reads
      let before = reads()
      const statuses = await reader.getAll(topic)
      assert.equal(statuses.length, 40)
      assert.ok(reads() - before <= 1, `getAll over 40 services read the backend ${reads() - before} times`)
      before = reads()
      await reader.isUpMany(records)
      assert.ok(reads() - before <= 1, `isUpMany read the backend ${reads() - before} times`)
      const lines = logger.lines.length
      if (reader.driver.watch) {
        before = reads()
        for (let i = 0; i < 200; i++) await reader.isUp(records[i % records.length]!)
        assert.equal(reads() - before, 0, 'isUp on a fresh view read the backend')
      }
      assert.equal(logger.lines.length, lines, 'isUp logged')
    })

    it(title('forced_down and disabled: forced_down is down without asking the driver; disabled changes nothing'), CASE, async (t) => {
      const { writer, reader } = await pair(t)
      const [host, topic] = [rid('host'), rid('topic')]
      const record = await writer.register({ host, binary: 'rollcall-test', topic })
      await writer.join(host, topic, record)
      await upWithin(reader, record, true, TIMING.eventMs, 'up')
      const reads = reader.driver.stats.reads
      assert.equal(await reader.isUp({ ...record, forcedDown: true }), false)
      assert.equal(reader.driver.stats.reads, reads, 'the driver was asked')
      const disabled = await reader.catalog.update(record.id, { disabled: true, disabledReason: 'maintenance' })
      assert.equal(await reader.isUp(disabled), true)
      const [status] = await reader.getAll(topic)
      assert.deepEqual([status!.status, status!.state], ['disabled', 'up'])
      await reader.catalog.update(record.id, { forcedDown: true })
      assert.equal((await reader.getAll(topic))[0]!.state, 'down')
    })

    it(title('leave: a service that leaves reads down at once'), CASE, async (t) => {
      const { writer, reader } = await pair(t)
      const [host, topic] = [rid('host'), rid('topic')]
      const record = await writer.register({ host, binary: 'rollcall-test', topic })
      await writer.join(host, topic, record)
      await upWithin(reader, record, true, TIMING.eventMs, 'up')
      await writer.leave(host, topic)
      const ms = await upWithin(reader, record, false, TIMING.eventMs, 'down after leave')
      assert.ok(ms < SG_TIMING.serviceDownTimeSeconds * 1000, `down only after ${ms} ms`)
    })

    it(title('leave from elsewhere (service delete): the service reads down at once, and its next report brings it back'), CASE, async (t) => {
      const shared = catalogUrl(t, target.sql)
      const open = async (options: Parameters<typeof openGroup>[2]): Promise<ServiceGroup> => {
        const catalog = await openCatalog(shared.url, { tablePrefix: shared.tablePrefix })
        t.after(() => catalog.close())
        return openGroup(t, catalog, options)
      }
      // Reports far apart, so that "down at once" is seen before the next one.
      const writer = await open({ ...target.options(), reportIntervalSeconds: 5, serviceDownTimeSeconds: 30 })
      const admin = await open({ ...target.options(), reportIntervalSeconds: 5, serviceDownTimeSeconds: 30 })
      const [host, topic] = [rid('host'), rid('topic')]
      const record = await writer.register({ host, binary: 'rollcall-test', topic })
      await writer.join(host, topic, record, { reportImmediately: true })
      await upWithin(admin, record, true, TIMING.eventMs, 'up')
      await admin.leave(host, topic)
      assert.equal(await admin.isUp(await admin.catalog.get(record.id)), false, 'still up right after leave')
      await upWithin(admin, record, true, 5_000 + SLACK_MS, 'back up after the next report')
    })

    it(
      title('read your own writes: once join() resolves, every read of the joining process says up, a watch open or not; after leave(), down'),
      CASE,
      async (t) => {
        const { writer } = await pair(t)
        const [host, topic] = [rid('host'), rid('topic')]
        // A watch (onUp) keeps a fresh view of the topic, which must not hide this process's own join.
        if (writer.driver.watch) await writer.onUp(topic, () => {})
        const record = await writer.register({ host, binary: 'rollcall-test', topic })
        // db and mc report after initial_report_delay unless told otherwise (Nova); zk and tooz join at once.
        await writer.join(host, topic, record, { reportImmediately: !writer.driver.reportsOnJoin })
        assert.deepEqual((await writer.list({ topic })).map((s) => [s.record.host, s.state]), [[host, 'up']])
        assert.equal(await writer.isUp(await writer.catalog.get(record.id)), true)
        await writer.leave(host, topic)
        assert.deepEqual((await writer.list({ topic })).map((s) => [s.record.host, s.state]), [[host, 'down']])
      },
    )

    it(title("keep-alive: the documented quick start's process lives while joined, and exits by itself after close()"), CASE, async (t) => {
      const shared = catalogUrl(t, target.sql)
      const args = { ...target.options(), catalogUrl: shared.url, tablePrefix: shared.tablePrefix, binary: 'rollcall-test', topic: rid('topic') }
      const stay = quickStart(t, { ...args, mode: 'stay', host: rid('host') })
      const close = quickStart(t, { ...args, mode: 'close', host: rid('host') })
      await stay.joined
      // Longer than anything of the join itself (the db driver's process used to end 0.8 s in).
      await new Promise((r) => setTimeout(r, 3_000))
      assert.equal(stay.exit(), undefined, `the process of a joined service exited: ${stay.output()}`)
      assert.deepEqual(await close.exited, { code: 0, signal: null }, close.output())
      assert.match(close.output(), /closed/)
    })

    if (target.crossProcess) {
      it(title(`death: a service killed with SIGKILL reads down within ${target.deathBoundMs} ms`), CASE, async (t) => {
        const { shared, reader } = await pair(t)
        const [host, topic] = [rid('host'), rid('topic')]
        const { child, id } = await spawnService(t, {
          ...target.options(),
          catalogUrl: shared.url,
          tablePrefix: shared.tablePrefix,
          host,
          binary: 'rollcall-test',
          topic,
        })
        const record = await reader.catalog.get(id)
        await upWithin(reader, record, true, TIMING.eventMs, 'the service process to read up')
        // Still up after several report intervals: reports keep it fresh.
        await new Promise((r) => setTimeout(r, SG_TIMING.serviceDownTimeSeconds * 1000 + 500))
        assert.equal(await reader.isUp(await reader.catalog.get(id)), true, 'a reporting service went down')
        child.kill('SIGKILL')
        const ms = await upWithin(reader, record, false, target.deathBoundMs + SLACK_MS, 'the killed service to read down')
        assert.ok(ms <= target.deathBoundMs + SLACK_MS)
        t.diagnostic(`down ${ms} ms after SIGKILL (bound ${target.deathBoundMs} ms)`)
      })

      it(title('graceful stop: SIGTERM leaves, so the service reads down at once'), CASE, async (t) => {
        const { shared, reader } = await pair(t)
        const [host, topic] = [rid('host'), rid('topic')]
        const { child, id } = await spawnService(t, {
          ...target.options(),
          catalogUrl: shared.url,
          tablePrefix: shared.tablePrefix,
          host,
          binary: 'rollcall-test',
          topic,
        })
        const record = await reader.catalog.get(id)
        await upWithin(reader, record, true, TIMING.eventMs, 'up')
        child.kill('SIGTERM')
        await exited(child)
        assert.equal(child.signalCode, 'SIGTERM', 'the process did not end by its signal')
        const ms = await upWithin(reader, record, false, TIMING.eventMs, 'down after SIGTERM')
        assert.ok(ms < SG_TIMING.serviceDownTimeSeconds * 1000, `down only ${ms} ms after the process ended`)
      })

      it(title('two workers of one host: one record, and the host is up while either lives'), CASE, async (t) => {
        const { shared, reader } = await pair(t)
        const [host, topic] = [rid('host'), rid('topic')]
        const args = { ...target.options(), catalogUrl: shared.url, tablePrefix: shared.tablePrefix, host, binary: 'rollcall-test', topic }
        const [a, b] = await Promise.all([spawnService(t, args), spawnService(t, args)])
        assert.equal(a.id, b.id, 'two records for one host and binary')
        assert.equal((await reader.catalog.list({ topic })).length, 1)
        const record = await reader.catalog.get(a.id)
        await upWithin(reader, record, true, TIMING.eventMs, 'up')
        a.child.kill('SIGKILL')
        await new Promise((r) => setTimeout(r, target.deathBoundMs + 1_000))
        assert.equal(await reader.isUp(await reader.catalog.get(a.id)), true, 'the host went down while a worker lives')
        b.child.kill('SIGKILL')
        await upWithin(reader, record, false, target.deathBoundMs + SLACK_MS, 'down once both died')
      })
    } else {
      it(title('two workers of one host: one record, and the host is up while either lives (in one process)'), CASE, async (t) => {
        const { writer, reader } = await pair(t)
        const other = await openGroup(t, writer.catalog, target.options())
        const [host, topic] = [rid('host'), rid('topic')]
        const [a, b] = await Promise.all([writer.register({ host, binary: 'w', topic }), other.register({ host, binary: 'w', topic })])
        assert.equal(a.id, b.id)
        await writer.join(host, topic, a)
        await other.join(host, topic, b)
        await upWithin(reader, a, true, TIMING.eventMs, 'up')
        await writer.close()
        await new Promise((r) => setTimeout(r, 300))
        assert.equal(await reader.isUp(a), true, 'the host went down while a worker lives')
        await other.close()
        await upWithin(reader, a, false, TIMING.eventMs, 'down once both stopped')
      })
    }

    if (target.outage) {
      it(title('outage: a stopped backend latches the report loop (logged once) and recovery clears it'), CASE, async (t) => {
        const outage = await target.outage!(t)
        const shared = outage.catalog ?? catalogUrl(t, 'sqlite')
        const catalog = await openCatalog(shared.url, { tablePrefix: shared.tablePrefix })
        t.after(() => catalog.close())
        const logger = recordingLogger()
        const sg = await openGroup(t, catalog, { ...outage.options, logger })
        const [host, topic] = [rid('host'), rid('topic')]
        const record = await sg.register({ host, binary: 'rollcall-test', topic })
        await sg.join(host, topic, record)
        await waitFor('a first successful report', () => sg.health()[0]!.reports > 1 && !sg.health()[0]!.disconnected, TIMING.eventMs)
        const lost = nextEvent<{ host: string }>(sg as never, 'reportLost', () => true, 30_000)
        await outage.down()
        const event = await lost
        assert.equal(event.host, host)
        assert.equal(sg.health()[0]!.disconnected, true)
        const failuresAtLoss = sg.health()[0]!.failures
        await waitFor('more failed reports', () => sg.health()[0]!.failures >= failuresAtLoss + 2, 30_000)
        const lostLines = logger.lines.filter((l) => l.msg.startsWith('Lost connection'))
        assert.equal(lostLines.length, 1, `"lost" logged ${lostLines.length} times: ${JSON.stringify(logger.lines.map((l) => l.msg))}`)
        const recovered = nextEvent(sg as never, 'reportRecovered', () => true, 60_000)
        await outage.up()
        await recovered
        assert.equal(sg.health()[0]!.disconnected, false)
        assert.equal(logger.lines.filter((l) => l.msg.startsWith('Recovered')).length, 1)
        assert.equal(logger.lines.filter((l) => l.msg.startsWith('Lost connection')).length, 1)
        await upWithin(sg, record, true, 30_000, 'the service to read up again after recovery')
      })
    }

    it(title('events: onUp and onDown fire as a host joins and leaves (drivers with push views; the others say NotSupported)'), CASE, async (t) => {
      const { writer, reader } = await pair(t)
      const [host, topic] = [rid('host'), rid('topic')]
      if (!reader.driver.watch) {
        await assert.rejects(reader.onUp(topic, () => {}), { code: 'NOT_SUPPORTED' })
        return
      }
      const ups: string[] = []
      const downs: string[] = []
      await reader.onUp(topic, (e) => ups.push(e.host))
      await reader.onDown(topic, (e) => downs.push(e.host))
      const record = await writer.register({ host, binary: 'rollcall-test', topic })
      await writer.join(host, topic, record)
      await waitFor('onUp', () => ups.includes(host), TIMING.eventMs)
      await writer.leave(host, topic)
      await waitFor('onDown', () => downs.includes(host), TIMING.eventMs)
      assert.deepEqual([ups, downs], [[host], [host]])
    })
  })
}

/** The quick-start process (quick-start-process.ts); killed after the test if still running. */
function quickStart(
  t: TestContext,
  args: object,
): { joined: Promise<void>; exited: Promise<{ code: number | null; signal: string | null }>; exit(): number | string | undefined; output(): string } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/servicegroup/quick-start-process.ts', JSON.stringify(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d))
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null }))
  const joined = (async () => {
    while (!out.includes('joined')) {
      await Promise.race([once(child.stdout, 'data'), exited])
      if (!out.includes('joined') && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`exited before joining: ${out}`)
    }
  })()
  return { joined, exited, exit: () => child.exitCode ?? child.signalCode ?? undefined, output: () => out }
}
