/**
 * A member in a process of its own, for fault tests: it connects, joins a group (optionally takes
 * a lock), then reports every coordinator event on stdout as one JSON line, so that the test can
 * check their order after it has killed, paused or cut something. On a `status` line on stdin it
 * answers with its view of itself. An unhandled rejection crashes it (Node's default), which the
 * test sees as an exit: a member must survive every fault.
 *
 * Usage: node --import tsx test/fault/support/member.ts '<json MemberSpec>'
 */
import { createInterface } from 'node:readline'
import { connect } from '../../../src/index.js'

/** What the test passes as argv[2]. */
export interface MemberSpec {
  url: string
  memberId: string
  group: string
  capabilities: unknown
  lock?: string
  watchIntervalMs?: number
}

const spec = JSON.parse(process.argv[2] ?? '') as MemberSpec
const say = (ev: string, fields: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ ev, at: Date.now(), ...fields })}\n`)
}

const c = await connect(spec.url, { memberId: spec.memberId, watchIntervalMs: spec.watchIntervalMs ?? 200 })
c.on('connectionStateChanged', (e) => say('state', { state: e.state }))
c.on('membershipLost', (e) => say('membershipLost', { group: e.group, reason: e.reason }))
c.on('rejoined', (e) => say('rejoined', { group: e.group }))
c.on('lockLost', (e) => say('lockLost', { name: e.name, reason: e.reason }))
c.on('heartbeatFailed', (e) => say('heartbeatFailed', { reason: e.reason, code: e.error?.code }))
c.on('warning', (e) => say('warning', { code: e.code, message: e.message }))
await c.joinGroupCreate(spec.group, spec.capabilities)
const lock = spec.lock === undefined ? undefined : c.getLock(spec.lock)
if (lock && !(await lock.acquire({ timeoutMs: 10_000 }))) throw new Error(`lock ${spec.lock} not acquired`)
say('ready', { pid: process.pid })

createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'status') return
  const report = async (): Promise<void> => {
    const owner = lock?.acquired ? await lock.isStillOwner().catch((err: unknown) => `error: ${String(err)}`) : undefined
    const members = await c.getMembers(spec.group).catch((err: unknown) => `error: ${String(err)}`)
    say('status', { connection: c.connectionState, joined: c.joinedGroups, lockHeld: lock?.acquired, owner, members })
  }
  void report()
})
setInterval(() => {}, 60_000)
process.on('SIGTERM', () => void c.stop().then(() => process.exit(0)))
