/**
 * tooz's try_to_lock_job in a process of its own: connects as a fresh member, tries LOCK once
 * without waiting, prints "true" or "false", and exits.
 * Usage: node --import tsx test/support/lock-process.ts URL LOCK [shared]
 */
import { connect } from '../../src/index.js'

const [url, name, mode] = process.argv.slice(2)
if (!url || !name) {
  console.error('usage: lock-process.ts URL LOCK [shared]')
  process.exit(2)
}
const coordinator = await connect(url, { memberId: `lock-process-${process.pid}`, heartbeat: false, autoWatch: false })
const got = await coordinator.getLock(name).acquire({ blocking: false, shared: mode === 'shared' })
process.stdout.write(`${got}\n`)
await coordinator.stop()
