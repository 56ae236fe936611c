/** The coercion kit: one reader per kind of value, each layer wrapping its Unfit in its own typed error. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { secondsOption } from '../../src/cli/command.js'
import { createCoordinator, InvalidArgumentError, InvalidOptionError } from '../../src/index.js'
import { coerce, decimal, hostPort, listenText, oneOf, secondsText, Unfit, wholeMsText } from '../../src/internal/coerce.js'
import { InvalidConfigError, loadConfig } from '../../src/servicegroup/index.js'

describe('unit: coerce', () => {
  it('coerce: readers return the value or throw Unfit with a phrase that does not name the setting', () => {
    assert.equal(secondsText('0.5'), 0.5)
    assert.equal(wholeMsText('4000', 100), 4000)
    assert.deepEqual(hostPort('[::1]:11211'), { host: '::1', port: 11211 })
    assert.deepEqual(listenText(':0'), { host: '', port: 0 })
    assert.equal(oneOf('zk', ['', 'mc', 'zk']), 'zk')
    assert.throws(() => oneOf('db', ['', 'mc', 'zk']), (e: Error) => e instanceof Unfit && e.message === 'one of mc, zk, or nothing')
    assert.throws(() => wholeMsText('4e3', 100), Unfit)
    // One grammar: URL values, settings and flags are all strict decimals.
    assert.throws(() => decimal('0x10'), /"0x10" is not a number/)
    for (const text of ['0x10', '0b1', 'Infinity', '', ' ', '1e400', '-1']) assert.throws(() => secondsText(text), Unfit, text)
    assert.equal(secondsText(' 2.5e1 '), 25)
    assert.throws(
      () =>
        coerce(() => {
          throw new RangeError('a bug')
        }, () => new Error('wrapped')),
      RangeError,
      'only Unfit is rewrapped',
    )
  })

  it("coerce: the same bad duration is each layer's own typed error", async () => {
    await assert.rejects(
      createCoordinator('memory://?watch_interval=soon'),
      (e: Error) => e instanceof InvalidOptionError && /"watch_interval".*"soon" is not a number/.test(e.message),
    )
    await assert.rejects(
      loadConfig({ env: {}, overrides: { report_interval: 'soon' } }),
      (e: Error) => e instanceof InvalidConfigError && /report_interval = "soon".*expected a number of seconds from 0/.test(e.message),
    )
    assert.throws(
      () => secondsOption('soon', 'refresh'),
      (e: Error) => e instanceof InvalidArgumentError && /^--refresh takes a number of seconds from 0 .*, not "soon"$/.test(e.message),
    )
  })
})
