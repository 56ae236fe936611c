/**
 * memory:// — every coordinator in this process that names the same store shares it.
 *
 * URL: `memory://` (the default store) or `memory://NAME` (a separate store per NAME).
 *
 * Consistency: linearizable within the process; nothing leaves it. Members never expire (there
 * is no other process to die); they leave when their coordinator stops. Changes are pushed to
 * watchers at once, lock waiters queue in FIFO order and each new holder gets a larger fencing
 * token.
 *
 * Hazards: none across processes, because it does not cross them: two processes with
 * `memory://` see two unrelated stores. Use it for tests and for single-process programs.
 */
import { GroupExistsError, GroupNotEmptyError, GroupNotFoundError, MemberExistsError, MemberNotJoinedError } from '../../errors.js'
import { defineDriver, type CoordinationDriver, type DriverLock, type HeartbeatResult, type QueueWaiting } from '../driver.js'

interface Member {
  capabilities: Uint8Array
  createdAt: Date
  updatedAt: Date
}

interface Held {
  holder: MemoryLock
  memberId: string
}

/** One shared store. */
class Store {
  readonly groups = new Map<string, Map<string, Member>>()
  readonly locks = new Map<string, Held>()
  readonly queues = new Map<string, { lock: MemoryLock; grant: () => void }[]>()
  readonly listeners = new Map<string, Set<() => void>>()
  fence = 0n

  notify(group: string): void {
    for (const cb of this.listeners.get(group) ?? []) queueMicrotask(cb)
  }

  group(group: string): Map<string, Member> {
    const g = this.groups.get(group)
    if (!g) throw new GroupNotFoundError(group)
    return g
  }

  /** Frees a lock and hands it to the first queued waiter, if any. */
  free(key: string): void {
    this.locks.delete(key)
    const next = this.queues.get(key)?.shift()
    next?.grant()
  }
}

const stores = new Map<string, Store>()

class MemoryLock implements DriverLock {
  fencingToken: bigint | undefined
  /** Waiters queue in the store, in FIFO order. */
  readonly waiting: QueueWaiting = { kind: 'queue', acquireWaiting: (signal) => this.#acquireWaiting(signal) }
  constructor(readonly store: Store, readonly key: string, readonly memberId: string) {}

  #take(): void {
    this.store.locks.set(this.key, { holder: this, memberId: this.memberId })
    this.fencingToken = ++this.store.fence
  }

  async tryAcquire(): Promise<boolean> {
    if (this.store.locks.has(this.key)) return false
    this.#take()
    return true
  }

  #acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (!this.store.locks.has(this.key)) {
      this.#take()
      return Promise.resolve(true)
    }
    return new Promise((resolve) => {
      const queue = this.store.queues.get(this.key) ?? []
      this.store.queues.set(this.key, queue)
      const entry = {
        lock: this as MemoryLock,
        grant: () => {
          signal.removeEventListener('abort', onAbort)
          this.#take()
          resolve(true)
        },
      }
      const onAbort = (): void => {
        const i = queue.indexOf(entry)
        if (i >= 0) queue.splice(i, 1)
        resolve(false)
      }
      if (signal.aborted) return resolve(false)
      signal.addEventListener('abort', onAbort, { once: true })
      queue.push(entry)
    })
  }

  async release(): Promise<boolean> {
    if (this.store.locks.get(this.key)?.holder !== this) return false
    this.store.free(this.key)
    return true
  }

  async refresh(): Promise<boolean> {
    return this.isStillOwner()
  }

  async isStillOwner(): Promise<boolean> {
    return this.store.locks.get(this.key)?.holder === this
  }

  async break(): Promise<boolean> {
    if (!this.store.locks.has(this.key)) return false
    this.store.free(this.key)
    return true
  }
}

class MemoryDriver implements CoordinationDriver {
  constructor(readonly store: Store, readonly memberId: string) {}

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  /** Nothing expires here; the beat only gives the coordinator a cadence for lock checks. */
  async heartbeat(): Promise<HeartbeatResult> {
    return { nextBeatMs: 10_000, locks: { refreshed: false } }
  }

  async createGroup(group: string): Promise<void> {
    if (this.store.groups.has(group)) throw new GroupExistsError(group)
    this.store.groups.set(group, new Map())
  }

  async deleteGroup(group: string): Promise<void> {
    if (this.store.group(group).size > 0) throw new GroupNotEmptyError(group)
    this.store.groups.delete(group)
    this.store.notify(group)
  }

  async listGroups(): Promise<string[]> {
    return [...this.store.groups.keys()]
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    const g = this.store.group(group)
    if (g.has(this.memberId)) throw new MemberExistsError(group, this.memberId)
    const now = new Date()
    g.set(this.memberId, { capabilities, createdAt: now, updatedAt: now })
    this.store.notify(group)
  }

  async leaveGroup(group: string): Promise<void> {
    if (!this.store.group(group).delete(this.memberId)) throw new MemberNotJoinedError(group, this.memberId)
    this.store.notify(group)
  }

  async listMembers(group: string): Promise<Map<string, Uint8Array>> {
    return new Map([...this.store.group(group)].map(([m, v]) => [m, v.capabilities]))
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    const member = this.store.group(group).get(this.memberId)
    if (!member) throw new MemberNotJoinedError(group, this.memberId)
    member.capabilities = capabilities
    member.updatedAt = new Date()
  }

  async getMemberInfo(group: string, member: string): Promise<Member> {
    const m = this.store.group(group).get(member)
    if (!m) throw new MemberNotJoinedError(group, member)
    return { ...m }
  }

  createLock(name: string): DriverLock {
    return new MemoryLock(this.store, `lock:${name}`, this.memberId)
  }

  async watchGroup(group: string, onChange: () => void): Promise<() => Promise<void>> {
    const set = this.store.listeners.get(group) ?? new Set()
    this.store.listeners.set(group, set)
    set.add(onChange)
    return async () => {
      set.delete(onChange)
    }
  }

  leaderLock(group: string): DriverLock {
    return new MemoryLock(this.store, `leader:${group}`, this.memberId)
  }

  async getLeader(group: string): Promise<string | null> {
    return this.store.locks.get(`leader:${group}`)?.memberId ?? null
  }
}

export default defineDriver({
  name: 'memory',
  summary: 'An in-process backend: every coordinator of one process that names the same store shares groups, locks and leaders. For tests and single-process '
    + 'programs.',
  urlForms: ['memory://', 'memory://NAME'],
  consistency: 'Linearizable within the process. Members never expire; they leave when their coordinator stops. Changes reach watchers at once.',
  hazards: ['Nothing is shared between processes: two processes naming memory:// have two unrelated stores.'],
  capabilities: ['groups', 'updateCapabilities', 'memberInfo', 'pushWatch', 'leaderElection', 'getLeader', 'locks', 'lockWaitQueue', 'fencing'],
  options: {},
  create({ url, memberId }) {
    const name = `${url.hosts.map((h) => h.host).join(',')}${url.path}`
    let store = stores.get(name)
    if (!store) stores.set(name, store = new Store())
    return new MemoryDriver(store, memberId)
  },
})
