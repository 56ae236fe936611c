/**
 * The coordination groups the status server shows: every group with its members, their
 * capabilities and its leader (where the driver has getLeader), read through a Coordinator that
 * only observes: it joins nothing and runs for nothing.
 *
 * Each group's members come from a group view (Coordinator.viewGroup: pushed by ZooKeeper, etcd
 * and memory, polled by the coordinator elsewhere, re-read in full every `refreshMs`), whose
 * changes re-read that group's leader and announce the row at once. Every `refreshMs` the list of
 * groups and every leader are read again (leaders change without member events, and new groups
 * announce themselves to nobody). Like the services view, refreshes never overlap and only
 * changed groups are announced.
 */
import { SingleFlight } from '../internal/single-flight.js'
import { EventEmitter } from 'node:events'
import type { Coordinator, GroupView, GroupViewChange, RollcallError } from '../index.js'
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

/** Events of a {@link GroupListView}. */
export interface GroupListViewEvents {
  changed: [GroupRow]
  removed: [{ group: string }]
  health: [Error | undefined]
}

/** Options of a {@link GroupListView}. */
export interface GroupListViewOptions {
  refreshMs: number
  metrics?: WebMetrics
}

/** The live list of coordination groups behind the status page. */
export class GroupListView extends EventEmitter<GroupListViewEvents> {
  readonly coordinator: Coordinator
  readonly #options: GroupListViewOptions
  readonly #hasLeader: boolean
  #groups = new Map<string, { row: GroupRow; json: string }>()
  /** One group view per listed group (a failed opening is tried again by the next full refresh). */
  readonly #views = new Map<string, GroupView>()
  readonly #dirty = new Set<string>()
  #full = true
  readonly #refresher = new SingleFlight(() => this.#refreshOnce(), () => !this.#stopped)
  #timer: NodeJS.Timeout | undefined
  #soon: NodeJS.Timeout | undefined
  #error: Error | undefined
  #stopped = false
  /** When a member was seen joining, for the watcher-lag metric. */
  readonly #joins = new Map<string, number>()

  constructor(coordinator: Coordinator, options: GroupListViewOptions) {
    super()
    this.coordinator = coordinator
    this.#options = options
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

  /** First refresh (errors kept, not thrown), then the timer. */
  async start(): Promise<void> {
    await this.refresh(true)
    this.#timer = setInterval(() => void this.refresh(true), this.#options.refreshMs)
    this.#timer.unref()
  }

  /** Stops the timer and closes the group views (the coordinator stays up: its owner stops it). */
  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    clearTimeout(this.#soon)
    await this.#refresher.running?.catch(() => undefined)
    await Promise.allSettled([...this.#views.values()].map((v) => v.close()))
    this.#views.clear()
  }

  /** Re-reads the groups whose views changed, within a few milliseconds. */
  refreshSoon(): void {
    if (this.#soon || this.#stopped) return
    this.#soon = setTimeout(() => {
      this.#soon = undefined
      void this.refresh(false)
    }, 20)
    this.#soon.unref()
  }

  /** Re-reads the list of groups and every leader (`full`), or the rows of the groups whose views changed. */
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
    return this.read(group).catch((err: unknown) => reportUnreadable(group, err))
  }

  /** One group read now (GroupNotFoundError when it does not exist). */
  async read(group: string): Promise<GroupRow> {
    const members = await this.coordinator.getMembersWithCapabilities(group)
    return this.#row(group, members, await this.#leader(group))
  }

  async #refreshOnce(): Promise<void> {
    if (this.#stopped) return
    const full = this.#full
    this.#full = false
    const started = performance.now()
    try {
      const names = full ? await this.coordinator.getGroups() : [...this.#dirty].filter((g) => this.#groups.has(g))
      this.#dirty.clear()
      const read = await Promise.all(
        names.map(async (group) => ({ group, row: await this.#viewed(group).catch((err: unknown) => reportUnreadable(group, err)) })),
      )
      if (this.#stopped) return
      for (const { group, row } of read) {
        if (row === undefined) this.#remove(group)
        else this.#apply(row)
      }
      if (full) { for (const g of [...this.#groups.keys()]) if (!names.includes(g)) this.#remove(g) }
      this.#options.metrics?.refreshDuration('groups', (performance.now() - started) / 1000)
      this.#options.metrics?.setGroupCounts(this.rows)
      if (this.#error !== undefined) {
        this.#error = undefined
        this.emit('health', undefined)
      }
    } catch (err) {
      this.#full = true
      this.#options.metrics?.refreshFailed('groups')
      if (this.#error === undefined) this.emit('health', err as Error)
      this.#error = err as Error
    }
  }

  /**
   * A group's row from its view (opened on first sight; re-read first when it is not fresh or is empty), with
   * its leader read now. GroupNotFoundError when the group does not exist.
   */
  async #viewed(group: string): Promise<GroupRow> {
    let view = this.#views.get(group)
    if (view === undefined) {
      view = await this.coordinator.viewGroup(group, { resyncIntervalMs: this.#options.refreshMs })
      if (this.#stopped || this.#views.has(group)) {
        await view.close()
        view = this.#views.get(group)
        if (view === undefined) throw new Error('the status server stopped')
      } else {
        this.#views.set(group, view)
        view.on('changed', (change) => this.#changed(change))
      }
    } else if (!view.fresh || view.members.size === 0) {
      // An empty view may be a deleted group: only a read tells (GroupNotFoundError), and the row goes at once.
      await view.refresh()
    }
    return this.#row(group, view.members, await this.#leader(group))
  }

  #changed(change: GroupViewChange): void {
    const seenAt = Date.now()
    for (const member of change.joined) this.#joins.set(`${change.group}\u0000${member}`, seenAt)
    this.#dirty.add(change.group)
    this.refreshSoon()
  }

  #leader(group: string): Promise<string | null | undefined> {
    return this.#hasLeader ? this.coordinator.getLeader(group) : Promise.resolve(undefined)
  }

  #row(group: string, members: ReadonlyMap<string, unknown>, leader: string | null | undefined): GroupRow {
    return { group, members: [...members].map(([member_id, caps]) => ({ member_id, capabilities: toPublicJson(caps) })), leader }
  }

  #apply(row: GroupRow): void {
    const json = JSON.stringify(row)
    const before = this.#groups.get(row.group)
    this.#groups.set(row.group, { row, json })
    this.#measureJoins(row)
    if (before?.json !== json) this.emit('changed', row)
  }

  #remove(group: string): void {
    const view = this.#views.get(group)
    this.#views.delete(group)
    void view?.close().catch(() => undefined)
    if (this.#groups.delete(group)) this.emit('removed', { group })
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
      if (Number.isFinite(t) && seenAt >= t && seenAt - t < 60_000) this.#options.metrics?.watcherLag('join', (seenAt - t) / 1000)
    }
    if (this.#joins.size > 10_000) this.#joins.clear()
  }
}

/**
 * What a failed read of one group shows: nothing when the group does not exist; the error in its
 * row when the group cannot be read (a value of the wrong type, written by someone else), so that
 * it hides no other group. An outage (a retryable error) is thrown: it is a health problem.
 */
function reportUnreadable(group: string, err: unknown): GroupRow | undefined {
  const e = err as RollcallError
  if (e.code === 'GROUP_NOT_FOUND') return undefined
  if (e.retryable || typeof e.code !== 'string') throw err
  return { group, members: [], leader: undefined, error: { code: e.code, message: e.message } }
}
