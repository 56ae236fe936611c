/**
 * One contender of a lock-fairness test: connects, prints "ready", waits for a line on stdin, then
 * loops acquire → release (holding for HOLD_MS, 0 by default) for LOOP_MS, and prints its count of
 * acquisitions and its longest wait as JSON.
 * Usage: node --import tsx test/support/lock-loop-process.ts URL LOCK LOOP_MS [HOLD_MS]
 */
import { once } from 'node:events'
import { connect } from '../../src/index.js'

const [url, name, loopMs, holdMs] = process.argv.slice(2)
if (!url || !name || !loopMs) {
  console.error('usage: lock-loop-process.ts URL LOCK LOOP_MS [HOLD_MS]')
  process.exit(2)
}
const coordinator = await connect(url, { memberId: `lock-loop-${process.pid}`, heartbeat: false, autoWatch: false })
const lock = coordinator.getLock(name)
process.stdout.write('ready\n')
await once(process.stdin, 'data')
process.stdin.pause()
const end = performance.now() + Number(loopMs)
const hold = Number(holdMs ?? 0)
let count = 0
let longestWaitMs = 0
while (performance.now() < end) {
  const t = performance.now()
  if (!(await lock.acquire({ timeoutMs: Math.max(100, end - t) }))) continue
  longestWaitMs = Math.max(longestWaitMs, performance.now() - t)
  count += 1
  if (hold > 0) await new Promise((r) => setTimeout(r, hold))
  await lock.release()
}
process.stdout.write(`${JSON.stringify({ count, longestWaitMs: Math.round(longestWaitMs) })}\n`)
await coordinator.stop()
