/**
 * A script with nothing else to do than a timed acquire of a held lock: it must print "false"
 * and exit 0 once the wait times out, not end early with an unsettled promise (exit code 13).
 * Usage: node --import tsx test/support/timed-acquire-process.ts URL LOCK TIMEOUT_MS
 */
import { connect } from '../../src/index.js'

const [url, name, timeoutMs] = process.argv.slice(2)
if (!url || !name || !timeoutMs) {
  console.error('usage: timed-acquire-process.ts URL LOCK TIMEOUT_MS')
  process.exit(2)
}
const coordinator = await connect(url, { memberId: `timed-acquire-${process.pid}`, heartbeat: false, autoWatch: false })
const holder = coordinator.getLock(name)
await holder.acquire()
const got = await coordinator.getLock(name).acquire({ timeoutMs: Number(timeoutMs) })
process.stdout.write(`${got}\n`)
await holder.release()
await coordinator.stop()
