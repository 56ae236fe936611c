/**
 * The tooz driver's live view of one topic: hosts indexed from the members of the topic's group,
 * read from a coordination group view (Coordinator.viewGroup), so that isUp() on the hot path
 * reads nothing while the view is fresh.
 *
 * - Opening: view the group (creating it if missing: a reader creating it is harmless, as
 *   join_group_create does too). The first snapshot is the baseline: hosts already up are not news.
 * - Every later change of the group view (members joined, left, capabilities changed) is applied
 *   to the host index, which tells the up/down listeners.
 * - Freshness is the group view's: from a successful read until something casts doubt on it (a
 *   connection change, a failed heartbeat, an outage); then the next read refreshes it.
 */
import type { Coordinator, GroupView, GroupViewChange } from '../../index.js'
import { HostIndex, type ServiceMemberInfo } from './host-index.js'
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
export function memberInfo(caps: unknown): ServiceMemberInfo | undefined {
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
  readonly #resyncIntervalMs: number | undefined
  /** The group view being opened, or open. */
  #view: Promise<GroupView> | undefined
  /** The group view once open. */
  #opened: GroupView | undefined
  #closed = false

  constructor(coordinator: Coordinator, topic: string, resyncIntervalMs?: number) {
    this.#coordinator = coordinator
    this.index = new HostIndex(topic)
    this.#resyncIntervalMs = resyncIntervalMs
  }

  /** True when the view can answer without a read. */
  get fresh(): boolean {
    return this.#opened?.fresh ?? false
  }

  /**
   * Makes the view fresh (opening the group view the first time); rejects with the backend's
   * error. A group deleted meanwhile is no error: its members are gone, so its hosts are down.
   */
  async refresh(): Promise<void> {
    if (this.#opened === undefined) {
      await this.#open()
      return
    }
    await this.#opened.refresh().catch((err: unknown) => {
      if ((err as { code?: unknown }).code !== 'GROUP_NOT_FOUND') throw err
    })
  }

  /** Ends the group view. */
  async close(): Promise<void> {
    this.#closed = true
    const view = await this.#view?.catch(() => undefined)
    await view?.close()
  }

  async #open(): Promise<void> {
    this.#view ??= this.#viewCreating().finally(() => {
      // A failed opening is tried again by the next refresh.
      if (this.#opened === undefined) this.#view = undefined
    })
    await this.#view
  }

  async #viewCreating(): Promise<GroupView> {
    const view = await this.#viewGroup().catch(async (err: unknown) => {
      if ((err as { code?: unknown }).code !== 'GROUP_NOT_FOUND') throw err
      await this.#coordinator.createGroup(this.index.topic).catch((e: unknown) => {
        if ((e as { code?: unknown }).code !== 'GROUP_EXISTS') throw e
      })
      return this.#viewGroup()
    })
    if (this.#closed) {
      await view.close()
      return view
    }
    // Hosts already up when the view opened are not news.
    this.index.replace(serviceMembers(view.members), false)
    view.on('changed', (change) => this.#apply(view, change))
    this.#opened = view
    return view
  }

  #viewGroup(): Promise<GroupView> {
    return this.#coordinator.viewGroup(this.index.topic, this.#resyncIntervalMs === undefined ? {} : { resyncIntervalMs: this.#resyncIntervalMs })
  }

  #apply(view: GroupView, change: GroupViewChange): void {
    for (const member of change.left) this.index.delete(member)
    for (const member of [...change.joined, ...change.updated]) {
      const info = memberInfo(view.members.get(member))
      if (info) this.index.set(member, info)
      else this.index.delete(member)
    }
  }
}

/** The members that are services (with their info), from a group view's snapshot. */
function serviceMembers(members: ReadonlyMap<string, unknown>): Map<string, ServiceMemberInfo> {
  const out = new Map<string, ServiceMemberInfo>()
  for (const [id, caps] of members) {
    const info = memberInfo(caps)
    if (info) out.set(id, info)
  }
  return out
}
