/**
 * Host-level liveness of one topic, built from process-level members (a tooz member, a zk pid
 * node): a host is up while at least one of its members is. Changes of a host's state are
 * reported to listeners, which is where the up/down events come from.
 */
import type { LivenessChange } from '../driver.js'

/** What is known of one live member. */
export interface ServiceMemberInfo {
  host: string
  binary: string
  reportedAt: Date | null
}

/** Members of one topic, indexed by host. */
export class HostIndex {
  readonly topic: string
  readonly #members = new Map<string, ServiceMemberInfo>()
  readonly #hosts = new Map<string, Set<string>>()
  readonly listeners = new Set<(change: LivenessChange) => void>()

  constructor(topic: string) {
    this.topic = topic
  }

  /** Live member ids. */
  get memberIds(): string[] {
    return [...this.#members.keys()]
  }

  /** Number of hosts with at least one live member. */
  get hostCount(): number {
    return this.#hosts.size
  }

  /** Live members of `host`. */
  membersOf(host: string): string[] {
    return [...(this.#hosts.get(host) ?? [])]
  }

  /** True when some live member is on `host` (and runs `binary`, when both sides name one). */
  isUp(host: string, binary?: string): boolean {
    const ids = this.#hosts.get(host)
    if (!ids) return false
    if (!binary) return true
    for (const id of ids) {
      const b = this.#members.get(id)!.binary
      if (b === '' || b === binary) return true
    }
    return false
  }

  /** The latest report time among `host`'s members, or null. */
  reportedAt(host: string): Date | null {
    let latest: Date | null = null
    for (const id of this.#hosts.get(host) ?? []) {
      const t = this.#members.get(id)!.reportedAt
      if (t && (!latest || t > latest)) latest = t
    }
    return latest
  }

  /** Adds or updates a member; reports the host coming up. */
  set(member: string, info: ServiceMemberInfo, notify = true): void {
    const before = this.#members.get(member)
    if (before && before.host !== info.host) this.delete(member, notify)
    this.#members.set(member, info)
    let ids = this.#hosts.get(info.host)
    const wasUp = ids !== undefined
    if (!ids) this.#hosts.set(info.host, ids = new Set())
    ids.add(member)
    if (!wasUp && notify) this.#emit(info.host, true)
  }

  /** Removes a member; reports the host going down when it was its last. */
  delete(member: string, notify = true): void {
    const info = this.#members.get(member)
    if (!info) return
    this.#members.delete(member)
    const ids = this.#hosts.get(info.host)!
    ids.delete(member)
    if (ids.size === 0) {
      this.#hosts.delete(info.host)
      if (notify) this.#emit(info.host, false)
    }
  }

  /**
   * Replaces every member (a full re-read), reporting each host whose state changed. Returns
   * true when a member came or went (a report-time change alone does not count).
   */
  replace(members: ReadonlyMap<string, ServiceMemberInfo>, notify = true): boolean {
    let changed = false
    for (const id of this.memberIds) {
      if (members.has(id)) continue
      this.delete(id, notify)
      changed = true
    }
    for (const [id, info] of members) {
      if (!this.#members.has(id)) changed = true
      this.set(id, info, notify)
    }
    return changed
  }

  #emit(host: string, up: boolean): void {
    for (const l of this.listeners) l({ topic: this.topic, host, up })
  }
}
