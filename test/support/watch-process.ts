/**
 * A script whose only pending work is a watch: a second member joins after an unref'd timer, and
 * the watch callback prints "joined MEMBER" and stops both. Without a hold on the process while
 * the watch is pending, memory:// and file:// would exit before the join, printing nothing.
 * Usage: node --import tsx test/support/watch-process.ts URL GROUP
 */
import { connect } from '../../src/index.js'

const [url, group] = process.argv.slice(2)
if (!url || !group) {
  console.error('usage: watch-process.ts URL GROUP')
  process.exit(2)
}
const watcher = await connect(url, { memberId: `watcher-${process.pid}`, watchIntervalMs: 100 })
const joiner = await connect(url, { memberId: `joiner-${process.pid}`, heartbeat: false, autoWatch: false })
await watcher.createGroup(group)
await watcher.watchJoinGroup(group, async (e) => {
  process.stdout.write(`joined ${e.member}\n`)
  await joiner.stop()
  await watcher.stop()
})
setTimeout(() => void joiner.joinGroup(group), 300).unref()
