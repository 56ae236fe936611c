/**
 * The Coordinator: tooz's coordinator API with Promises, events and recovery, the same on every
 * backend. This file is the public facade (argument checks, capability encoding, the API);
 * runtime/runtime.ts does the work shared by every backend, and the driver supplies primitives.
 */
import { EventEmitter } from 'node:events'
import {
  GroupExistsError,
  GroupNotFoundError,
  InvalidArgumentError,
  LockAcquireFailedError,
  MemberExistsError,
  MemberNotJoinedError,
  WatchCallbackNotFoundError,
  asRollcallError,
} from '../errors.js'
import type { Capability } from './capabilities.js'
import type { ConnectionState } from './driver.js'
import type { LeaderCallback, StandDownOptions } from './runtime/election.js'
import type { CoordinatorEvents } from './events.js'
import { GroupView, type GroupViewOptions } from './group-view.js'
import { Campaigns, type CampaignOptions, type Leadership } from './leadership.js'
import { Lock, type AcquireOptions } from './lock.js'
import { Partitioner, type PartitionerOptions } from './partitioner.js'
import { TypedGroup, type TypedGroupHost, type TypedGroupOptions } from './typed-group.js'
import { MAX_TIMER_MS } from '../internal/coerce.js'
import { dumps } from './codec/index.js'
import { DriverRuntime, type CoordinatorParts, type CoordinatorState, type Health } from './runtime/runtime.js'
import { emitSafely } from './runtime/user-code.js'
import { groupJoinChannel, groupLeaveChannel, traced } from './tracing.js'
import type { WatchCallback } from './runtime/watchers.js'

export type { CoordinatorState, Health }

/** A member's info from getMemberInfo(). */
export interface MemberInfo {
  capabilities: unknown
  createdAt: Date
  updatedAt: Date
}

/**
 * A started connection to a coordination backend, acting as one member.
 *
 * @example
 * ```ts
 * import { connect } from 'rollcall'
 * const coordinator = await connect('redis://127.0.0.1:6379', { memberId: 'worker-1' })
 * await coordinator.joinGroupCreate('workers', { zone: 'az1' })
 * coordinator.on('memberLeft', ({ group, member }) => console.log(member, 'left', group))
 * await coordinator.watchGroup('workers')
 * // ...
 * await coordinator.stop()
 * ```
 */
export class Coordinator extends EventEmitter<CoordinatorEvents> {
  /** This member's id. */
  readonly memberId: string
  /** The driver's name (`redis`, `zookeeper`, ...). */
  readonly driverName: string
  /** What the driver can do. */
  readonly capabilities: ReadonlySet<Capability>
  /** The backend URL with any password replaced by `***`. */
  readonly url: string
  /** How often groups the backend does not push are re-read (the URL's `watch_interval`, in ms). */
  readonly watchIntervalMs: number
  /** The driver with its lifecycle, heartbeat loop, memberships, locks and elections: everything this facade delegates to. */
  readonly #runtime: DriverRuntime
  /** autoWatch off: runWatchers() is the only pump. */
  readonly #manual: boolean
  readonly #campaigns: Campaigns
  /** What every TypedGroup of this coordinator calls: the public group API, plus where its watches report. */
  readonly #groupHost: TypedGroupHost

  /** @internal Use connect(). */
  constructor(parts: CoordinatorParts) {
    super()
    this.#runtime = new DriverRuntime(parts, this)
    this.memberId = parts.memberId
    this.driverName = parts.definition.name
    this.capabilities = this.#runtime.capabilities
    this.url = parts.redactedUrl
    this.watchIntervalMs = parts.watchIntervalMs
    this.#manual = !parts.autoWatch
    this.#campaigns = new Campaigns(this.#runtime.elections, this.#runtime.stopSignal)
    this.#groupHost = {
      memberId: this.memberId,
      joinGroup: (g, caps) => this.joinGroup(g, caps),
      joinGroupCreate: (g, caps) => this.joinGroupCreate(g, caps),
      leaveGroup: (g) => this.leaveGroup(g),
      updateCapabilities: (g, caps) => this.updateCapabilities(g, caps),
      getMembers: (g) => this.getMembers(g),
      getMembersWithCapabilities: (g) => this.getMembersWithCapabilities(g),
      getMemberCapabilities: (g, m) => this.getMemberCapabilities(g, m),
      viewGroup: (g) => this.viewGroup(g),
      report: (err) => this.#runtime.listenerFailed(err),
      warn: (err) => this.#runtime.warn(err),
    }
  }

  /**
   * Delivers an event to its listeners. A listener that throws, or whose promise rejects, does not
   * stop the others nor what rollcall was doing: its error comes back as a `warning` event with a
   * ListenerFailedError (code `LISTENER_FAILED`). An `error` event with no listener throws, as in Node.
   */
  override emit<K extends keyof CoordinatorEvents>(event: K, ...args: CoordinatorEvents[K]): boolean {
    return emitSafely(
      this,
      (e, ...a) => (super.emit as (e: string | symbol, ...a: unknown[]) => boolean).call(this, e, ...a),
      event,
      args,
      (err) => this.#runtime.listenerFailed(err),
    )
  }

  /** Lifecycle state. */
  get state(): CoordinatorState {
    return this.#runtime.state
  }

  /** Connection health as last reported (undefined before start). */
  get connectionState(): ConnectionState | undefined {
    return this.#runtime.connection
  }

  /** Groups this member has joined (and not left), including any awaiting rejoin. */
  get joinedGroups(): string[] {
    return this.#runtime.membership.groups
  }

  /** Heartbeat health, for metrics and status pages. */
  get health(): Health {
    return this.#runtime.health
  }

  /** Connects. connect() calls this; call it again only after a failed start. */
  start(): Promise<void> {
    return this.#runtime.start()
  }

  /**
   * Leaves every joined group, releases every lock, and disconnects. Safe to call twice; on a
   * coordinator that was never started (or whose start failed) it rejects with InvalidStateError,
   * as tooz raises ToozError.
   */
  stop(): Promise<void> {
    return this.#runtime.stop()
  }

  /** stop(), for `await using coordinator = await connect(url)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop()
  }

  /** Refreshes liveness (and lock leases) now; resolves to the milliseconds until the next beat is needed. */
  heartbeat(): Promise<number> {
    this.#runtime.assertStarted('heartbeat')
    return this.#runtime.beat()
  }

  /** Creates a group (GroupExistsError if it exists). */
  async createGroup(group: string): Promise<void> {
    this.#runtime.validateId('group', group)
    await this.#runtime.call('create a group', () => this.#runtime.groups().createGroup(group))
  }

  /** Deletes an empty group (GroupNotFoundError, GroupNotEmptyError). */
  async deleteGroup(group: string): Promise<void> {
    this.#runtime.validateId('group', group)
    await this.#runtime.call('delete a group', () => this.#runtime.groups().deleteGroup(group))
  }

  /** Every group's id, sorted. */
  async getGroups(): Promise<string[]> {
    return (await this.#runtime.call('list groups', () => this.#runtime.groups().listGroups())).sort()
  }

  /**
   * Joins a group with capabilities (any msgpack-able value; default null). With `rejoin` off, a
   * join of a group this member was told it lost (`membershipLost`) that the backend still lists it
   * in takes that membership back with these capabilities, as rollcall's own rejoin would, rather
   * than answer MemberExistsError for a membership nothing keeps alive any more.
   */
  async joinGroup(group: string, capabilities: unknown = null): Promise<void> {
    this.#runtime.validateId('group', group)
    const bytes = encodeCapabilities(capabilities)
    const runtime = this.#runtime
    const join = (): Promise<void> =>
      traced(
        groupJoinChannel,
        () => ({ ...runtime.trace, group, rejoin: false }),
        () => runtime.call('join a group', () => runtime.groups().joinGroup(group, bytes)),
      )
    try {
      await join()
    } catch (err) {
      // Not while the connection is lost: the membership found may stand on a session or lease about to lapse (membership.ts, mayRejoin).
      if (!(err instanceof MemberExistsError) || !runtime.membership.wasDropped(group) || runtime.connection === 'lost') throw err
      await runtime.membership.takeBack(group, bytes, join)
    }
    runtime.membership.set(group, bytes)
  }

  /** Joins a group, creating it first if it does not exist. */
  async joinGroupCreate(group: string, capabilities: unknown = null): Promise<void> {
    for (let attempt = 0;; attempt++) {
      try {
        return await this.joinGroup(group, capabilities)
      } catch (err) {
        if (!(err instanceof GroupNotFoundError) || attempt >= 5) throw err
      }
      await this.createGroup(group).catch((err: unknown) => {
        if (!(err instanceof GroupExistsError)) throw err
      })
    }
  }

  /** Leaves a group (MemberNotJoinedError when not in it). */
  async leaveGroup(group: string): Promise<void> {
    this.#runtime.validateId('group', group)
    const caps = this.#runtime.membership.delete(group)
    try {
      await traced(
        groupLeaveChannel,
        () => ({ ...this.#runtime.trace, group, rejoin: false }),
        () => this.#runtime.call('leave a group', () => this.#runtime.groups().leaveGroup(group)),
      )
    } catch (err) {
      if (caps !== undefined && !(err instanceof MemberNotJoinedError) && !(err instanceof GroupNotFoundError)) this.#runtime.membership.set(group, caps)
      throw err
    }
  }

  /** Live member ids of a group, sorted. */
  async getMembers(group: string): Promise<string[]> {
    this.#runtime.validateId('group', group)
    return (await this.#runtime.listIds(group)).sort()
  }

  /**
   * Live members with their decoded capabilities, in one backend read. A member whose stored
   * capabilities cannot be decoded maps to a SerializationError (and a `warning` fires); the
   * others are unaffected.
   */
  async getMembersWithCapabilities(group: string): Promise<Map<string, unknown>> {
    this.#runtime.validateId('group', group)
    const raw = await this.#runtime.call('list members', () => this.#runtime.groups().listMembers(group))
    const out = new Map<string, unknown>()
    for (const member of [...raw.keys()].sort()) out.set(member, this.#runtime.decodeMember(group, member, raw.get(member)!, { raise: false }))
    return out
  }

  /** One member's capabilities (MemberNotJoinedError, SerializationError). */
  async getMemberCapabilities(group: string, member: string): Promise<unknown> {
    this.#runtime.validateId('group', group)
    this.#runtime.validateId('member', member)
    const d = this.#runtime.groups()
    const bytes = d.getMemberCapabilities
      ? await this.#runtime.call('read capabilities', () => d.getMemberCapabilities!(group, member))
      : (await this.#runtime.call('list members', () => d.listMembers(group))).get(member)
    if (bytes === undefined) throw new MemberNotJoinedError(group, member)
    return this.#runtime.decodeMember(group, member, bytes, { raise: true })
  }

  /** Replaces this member's capabilities in a group it has joined. */
  async updateCapabilities(group: string, capabilities: unknown): Promise<void> {
    this.#runtime.validateId('group', group)
    const update = this.#runtime.require('updateCapabilities', this.#runtime.driver.updateCapabilities, 'updateCapabilities')
    const bytes = encodeCapabilities(capabilities)
    await this.#runtime.call('update capabilities', () => update.call(this.#runtime.driver, group, bytes))
    if (this.#runtime.membership.has(group)) this.#runtime.membership.set(group, bytes)
  }

  /** When a member joined and last changed its capabilities, as the backend recorded it. */
  async getMemberInfo(group: string, member: string): Promise<MemberInfo> {
    this.#runtime.validateId('group', group)
    this.#runtime.validateId('member', member)
    const get = this.#runtime.require('memberInfo', this.#runtime.driver.getMemberInfo, 'getMemberInfo')
    const info = await this.#runtime.call('read member info', () => get.call(this.#runtime.driver, group, member))
    return { ...info, capabilities: this.#runtime.decodeMember(group, member, info.capabilities, { raise: true }) }
  }

  /** Calls `cb` for every member that joins `group` (GroupNotFoundError if it does not exist). */
  async watchJoinGroup(group: string, cb: WatchCallback): Promise<void> {
    await this.#watch(group, 'join', cb)
  }

  /** Stops calling `cb` (WatchCallbackNotFoundError if it was not registered). */
  async unwatchJoinGroup(group: string, cb: WatchCallback): Promise<void> {
    await this.#runtime.watchers.remove(group, 'join', cb)
  }

  /** Calls `cb` for every member that leaves `group`, whether it left or its liveness lapsed. */
  async watchLeaveGroup(group: string, cb: WatchCallback): Promise<void> {
    await this.#watch(group, 'leave', cb)
  }

  /** Stops calling `cb` (WatchCallbackNotFoundError if it was not registered). */
  async unwatchLeaveGroup(group: string, cb: WatchCallback): Promise<void> {
    await this.#runtime.watchers.remove(group, 'leave', cb)
  }

  /**
   * Watches `group` for the `memberJoined`/`memberLeft` events without a callback. Resolves, once
   * the watch is in place, to a function that ends it.
   */
  async watchGroup(group: string): Promise<() => Promise<void>> {
    await this.#watch(group, 'plain')
    let done = false
    return async () => {
      if (!done) await this.#runtime.watchers.remove(group, 'plain')
      done = true
    }
  }

  /**
   * A handle on one group with typed capabilities. With `parse` (recommended: other processes,
   * Python tooz peers included, may store anything) every value read is checked, so `Caps` is
   * proven; `group<Caps>(name)` without it asserts the type unchecked. Does no I/O. Its
   * watchJoined() and watchLeft() hand callbacks the member's capabilities, parsed.
   *
   * @example
   * ```ts
   * const workers = coordinator.group('workers', { parse: (v) => WorkerCaps.parse(v) })
   * await workers.join({ zone: 'az1', slots: 4 })
   * ```
   */
  group<Caps = unknown>(name: string, options: TypedGroupOptions<Caps> = {}): TypedGroup<Caps> {
    this.#runtime.validateId('group', name)
    return new TypedGroup<Caps>(this.#groupHost, name, options)
  }

  /**
   * A live view of `group`: its members with their capabilities, a version, and a `changed` event
   * per change, kept current by this coordinator's watcher of the group (pushed, polled or woken
   * at an expiry, as watchGroup() is) plus a full re-read every `resyncIntervalMs`. Resolves once
   * the first snapshot is read (GroupNotFoundError when the group does not exist). With
   * `autoWatch: false` the view changes only in its refresh() and in runWatchers(). Close it with
   * close(); stop() closes every view.
   */
  async viewGroup(group: string, options: GroupViewOptions = {}): Promise<GroupView> {
    this.#runtime.validateId('group', group)
    this.#runtime.assertStarted('view a group')
    checkResyncIntervalMs(options.resyncIntervalMs)
    const w = this.#runtime.watchers
    const view = new GroupView(group, options, {
      manual: this.#manual,
      report: (err) => this.#runtime.listenerFailed(err),
      add: (sink) => w.addView(group, sink),
      remove: (sink) => w.removeView(group, sink),
      refreshFull: () => w.refreshFull(group),
      decode: (member, value) => this.#runtime.decodeMember(group, member, value, { raise: false }),
    })
    await view.open()
    return view
  }

  /**
   * tooz run_watchers(): re-reads every watched group, runs one election round, and resolves once
   * every callback it triggered has settled, with the values the join and leave callbacks
   * returned since the last call (a promise counts as its value). With `autoWatch` off it is the
   * only pump: nothing user-visible happens between two calls. With it on, events are delivered
   * without it, and it returns the results of at most the last 1000 callbacks.
   */
  runWatchers(): Promise<unknown[]> {
    this.#runtime.assertStarted('run watchers')
    return this.#runtime.runWatchers()
  }

  /**
   * Runs for leader of `group`; `cb` is called when this member is elected. Returns a function that
   * unwatches `cb` (as unwatchElectedAsLeader() does; calling it twice is harmless).
   */
  watchElectedAsLeader(group: string, cb: LeaderCallback): () => Promise<void> {
    this.#runtime.validateId('group', group)
    this.#runtime.assertStarted('run for leader')
    this.#runtime.elections.watch(group, cb)
    let done: Promise<unknown> | undefined
    return async () => {
      done ??= this.#runtime.elections.unwatch(group, cb)
      await done
    }
  }

  /**
   * Runs for leader of `group` and resolves, once this member leads it, to its Leadership: the
   * term's `signal` and `term` (fencing token), ended by resign(). One campaign per group at a time
   * on one coordinator (a second one rejects with InvalidStateError); it shares the member's
   * candidacy with watchElectedAsLeader(). With `autoWatch: false` it is elected in runWatchers().
   * Rejects with CoordinatorStoppedError on stop(), with `options.signal`'s reason when that aborts first.
   */
  async campaign(group: string, options: CampaignOptions = {}): Promise<Leadership> {
    this.#runtime.validateId('group', group)
    this.#runtime.assertStarted('run for leader')
    this.#runtime.require('leaderElection', this.#runtime.driver.leaderLock, 'campaign')
    return this.#campaigns.campaign(group, options)
  }

  /**
   * Waits until this member leads `group`, runs `fn(signal, term)`, then stands down (also when fn
   * throws) and resolves with fn's result; fn's error rejects it. `signal` aborts the moment the term
   * ends (stood down, lost session or lease, stop()); `term` is the leader lock's fencing token, on
   * drivers with `fencing` (undefined elsewhere). See campaign() for the wait.
   */
  async withLeadership<T>(
    group: string,
    fn: (signal: AbortSignal, term: bigint | undefined) => Promise<T> | T,
    options: CampaignOptions = {},
  ): Promise<T> {
    const leadership = await this.campaign(group, options)
    try {
      return await fn(leadership.signal, leadership.term)
    } finally {
      await leadership.resign()
    }
  }

  /** Stops running (and stands down if leading) once no callback is left. */
  async unwatchElectedAsLeader(group: string, cb: LeaderCallback): Promise<void> {
    if (!(await this.#runtime.elections.unwatch(group, cb))) throw new WatchCallbackNotFoundError(group)
  }

  /** True while this member leads `group`. */
  isLeader(group: string): boolean {
    return this.#runtime.elections.isLeading(group)
  }

  /** The leader of `group`, or null when there is none. */
  async getLeader(group: string): Promise<string | null> {
    this.#runtime.validateId('group', group)
    const get = this.#runtime.require('getLeader', this.#runtime.driver.getLeader, 'getLeader')
    return this.#runtime.call('read the leader', () => get.call(this.#runtime.driver, group))
  }

  /**
   * Gives up leadership of `group`; false when this member did not lead it. It stays a candidate:
   * the next round elects whoever tries first (tooz), unless `holdOffMs` keeps it from trying.
   */
  async standDownGroupLeader(group: string, options: StandDownOptions = {}): Promise<boolean> {
    this.#runtime.require('leaderElection', this.#runtime.driver.leaderLock, 'standDownGroupLeader')
    checkHoldOffMs(options.holdOffMs)
    return this.#runtime.elections.standDown(group, options)
  }

  /** A lock object for `name`; nothing is taken until acquire(). */
  getLock(name: string): Lock {
    this.#runtime.validateId('lock', name)
    this.#runtime.assertStarted('get a lock')
    const runtime = this.#runtime
    return new Lock(
      {
        call: (op, fn) => runtime.call(op, fn),
        track: (l) => runtime.locks.track(l),
        untrack: (l) => runtime.locks.untrack(l),
        acquiring: (l) => runtime.locks.acquiring(l),
        releaseFailed: (l, err) => runtime.locks.releaseFailed(l, err),
        emitLockLost: (lockName, reason) => this.emit('lockLost', { name: lockName, reason }),
        stopSignal: runtime.stopSignal,
        driverName: this.driverName,
        sharedLocks: this.capabilities.has('sharedLocks'),
        trace: runtime.trace,
      },
      name,
      runtime.driver.createLock(name),
    )
  }

  /**
   * Takes a lock (waiting as `options` say) and returns it held, for `await using`.
   * Throws LockAcquireFailedError when it could not be taken.
   */
  async acquireLock(name: string, options: AcquireOptions = {}): Promise<Lock> {
    const lock = this.getLock(name)
    if (!(await lock.acquire(options))) {
      throw new LockAcquireFailedError(name, options.blocking === false ? 'it is held by someone else' : 'the wait timed out')
    }
    return lock
  }

  /**
   * Runs `fn` while holding the lock and releases it after (also when fn throws); fn's error rejects
   * withLock(). `fn` gets the hold's signal, which aborts if the lock is lost, and the held Lock
   * (its `fencingToken`, on drivers with `fencing`, and the same `signal`).
   */
  async withLock<T>(name: string, fn: (signal: AbortSignal, lock: Lock) => Promise<T> | T, options: AcquireOptions = {}): Promise<T> {
    const lock = await this.acquireLock(name, options)
    try {
      return await fn(lock.signal, lock)
    } finally {
      await lock.release().catch((err: unknown) => this.#runtime.warn(asRollcallError(err, `Releasing lock ${name}`)))
    }
  }

  /** Joins `group` (creating it) with a weight and returns a Partitioner over its members. */
  async joinPartitionedGroup(group: string, options: PartitionerOptions = {}): Promise<Partitioner> {
    await this.joinGroupCreate(group, { weight: options.weight ?? 1 })
    const partitioner = new Partitioner(this, group, options)
    await partitioner.start()
    return partitioner
  }

  /** Stops a Partitioner and leaves its group. */
  async leavePartitionedGroup(partitioner: Partitioner): Promise<void> {
    await partitioner.stop()
    await this.leaveGroup(partitioner.group)
  }

  async #watch(group: string, kind: 'join' | 'leave' | 'plain', cb?: WatchCallback): Promise<void> {
    this.#runtime.validateId('group', group)
    this.#runtime.assertStarted('watch a group')
    await this.#runtime.watchers.add(group, kind, cb)
  }
}

/** A member's capabilities as msgpack bytes; InvalidArgumentError when they have no msgpack form. */
function encodeCapabilities(capabilities: unknown): Uint8Array {
  try {
    return dumps(capabilities)
  } catch (err) {
    throw new InvalidArgumentError(`Capabilities must be msgpack-able: ${(err as Error).message}`)
  }
}

/** viewGroup()'s `resyncIntervalMs`: unset, or above 0 and no longer than a Node timer can wait. */
function checkResyncIntervalMs(resyncIntervalMs: number | undefined): void {
  if (resyncIntervalMs !== undefined && !(Number.isFinite(resyncIntervalMs) && resyncIntervalMs > 0 && resyncIntervalMs <= MAX_TIMER_MS)) {
    throw new InvalidArgumentError(`resyncIntervalMs must be a number of milliseconds above 0 and at most ${MAX_TIMER_MS}, not ${String(resyncIntervalMs)}`)
  }
}

/** standDownGroupLeader()'s `holdOffMs`: unset, or a finite number >= 0. */
function checkHoldOffMs(holdOffMs: number | undefined): void {
  if (holdOffMs !== undefined && (!Number.isFinite(holdOffMs) || holdOffMs < 0)) {
    throw new InvalidArgumentError(`holdOffMs must be a number of milliseconds >= 0, not ${String(holdOffMs)}`)
  }
}
