/**
 * tooz's Partitioner: spreads objects over the members of a group with a HashRing weighted by
 * each member's `weight` capability, and keeps the ring in step with joins and leaves.
 *
 * Object identity follows tooz, so that Python and Node members agree: an object with a
 * `toozHash()` method (tooz: `__tooz_hash__`) hashes to what it returns; anything else hashes to
 * the UTF-8 bytes of what Python's str() prints for the same value (codec/python-str.ts): `true` as
 * "True", `null` as "None", `1e16` as "1e+16", a Uint8Array as "b'abc'".
 */
import { asRollcallError } from '../errors.js'
import type { MemberEvent } from './events.js'
import { HashRing } from './hashring.js'
import { pythonStr } from './codec/python-str.js'
import type { WatchCallback } from './runtime/watchers.js'

/** Options of joinPartitionedGroup(). */
export interface PartitionerOptions {
  /** This member's share relative to others (default 1). */
  weight?: number
  /** Ring points per unit of weight (default 32; every member must use the same). */
  partitions?: number
}

/** An object that names its own ring identity. */
export interface TooZHashable {
  toozHash(): string | Uint8Array
}

/** Options of the lookups. */
export interface OwnershipOptions {
  ignoreMembers?: Iterable<string>
  replicas?: number
}

/** What a Partitioner needs of its coordinator: the group's members and their comings and goings. */
export interface PartitionerHost {
  readonly memberId: string
  watchJoinGroup(group: string, cb: WatchCallback): Promise<void>
  unwatchJoinGroup(group: string, cb: WatchCallback): Promise<void>
  watchLeaveGroup(group: string, cb: WatchCallback): Promise<void>
  unwatchLeaveGroup(group: string, cb: WatchCallback): Promise<void>
  getMembersWithCapabilities(group: string): Promise<Map<string, unknown>>
  getMemberCapabilities(group: string, member: string): Promise<unknown>
}

/** Distributes objects over a group's members. Build one with coordinator.joinPartitionedGroup(). */
export class Partitioner {
  readonly group: string
  /** The ring; read-only use only. */
  readonly ring: HashRing
  readonly #coordinator: PartitionerHost
  readonly #onJoin = (e: MemberEvent): Promise<void> => this.#add(e.member)
  readonly #onLeave = (e: MemberEvent): void => {
    if (this.ring.nodes.has(e.member)) this.ring.removeNode(e.member)
  }

  /** @internal */
  constructor(coordinator: PartitionerHost, group: string, options: PartitionerOptions = {}) {
    this.#coordinator = coordinator
    this.group = group
    this.ring = new HashRing([], { partitions: options.partitions ?? HashRing.DEFAULT_PARTITIONS })
  }

  /** @internal Seeds the ring and starts following the group. */
  async start(): Promise<void> {
    await this.#coordinator.watchJoinGroup(this.group, this.#onJoin)
    await this.#coordinator.watchLeaveGroup(this.group, this.#onLeave)
    for (const [member, caps] of await this.#coordinator.getMembersWithCapabilities(this.group)) {
      if (!this.ring.nodes.has(member)) this.ring.addNode(member, weightOf(caps))
    }
  }

  /** The members responsible for `obj`. */
  membersForObject(obj: unknown, options: OwnershipOptions = {}): Set<string> {
    return this.ring.getNodes(hashObject(obj), { ignoreNodes: options.ignoreMembers, replicas: options.replicas })
  }

  /** True when `member` is among those responsible for `obj`. */
  belongsToMember(obj: unknown, member: string, options: OwnershipOptions = {}): boolean {
    return this.membersForObject(obj, options).has(member)
  }

  /** True when this member is among those responsible for `obj`. */
  belongsToSelf(obj: unknown, options: OwnershipOptions = {}): boolean {
    return this.belongsToMember(obj, this.#coordinator.memberId, options)
  }

  /** Stops following the group (the coordinator's leavePartitionedGroup() also leaves it). */
  async stop(): Promise<void> {
    await this.#coordinator.unwatchJoinGroup(this.group, this.#onJoin).catch(() => {})
    await this.#coordinator.unwatchLeaveGroup(this.group, this.#onLeave).catch(() => {})
  }

  async #add(member: string): Promise<void> {
    let caps: unknown
    try {
      caps = await this.#coordinator.getMemberCapabilities(this.group, member)
    } catch (err) {
      // Gone again, or unreadable: a member without readable capabilities weighs 1, as in tooz.
      if (asRollcallError(err, 'read').code === 'MEMBER_NOT_JOINED') return
    }
    if (!this.ring.nodes.has(member)) this.ring.addNode(member, weightOf(caps))
  }
}

function weightOf(caps: unknown): number {
  const w = caps !== null && typeof caps === 'object' && !(caps instanceof Error) ? (caps as Record<string, unknown>).weight : undefined
  return typeof w === 'number' && Number.isInteger(w) && w >= 1 ? w : 1
}

/** What an object is placed by (tooz `Partitioner._hash_object`): its toozHash(), or Python's str() of it. */
export function hashObject(obj: unknown): string | Uint8Array {
  if (obj !== null && typeof obj === 'object' && typeof (obj as TooZHashable).toozHash === 'function') return (obj as TooZHashable).toozHash()
  return pythonStr(obj)
}
