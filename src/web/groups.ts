/**
 * The coordination groups the status server shows: every group with its members, their
 * capabilities and its leader (where the driver has getLeader), read through a Coordinator that
 * only observes: it joins nothing and runs for nothing.
 *
 * Each group is watched (pushed by ZooKeeper, etcd and memory; polled by the coordinator
 * elsewhere) so that a join or leave re-reads that group at once; every `refreshMs` the list of
 * groups, and every group's members and leader, are read again (leaders change without member
 * events, and new groups announce themselves to nobody). Like the services view, refreshes never
 * overlap and only changed groups are announced.
 */
import { SingleFlight } from '../internal/single-flight.js'
import { EventEmitter } from 'node:events'
import type { Coordinator, RollcallError } from '../index.js'
import { toPublicJson } from './http.js'
import type { WebMetrics } from './metrics.js'

/** One member of a group. */
export interface GroupMemberRow {
  member_id: string
  /** Decoded capabilities, JSON-friendly, credentials in URLs redacted. */
  capabilities: unknown
}

/** One group as the API and the page show it. */
export interface GroupRow {
  group: string
  members: GroupMemberRow[]
  /** The leader's member id; null when nobody leads; undefined when the driver cannot tell. */
  leader: string | null | undefined
  /** Why the group could not be read (a corrupt or foreign value on the backend); the others still are. */
  error?: { code: string; message: string }
}

/** Events of a {@link GroupView}. */
export interface GroupViewEvents {
  changed: [GroupRow]
  removed: [{ group: string }]
  health: [Error | undefined]
}

/** Options of a {@link GroupView}. */
export interface GroupViewOptions {
  refreshMs: number
  metrics?: WebMetrics
  onWarning?: (message: string) => void
}

/** The live list of coordination groups behind the status page. */
export class GroupView extends EventEmitter<GroupViewEvents> {
  readonly coordinator: Coordinator
  readonly #o: GroupViewOptions
  readonly #hasLeader: boolean
  #groups = new Map<string, { row: GroupRow; json: string }>()
  readonly #unwatch = new Map<string, Promise<(() => Promise<void>) | undefined>>()
  readonly #dirty = new Set<string>()
  #full = true
  readonly #refresher = new SingleFlight(() => this.#refreshOnce(), () => !this.#stopped)
  #timer: NodeJS.Timeout | undefined
  #soon: NodeJS.Timeout | undefined
  #error: Error | undefined
  #stopped = false
  readonly #onMember = ({ group, member }: { group: string; member: string }, joined: boolean): void => {
    this.#dirty.add(group)
    if (joined) this.#joins.set(`${group}\u0000${member}`, Date.now())
    this.refreshSoon()
  }
  readonly #joins = new Map<string, number>()
  readonly #joined = (e: { group: string; member: string }): void => this.#onMember(e, true)
  readonly #left = (e: { group: string; member: string }): void => this.#onMember(e, false)

  constructor(coordinator: Coordinator, options: GroupViewOptions) {
    super()
    this.coordinator = coordinator
    this.#o = options
    this.#hasLeader = coordinator.capabilities.has('getLeader')
  }

  /** Every group of the last refresh, sorted. */
  get rows(): GroupRow[] {
    return [...this.#groups.values()].map((g) => g.row).sort((a, b) => a.group.localeCompare(b.group))
  }

  /** The last refresh's error, if it failed. */
  get error(): Error | undefined {
    return this.#error
  }

  /** First refresh (errors kept, not thrown), then the timer and the watchers. */
  async start(): Promise<void> {
    this.coordinator.on('memberJoined', this.#joined).on('memberLeft', this.#left)
    await this.refresh(true)
    this.#timer = setInterval(() => void this.refresh(true), this.#o.refreshMs)
    this.#timer.unref()
  }

  /** Stops the timer, the listeners and the watches (the coordinator stays up: its owner stops it). */
  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    clearTimeout(this.#soon)
    this.coordinator.off('memberJoined', this.#joined).off('memberLeft', this.#left)
    await this.#refresher.running?.catch(() => undefined)
    await Promise.allSettled([...this.#unwatch.values()].map(async (p) => (await p)?.()))
    this.#unwatch.clear()
  }

  /** Re-reads the groups that had events, within a few milliseconds. */
  refreshSoon(): void {
    if (this.#soon || this.#stopped) return
    this.#soon = setTimeout(() => {
      this.#soon = undefined
      void this.refresh(false)
    }, 20)
    this.#soon.unref()
  }

  /** Re-reads every group (`full`) or those with events since the last read. */
  refresh(full = true): Promise<void> {
    if (full) this.#full = true
    return this.#refresher.run()
  }

  /**
   * One group read now, or undefined when it no longer exists. A group that cannot be read (a
   * value of the wrong type, written by someone else) comes back with its `error`, so that it hides
   * no other group; an outage (a retryable error) is thrown: it is a health problem.
   */
  async readOrReport(group: string): Promise<GroupRow | undefined> {
    try {
      return await this.read(group)
    } catch (err) {
      const e = err as RollcallError
      if (e.code === 'GROUP_NOT_FOUND') return undefined
      if (e.retryable || typeof e.code !== 'string') throw err
      return { group, members: [], leader: undefined, error: { code: e.code, message: e.message } }
    }
  }

  /** One group read now (GroupNotFoundError when it does not exist). */
  async read(group: string): Promise<GroupRow> {
    const members = await this.coordinator.getMembersWithCapabilities(group)
    let leader: string | null | undefined
    if (this.#hasLeader) leader = await this.coordinator.getLeader(group)
    return {
      group,
      members: [...members].map(([member_id, caps]) => ({ member_id, capabilities: toPublicJson(caps) })),
      leader,
    }
  }

  async #refreshOnce(): Promise<void> {
    if (this.#stopped) return
    const full = this.#full
    this.#full = false
    const started = performance.now()
    try {
      const names = full ? await this.coordinator.getGroups() : [...this.#dirty].filter((g) => this.#groups.has(g))
      this.#dirty.clear()
      const read = await Promise.all(names.map(async (group) => ({ group, row: await this.readOrReport(group) })))
      if (this.#stopped) return
      for (const { group, row } of read) {
        if (row === undefined) this.#remove(group)
        else this.#apply(row)
      }
      if (full) for (const g of [...this.#groups.keys()]) if (!names.includes(g)) this.#remove(g)
      this.#o.metrics?.refreshDuration('groups', (performance.now() - started) / 1000)
      this.#o.metrics?.setGroupCounts(this.rows)
      if (this.#error !== undefined) {
        this.#error = undefined
        this.emit('health', undefined)
      }
    } catch (err) {
      this.#full = true
      this.#o.metrics?.refreshFailed('groups')
      if (this.#error === undefined) this.emit('health', err as Error)
      this.#error = err as Error
    }
  }

  #apply(row: GroupRow): void {
    const json = JSON.stringify(row)
    const before = this.#groups.get(row.group)
    this.#groups.set(row.group, { row, json })
    this.#measureJoins(row)
    if (!this.#unwatch.has(row.group)) this.#watch(row.group)
    if (before?.json !== json) this.emit('changed', row)
  }

  #remove(group: string): void {
    if (!this.#groups.delete(group)) return
    const unwatch = this.#unwatch.get(group)
    this.#unwatch.delete(group)
    void unwatch?.then((fn) => fn?.()).catch(() => undefined)
    this.emit('removed', { group })
  }

  #watch(group: string): void {
    this.#unwatch.set(group, this.coordinator.watchGroup(group).catch((err: unknown) => {
      this.#unwatch.delete(group)
      if ((err as RollcallError).code !== 'GROUP_NOT_FOUND') this.#o.onWarning?.(`Watching group ${group} failed (it is re-read every refresh instead): ${(err as Error).message}`)
      return undefined
    }))
  }

  /**
   * Watcher lag, where it can be measured: a member whose capabilities carry the time it
   * reported (rollcall's tooz service-group driver writes `reported_at` just before joining).
   */
  #measureJoins(row: GroupRow): void {
    for (const m of row.members) {
      const key = `${row.group}\u0000${m.member_id}`
      const seenAt = this.#joins.get(key)
      if (seenAt === undefined) continue
      this.#joins.delete(key)
      const at = (m.capabilities as { reported_at?: unknown } | null)?.reported_at
      const t = typeof at === 'string' ? Date.parse(at) : Number.NaN
      if (Number.isFinite(t) && seenAt >= t && seenAt - t < 60_000) this.#o.metrics?.watcherLag('join', (seenAt - t) / 1000)
    }
    if (this.#joins.size > 10_000) this.#joins.clear()
  }
}
