/**
 * A process whose `memberJoined` listeners fail: one throws, one returns a rejected promise. The
 * first join is delivered with no `warning` listener (the failure must reach stderr through
 * process.emitWarning), the second with one (it prints each report as a JSON line). A leave after
 * both shows the watcher still runs; the script then stops both members and exits by itself.
 * Usage: node --import tsx test/support/throwing-listener-process.ts URL GROUP
 */
import { connect, type RollcallError } from '../../src/index.js'

const [url, group] = process.argv.slice(2)
if (!url || !group) {
  console.error('usage: throwing-listener-process.ts URL GROUP')
  process.exit(2)
}
const print = (line: object): boolean => process.stdout.write(`${JSON.stringify(line)}\n`)
const watcher = await connect(url, { memberId: `watcher-${process.pid}`, watchIntervalMs: 100 })
const first = await connect(url, { memberId: `first-${process.pid}` })
const second = await connect(url, { memberId: `second-${process.pid}` })
await watcher.joinGroupCreate(group)
await watcher.watchGroup(group)
watcher.on('memberJoined', (e) => {
  print({ heard: e.member })
  throw new Error(`sync failure for ${e.member}`)
})
watcher.on('memberJoined', async (e) => {
  await Promise.resolve()
  throw new Error(`async failure for ${e.member}`)
})
const until = (what: string, check: () => boolean): Promise<void> =>
  new Promise((resolve, reject) => {
    const deadline = Date.now() + 20_000
    const tick = (): void => {
      if (check()) resolve()
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`))
      else setTimeout(tick, 20)
    }
    tick()
  })
let joins = 0
watcher.on('memberJoined', () => void (joins += 1))
await first.joinGroup(group)
await until('the first join', () => joins === 1)
// Let the async listener's rejection and its report happen before a `warning` listener exists.
await new Promise((r) => setTimeout(r, 100))
const reports: RollcallError[] = []
watcher.on('warning', (err) => {
  reports.push(err)
  print({ code: err.code, event: (err as { event?: string }).event, group: (err as { group?: string }).group, cause: (err.cause as Error).message })
})
await second.joinGroup(group)
await until('two reports of the second join', () => reports.length >= 2)
let left = false
watcher.on('memberLeft', (e) => void (left ||= e.member === second.memberId))
await second.leaveGroup(group)
await until('the leave', () => left)
print({ survived: true })
await Promise.all([first.stop(), second.stop(), watcher.stop()])
