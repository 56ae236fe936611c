/**
 * Takes a lock and holds it until killed, for the SQL driver tests (a SIGKILLed holder must free
 * its lock through the end of its database session).
 * Usage: node --import tsx test/drivers/sql-lock-holder.ts URL LOCK_NAME
 */
import { connect } from '../../src/index.js'

const [url, name] = process.argv.slice(2)
if (!url || !name) {
  console.error('usage: sql-lock-holder.ts URL LOCK_NAME')
  process.exit(2)
}
const coordinator = await connect(url)
if (!(await coordinator.getLock(name).acquire({ blocking: false }))) {
  console.error(`lock ${name} is busy`)
  process.exit(1)
}
process.stdout.write('locked\n')
setInterval(() => {}, 60_000)
