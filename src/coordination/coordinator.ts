/**
 * The Coordinator: tooz's coordinator API with Promises, events and recovery, the same on every
 * backend. Everything here is backend-independent; the driver only supplies primitives
 * (driver.ts). Build one with connect().
 */
import { EventEmitter } from 'node:events'
import {
  CoordinatorStoppedError, GroupExistsError, GroupNotFoundError, InvalidArgumentError, InvalidIdError, LockAcquireFailedError,
  MemberNotJoinedError, NotSupportedError, RollcallError, SerializationError, WatchCallbackNotFoundError, asRollcallError,
} from '../errors.js'
import type { Capability } from './capabilities.js'
import { dumps, loads } from './codec.js'
import type { ConnectionState, CoordinationDriver, DriverDefinition, DriverLock, IdKind } from './driver.js'
import { Elections, type LeaderCallback } from './election.js'
import type { CoordinatorEvents } from './events.js'
import { HeartbeatLoop } from './heartbeat.js'
import { Lock, type AcquireOptions, type HeldLock } from './lock.js'
import type { Logger } from './logger.js'
import { Membership } from './membership.js'
import { Partitioner, type PartitionerOptions } from './partitioner.js'
import { translateError } from './translate.js'
import { Watchers, type WatchCallback } from './watchers.js'

/** Lifecycle states. `failed` means start() failed; call it again to retry. */
export type CoordinatorState = 'created' | 'starting' | 'started' | 'stopping' | 'stopped' | 'failed'

/** What a Coordinator is made of; connect() builds it. @internal */
export interface CoordinatorParts {
  definition: DriverDefinition<any>
  driver: CoordinationDriver
  memberId: string
  redactedUrl: string
  secrets: readonly string[]
  heartbeat: boolean
  autoWatch: boolean
  rejoin: boolean
  watchIntervalMs: number
  logger: Logger
  stopController: AbortController
}

/** A member's info from getMemberInfo(). */
export interface MemberInfo {
  capabilities: unknown
  createdAt: Date
  updatedAt: Date
}

/** Slower full re-read of pushed groups, a safety net against a missed notification. */
const RESYNC_EVERY_TICKS = 30

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
  readonly #p: CoordinatorParts
  readonly #driver: CoordinationDriver
  readonly #membership: Membership
  readonly #watchers: Watchers
  readonly #elections: Elections
  readonly #locks = new Set<HeldLock>()
  readonly #heart: HeartbeatLoop
  #state: CoordinatorState = 'created'
  #connection: ConnectionState | undefined
  #tick: NodeJS.Timeout | undefined
  #ticks = 0
  #stopping: Promise<void> | undefined
  #lastBeatAt: Date | undefined

  /** @internal Use connect(). */
  constructor(parts: CoordinatorParts) {
    super()
    this.#p = parts
    this.#driver = parts.driver
    this.memberId = parts.memberId
    this.driverName = parts.definition.name
    this.capabilities = new Set(parts.definition.capabilities)
    this.url = parts.redactedUrl
    this.#membership = new Membership({
      rejoin: parts.rejoin,
      join: (g, caps) => this.#call('rejoin a group', () => this.#driver.joinGroup(g, caps), true),
      create: (g) => this.#call('create a group', () => this.#driver.createGroup(g), true),
      emitLost: (group, reason) => this.emit('membershipLost', { group, reason }),
      emitRejoined: (group) => this.emit('rejoined', { group }),
      warn: (err) => this.#warn(err),
    })
    this.#watchers = new Watchers({
      memberId: this.memberId,
      listMemberIds: (g) => this.#listIds(g),
      joinEpoch: (g) => this.#membership.epoch(g),
      selfMissing: (g, epoch) => this.#membership.lostAt(g, epoch, 'this member is no longer listed in the group'),
      emitJoined: (e) => this.emit('memberJoined', e),
      emitLeft: (e) => this.emit('memberLeft', e),
      warn: (err) => this.#warn(err),
      subscribe: this.#driver.watchGroup ? (g, onChange) => this.#call('watch a group', () => this.#driver.watchGroup!(g, onChange)) : undefined,
      pushesEverything: this.capabilities.has('pushWatch'),
    })
    this.#elections = new Elections({
      memberId: this.memberId,
      stopSignal: parts.stopController.signal,
      watchIntervalMs: parts.watchIntervalMs,
      leaderLock: (g) => this.#require('leaderElection', this.#driver.leaderLock, 'watchElectedAsLeader').call(this.#driver, g),
      call: (op, fn) => this.#call(op, fn, true),
      track: (l) => this.#locks.add(l),
      untrack: (l) => this.#locks.delete(l),
      emitElected: (e) => this.emit('leaderElected', e),
      emitLost: (group, reason) => this.emit('leadershipLost', { group, reason }),
      warn: (err) => this.#warn(err),
    })
    this.#heart = new HeartbeatLoop({
      beat: () => this.#beat(),
      onFailure: (error, consecutiveFailures, pastDeadline) => {
        this.emit('heartbeatFailed', { reason: 'error', error, consecutiveFailures })
        // Client-side expiry: liveness has lapsed on the backend by now, whatever the transport says.
        if (pastDeadline) this.#setConnection('lost', error)
      },
      onSuccess: (lateByMs) => {
        if (lateByMs > 0) this.emit('heartbeatFailed', { reason: 'late', consecutiveFailures: 0, lateByMs })
        if (this.#connection === 'lost') this.#setConnection('reconnected')
      },
    })
  }

  /** Lifecycle state. */
  get state(): CoordinatorState {
    return this.#state
  }

  /** Connection health as last reported (undefined before start). */
  get connectionState(): ConnectionState | undefined {
    return this.#connection
  }

  /** Groups this member has joined (and not left), including any awaiting rejoin. */
  get joinedGroups(): string[] {
    return this.#membership.groups
  }

  /** Heartbeat health, for metrics and status pages. */
  get health(): { lastHeartbeatAt: Date | undefined; consecutiveFailures: number; heartbeatIntervalMs: number; heldLocks: number } {
    return { lastHeartbeatAt: this.#lastBeatAt, consecutiveFailures: this.#heart.consecutiveFailures, heartbeatIntervalMs: this.#heart.intervalMs, heldLocks: this.#locks.size }
  }

  /** @internal Reports from the driver land here. */
  onDriverConnection(state: ConnectionState, cause?: unknown): void {
    this.#setConnection(state, cause)
  }

  /** @internal */
  onDriverMembershipLost(groups: readonly string[], reason: string): void {
    this.#membership.lost(groups, reason)
  }

  /** @internal */
  onDriverLockLost(lock: DriverLock, reason: string): void {
    for (const held of [...this.#locks]) if (held.driverLock === lock) held.lost(reason)
  }

  /** @internal */
  onDriverWarning(err: RollcallError): void {
    this.#warn(err)
  }

  /** Connects. connect() calls this; call it again only after a failed start. */
  async start(): Promise<void> {
    if (this.#state !== 'created' && this.#state !== 'failed') throw new InvalidArgumentError(`start() cannot run in state ${this.#state}`)
    this.#state = 'starting'
    try {
      await this.#driver.start()
      this.#state = 'started'
      if (this.#connection === undefined) this.#setConnection('connected')
      if (this.#driver.heartbeat) {
        const first = await this.#beat()
        if (this.#p.heartbeat) this.#heart.start(first)
      }
      if (this.#p.autoWatch) {
        this.#tick = setInterval(() => void this.#onTick(), this.#p.watchIntervalMs)
        this.#tick.unref()
      }
    } catch (err) {
      this.#state = 'failed'
      await this.#driver.stop().catch(() => {})
      throw this.#translate(err, 'connect')
    }
  }

  /** Leaves every joined group, releases every lock, and disconnects. Safe to call twice. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  /** Refreshes liveness (and lock leases) now; resolves to the milliseconds until the next beat is needed. */
  async heartbeat(): Promise<number> {
    return this.#beat()
  }

  /** Creates a group (GroupExistsError if it exists). */
  async createGroup(group: string): Promise<void> {
    this.#id('group', group)
    await this.#call('create a group', () => this.#groups().createGroup(group))
  }

  /** Deletes an empty group (GroupNotFoundError, GroupNotEmptyError). */
  async deleteGroup(group: string): Promise<void> {
    this.#id('group', group)
    await this.#call('delete a group', () => this.#groups().deleteGroup(group))
  }

  /** Every group's id, sorted. */
  async getGroups(): Promise<string[]> {
    return (await this.#call('list groups', () => this.#groups().listGroups())).sort()
  }

  /** Joins a group with capabilities (any msgpack-able value; default null). */
  async joinGroup(group: string, capabilities: unknown = null): Promise<void> {
    this.#id('group', group)
    const bytes = encodeCapabilities(capabilities)
    await this.#call('join a group', () => this.#groups().joinGroup(group, bytes))
    this.#membership.set(group, bytes)
  }

  /** Joins a group, creating it first if it does not exist. */
  async joinGroupCreate(group: string, capabilities: unknown = null): Promise<void> {
    for (let attempt = 0; ; attempt++) {
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
    this.#id('group', group)
    const caps = this.#membership.delete(group)
    try {
      await this.#call('leave a group', () => this.#groups().leaveGroup(group))
    } catch (err) {
      if (caps !== undefined && !(err instanceof MemberNotJoinedError) && !(err instanceof GroupNotFoundError)) this.#membership.set(group, caps)
      throw err
    }
  }

  /** Live member ids of a group, sorted. */
  async getMembers(group: string): Promise<string[]> {
    this.#id('group', group)
    return (await this.#listIds(group)).sort()
  }

  /**
   * Live members with their decoded capabilities, in one backend read. A member whose stored
   * capabilities cannot be decoded maps to a SerializationError (and a `warning` fires); the
   * others are unaffected.
   */
  async getMembersWithCapabilities(group: string): Promise<Map<string, unknown>> {
    this.#id('group', group)
    const raw = await this.#call('list members', () => this.#groups().listMembers(group))
    const out = new Map<string, unknown>()
    for (const member of [...raw.keys()].sort()) out.set(member, this.#decodeMember(group, member, raw.get(member)!, false))
    return out
  }

  /** One member's capabilities (MemberNotJoinedError, SerializationError). */
  async getMemberCapabilities(group: string, member: string): Promise<unknown> {
    this.#id('group', group)
    this.#id('member', member)
    const d = this.#groups()
    const bytes = d.getMemberCapabilities
      ? await this.#call('read capabilities', () => d.getMemberCapabilities!(group, member))
      : (await this.#call('list members', () => d.listMembers(group))).get(member)
    if (bytes === undefined) throw new MemberNotJoinedError(group, member)
    return this.#decodeMember(group, member, bytes, true)
  }

  /** Replaces this member's capabilities in a group it has joined. */
  async updateCapabilities(group: string, capabilities: unknown): Promise<void> {
    this.#id('group', group)
    const update = this.#require('updateCapabilities', this.#driver.updateCapabilities, 'updateCapabilities')
    const bytes = encodeCapabilities(capabilities)
    await this.#call('update capabilities', () => update.call(this.#driver, group, bytes))
    if (this.#membership.has(group)) this.#membership.set(group, bytes)
  }

  /** When a member joined and last changed its capabilities, as the backend recorded it. */
  async getMemberInfo(group: string, member: string): Promise<MemberInfo> {
    this.#id('group', group)
    this.#id('member', member)
    const get = this.#require('memberInfo', this.#driver.getMemberInfo, 'getMemberInfo')
    const info = await this.#call('read member info', () => get.call(this.#driver, group, member))
    return { ...info, capabilities: this.#decodeMember(group, member, info.capabilities, true) }
  }

  /** Calls `cb` for every member that joins `group` (GroupNotFoundError if it does not exist). */
  async watchJoinGroup(group: string, cb: WatchCallback): Promise<void> {
    this.#id('group', group)
    this.#assertStarted('watch a group')
    await this.#watchers.add(group, 'join', cb)
  }

  /** Stops calling `cb` (WatchCallbackNotFoundError if it was not registered). */
  async unwatchJoinGroup(group: string, cb: WatchCallback): Promise<void> {
    await this.#watchers.remove(group, 'join', cb)
  }

  /** Calls `cb` for every member that leaves `group`, whether it left or its liveness lapsed. */
  async watchLeaveGroup(group: string, cb: WatchCallback): Promise<void> {
    this.#id('group', group)
    this.#assertStarted('watch a group')
    await this.#watchers.add(group, 'leave', cb)
  }

  /** Stops calling `cb` (WatchCallbackNotFoundError if it was not registered). */
  async unwatchLeaveGroup(group: string, cb: WatchCallback): Promise<void> {
    await this.#watchers.remove(group, 'leave', cb)
  }

  /**
   * Watches `group` for the `memberJoined`/`memberLeft` events without a callback. Resolves, once
   * the watch is in place, to a function that ends it.
   */
  async watchGroup(group: string): Promise<() => Promise<void>> {
    this.#id('group', group)
    this.#assertStarted('watch a group')
    await this.#watchers.add(group, 'plain')
    let done = false
    return async () => {
      if (!done) await this.#watchers.remove(group, 'plain')
      done = true
    }
  }

  /**
   * Runs the watchers now and returns the values the callbacks returned since the last call.
   * Events are delivered without it (unless `autoWatch` is off); it exists for tooz parity.
   */
  async runWatchers(): Promise<unknown[]> {
    this.#assertStarted('run watchers')
    await Promise.all([this.#watchers.poll(true), this.#elections.runAll()])
    return this.#watchers.drainResults()
  }

  /** Runs for leader of `group`; `cb` is called when this member is elected. */
  watchElectedAsLeader(group: string, cb: LeaderCallback): void {
    this.#id('group', group)
    this.#assertStarted('run for leader')
    this.#elections.watch(group, cb)
  }

  /** Stops running (and stands down if leading) once no callback is left. */
  async unwatchElectedAsLeader(group: string, cb: LeaderCallback): Promise<void> {
    if (!(await this.#elections.unwatch(group, cb))) throw new WatchCallbackNotFoundError(group)
  }

  /** True while this member leads `group`. */
  isLeader(group: string): boolean {
    return this.#elections.isLeading(group)
  }

  /** The leader of `group`, or null when there is none. */
  async getLeader(group: string): Promise<string | null> {
    this.#id('group', group)
    const get = this.#require('getLeader', this.#driver.getLeader, 'getLeader')
    return this.#call('read the leader', () => get.call(this.#driver, group))
  }

  /** Gives up leadership of `group`; false when this member did not lead it. */
  async standDownGroupLeader(group: string): Promise<boolean> {
    this.#require('leaderElection', this.#driver.leaderLock, 'standDownGroupLeader')
    return this.#elections.standDown(group)
  }

  /** A lock object for `name`; nothing is taken until acquire(). */
  getLock(name: string): Lock {
    this.#id('lock', name)
    this.#assertStarted('get a lock')
    return new Lock({
      call: (op, fn) => this.#call(op, fn),
      track: (l) => this.#locks.add(l),
      untrack: (l) => this.#locks.delete(l),
      emitLockLost: (lockName, reason) => this.emit('lockLost', { name: lockName, reason }),
      stopSignal: this.#p.stopController.signal,
    }, name, this.#driver.createLock(name))
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

  /** Runs `fn` while holding the lock; `fn` gets a signal that aborts if the lock is lost. */
  async withLock<T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T, options: AcquireOptions = {}): Promise<T> {
    const lock = await this.acquireLock(name, options)
    try {
      return await fn(lock.signal)
    } finally {
      await lock.release().catch((err: unknown) => this.#warn(asRollcallError(err, `Releasing lock ${name}`)))
    }
  }

  /** Joins `group` (creating it) with a weight and returns a Partitioner over its members. */
  async joinPartitionedGroup(group: string, options: PartitionerOptions = {}): Promise<Partitioner> {
    const weight = options.weight ?? 1
    await this.joinGroupCreate(group, { weight })
    const partitioner = new Partitioner(this, group, options)
    await partitioner.start()
    return partitioner
  }

  /** Stops a Partitioner and leaves its group. */
  async leavePartitionedGroup(partitioner: Partitioner): Promise<void> {
    await partitioner.stop()
    await this.leaveGroup(partitioner.group)
  }

  async #stop(): Promise<void> {
    if (this.#state === 'created' || this.#state === 'failed') {
      this.#state = 'stopped'
      return
    }
    this.#state = 'stopping'
    this.#heart.stop()
    clearInterval(this.#tick)
    await this.#elections.stop()
    const locks = [...this.#locks]
    this.#locks.clear()
    await Promise.allSettled(locks.map((l) => l.driverLock.release()))
    for (const l of locks) if (l instanceof Lock) l.lost('the coordinator stopped')
    await Promise.allSettled(this.#membership.groups.map((g) => {
      this.#membership.delete(g)
      return this.#driver.leaveGroup(g)
    }))
    await this.#watchers.stop()
    this.#p.stopController.abort(new CoordinatorStoppedError('continue'))
    await this.#driver.stop().catch((err: unknown) => this.#p.logger.warn('driver stop failed', { error: String(err) }))
    this.#state = 'stopped'
  }

  async #beat(): Promise<number> {
    const d = this.#driver
    // A driver without heartbeat() keeps liveness by its session alone: nothing to refresh but locks.
    const result = d.heartbeat ? await this.#call('heartbeat', () => d.heartbeat!(this.#membership.live), true) : { nextBeatMs: Number.POSITIVE_INFINITY }
    this.#lastBeatAt = new Date()
    if (result.lostGroups?.length) this.#membership.lost(result.lostGroups, 'the backend no longer lists this member')
    const outcomes = await Promise.allSettled([...this.#locks].filter((l) => l.driverLock.refresh).map(async (l) => {
      if (!(await l.driverLock.refresh!())) l.lost('its lease lapsed or another holder took it')
    }))
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')
    if (failed) throw this.#translate(failed.reason, 'refresh a lock')
    if (this.#membership.hasPending) await this.#membership.rejoinPending()
    return result.nextBeatMs
  }

  async #onTick(): Promise<void> {
    this.#ticks += 1
    await Promise.all([this.#watchers.poll(this.#ticks % RESYNC_EVERY_TICKS === 0), this.#elections.runAll()])
  }

  #setConnection(state: ConnectionState, cause?: unknown): void {
    if (this.#state === 'stopping' || this.#state === 'stopped') return
    const previous = this.#connection
    if (state === previous || (state === 'reconnected' && previous === 'connected')) return
    this.#connection = state
    this.emit('connectionStateChanged', { state, previous })
    if (state === 'lost') {
      const reason = `the connection was lost${cause instanceof Error ? ` (${cause.message})` : ''}`
      for (const l of [...this.#locks]) l.lost(reason)
      this.#elections.loseAll(reason)
      this.#membership.lostAll(reason)
    } else if (state === 'reconnected') {
      void this.#membership.rejoinPending()
      void this.#watchers.poll(true)
    }
  }

  /** The driver, once it is known to support groups. */
  #groups(): CoordinationDriver {
    this.#require('groups', this.#driver.listMembers, 'group membership')
    return this.#driver
  }

  async #listIds(group: string): Promise<string[]> {
    const d = this.#groups()
    return d.listMemberIds
      ? this.#call('list members', () => d.listMemberIds!(group))
      : [...(await this.#call('list members', () => d.listMembers(group))).keys()]
  }

  #decodeMember(group: string, member: string, value: Uint8Array | SerializationError, raise: boolean): unknown {
    let error = value instanceof SerializationError ? value : undefined
    if (!error) {
      try {
        return loads(value as Uint8Array)
      } catch (err) {
        error = new SerializationError(`The capabilities of member ${JSON.stringify(member)} in group ${JSON.stringify(group)} cannot be decoded: ${(err as Error).message}`, { cause: err })
      }
    }
    if (raise) throw error
    this.#warn(error)
    return error
  }

  #require<F>(capability: Capability, fn: F | undefined, what: string): F {
    if (fn === undefined || !this.capabilities.has(capability)) {
      throw new NotSupportedError(what, this.driverName)
    }
    return fn
  }

  #id(kind: IdKind, id: unknown): void {
    if (typeof id !== 'string' || id === '') throw new InvalidIdError(`A ${kind} id must be a non-empty string, not ${id === '' ? 'an empty string' : typeof id}`)
    const problem = this.#p.definition.validateId?.(kind, id)
    if (problem) throw new InvalidIdError(`The ${kind} id ${JSON.stringify(id)} cannot be stored by the ${this.driverName} driver: ${problem}`)
  }

  #assertStarted(operation: string): void {
    if (this.#state !== 'started') throw new CoordinatorStoppedError(operation)
  }

  async #call<T>(operation: string, fn: () => Promise<T>, internal = false): Promise<T> {
    if (!internal) this.#assertStarted(operation)
    try {
      return await fn()
    } catch (err) {
      throw this.#translate(err, operation)
    }
  }

  #translate(err: unknown, operation: string): RollcallError {
    return translateError(err, operation, this.#p.definition, this.#p.redactedUrl, this.#p.secrets)
  }

  #warn(err: RollcallError): void {
    this.#p.logger.warn(err.message, { code: err.code })
    this.emit('warning', err)
  }
}

function encodeCapabilities(capabilities: unknown): Uint8Array {
  try {
    return dumps(capabilities)
  } catch (err) {
    throw new InvalidArgumentError(`Capabilities must be msgpack-able: ${(err as Error).message}`)
  }
}

