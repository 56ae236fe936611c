/**
 * One contender of the lock-safety and leadership runs, in a process of its own so that the test
 * can SIGKILL it at any instant. It loops taking one lock (holding it for a random short time),
 * and at the same time runs for leader of one group (standing down after a random term), and
 * appends each step to the shared O_APPEND log read by test/support/lock-checker.ts:
 * `enter` right after acquiring, `exit` right BEFORE releasing, `lost` when told the lock is
 * gone; `lead` when elected, `unlead` right BEFORE standing down or when told leadership is gone.
 * SIGTERM ends it cleanly (closing lines first, then stop()).
 *
 * Usage: node --import tsx test/fault/support/contender.ts '<json ContenderSpec>'
 */
import { connect } from '../../../src/index.js'
import { AppendLog } from '../../support/lock-checker.js'

/** What the test passes as argv[2]. */
export interface ContenderSpec {
  url: string
  memberId: string
  /** The lock to contend for (omit to skip locks). */
  lock?: string
  /** The group whose leadership to contend for (omit to skip leadership). */
  group?: string
  log: string
  /** Random hold time of the lock, [min, max] ms. */
  holdMs: [number, number]
  /** Random term before standing down, [min, max] ms. */
  termMs: [number, number]
}

const spec = JSON.parse(process.argv[2] ?? '') as ContenderSpec
const log = new AppendLog(spec.log)
const pid = process.pid
const between = ([lo, hi]: [number, number]): number => lo + Math.random() * (hi - lo)
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
let stopping = false

const c = await connect(spec.url, { memberId: spec.memberId, watchIntervalMs: 100 })
c.on('warning', () => {})

/** The current hold, if any: ended exactly once, by exit, lost or stop. */
let hold: { token: bigint | undefined } | undefined
const lockLoop = async (name: string): Promise<void> => {
  const lock = c.getLock(name)
  c.on('lockLost', (e) => {
    if (e.name !== name || !hold) return
    log.write('lost', pid, hold.token)
    hold = undefined
  })
  while (!stopping) {
    let got = false
    try {
      got = await lock.acquire({ timeoutMs: 3_000 })
    } catch {
      await pause(100)
    }
    if (!got || stopping) {
      if (got) await lock.release().catch(() => false)
      continue
    }
    hold = { token: lock.fencingToken }
    log.write('enter', pid, hold.token)
    await pause(between(spec.holdMs))
    if (hold && !stopping) {
      log.write('exit', pid, hold.token)
      hold = undefined
      await lock.release().catch(() => false)
    }
    await pause(Math.random() * 30)
  }
}

let leading = false
const runForLeader = (group: string): void => {
  c.on('leadershipLost', (e) => {
    if (e.group !== group || !leading) return
    leading = false
    log.write('unlead', pid)
  })
  c.watchElectedAsLeader(group, () => {
    if (stopping) return
    leading = true
    log.write('lead', pid)
    setTimeout(() => {
      if (!leading || stopping) return
      leading = false
      log.write('unlead', pid)
      c.standDownGroupLeader(group).catch(() => false)
    }, between(spec.termMs))
  })
}

if (spec.group !== undefined) {
  await c.joinGroupCreate(spec.group).catch(() => {})
  runForLeader(spec.group)
}
const loop = spec.lock === undefined ? Promise.resolve() : lockLoop(spec.lock)
process.stdout.write('ready\n')

process.on('SIGTERM', () => {
  stopping = true
  if (hold) log.write('exit', pid, hold.token)
  hold = undefined
  if (leading) log.write('unlead', pid)
  leading = false
  void c.stop().finally(() => process.exit(0))
})
await loop
setInterval(() => {}, 60_000)
