/**
 * Typed join and leave watching for a TypedGroup (`workers.watchJoined(cb)`): the member events,
 * with the member's capabilities parsed by the group's `parse`.
 *
 * It is built on a group view (group-view.ts), not on the Coordinator's `memberJoined`: a view's
 * snapshot comes from the same backend read that saw the join, so the capabilities handed over
 * are the ones the member joined with, never a second read that could find it gone already or
 * changed. All watches of one TypedGroup share one view; the last unsubscribe closes it.
 *
 * A joiner whose capabilities do not pass `parse` (or cannot be decoded) is not announced: the
 * callbacks are typed `Caps`, and an application cannot act on what it cannot read. It is told
 * as a `warning` with a SerializationError naming the member, once per join. Callbacks run
 * through callUserCode(): a throw or a rejection is a `warning` (ListenerFailedError), and the
 * other callbacks and members are still delivered.
 */
import { SerializationError, type RollcallError } from '../errors.js'
import type { GroupView, GroupViewChange } from './group-view.js'
import { callUserCode, type ReportFailure } from './runtime/user-code.js'

/** Payload of TypedGroup.watchJoined(): a member that joined, with the capabilities it joined with. */
export interface MemberJoinedEvent<Caps> {
  /** The group's id. */
  group: string
  /** The member that joined. */
  member: string
  /** Its capabilities, as `parse` returned them, from the same read that saw it join. */
  capabilities: Caps
}

/** Payload of TypedGroup.watchLeft(): a member that left, lapsed, or whose group was deleted. */
export interface MemberLeftEvent<Caps> {
  /** The group's id. */
  group: string
  /** The member that is gone. */
  member: string
  /** Its capabilities as last read and parsed; undefined when they did not pass `parse` (or could not be decoded). */
  capabilities: Caps | undefined
}

/** A TypedGroup.watchJoined() callback. */
export type MemberJoinedCallback<Caps> = (event: MemberJoinedEvent<Caps>) => unknown

/** A TypedGroup.watchLeft() callback. */
export type MemberLeftCallback<Caps> = (event: MemberLeftEvent<Caps>) => unknown

/** What a typed watch needs from its Coordinator. */
export interface TypedWatchHost {
  /** Opens a view of the group (GroupNotFoundError when it does not exist). */
  viewGroup(group: string): Promise<GroupView>
  /** Where a failing callback is reported (the Coordinator's `warning`, as ListenerFailedError). */
  report: ReportFailure
  /** Where a withheld join is reported (the Coordinator's `warning`). */
  warn(err: RollcallError): void
}

/** Parses one member's decoded capabilities; a failure comes back as a SerializationError naming it. */
export type CheckMember<Caps> = (member: string, value: unknown) => Caps | SerializationError

/** The join and leave callbacks of one TypedGroup, fed by one view of its group. */
export class TypedWatch<Caps> {
  readonly #view: GroupView
  readonly #host: TypedWatchHost
  readonly #check: CheckMember<Caps>
  /** Registrations, not callbacks: the same function added twice is called twice and removed one at a time. */
  readonly #joined = new Set<{ cb: MemberJoinedCallback<Caps> }>()
  readonly #left = new Set<{ cb: MemberLeftCallback<Caps> }>()
  /** Each member's capabilities as last parsed (undefined: they did not pass). */
  readonly #caps = new Map<string, Caps | undefined>()
  #closing: Promise<void> | undefined

  /** Opens the shared view; resolves once its first snapshot is read. */
  static async open<Caps>(host: TypedWatchHost, group: string, check: CheckMember<Caps>): Promise<TypedWatch<Caps>> {
    return new TypedWatch(await host.viewGroup(group), host, check)
  }

  private constructor(view: GroupView, host: TypedWatchHost, check: CheckMember<Caps>) {
    this.#view = view
    this.#host = host
    this.#check = check
    // Members present when the watch began are not announced, but their leave carries what they stored.
    for (const [member, value] of view.members) this.#caps.set(member, this.#parse(member, value))
    view.on('changed', (change) => this.#changed(change))
  }

  /** False once the view has ended (the last unsubscribe, or the Coordinator stopped). */
  get open(): boolean {
    return this.#closing === undefined && !this.#view.closed
  }

  /** Adds a callback; the returned function removes it (a second call does nothing) and closes the view after the last one. */
  add(kind: 'joined', cb: MemberJoinedCallback<Caps>): () => Promise<void>
  add(kind: 'left', cb: MemberLeftCallback<Caps>): () => Promise<void>
  add(kind: 'joined' | 'left', cb: MemberJoinedCallback<Caps> | MemberLeftCallback<Caps>): () => Promise<void> {
    const set = (kind === 'joined' ? this.#joined : this.#left) as Set<{ cb: typeof cb }>
    const registration = { cb }
    set.add(registration)
    return async () => {
      if (!set.delete(registration) || this.#joined.size + this.#left.size > 0) return
      this.#closing ??= this.#view.close()
      await this.#closing
    }
  }

  #parse(member: string, value: unknown): Caps | undefined {
    const parsed = this.#check(member, value)
    return parsed instanceof SerializationError ? undefined : parsed
  }

  /** One change of the view: leaves first, then joins, in member order (as the Coordinator's events). */
  #changed({ group, joined, left, updated }: GroupViewChange): void {
    for (const member of updated) this.#caps.set(member, this.#parse(member, this.#view.members.get(member)))
    for (const member of left) {
      const capabilities = this.#caps.get(member)
      this.#caps.delete(member)
      for (const { cb } of [...this.#left]) callUserCode(cb, { group, member, capabilities }, 'watchLeft', 'callback', this.#host.report)
    }
    for (const member of joined) {
      const value = this.#view.members.get(member)
      const parsed = this.#check(member, value)
      if (parsed instanceof SerializationError) {
        this.#caps.set(member, undefined)
        // An undecodable value was told by the view's decode already; a value parse refused is news.
        if (!(value instanceof SerializationError) && this.#joined.size > 0) this.#host.warn(parsed)
        continue
      }
      this.#caps.set(member, parsed)
      for (const { cb } of [...this.#joined]) callUserCode(cb, { group, member, capabilities: parsed }, 'watchJoined', 'callback', this.#host.report)
    }
  }
}
