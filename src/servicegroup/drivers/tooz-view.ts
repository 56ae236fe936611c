/**
 * The tooz driver's live view of one topic: the group's members with their capabilities, kept
 * current by the coordination layer's watchers (memberJoined / memberLeft), so that isUp() on the
 * hot path reads nothing while the view is fresh.
 *
 * - Opening: watch the group first (creating it if missing), then read every member with its
 *   capabilities in one call. Events that arrive meanwhile are applied after that read, in order.
 * - Every change (a full read, a join — whose capabilities are read once —, a leave) runs through
 *   one serial chain, so a slow read can never undo a later event.
 * - The view is fresh from a successful full read until something casts doubt on it: a broken or
 *   lost connection, a failed heartbeat, a watcher warning. Then the next read refreshes it.
 * - Events are diffs against the coordination layer's own member cache, read at its own times. A
 *   full read of ours that finds a change the events had not announced may be newer than that
 *   cache; if the change is undone before the cache is next read (a member dropped and rejoined
 *   within one watch interval), no event will tell. So such a read is followed by another one
 *   after two watch intervals (tooz.ts), until a read finds nothing new.
 */
import type { Coordinator } from '../../index.js'
import { HostIndex, type MemberInfo } from './host-index.js'

/** Capabilities the tooz driver publishes with each member. */
export interface ServiceCapabilities {
  host: string
  binary: string
  topic: string
  availability_zone: string | null
  version: number
  pid: number
  /** ISO-8601 UTC time of the member's last report. */
  reported_at: string
}

/** Reads a member's capabilities; undefined when they are not a service's (another kind of member, or corrupt). */
export function memberInfo(caps: unknown): MemberInfo | undefined {
  if (caps === null || typeof caps !== 'object' || caps instanceof Error) return undefined
  const c = caps as Partial<Record<keyof ServiceCapabilities, unknown>>
  if (typeof c.host !== 'string' || c.host === '') return undefined
  const at = typeof c.reported_at === 'string' ? new Date(c.reported_at) : null
  return { host: c.host, binary: typeof c.binary === 'string' ? c.binary : '', reportedAt: at && !Number.isNaN(at.getTime()) ? at : null }
}

/** One topic's view. */
export class ToozTopicView {
  readonly index: HostIndex
  readonly #coordinator: Coordinator
  #fresh = false
  #opened = false
  #chain: Promise<void> = Promise.resolve()
  #unwatch: (() => Promise<void>) | undefined

  constructor(coordinator: Coordinator, topic: string) {
    this.#coordinator = coordinator
    this.index = new HostIndex(topic)
  }

  /** True when the view can answer without a read. */
  get fresh(): boolean {
    return this.#fresh
  }

  /** Casts doubt: the next read refreshes. */
  markStale(): void {
    this.#fresh = false
  }

  /**
   * Makes the view fresh (opening the watch the first time); rejects with the backend's error.
   * Resolves to true when the read found members the events had not announced (or missed).
   */
  refresh(): Promise<boolean> {
    let changed = false
    return this.#enqueue(async () => {
      if (!this.#unwatch) this.#unwatch = await this.#watch()
      const members = await this.#coordinator.getMembersWithCapabilities(this.index.topic)
      const infos = new Map<string, MemberInfo>()
      for (const [id, caps] of members) {
        const info = memberInfo(caps)
        if (info) infos.set(id, info)
      }
      // Hosts already up when the view opened are not news.
      changed = this.index.replace(infos, this.#opened) && this.#opened
      this.#opened = true
      this.#fresh = true
    }).then(() => changed)
  }

  /** A member joined (coordination event): read its capabilities and add it. */
  joined(member: string): void {
    void this.#enqueue(async () => {
      let caps: unknown
      try {
        caps = await this.#coordinator.getMemberCapabilities(this.index.topic, member)
      } catch {
        // Gone again already, or unreadable now: a later full read settles it.
        this.#fresh = false
        return
      }
      const info = memberInfo(caps)
      if (info) this.index.set(member, info, this.#opened)
    }).catch(() => undefined)
  }

  /** A member left or expired (coordination event). */
  left(member: string): void {
    void this.#enqueue(async () => this.index.delete(member, this.#opened)).catch(() => undefined)
  }

  /** Ends the watch. */
  async close(): Promise<void> {
    this.#fresh = false
    await this.#unwatch?.().catch(() => undefined)
    this.#unwatch = undefined
  }

  async #watch(): Promise<() => Promise<void>> {
    try {
      return await this.#coordinator.watchGroup(this.index.topic)
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'GROUP_NOT_FOUND') throw err
    }
    // Watching needs the group; a reader creating it is harmless (join_group_create does too).
    await this.#coordinator.createGroup(this.index.topic).catch((err: unknown) => {
      if ((err as { code?: unknown }).code !== 'GROUP_EXISTS') throw err
    })
    return this.#coordinator.watchGroup(this.index.topic)
  }

  #enqueue(fn: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(fn)
    this.#chain = run.catch(() => undefined)
    return run
  }
}
