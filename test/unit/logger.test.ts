/**
 * The loggers people use, given to connect() as they are (issue 26): pino (`warn(fields, msg)`),
 * winston (`warn(msg, meta)`) and console (`warn(msg, fields)`), the real packages, each writing
 * to a stream the test reads. A warning rollcall logs with fields (a watch callback that threw:
 * `{ code }`) must arrive with its message and its fields; a line without fields (the ignored
 * path of a Redis URL) must arrive as the message alone.
 */
import assert from 'node:assert/strict'
import { Console } from 'node:console'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import winston from 'winston'
import { connect, type Logger } from '../../src/index.js'
import { createServiceGroup, openCatalog } from '../../src/servicegroup/index.js'
import { adaptLogger, isPinoLogger } from '../../src/coordination/logger.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'

/** A stream that keeps what is written to it, as text. */
function sink(): { stream: PassThrough; text(): string } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => void (text += chunk.toString('utf8')))
  return { stream, text: () => text }
}

/**
 * Through connect(): a Redis URL with a path rollcall ignores (one warning, no fields), then a
 * watch callback that throws when a second member joins (logged at error level with
 * `{ code: 'LISTENER_FAILED', event, group }`). Resolves once `written()` holds the callback's line.
 */
async function logThroughConnect(logger: Logger, written: () => string): Promise<void> {
  const group = rid('logger')
  const url = `${serverUrl('redis')}/f00`
  const a = await connect(url, { memberId: rid('a'), logger })
  const b = await connect(serverUrl('redis'), { memberId: rid('b') })
  try {
    await a.joinGroupCreate(group)
    await a.watchJoinGroup(group, () => {
      throw new Error('callback failed on purpose')
    })
    await b.joinGroup(group)
    await waitFor('the callback warning in the log', () => written().includes('callback failed on purpose'), 20_000)
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
}

describe('unit: logger', () => {
  it('logger: pino, given as it is, gets the fields as its object and the message as msg', async () => {
    const out = sink()
    await logThroughConnect(pino({ level: 'debug' }, out.stream), out.text)
    const lines = out.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const callback = lines.find((l) => String(l.msg).includes('callback failed on purpose'))
    assert.ok(callback, out.text())
    assert.equal(callback.level, 50)
    assert.equal(callback.code, 'LISTENER_FAILED', `the fields did not arrive: ${JSON.stringify(callback)}`)
    const path = lines.find((l) => String(l.msg).includes('/f00'))
    assert.ok(path, `no line about the ignored path: ${out.text()}`)
    // pino child loggers are pino loggers too.
    assert.ok(isPinoLogger(pino({}, out.stream).child({ svc: 'x' })))
  })

  it('logger: winston, given as it is, gets the fields as meta', async () => {
    const out = sink()
    const logger = winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream: out.stream })] })
    await logThroughConnect(logger, out.text)
    const lines = out.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const callback = lines.find((l) => String(l.message).includes('callback failed on purpose'))
    assert.ok(callback, out.text())
    assert.equal(callback.level, 'error')
    assert.equal(callback.code, 'LISTENER_FAILED', `the fields did not arrive: ${JSON.stringify(callback)}`)
    assert.ok(!isPinoLogger(logger))
  })

  it('logger: console, given as it is, prints the message then the fields, and a line without fields alone', async () => {
    const out = sink()
    const logger = new Console({ stdout: out.stream, stderr: out.stream })
    await logThroughConnect(logger, out.text)
    const lines = out.text().split('\n')
    const callback = lines.find((l) => l.includes('callback failed on purpose'))
    assert.ok(callback, out.text())
    // The message, then the fields as console prints an object (over several lines when long).
    assert.match(out.text(), /callback failed on purpose[^\n]*\{\s*code: 'LISTENER_FAILED',\s*event: 'watchJoinGroup'/)
    const path = lines.find((l) => l.includes('/f00'))
    assert.ok(path, out.text())
    assert.doesNotMatch(path, /undefined/)
    assert.ok(!isPinoLogger(console))
  })

  it("logger: pino given to createServiceGroup() gets the report loop's fields (a service whose record is gone)", async () => {
    const out = sink()
    const catalog = await openCatalog('sqlite://')
    const sg = await createServiceGroup({ catalog, driver: 'db', reportIntervalSeconds: 1, logger: pino(out.stream) })
    try {
      const svc = await sg.register({ host: rid('host'), binary: 'rollcall-worker', topic: 'worker' })
      await catalog.delete(svc.id)
      await sg.join(svc.host, svc.topic, svc, { reportImmediately: true })
      await waitFor("the report loop's error in the log", () => out.text().includes('is gone'), 20_000)
      const line = out.text().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l.msg).includes('is gone'))
      assert.ok(line, out.text())
      assert.equal(line.level, 50)
      assert.deepEqual([line.host, line.binary, line.driver], [svc.host, 'rollcall-worker', 'db'], `the fields did not arrive: ${JSON.stringify(line)}`)
    } finally {
      await sg.close()
      await catalog.close()
    }
  })

  it('logger: adapting is done once, and the methods are called on the logger itself', () => {
    const calls: unknown[][] = []
    const own = {
      prefix: 'p',
      debug(this: { prefix: string }, ...args: unknown[]) {
        calls.push([this.prefix, 'debug', ...args])
      },
      info() {},
      warn() {},
      error() {},
    }
    const log = adaptLogger(own)
    assert.equal(adaptLogger(log), log)
    log.debug('m')
    log.debug('m', { k: 1 })
    assert.deepEqual(calls, [['p', 'debug', 'm'], ['p', 'debug', 'm', { k: 1 }]])
  })
})
