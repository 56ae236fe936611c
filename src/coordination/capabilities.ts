/**
 * What a driver can do, declared as data. Capabilities gate the conformance suite, generate the
 * docs matrix, and are checked by `connect(url, { require })`. A capability a driver does not
 * declare is absent: the coordinator either supplies the behaviour itself or throws
 * NotSupportedError naming the capability.
 */

/** Every capability with the sentence the docs print for it. */
export const CAPABILITY_DOCS = {
  groups: 'Groups: create, delete and list groups; join, leave and list members with their capabilities.',
  updateCapabilities: 'A member can replace its capabilities while it stays joined.',
  memberInfo: 'getMemberInfo(): when a member joined and last changed, as the backend records it.',
  memberExpiry: 'A member that stops heartbeating is removed after membership_timeout (tooz: timeout-based).',
  sessionExpiry: 'A member is removed when its session or lease with the backend ends (crash, partition).',
  pushWatch: 'Membership changes are pushed by the backend (no polling): watchers fire within milliseconds.',
  expiryWake:
    "Without push, a watched group is re-read the moment its first member expires: a crashed member is seen leaving within milliseconds of the backend's "
    + 'expiry, not at the next poll.',
  leaderElection: 'Leader election among the members of a group: watchElectedAsLeader(), standDownGroupLeader().',
  electionWake:
    "Without a wait queue, a candidate retries when the leader's lock may be free (lease lapsed, holder dead), not at the next poll: fail-over in ~100 ms.",
  getLeader: 'getLeader(): who leads a group, readable by any member.',
  locks: 'Named locks that exclude other processes, including Python tooz processes using the same backend.',
  lockWaitQueue: 'A blocked acquire() waits in a queue and is woken by the backend, not by polling.',
  sharedLocks: 'Shared (reader) locks: acquire({ shared: true }) holds together with other shared holders and excludes exclusive ones, across processes.',
  fencing: 'Each acquisition of a lock yields a fencing token that grows with every new holder.',
  acrossProcesses: 'Works across processes on one host.',
  acrossHosts: 'Works across hosts.',
} as const

/** The name of one capability. */
export type Capability = keyof typeof CAPABILITY_DOCS

/** Every capability name, in docs order. */
export const ALL_CAPABILITIES = Object.keys(CAPABILITY_DOCS) as Capability[]

/** True when `name` is a capability rollcall knows. */
export function isCapability(name: string): name is Capability {
  return Object.hasOwn(CAPABILITY_DOCS, name)
}
