/**
 * Join/leave watchers: one member cache per watched group, one diff, two ways of being woken.
 *
 * Drivers with `pushWatch` wake a group's refresh the moment the backend reports a change; the
 * others are polled every `watchIntervalMs`. Either way the same code reads the member list,
 * diffs it against the cache and fires `memberJoined`/`memberLeft` plus the group's callbacks, so
 * push and poll cannot disagree. Refreshes of one group never overlap: a wake-up during a
 * refresh runs it once more afterwards (SingleFlight).
 *
 * A polled group whose listing showed when its first member expires (nextExpiryAt) is re-read
 * just after that moment too, so a crashed member is seen leaving within milliseconds of the
 * backend's expiry rather than up to a poll interval later.
 *
 * As in tooz, a group that disappears counts as empty (everyone "leaves"), and a member that finds
 * itself missing from a group it joined reports it (the Coordinator then rejoins).
 *
 * With `manual` (autoWatch off) nothing happens by itself: no push subscription, no expiry timer;
 * groups are read, and callbacks run, only when runWatchers() calls poll().
 *
 * A group with views (Coordinator.viewGroup) keeps its member cache from reads that carry the
 * capabilities: a refresh first lists the ids (cheap, and where the driver notes expiries), and
 * when they differ from the cache, or a full read was asked for, lists the members with their
 * capabilities, diffs that against the cache and hands the same read to every view. Cache and
 * snapshots therefore come from one read, inside the group's single-flight refresh: no read of a
 * view can race the cache.
 */
import { asRollcallError, CoordinatorStoppedError, GroupNotFoundError, type RollcallError, type SerializationError,
  WatchCallbackNotFoundError } from '../../errors.js'
import { keepAlive } from '../../internal/keep-alive.js'
import { SingleFlight } from '../../internal/single-flight.js'
import type { MemberEvent } from '../events.js'
import { anySubscriber, traced, watchDispatchChannel, type TraceBase } from '../tracing.js'
import { callUserCode, type ReportFailure } from './user-code.js'

/** A join or leave callback. Its return value is collected for runWatchers(). */
export type WatchCallback = (event: MemberEvent) => unknown

/** Members with their stored capabilities, as the driver lists them. */
export type RawMembers = ReadonlyMap<string, Uint8Array | SerializationError>

/** What one read of a viewed group found (not exported from the package root). */
export type ViewRead =
  | { kind: 'members'; members: RawMembers }
  /** The ids matched the cache: the view's members are confirmed (capabilities were not read). */
  | { kind: 'unchanged' }
  /** The group does not exist (any more). */
  | { kind: 'missing' }
  | { kind: 'failed'; error: RollcallError }

/** A view's end of a watched group (not exported from the package root). */
export interface ViewSink {
  /** Every read of the group, in order. */
  read(outcome: ViewRead): void
  /** The watch ended (the Coordinator stopped). */
  ended(): void
  /** Something (a connection change, a failed heartbeat, an outage) may have hidden a change since the last read. */
  doubt(): void
}

/** What the watcher engine needs from its Coordinator. */
export interface WatcherHost {
  readonly memberId: string
  /** Current member ids (throws GroupNotFoundError when the group is missing). */
  listMemberIds(group: string): Promise<string[]>
  /** Current members with their capabilities, in one driver call (GroupNotFoundError when missing). */
  listMembers(group: string): Promise<RawMembers>
  /** False when listMemberIds() is listMembers() in disguise: views then skip the id probe. */
  cheapIds: boolean
  /** A number that changes each time this member (re)joins `group`; undefined when not joined. */
  joinEpoch(group: string): number | undefined
  /** This member is missing from `group`, which it joined at `epoch`. */
  selfMissing(group: string, epoch: number): void
  emitJoined(event: MemberEvent): void
  emitLeft(event: MemberEvent): void
  warn(err: RollcallError): void
  /** A join or leave callback failed. */
  callbackFailed: ReportFailure
  /** The driver's push subscription, when it has one. */
  subscribe?: (group: string, onChange: () => void) => Promise<() => Promise<void>>
  /**
   * True when the subscription pushes every change, expiries included (capability `pushWatch`):
   * such groups are then only re-read as a slow safety net. False: they are polled as well, the
   * subscription merely making joins and leaves arrive sooner.
   */
  pushesEverything: boolean
  /**
   * When the first member of `group` seen by the latest listing expires (performance.now() ms).
   * Given only when the Coordinator polls by itself; a tooz-style caller of runWatchers() polls.
   */
  nextExpiryAt?: (group: string) => number | undefined
  /** Groups are polled this often anyway: an expiry further off than this waits for the poll. */
  watchIntervalMs: number
  /** autoWatch off: groups change only when runWatchers() polls (no subscription, no timers). */
  manual: boolean
  /** What this coordinator's trace payloads carry. */
  readonly trace: TraceBase
}

/** Results kept for runWatchers() when nobody calls it (autoWatch on): the oldest are dropped beyond this. */
const MAX_KEPT_RESULTS = 1_000

/** How long after a member's expiry its group is re-read: the backend's clock may run a little behind ours. */
const EXPIRY_MARGIN_MS = 5

interface GroupWatch {
  members: Set<string>
  onJoin: Set<WatchCallback>
  onLeave: Set<WatchCallback>
  /** watchGroup() subscriptions that want events without callbacks. */
  plain: number
  /** Views of the group (Coordinator.viewGroup). */
  views: Set<ViewSink>
  /** The next read lists capabilities whatever the ids say (a view asked). */
  full: boolean
  unsubscribe: (() => Promise<void>) | undefined
  /** Re-reads the group; runs never overlap. */
  refresher: SingleFlight
  /** The re-read due at the next expiry, and when it fires (performance.now() ms). */
  expiryTimer: NodeJS.Timeout | undefined
  expiryTimerAt: number
}

/** The watcher engine of one Coordinator. */
export class Watchers {
  readonly #host: WatcherHost
  readonly #groups = new Map<string, GroupWatch>()
  #results: unknown[] = []
  /** Keeps the process alive while a group is watched with autoWatch on (events may still come). */
  #alive: (() => void) | undefined

  constructor(host: WatcherHost) {
    this.#host = host
  }

  /** Groups currently watched. */
  get groups(): string[] {
    return [...this.#groups.keys()]
  }

  /** Adds a callback; the first watch of a group reads it once (GroupNotFoundError if missing). */
  async add(group: string, kind: 'join' | 'leave' | 'plain', cb?: WatchCallback): Promise<void> {
    const watch = this.#groups.get(group) ?? (await this.#open(group))
    if (kind === 'plain') watch.plain += 1
    else if (cb) (kind === 'join' ? watch.onJoin : watch.onLeave).add(cb)
  }

  /** Removes a callback (WatchCallbackNotFoundError if it was not there); the last one closes the watch. */
  async remove(group: string, kind: 'join' | 'leave' | 'plain', cb?: WatchCallback): Promise<void> {
    const watch = this.#groups.get(group)
    const set = kind === 'join' ? watch?.onJoin : watch?.onLeave
    if (!watch || (kind === 'plain' ? watch.plain === 0 : !cb || !set!.delete(cb))) {
      throw new WatchCallbackNotFoundError(group)
    }
    if (kind === 'plain') watch.plain -= 1
    await this.#closeIfUnused(group, watch)
  }

  /**
   * Adds a view: resolves once it has had its first full read (in sink.read()), and rejects, with
   * the sink removed, when that read failed (GroupNotFoundError for a missing group).
   */
  async addView(group: string, sink: ViewSink): Promise<void> {
    const watch = this.#groups.get(group)
    if (!watch) {
      await this.#open(group, sink)
      return
    }
    // The full read asked for here runs after this call. A run woken meanwhile (a poll, a push)
    // may follow it within the same refresh and find the ids unchanged: that confirms the full
    // read, so the recorder keeps the last read that was not 'unchanged'.
    let last: ViewRead | undefined
    const recorder: ViewSink = { read: (outcome) => void (outcome.kind === 'unchanged' || (last = outcome)), ended: () => {}, doubt: () => {} }
    watch.views.add(sink).add(recorder)
    try {
      await this.refreshFull(group)
    } finally {
      watch.views.delete(recorder)
    }
    if (last?.kind === 'members') return
    await this.removeView(group, sink)
    throw last?.kind === 'failed' ? last.error : last?.kind === 'missing' ? new GroupNotFoundError(group) : new CoordinatorStoppedError('view a group')
  }

  /** Removes a view; the last watcher of a group closes its watch. Does nothing for an unknown view. */
  async removeView(group: string, sink: ViewSink): Promise<void> {
    const watch = this.#groups.get(group)
    if (watch?.views.delete(sink)) await this.#closeIfUnused(group, watch)
  }

  /** Every view of every group doubts its snapshot (see ViewSink.doubt). */
  doubtViews(): void {
    for (const w of this.#groups.values()) for (const v of w.views) v.doubt()
  }

  /** Re-reads one group now, with its members' capabilities (views want them); coalesces. Never rejects. */
  refreshFull(group: string): Promise<void> {
    const watch = this.#groups.get(group)
    if (!watch) return Promise.resolve()
    watch.full = true
    return watch.refresher.run()
  }

  async #closeIfUnused(group: string, watch: GroupWatch): Promise<void> {
    if (watch.onJoin.size + watch.onLeave.size + watch.plain + watch.views.size > 0 || this.#groups.get(group) !== watch) return
    this.#groups.delete(group)
    if (this.#groups.size === 0) this.#letGo()
    clearTimeout(watch.expiryTimer)
    await watch.unsubscribe?.().catch((err: unknown) => this.#host.warn(asRollcallError(err, `Ending the watch on ${group}`)))
  }

  /** Re-reads every watched group whose changes are not all pushed (every group with `all`). */
  async poll(all = false): Promise<void> {
    await Promise.all([...this.#groups].filter(([, w]) => all || !this.#pushed(w)).map(([g]) => this.refresh(g)))
  }

  /** Re-reads one group now; concurrent calls coalesce. Never rejects. */
  refresh(group: string): Promise<void> {
    return this.#groups.get(group)?.refresher.run() ?? Promise.resolve()
  }

  /**
   * Callback results collected since the last call (tooz run_watchers() returns these), once every
   * one has settled: a callback's promise is awaited, and a rejected one counts as undefined.
   */
  async drainResults(): Promise<unknown[]> {
    const out = this.#results
    this.#results = []
    return Promise.all(out.map((r) => (r instanceof Promise ? r.then((v: unknown) => v, () => undefined) : r)))
  }

  /** Ends every push subscription. */
  async stop(): Promise<void> {
    const watches = [...this.#groups.values()]
    this.#groups.clear()
    this.#letGo()
    for (const w of watches) clearTimeout(w.expiryTimer)
    for (const w of watches) for (const v of w.views) v.ended()
    await Promise.allSettled(watches.map((w) => w.unsubscribe?.()))
  }

  /** Opens the watch of a group; with `view`, its first read lists capabilities and goes to the view. */
  async #open(group: string, view?: ViewSink): Promise<GroupWatch> {
    const watch: GroupWatch = {
      members: new Set(),
      onJoin: new Set(),
      onLeave: new Set(),
      plain: 0,
      views: new Set(),
      full: false,
      unsubscribe: undefined,
      expiryTimer: undefined,
      expiryTimerAt: Infinity,
      refresher: new SingleFlight(() => this.#diff(group, watch), () => this.#groups.get(group) === watch),
    }
    // Subscribe before the first read, so that no change between the two is missed.
    if (this.#host.subscribe && !this.#host.manual) watch.unsubscribe = await this.#host.subscribe(group, () => void this.refresh(group))
    let members: RawMembers | undefined
    try {
      if (view) members = await this.#host.listMembers(group)
      watch.members = new Set(members ? members.keys() : await this.#host.listMemberIds(group))
    } catch (err) {
      await watch.unsubscribe?.().catch(() => {})
      throw err
    }
    // Another add() may have opened it meanwhile; keep the first.
    if (this.#groups.has(group)) {
      await watch.unsubscribe?.().catch(() => {})
      if (view) await this.addView(group, view)
      return this.#groups.get(group)!
    }
    this.#groups.set(group, watch)
    if (view && members) {
      watch.views.add(view)
      view.read({ kind: 'members', members })
    }
    if (!this.#host.manual) this.#alive ??= keepAlive()
    this.#scheduleExpiry(group, watch)
    return watch
  }

  #letGo(): void {
    this.#alive?.()
    this.#alive = undefined
  }

  async #diff(group: string, watch: GroupWatch): Promise<void> {
    const epoch = this.#host.joinEpoch(group)
    const full = watch.full
    watch.full = false
    let now: Set<string>
    let outcome: ViewRead = { kind: 'unchanged' }
    try {
      const read = await this.#read(group, watch, full)
      now = read.ids
      if (read.members) outcome = { kind: 'members', members: read.members }
    } catch (err) {
      // The watch ended while its read was in flight (stop(), or its last watcher went): nobody wants this read.
      if (this.#groups.get(group) !== watch) return
      if (!(err instanceof GroupNotFoundError)) {
        const error = asRollcallError(err, `Refreshing the members of ${group}`)
        this.#host.warn(error)
        if (this.#groups.get(group) === watch) { for (const v of watch.views) v.read({ kind: 'failed', error }) }
        return
      }
      now = new Set()
      outcome = { kind: 'missing' }
    }
    if (this.#groups.get(group) !== watch) return
    this.#scheduleExpiry(group, watch)
    const joined = [...now].filter((m) => !watch.members.has(m))
    const left = [...watch.members].filter((m) => !now.has(m))
    watch.members = now
    for (const member of left) this.#fire(watch.onLeave, 'watchLeaveGroup', { group, member }, this.#host.emitLeft)
    for (const member of joined) this.#fire(watch.onJoin, 'watchJoinGroup', { group, member }, this.#host.emitJoined)
    for (const v of watch.views) v.read(outcome)
    if (epoch !== undefined && epoch === this.#host.joinEpoch(group) && !now.has(this.#host.memberId)) {
      this.#host.selfMissing(group, epoch)
    }
  }

  /**
   * One read of a group. Without views: its ids. With views: the ids first (unless `full`), and
   * the members with capabilities when they differ from the cache; the cache then follows that
   * second read, so that views and cache never disagree.
   */
  async #read(group: string, watch: GroupWatch, full: boolean): Promise<{ ids: Set<string>; members?: RawMembers }> {
    const viewed = watch.views.size > 0
    if (!viewed || (!full && this.#host.cheapIds)) {
      const ids = new Set(await this.#host.listMemberIds(group))
      if (!viewed || (ids.size === watch.members.size && [...ids].every((m) => watch.members.has(m)))) return { ids }
    }
    const members = await this.#host.listMembers(group)
    return { ids: new Set(members.keys()), members }
  }

  #pushed(w: GroupWatch): boolean {
    return w.unsubscribe !== undefined && this.#host.pushesEverything
  }

  /** Re-reads the group just after its first member expires, when that comes before the next poll. */
  #scheduleExpiry(group: string, watch: GroupWatch): void {
    const expiresAt = this.#host.nextExpiryAt?.(group)
    if (expiresAt === undefined || this.#pushed(watch)) return
    const at = expiresAt + EXPIRY_MARGIN_MS
    const now = performance.now()
    // Past already (a listing that disagrees with its own expiry): the poll deals with it, no hot loop.
    if (at <= now || at - now > this.#host.watchIntervalMs) return
    if (watch.expiryTimer !== undefined && watch.expiryTimerAt <= at) return
    clearTimeout(watch.expiryTimer)
    watch.expiryTimerAt = at
    watch.expiryTimer = setTimeout(() => {
      watch.expiryTimer = undefined
      void this.refresh(group)
    }, Math.max(0, at - now))
    watch.expiryTimer.unref()
  }

  /**
   * Delivers one change: the event, then the callbacks. Traced (watch.dispatch) when someone
   * listens: the span ends once every callback has settled, and the callbacks run in its context.
   */
  #fire(callbacks: Set<WatchCallback>, kind: 'watchJoinGroup' | 'watchLeaveGroup', event: MemberEvent, emit: (e: MemberEvent) => void): void {
    if (!anySubscriber(watchDispatchChannel)) {
      this.#deliver(callbacks, kind, event, emit)
      return
    }
    const payload = { ...this.#host.trace, group: event.group, member: event.member, event: kind === 'watchJoinGroup' ? 'join' as const : 'leave' as const }
    // The delivery itself is synchronous (tracePromise runs it at once); only the span's end waits.
    void traced(watchDispatchChannel, () => payload, async () => {
      await Promise.allSettled(this.#deliver(callbacks, kind, event, emit))
    }).catch(() => {})
  }

  #deliver(callbacks: Set<WatchCallback>, kind: 'watchJoinGroup' | 'watchLeaveGroup', event: MemberEvent, emit: (e: MemberEvent) => void): unknown[] {
    emit(event)
    const results: unknown[] = []
    for (const cb of callbacks) results.push(callUserCode(cb, event, kind, 'callback', this.#host.callbackFailed))
    this.#results.push(...results)
    if (!this.#host.manual && this.#results.length > MAX_KEPT_RESULTS) this.#results.splice(0, this.#results.length - MAX_KEPT_RESULTS)
    return results
  }
}
