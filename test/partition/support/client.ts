/**
 * One client of a partition run (issue 27), a process of its own on a client host, writing every
 * step to the shared history (test/fault/support/partition-history.ts) under its name, which is
 * also its member id. It runs up to three workloads on one Coordinator:
 *
 * - locks: loops acquire → work → release on one lock, the work being writes of its fencing token
 *   to the fenced register (register.ts; the register writes its own verdict);
 * - leader election: runs for leader of one group and stands down after a random term;
 * - membership: joins one group and watches it (memberJoined/memberLeft, one getMembers snapshot
 *   once the watch is up, so that its view starts complete);
 * - service group: Nova's service-group API with the tooz driver over the same URL (a Coordinator
 *   of its own, as a Nova service's is), joining its own service (host = its client host, one
 *   topic for all) and asking isUp() of every client's service every few hundred ms. Its `join`
 *   and `isUp` records name the topic as `resource`; an isUp names the client process reporting
 *   the service asked about as `member`, so that the checker knows its host (the answer is `value`).
 *   The API's own Coordinator's connectionStateChanged and membershipLost are written under
 *   `<name>/sg` (a process record of its own, same host), to tell why a service went down.
 *
 * Conventions of partition-checker.ts: the `start` record (naming the host) comes first; a
 * release's and a stand-down's `invoke` is written before the call; `exit` is written after the
 * last belief ended and before stop(). SIGTERM ends it cleanly.
 *
 * Usage: ip netns exec NS node --import tsx test/partition/support/client.ts '<json ClientSpec>'
 */
import { connect } from '../../../src/index.js'
import type { ToozDriver } from '../../../src/servicegroup/drivers/tooz.js'
import { createServiceGroup, openCatalog, type ServiceGroup } from '../../../src/servicegroup/index.js'
import { HistoryWriter } from '../../fault/support/partition-history.js'

/** What the harness passes as argv[2]. */
export interface ClientSpec {
  url: string
  /** Process name and member id. */
  name: string
  host: string
  /** The history file. */
  history: string
  /** The lock to contend for, and the register its holder writes to (`http://addr:port/`). */
  lock?: { name: string; register: string; holdMs: [number, number] }
  /** The group to run for leader of, with the random term before standing down. */
  election?: { group: string; termMs: [number, number] }
  /** The group to join and watch. */
  group?: string
  /**
   * The service-group workload: its topic, every client's process name by its host (the services
   * it asks about), the pause between two rounds of isUp(), and report_interval.
   */
  services?: { topic: string; processes: Record<string, string>; pollMs: [number, number]; reportIntervalS: number }
}

const spec = JSON.parse(process.argv[2] ?? '') as ClientSpec
const h = new HistoryWriter(spec.history, spec.name)
h.write({ type: 'process', what: 'start', host: spec.host, pid: process.pid })
const between = ([lo, hi]: [number, number]): number => lo + Math.random() * (hi - lo)
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const why = (err: unknown): string => (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, 300)
let stopping = false

const c = await connect(spec.url, { memberId: spec.name, watchIntervalMs: 100 })
c.on('warning', () => {})
c.on('connectionStateChanged', (e) => h.write({ type: 'event', event: 'connectionStateChanged', state: e.state, previous: e.previous }))
c.on('lockLost', (e) => h.write({ type: 'event', event: 'lockLost', name: e.name, reason: e.reason }))
c.on('leadershipLost', (e) => h.write({ type: 'event', event: 'leadershipLost', group: e.group, reason: e.reason }))
c.on('membershipLost', (e) => h.write({ type: 'event', event: 'membershipLost', group: e.group, reason: e.reason }))
c.on('rejoined', (e) => h.write({ type: 'event', event: 'rejoined', group: e.group }))
c.on('memberJoined', (e) => h.write({ type: 'event', event: 'memberJoined', group: e.group, member: e.member }))
c.on('memberLeft', (e) => h.write({ type: 'event', event: 'memberLeft', group: e.group, member: e.member }))

/** Writes `token` to the register `resource` (named after the lock), recording the outcome. */
async function fencedWrite(register: string, resource: string, token: bigint): Promise<void> {
  h.write({ type: 'op', op: 'write', phase: 'invoke', resource, token })
  try {
    const res = await fetch(`${register}?register=${encodeURIComponent(resource)}&token=${token}&writer=${encodeURIComponent(spec.name)}`, {
      method: 'POST',
      signal: AbortSignal.timeout(2_000),
    })
    if (res.status === 200) h.write({ type: 'op', op: 'write', phase: 'ok', resource, token })
    else h.write({ type: 'op', op: 'write', phase: 'fail', resource, token, error: `rejected (HTTP ${res.status})` })
  } catch (err) {
    h.write({ type: 'op', op: 'write', phase: 'fail', resource, token, error: why(err) })
  }
}

/** The lock workload; resolves when stopping. */
let held = false
async function lockLoop(l: NonNullable<ClientSpec['lock']>): Promise<void> {
  const lock = c.getLock(l.name)
  c.on('lockLost', (e) => {
    if (e.name === l.name) held = false
  })
  while (!stopping) {
    h.write({ type: 'op', op: 'acquire', phase: 'invoke', resource: l.name })
    let got = false
    try {
      got = await lock.acquire({ timeoutMs: 3_000 })
    } catch (err) {
      h.write({ type: 'op', op: 'acquire', phase: 'fail', resource: l.name, error: why(err) })
      await pause(200)
      continue
    }
    if (!got) {
      h.write({ type: 'op', op: 'acquire', phase: 'fail', resource: l.name, error: 'timed out' })
      continue
    }
    if (stopping) {
      await lock.release().catch(() => false)
      break
    }
    const token = lock.fencingToken
    held = true
    h.write({ type: 'op', op: 'acquire', phase: 'ok', resource: l.name, ...(token === undefined ? {} : { token }) })
    // The work: write the token, hold a while, write again (a holder that lost the lock meanwhile must be refused).
    const until = performance.now() + between(l.holdMs)
    while (held && !stopping && performance.now() < until) {
      if (token !== undefined) await fencedWrite(l.register, l.name, token)
      await pause(150)
    }
    if (held) {
      held = false
      h.write({ type: 'op', op: 'release', phase: 'invoke', resource: l.name })
      const ok = await lock.release().catch((err: unknown) => {
        h.write({ type: 'op', op: 'release', phase: 'fail', resource: l.name, error: why(err) })
        return undefined
      })
      if (ok !== undefined) h.write({ type: 'op', op: 'release', phase: 'ok', resource: l.name })
    }
    await pause(Math.random() * 100)
  }
}

let leading: string | undefined
function runForLeader(e: NonNullable<ClientSpec['election']>): void {
  c.on('leadershipLost', (x) => {
    if (x.group === e.group) leading = undefined
  })
  c.on('leaderElected', (x) => {
    if (x.group !== e.group || x.member !== spec.name) return
    h.write({ type: 'event', event: 'leaderElected', group: x.group, member: x.member })
  })
  c.watchElectedAsLeader(e.group, () => {
    if (stopping) return
    leading = e.group
    setTimeout(() => {
      if (leading === undefined || stopping) return
      leading = undefined
      h.write({ type: 'op', op: 'standDown', phase: 'invoke', resource: e.group })
      c.standDownGroupLeader(e.group).then(
        () => h.write({ type: 'op', op: 'standDown', phase: 'ok', resource: e.group }),
        (err: unknown) => h.write({ type: 'op', op: 'standDown', phase: 'fail', resource: e.group, error: why(err) }),
      )
    }, between(e.termMs))
  })
}

async function membership(group: string): Promise<void> {
  for (;;) {
    h.write({ type: 'op', op: 'join', phase: 'invoke', resource: group })
    try {
      await c.joinGroupCreate(group)
      h.write({ type: 'op', op: 'join', phase: 'ok', resource: group })
      break
    } catch (err) {
      h.write({ type: 'op', op: 'join', phase: 'fail', resource: group, error: why(err) })
      await pause(200)
    }
  }
  await c.watchGroup(group)
  h.write({ type: 'op', op: 'getMembers', phase: 'invoke', resource: group })
  try {
    h.write({ type: 'op', op: 'getMembers', phase: 'ok', resource: group, value: await c.getMembers(group) })
  } catch (err) {
    h.write({ type: 'op', op: 'getMembers', phase: 'fail', resource: group, error: why(err) })
  }
}

/** Joins this client's service to the topic; resolves once its first report is in (up). */
async function joinService(s: NonNullable<ClientSpec['services']>): Promise<ServiceGroup> {
  // The catalog (Nova's services table) is private to the process: tooz's liveness does not read it.
  const sg = await createServiceGroup({
    catalog: await openCatalog('sqlite://'),
    closeCatalog: true,
    driver: 'tooz',
    toozUrl: spec.url,
    reportIntervalSeconds: s.reportIntervalS,
  })
  // Its Coordinator's connection and membership events, under a process name of its own (`<name>/sg`, same host): they
  // tell why a service went down, and the checker reads no view from them (that process joins nothing).
  const sgName = `${spec.name}/sg`
  const sgc = (sg.driver as ToozDriver).coordinator
  h.write({ type: 'process', what: 'start', host: spec.host, pid: process.pid, process: sgName })
  sgc.on('connectionStateChanged', (e) => h.write({ type: 'event', event: 'connectionStateChanged', state: e.state, previous: e.previous, process: sgName }))
  sgc.on('membershipLost', (e) => h.write({ type: 'event', event: 'membershipLost', group: e.group, reason: e.reason, process: sgName }))
  h.write({ type: 'op', op: 'join', phase: 'invoke', resource: s.topic })
  await sg.join(spec.host, s.topic)
  // join() resolves after the first report whether or not it worked; a failed one latches the reporter.
  if (sg.health().some((r) => r.disconnected)) {
    h.write({ type: 'op', op: 'join', phase: 'fail', resource: s.topic, error: 'first report failed' })
    throw new Error(`service ${spec.host} could not join ${s.topic}`)
  }
  h.write({ type: 'op', op: 'join', phase: 'ok', resource: s.topic })
  return sg
}

/** Asks isUp() of every client's service, all at once, round after round until stopping. */
async function pollServices(sg: ServiceGroup, s: NonNullable<ClientSpec['services']>): Promise<void> {
  while (!stopping) {
    await Promise.all(
      Object.entries(s.processes).map(async ([host, member]) => {
        h.write({ type: 'op', op: 'isUp', phase: 'invoke', resource: s.topic, member })
        try {
          const up = await sg.isUp({ host, topic: s.topic })
          if (!stopping) h.write({ type: 'op', op: 'isUp', phase: 'ok', resource: s.topic, member, value: up })
        } catch (err) {
          if (!stopping) h.write({ type: 'op', op: 'isUp', phase: 'fail', resource: s.topic, member, error: why(err) })
        }
      }),
    )
    await pause(between(s.pollMs))
  }
}

if (spec.group !== undefined) await membership(spec.group)
const sg = spec.services === undefined ? undefined : await joinService(spec.services)
if (spec.election !== undefined) {
  await c.joinGroupCreate(spec.election.group).catch(() => {})
  runForLeader(spec.election)
}
const loop = spec.lock === undefined ? Promise.resolve() : lockLoop(spec.lock)
const polling = sg === undefined ? Promise.resolve() : pollServices(sg, spec.services!)
process.stdout.write('ready\n')

process.on('SIGTERM', () => {
  stopping = true
  if (held) h.write({ type: 'op', op: 'release', phase: 'invoke', resource: spec.lock!.name })
  held = false
  if (leading !== undefined) h.write({ type: 'op', op: 'standDown', phase: 'invoke', resource: leading })
  leading = undefined
  h.write({ type: 'process', what: 'exit' })
  if (sg) h.write({ type: 'process', what: 'exit', process: `${spec.name}/sg` })
  void Promise.allSettled([c.stop(), sg?.close()]).finally(() => process.exit(0))
})
await Promise.all([loop, polling])
setInterval(() => {}, 60_000)
