/**
 * A group handle whose capabilities have a type: `coordinator.group(name, { parse })`. What other
 * members stored (Python tooz peers included) is untrusted, so the handle runs `parse` on every
 * value it reads; the type is then what `parse` proved, not a cast. `group<Caps>(name)` without
 * `parse` is an assertion the caller opts into: values are handed over unchecked.
 */
import { SerializationError } from '../errors.js'
import { TypedWatch, type MemberJoinedCallback, type MemberLeftCallback, type TypedWatchHost } from './typed-watch.js'

/** Checks one member's decoded capabilities and returns them typed; throws (any error) when they do not fit. */
export type CapabilitiesParser<Caps> = (value: unknown) => Caps

/** Options of {@link Coordinator.group}. */
export interface TypedGroupOptions<Caps> {
  /**
   * Checks what is read (a zod/valibot `parse`, or a hand-written guard that throws). Without it
   * the handle trusts the stored values to be `Caps`.
   */
  parse?: CapabilitiesParser<Caps>
}

/** What a TypedGroup needs of its coordinator: the group calls it makes on the caller's behalf, and a view for its watches. */
export interface TypedGroupHost extends TypedWatchHost {
  readonly memberId: string
  joinGroup(group: string, capabilities: unknown): Promise<void>
  joinGroupCreate(group: string, capabilities: unknown): Promise<void>
  leaveGroup(group: string): Promise<void>
  updateCapabilities(group: string, capabilities: unknown): Promise<void>
  getMembers(group: string): Promise<string[]>
  getMembersWithCapabilities(group: string): Promise<Map<string, unknown>>
  getMemberCapabilities(group: string, member: string): Promise<unknown>
}

/** One group, with capabilities of type `Caps` on join, update and every read. */
export class TypedGroup<Caps> {
  readonly #coordinator: TypedGroupHost
  readonly #parse: CapabilitiesParser<Caps> | undefined
  /** The join and leave watches, sharing one view of the group; undefined while nothing watches. */
  #watch: Promise<TypedWatch<Caps>> | undefined
  /** The group's id. */
  readonly name: string

  /** @internal Use Coordinator.group(). */
  constructor(coordinator: TypedGroupHost, name: string, options: TypedGroupOptions<Caps> = {}) {
    this.#coordinator = coordinator
    this.name = name
    this.#parse = options.parse
  }

  #check(member: string, value: unknown): Caps | SerializationError {
    if (value instanceof SerializationError || this.#parse === undefined) return value as Caps | SerializationError
    try {
      return this.#parse(value)
    } catch (err) {
      return new SerializationError(
        `The capabilities of member "${member}" in group "${this.name}" do not fit the group's parser: ${(err as Error)?.message ?? err}`,
        {
          cause: err,
        },
      )
    }
  }

  /** What this member is about to store passes `parse` too, so that a peer never reads a value the group refuses. */
  #checkOwn(capabilities: Caps): void {
    const checked = this.#check(this.#coordinator.memberId, capabilities)
    if (checked instanceof SerializationError) throw checked
  }

  /** Joins the group (creating it when missing, unless `create: false`) with these capabilities, checked by `parse`. */
  async join(capabilities: Caps, options: { create?: boolean } = {}): Promise<void> {
    this.#checkOwn(capabilities)
    if (options.create === false) return this.#coordinator.joinGroup(this.name, capabilities)
    return this.#coordinator.joinGroupCreate(this.name, capabilities)
  }

  /** Leaves the group. */
  leave(): Promise<void> {
    return this.#coordinator.leaveGroup(this.name)
  }

  /** Replaces this member's capabilities, checked by `parse`. */
  async update(capabilities: Caps): Promise<void> {
    this.#checkOwn(capabilities)
    return this.#coordinator.updateCapabilities(this.name, capabilities)
  }

  /** Live member ids, sorted. */
  getMembers(): Promise<string[]> {
    return this.#coordinator.getMembers(this.name)
  }

  /**
   * Live members with their capabilities, parsed. A member whose value cannot be decoded or does
   * not pass `parse` maps to a SerializationError; the others are unaffected.
   */
  async getMembersWithCapabilities(): Promise<Map<string, Caps | SerializationError>> {
    const out = new Map<string, Caps | SerializationError>()
    for (const [member, value] of await this.#coordinator.getMembersWithCapabilities(this.name)) out.set(member, this.#check(member, value))
    return out
  }

  /** One member's capabilities, parsed; throws SerializationError when they do not pass `parse`. */
  async getMemberCapabilities(member: string): Promise<Caps> {
    const checked = this.#check(member, await this.#coordinator.getMemberCapabilities(this.name, member))
    if (checked instanceof SerializationError) throw checked
    return checked
  }

  /**
   * Calls `cb` for every member that joins the group, with the capabilities it joined with,
   * parsed: `{ group, member, capabilities }`, `capabilities` typed `Caps`. Resolves, once the
   * watch is in place, to a function that ends it (calling it twice is harmless); rejects with
   * GroupNotFoundError when the group does not exist. Members present when the watch began are
   * not announced. Fires when the Coordinator's `memberJoined` does (same read; with
   * `autoWatch: false`, inside runWatchers()).
   *
   * A joiner whose capabilities do not pass `parse` (or cannot be decoded) is not announced: the
   * Coordinator's `warning` event carries a SerializationError naming it instead, once per join.
   * A callback that throws or rejects is reported as a `warning` (ListenerFailedError); the other
   * callbacks still run.
   *
   * @example
   * ```ts
   * const unwatch = await workers.watchJoined(({ member, capabilities }) => pool.add(member, capabilities.slots))
   * // ...
   * await unwatch()
   * ```
   */
  async watchJoined(cb: MemberJoinedCallback<Caps>): Promise<() => Promise<void>> {
    return this.#add((watch) => watch.add('joined', cb))
  }

  /**
   * Calls `cb` for every member that leaves the group, lapses, or vanishes with it:
   * `{ group, member, capabilities }`, `capabilities` being what it stored as last read and parsed
   * (undefined when that did not pass `parse`). Resolves to a function that ends the watch, as
   * watchJoined() does; fires when the Coordinator's `memberLeft` does.
   */
  async watchLeft(cb: MemberLeftCallback<Caps>): Promise<() => Promise<void>> {
    return this.#add((watch) => watch.add('left', cb))
  }

  /**
   * Registers with the shared watch, opening it (or a new one after its last unsubscribe) when
   * needed. The registration is made in the same turn as the check that the watch is open, so
   * that an unsubscribe in between cannot leave it on a closed view.
   */
  async #add(register: (watch: TypedWatch<Caps>) => () => Promise<void>): Promise<() => Promise<void>> {
    for (;;) {
      const pending = this.#watch
      const current = pending && (await pending.catch(() => undefined))
      if (current?.open) return register(current)
      // Someone else began opening a new one meanwhile: share that.
      if (this.#watch !== pending) continue
      const opening = TypedWatch.open(this.#coordinator, this.name, (member, value) => this.#check(member, value))
      this.#watch = opening
      try {
        return register(await opening)
      } catch (err) {
        if (this.#watch === opening) this.#watch = undefined
        throw err
      }
    }
  }
}
