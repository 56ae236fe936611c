/**
 * A group view (Coordinator.viewGroup): one group's members with their capabilities, a version
 * and change events, kept current by the Coordinator's own watcher of that group.
 *
 * The view holds no timer of its own but the full re-read, and reads nothing itself: it is a sink
 * of the watcher engine (runtime/watchers.ts), which hands it every read of the group made inside the
 * group's single-flight refresh. The watcher's member cache and the view's snapshot come from the
 * same read, so a change cannot be seen by one and missed by the other, whatever the timing.
 */
import { EventEmitter } from 'node:events'
import { GroupNotFoundError, InvalidStateError, SerializationError } from '../errors.js'
import { emitSafely, type ReportFailure } from './runtime/user-code.js'
import type { RawMembers, ViewRead, ViewSink } from './runtime/watchers.js'

/** Options of Coordinator.viewGroup(). */
export interface GroupViewOptions {
  /**
   * How often the group is re-read in full, capabilities included, in ms (default 30 000).
   * Joins and leaves arrive through the watcher (pushed, polled every `watchIntervalMs`, or woken
   * at an expiry); a member that only changes its capabilities is seen at the latest at this
   * re-read (or at a refresh()). Not used with `autoWatch: false`: the view then changes only
   * inside refresh() and runWatchers().
   */
  resyncIntervalMs?: number
}

/** One change of a view: what the read that made it found, against the snapshot before it. */
export interface GroupViewChange {
  group: string
  /** The view's version after this change. */
  version: number
  /** Members that appeared, sorted. */
  joined: string[]
  /** Members that vanished (they left, lapsed, or the group was deleted), sorted. */
  left: string[]
  /** Members whose stored capabilities changed, sorted. */
  updated: string[]
}

/** Events of a {@link GroupView}. */
export interface GroupViewEvents {
  /** The snapshot changed; `version` went up. Not fired for the members present when the view opened, nor after close(). */
  changed: [GroupViewChange]
  /** The view ended: close() was called or the Coordinator stopped. Fires once; nothing fires after it. */
  closed: []
}

/** The defaults of {@link GroupViewOptions}. */
export const GROUP_VIEW_DEFAULTS = { resyncIntervalMs: 30_000 } as const

/** What a view needs from its Coordinator. @internal */
export interface GroupViewHost {
  /** autoWatch off: no full re-read timer. */
  manual: boolean
  /** Where a failing `changed` or `closed` listener is reported (the Coordinator's `warning`). */
  report: ReportFailure
  add(sink: ViewSink): Promise<void>
  remove(sink: ViewSink): Promise<void>
  refreshFull(): Promise<void>
  /** Decodes stored capabilities; a corrupt value comes back as its SerializationError (with a warning). */
  decode(member: string, value: Uint8Array | SerializationError): unknown
}

/**
 * A live view of one group's members and their capabilities, from Coordinator.viewGroup().
 *
 * @example
 * ```ts
 * const view = await coordinator.viewGroup('workers')
 * view.on('changed', ({ version, joined, left, updated }) => console.log(version, joined, left, updated))
 * console.log(view.members) // Map { 'worker-1' => { zone: 'az1' }, ... }
 * await view.close()
 * ```
 */
export class GroupView extends EventEmitter<GroupViewEvents> {
  /** The group viewed. */
  readonly group: string
  readonly #host: GroupViewHost
  readonly #resyncIntervalMs: number
  #members = new Map<string, unknown>()
  /** The stored capabilities behind #members, to tell a change from a re-read of the same value. */
  #raw = new Map<string, Uint8Array | string>()
  #version = 0
  #fresh = false
  #lastRead: ViewRead | undefined
  #timer: NodeJS.Timeout | undefined
  #closed = false
  /**
   * The view's end of its watcher. Doubt (a connection state change, a failed heartbeat, a
   * retryable warning) comes through it too, from the Coordinator's one internal fan-out: a view
   * adds no listener to the Coordinator, so the application's listener budget is its own.
   */
  readonly #sink: ViewSink = { read: (outcome) => this.#apply(outcome), ended: () => this.#end(), doubt: () => this.#doubt() }

  /** @internal Use Coordinator.viewGroup(). */
  constructor(group: string, options: GroupViewOptions, host: GroupViewHost) {
    super()
    this.group = group
    this.#host = host
    this.#resyncIntervalMs = options.resyncIntervalMs ?? GROUP_VIEW_DEFAULTS.resyncIntervalMs
  }

  /** @internal Registers the view with its watcher and waits for the first read (GroupNotFoundError, or the backend's error). */
  async open(): Promise<void> {
    if (this.#version > 0 || this.#closed) throw new InvalidStateError(`The view of group ${JSON.stringify(this.group)} is already open`)
    try {
      await this.#host.add(this.#sink)
    } catch (err) {
      this.#end(false)
      throw err
    }
    if (this.#host.manual) return
    this.#timer = setInterval(() => void this.#host.refreshFull(), this.#resyncIntervalMs)
    this.#timer.unref()
  }

  /**
   * Delivers `changed` or `closed`; a listener that throws, or whose promise rejects, is reported
   * as the Coordinator's `warning` (ListenerFailedError) and the view carries on.
   */
  override emit<K extends keyof GroupViewEvents>(event: K, ...args: GroupViewEvents[K]): boolean {
    return emitSafely(this, (e, ...a) => (super.emit as (e: string | symbol, ...a: unknown[]) => boolean).call(this, e, ...a), event, args, this.#host.report)
  }

  /** Live members with their decoded capabilities, sorted by id (a corrupt value maps to its SerializationError). */
  get members(): ReadonlyMap<string, unknown> {
    return this.#members
  }

  /** Goes up by one on every change (starts at 1 with the first snapshot). */
  get version(): number {
    return this.#version
  }

  /**
   * True when the last read of the group succeeded and nothing has cast doubt on it since: a
   * connection state change, a failed heartbeat, or an outage noticed elsewhere (a retryable
   * `warning`). While it is false the snapshot may lag the backend; refresh() re-reads it.
   */
  get fresh(): boolean {
    return this.#fresh && !this.#closed
  }

  /** True once the view has ended (close(), or the Coordinator stopped). */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * Re-reads the group now, capabilities included (coalesced with the watcher's own refresh), and
   * resolves once the snapshot reflects a read that began after this call. Rejects with the
   * read's error (the view is then not fresh), with GroupNotFoundError when the group does not
   * exist (the snapshot is then empty), and with InvalidStateError once the view is closed.
   */
  async refresh(): Promise<void> {
    this.#assertOpen()
    await this.#host.refreshFull()
    this.#assertOpen()
    const last = this.#lastRead
    if (last?.kind === 'failed') throw last.error
    if (last?.kind === 'missing') throw new GroupNotFoundError(this.group)
  }

  /** Ends the view: no read, timer or event after it (the group's watch ends with its last watcher). Safe twice. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#end()
    await this.#host.remove(this.#sink)
  }

  /** close(), for `await using view = await coordinator.viewGroup(group)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  #assertOpen(): void {
    if (this.#closed) throw new InvalidStateError(`The view of group ${JSON.stringify(this.group)} is closed; open another with viewGroup()`)
  }

  #doubt(): void {
    this.#fresh = false
  }

  #apply(outcome: ViewRead): void {
    // Before the first snapshot (a read already under way when the view was added): nothing to confirm.
    if (this.#closed || (this.#version === 0 && outcome.kind !== 'members')) return
    this.#lastRead = outcome
    if (outcome.kind === 'failed') return this.#doubt()
    this.#fresh = true
    if (outcome.kind === 'missing') this.#replace(new Map())
    else if (outcome.kind === 'members') this.#replace(outcome.members)
  }

  /** Installs a full read: the first is the baseline (version 1, no event); later ones fire `changed` when they differ. */
  #replace(read: RawMembers): void {
    const joined: string[] = []
    const updated: string[] = []
    const left = [...this.#raw.keys()].filter((m) => !read.has(m))
    const raw = new Map<string, Uint8Array | string>()
    const members = new Map<string, unknown>()
    for (const member of [...read.keys()].sort()) {
      const value = read.get(member)!
      const key = value instanceof SerializationError ? value.message : value
      const before = this.#raw.get(member)
      const same = before !== undefined && sameValue(before, key)
      raw.set(member, same ? before : typeof key === 'string' ? key : key.slice())
      members.set(member, same ? this.#members.get(member) : this.#host.decode(member, value))
      if (before === undefined) joined.push(member)
      else if (!same) updated.push(member)
    }
    const baseline = this.#version === 0
    if (!baseline && joined.length + left.length + updated.length === 0) return
    this.#raw = raw
    this.#members = members
    this.#version += 1
    if (!baseline) this.emit('changed', { group: this.group, version: this.#version, joined, left: left.sort(), updated })
  }

  #end(notify = true): void {
    if (this.#closed) return
    this.#closed = true
    clearInterval(this.#timer)
    if (notify) this.emit('closed')
  }
}

function sameValue(a: Uint8Array | string, b: Uint8Array | string): boolean {
  if (typeof a === 'string' || typeof b === 'string') return a === b
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b)
}
