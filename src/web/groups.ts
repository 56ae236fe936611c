/**
 * The coordination groups the status server shows: every group with its members, their
 * capabilities and its leader (where the driver has getLeader), read through a Coordinator that
 * only observes: it joins nothing and runs for nothing.
 *
 * The members of a group that has any come from a group view (Coordinator.viewGroup: pushed by
 * ZooKeeper, etcd and memory, polled by the coordinator elsewhere, re-read in full every
 * `refreshMs`), whose changes re-read that group's leader and announce the row at once. Every
 * `refreshMs` the list of groups and those groups' leaders are read again (leaders change without
 * member events, and new groups announce themselves to nobody). Empty groups have no view: a slow
 * pass re-reads them (issue 28.12: 2,000 empty groups cost 32,000 Redis commands a second when
 * each was re-read every refresh). Like the services view, refreshes never overlap and only
 * changed groups are announced.
 */
import { mapBounded } from '../internal/map-bounded.js'
import { SingleFlight } from '../internal/single-flight.js'
import { EventEmitter } from 'node:events'
import { InvalidArgumentError, type Coordinator, type GroupView, type GroupViewChange, type RollcallError } from '../index.js'
import { toPublicJson } from './http.js'
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

/** Query parameters of the group lists (`/v1/groups` and the page). */
export const GROUP_QUERY_KEYS = ['prefix', 'empty', 'limit', 'cursor'] as const

/** Groups the status page shows at once unless `limit` says otherwise (a link leads to the next ones). */
export const PAGE_GROUPS = 200

/** Most groups one page lists (and the default of `limit`). */
export const MAX_GROUP_PAGE = 1000

/** Which groups a list shows: a name prefix, empty groups or not (not by default), and one page of them. */
export interface GroupQuery {
  prefix?: string
  /** Empty groups too (`empty=1`). */
  empty: boolean
  limit: number
  /** Groups whose names sort after this one (the `next_cursor` of the page before). */
  cursor?: string
}

/** Reads the group-list parameters from a query; `keys` are other parameters the caller takes. InvalidArgumentError naming the bad one. */
export function parseGroupQuery(query: URLSearchParams, otherKeys: readonly string[] = []): GroupQuery {
  const q: GroupQuery = { empty: false, limit: MAX_GROUP_PAGE }
  for (const [key, value] of query) {
    if (otherKeys.includes(key)) continue
    if (!(GROUP_QUERY_KEYS as readonly string[]).includes(key)) {
      throw new InvalidArgumentError(`Unknown query parameter "${key}"; the groups list takes ${GROUP_QUERY_KEYS.join(', ')}`)
    }
    if (value.length > 512) throw new InvalidArgumentError(`The ${key} parameter is longer than 512 characters`)
    if (key === 'empty') {
      if (!['', '0', '1', 'true', 'false'].includes(value)) throw new InvalidArgumentError(`empty takes 1 or 0, not ${JSON.stringify(value)}`)
      q.empty = value === '1' || value === 'true'
    } else if (key === 'limit') {
      const n = Number(value)
      if (!/^\d+$/.test(value) || n < 1 || n > MAX_GROUP_PAGE) {
        throw new InvalidArgumentError(`limit takes a whole number from 1 to ${MAX_GROUP_PAGE}, not ${JSON.stringify(value)}`)
      }
      q.limit = n
    } else if (value !== '') {
      q[key as 'prefix' | 'cursor'] = value
    }
  }
  return q
}

/** True when a group's name passes the prefix and lies after the cursor (emptiness is the caller's). */
export function matchesGroupQuery(group: string, q: GroupQuery): boolean {
  return (q.prefix === undefined || group.startsWith(q.prefix)) && (q.cursor === undefined || group > q.cursor)
}

/** Name order of the group lists and their cursors: by UTF-16 code units, the same on every machine. */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** One page of `rows` (sorted by name) that passes `q`, and the cursor of the next page (null: none). */
export function pageOfGroups(rows: readonly GroupRow[], q: GroupQuery): { groups: GroupRow[]; next_cursor: string | null } {
  const passing = rows.filter((r) => matchesGroupQuery(r.group, q) && (q.empty || r.members.length > 0 || r.error !== undefined)).sort((a, b) =>
    byCodeUnits(a.group, b.group)
  )
  const groups = passing.slice(0, q.limit)
  return { groups, next_cursor: passing.length > q.limit ? groups.at(-1)!.group : null }
}

/** Events of a {@link GroupListView}. */
export interface GroupListViewEvents {
  changed: [GroupRow]
  removed: [{ group: string }]
  health: [Error | undefined]
}

/** What a {@link GroupListView} reports to the status server's metrics (metrics.ts's WebMetrics has it). */
export interface GroupListMetrics {
  /** A refresh of the list took `seconds`. */
  refreshDuration(view: 'groups', seconds: number): void
  /** A refresh of the list failed. */
  refreshFailed(view: 'groups'): void
  /** The groups as the latest refresh read them, for the member counts. */
  setGroupCounts(groups: readonly GroupRow[]): void
  /** A join was seen `seconds` after the member's own clock says it happened. */
  watcherLag(source: 'join', seconds: number): void
}

/** Options of a {@link GroupListView}. */
export interface GroupListViewOptions {
  refreshMs: number
  /** How long one pass over the empty groups takes, re-reading a share of them at each refresh (default 60 000 ms). */
  emptyRefreshMs?: number
  metrics?: GroupListMetrics
}

/**
 * Group reads a refresh keeps in flight at most: the first refresh reads every group it finds, and
 * thousands of reads at once would queue on the one connection ahead of the coordinator's own beats.
 */
export const GROUP_READS_IN_FLIGHT = 64

/** The defaults of {@link GroupListViewOptions}. */
export const GROUP_LIST_DEFAULTS = { emptyRefreshMs: 60_000 } as const

/**
 * The live list of coordination groups behind the status page.
 *
 * What it costs follows the groups that have members, not the number of groups: only a group with
 * members has a group view (its watcher and re-reads). Every `refreshMs` it reads the list of
 * groups (one call: new groups are read at first sight, deleted ones go) and the leaders of the
 * groups with members; the empty groups are re-read in a slow pass, a share at each refresh, each
 * once per `emptyRefreshMs`. So a first member joining a group that was already empty shows within
 * `emptyRefreshMs`; every other change within a refresh or sooner.
 */
export class GroupListView extends EventEmitter<GroupListViewEvents> {
  readonly coordinator: Coordinator
  readonly #options: GroupListViewOptions
  readonly #emptyRefreshMs: number
  readonly #hasLeader: boolean
  #groups = new Map<string, { row: GroupRow; json: string }>()
  #sorted: GroupRow[] | undefined
  /** One group view per group that had members at its last read. */
  readonly #views = new Map<string, GroupView>()
  readonly #dirty = new Set<string>()
  /** Empty groups still to re-read in the current slow pass, and how many each refresh takes. */
  #sweep: string[] = []
  #sweepQuota = 1
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
    this.#emptyRefreshMs = options.emptyRefreshMs ?? GROUP_LIST_DEFAULTS.emptyRefreshMs
    this.#hasLeader = coordinator.capabilities.has('getLeader')
  }

  /** Every group known (empty ones included), sorted by name. */
  get rows(): GroupRow[] {
    this.#sorted ??= [...this.#groups.values()].map((g) => g.row).sort((a, b) => a.group.localeCompare(b.group))
    return this.#sorted
  }

  /** True when the group was read empty (and has no error), false when it had members, undefined when not known yet. */
  isEmpty(group: string): boolean | undefined {
    const row = this.#groups.get(group)?.row
    return row === undefined ? undefined : row.members.length === 0 && row.error === undefined
  }

  /** Groups with a group view open (those that had members at their last read). */
  get watched(): number {
    return this.#views.size
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

  /**
   * Re-reads (`full`) the list of groups, the groups with members (from their views) and their
   * leaders, new groups and a share of the empty ones; or only the groups whose views changed.
   */
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
      let names: string[]
      let listed: Set<string> | undefined
      if (full) {
        listed = new Set(await this.coordinator.getGroups())
        const firstSight = [...listed].filter((g) => !this.#groups.has(g))
        names = [...new Set([...this.#views.keys(), ...firstSight, ...this.#nextSweep()])].filter((g) => listed!.has(g))
      } else {
        names = [...this.#dirty].filter((g) => this.#views.has(g))
      }
      this.#dirty.clear()
      const read = await mapBounded(names, GROUP_READS_IN_FLIGHT, async (group) => ({
        group,
        row: await this.#readOne(group).catch((err: unknown) => reportUnreadable(group, err)),
      }))
      if (this.#stopped) return
      for (const { group, row } of read) {
        if (row === undefined) this.#remove(group)
        else this.#apply(row)
      }
      if (listed) { for (const g of [...this.#groups.keys()]) if (!listed.has(g)) this.#remove(g) }
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

  /** The next share of the slow pass over the empty groups (a new pass starts when one ends). */
  #nextSweep(): string[] {
    if (this.#sweep.length === 0) {
      this.#sweep = [...this.#groups.keys()].filter((g) => !this.#views.has(g))
      this.#sweepQuota = Math.max(1, Math.ceil((this.#sweep.length * this.#options.refreshMs) / this.#emptyRefreshMs))
    }
    return this.#sweep.splice(0, this.#sweepQuota).filter((g) => this.#groups.has(g) && !this.#views.has(g))
  }

  /**
   * A group's row, with its leader read now. A group with members is read through its view (opened
   * when it gains members, re-read first when it is not fresh, closed when it is read empty); an
   * empty one is read plainly. GroupNotFoundError when the group does not exist.
   */
  async #readOne(group: string): Promise<GroupRow> {
    const view = this.#views.get(group)
    if (view === undefined) {
      const members = await this.coordinator.getMembersWithCapabilities(group)
      if (members.size > 0) await this.#watch(group)
      return this.#row(group, this.#views.get(group)?.members ?? members, await this.#leader(group))
    }
    if (!view.fresh) await view.refresh()
    if (view.members.size === 0) this.#unwatch(group)
    return this.#row(group, view.members, await this.#leader(group))
  }

  /** Opens the view of a group that has members. */
  async #watch(group: string): Promise<void> {
    const view = await this.coordinator.viewGroup(group, { resyncIntervalMs: this.#options.refreshMs })
    if (this.#stopped || this.#views.has(group)) {
      await view.close()
      return
    }
    this.#views.set(group, view)
    view.on('changed', (change) => this.#changed(change))
  }

  /** Closes the view of a group read empty: from now on the slow pass reads it. */
  #unwatch(group: string): void {
    const view = this.#views.get(group)
    this.#views.delete(group)
    void view?.close().catch(() => undefined)
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
    if (before?.json !== json) this.#sorted = undefined
    this.#measureJoins(row)
    if (before?.json !== json) this.emit('changed', row)
  }

  #remove(group: string): void {
    this.#unwatch(group)
    if (this.#groups.delete(group)) {
      this.#sorted = undefined
      this.emit('removed', { group })
    }
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
