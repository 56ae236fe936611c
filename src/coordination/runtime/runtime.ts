/**
 * The driver runtime: what wraps a driver so that every backend behaves alike (the role kysely's
 * RuntimeDriver plays). It owns the lifecycle state machine, the one heartbeat loop, the watcher
 * tick, connection health (including client-side expiry), held-lock refresh, membership recovery,
 * and the driver boundary: errors translated, ids refused before any I/O, stored capabilities
 * decoded. The public Coordinator is a thin facade over it.
 *
 * With autoWatch off, runWatchers() is the only pump, as in tooz: watch callbacks, elections and
 * their callbacks, memberships dropped and rejoined (and so a Partitioner's ring) change only
 * inside it. Reports that arrive meanwhile (a driver's membershipLost, a heartbeat's lost
 * groups, a lost connection's memberships) are queued for it. Only the loss of a held lock or of
 * leadership is told at once (`lockLost`, `leadershipLost`): acting on a lock one no longer
 * holds is never safe.
 *
 * Its pieces are the other files of this folder: heartbeat.ts (the one timer loop), watchers.ts
 * (member caches, diff and dispatch), election.ts (leader election on the leader lock),
 * held-locks.ts, membership.ts (rejoin), translate.ts (errors at the driver boundary) and
 * user-code.ts (how the application's callbacks are called).
 * @internal
 */
import { AsyncResource } from 'node:async_hooks'
import type { EventEmitter } from 'node:events'
import {
  ConnectionError,
  CoordinatorStoppedError,
  InvalidIdError,
  InvalidStateError,
  type ListenerFailedError,
  NotSupportedError,
  RollcallError,
  SerializationError,
} from '../../errors.js'
import type { Capability } from '../capabilities.js'
import type { ConnectionState, CoordinationDriver, DriverDefinition, DriverEvents, HeartbeatResult, IdKind } from '../driver.js'
import { Elections } from './election.js'
import type { CoordinatorEvents } from '../events.js'
import { HeartbeatLoop } from './heartbeat.js'
import { HeldLocks } from './held-locks.js'
import type { Logger } from '../logger.js'
import { Membership } from './membership.js'
import { RepeatedWarnings } from '../../internal/repeated-warnings.js'
import { stampDriver, translateError } from './translate.js'
import { loads } from '../codec/index.js'
import { shorten } from '../../internal/redact.js'
import { connectChannel, groupJoinChannel, heartbeatChannel, traced, type TraceBase } from '../tracing.js'
import { Watchers } from './watchers.js'

/** Lifecycle states. `failed` means start() failed; call it again to retry. */
export type CoordinatorState = 'created' | 'starting' | 'started' | 'stopping' | 'stopped' | 'failed'

/** What connect() hands the Coordinator. @internal */
export interface CoordinatorParts {
  definition: DriverDefinition<any>
  /** Builds the driver, given the channel on which it reports. */
  createDriver(events: DriverEvents): CoordinationDriver
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

/** Emits one of the Coordinator's events. */
export type Emit = <K extends keyof CoordinatorEvents>(event: K, ...args: CoordinatorEvents[K]) => void

/** The async context of rollcall's own loops (made at load: no caller's context, no span). */
const BACKGROUND = new AsyncResource('rollcall')

/** Slower full re-read of pushed groups, a safety net against a missed notification. */
const RESYNC_EVERY_TICKS = 30

/** Key prefix of warnings that mean the backend cannot be reached (retryable errors). */
const OUTAGE = 'outage:'
const isOutageKey = (key: string): boolean => key.startsWith(OUTAGE)

/** Heartbeat health, for metrics and status pages. */
export interface Health {
  lastHeartbeatAt: Date | undefined
  consecutiveFailures: number
  heartbeatIntervalMs: number
  heldLocks: number
}

/** A started driver plus everything that is the same for every backend. @internal */
export class DriverRuntime {
  readonly driver: CoordinationDriver
  readonly definition: DriverDefinition<any>
  readonly capabilities: ReadonlySet<Capability>
  readonly memberId: string
  readonly membership: Membership
  readonly watchers: Watchers
  readonly elections: Elections
  readonly locks = new HeldLocks()
  /** What every trace payload of this coordinator carries (tracing.ts). */
  readonly trace: TraceBase
  /** A beat sent after a reconnect while no heartbeat loop runs. */
  #extraBeat: Promise<unknown> | undefined
  readonly stopSignal: AbortSignal
  readonly #parts: CoordinatorParts
  readonly #emit: Emit
  readonly #heart: HeartbeatLoop
  #state: CoordinatorState = 'created'
  #connection: ConnectionState | undefined
  #tick: NodeJS.Timeout | undefined
  #ticks = 0
  #stopping: Promise<void> | undefined
  #lastBeatAt: Date | undefined
  /** With autoWatch off: reports waiting for the next runWatchers(). */
  #deferred: (() => void)[] = []
  /** The log's view of warnings: a backend that is down is one line, not one per group per poll. */
  readonly #warnings: RepeatedWarnings
  /** The same for the application's failing listeners, at error level: a listener failing on every event is one line. */
  readonly #listenerFailures: RepeatedWarnings
  readonly #events: EventEmitter<CoordinatorEvents>

  constructor(parts: CoordinatorParts, events: EventEmitter<CoordinatorEvents>) {
    this.#parts = parts
    this.trace = { memberId: parts.memberId, backend: parts.definition.name, url: parts.redactedUrl }
    this.#warnings = new RepeatedWarnings(parts.logger)
    this.#listenerFailures = new RepeatedWarnings({
      warn: (msg, fields) => parts.logger.error(msg, fields),
      info: (msg, fields) => parts.logger.info(msg, fields),
    })
    this.#events = events
    // rollcall's own reaction to its events comes first, in one internal fan-out: no listener on
    // the Coordinator (the application's listener budget, MaxListeners, is the application's).
    const deliver = events.emit.bind(events) as (event: string, ...args: unknown[]) => boolean
    const emit: Emit = (event, ...args) => {
      this.#observe(event, args[0])
      deliver(event, ...args)
    }
    this.#emit = emit
    this.definition = parts.definition
    this.memberId = parts.memberId
    this.capabilities = new Set(parts.definition.capabilities)
    this.stopSignal = parts.stopController.signal
    this.driver = parts.createDriver({
      connectionState: (state, cause) => this.setConnection(state, cause),
      sessionReplaced: (reason) => this.#sessionReplaced(reason),
      membershipLost: (groups, reason) => this.#later(() => this.membership.lost(groups, reason)),
      lockLost: (lock, reason) => this.locks.lost(lock, reason),
      warning: (err) => this.warn(stampDriver(err, parts.definition.name)),
    })
    const d = this.driver
    const manual = !parts.autoWatch
    this.membership = new Membership({
      rejoin: parts.rejoin,
      manual,
      mayRejoin: () => this.#connection !== 'lost',
      join: (g, caps) =>
        traced(
          groupJoinChannel,
          () => ({ ...this.trace, group: g, rejoin: true }),
          () => this.call('rejoin a group', () => d.joinGroup(g, caps), { internal: true }),
        ),
      renew: d.updateCapabilities && this.capabilities.has('updateCapabilities')
        ? (g, caps) => this.call('renew a membership', () => d.updateCapabilities!(g, caps), { internal: true })
        : undefined,
      create: (g) => this.call('create a group', () => d.createGroup(g), { internal: true }),
      emitLost: (group, reason) => emit('membershipLost', { group, reason }),
      emitRejoined: (group) => emit('rejoined', { group }),
      warn: (err) => this.warn(err),
    })
    this.watchers = new Watchers({
      memberId: this.memberId,
      listMemberIds: (g) => this.listIds(g),
      listMembers: (g) => this.call('list members', () => this.groups().listMembers(g)),
      cheapIds: d.listMemberIds !== undefined,
      joinEpoch: (g) => this.membership.epoch(g),
      selfMissing: (g, epoch) => this.membership.lostAt(g, epoch, 'this member is no longer listed in the group'),
      emitJoined: (e) => emit('memberJoined', e),
      emitLeft: (e) => emit('memberLeft', e),
      warn: (err) => this.warn(err),
      callbackFailed: (err) => this.listenerFailed(err),
      subscribe: d.watchGroup ? (g, onChange) => this.call('watch a group', () => d.watchGroup!(g, onChange)) : undefined,
      pushesEverything: this.capabilities.has('pushWatch'),
      nextExpiryAt: d.nextExpiryAt && this.capabilities.has('expiryWake') && parts.autoWatch ? (g) => d.nextExpiryAt!(g) : undefined,
      watchIntervalMs: parts.watchIntervalMs,
      manual,
      trace: this.trace,
    })
    this.elections = new Elections({
      memberId: this.memberId,
      stopSignal: this.stopSignal,
      watchIntervalMs: parts.watchIntervalMs,
      wakeAtChance: this.capabilities.has('electionWake') && parts.autoWatch,
      manual,
      fencing: this.capabilities.has('fencing'),
      leaderLock: (g) => this.require('leaderElection', d.leaderLock, 'watchElectedAsLeader').call(d, g),
      call: (op, fn) => this.call(op, fn, { internal: true }),
      track: (l) => this.locks.track(l),
      untrack: (l) => this.locks.untrack(l),
      acquiring: (l) => this.locks.acquiring(l),
      releaseFailed: (l, err) => this.locks.releaseFailed(l, err),
      emitElected: (e) => emit('leaderElected', e),
      emitLost: (group, reason) => emit('leadershipLost', { group, reason }),
      warn: (err) => this.warn(err),
      callbackFailed: (err) => this.listenerFailed(err),
      trace: this.trace,
    })
    this.#heart = new HeartbeatLoop({
      beat: () => this.beat({ recover: false }),
      onFailure: (error, consecutiveFailures, pastDeadline) => {
        emit('heartbeatFailed', { reason: 'error', error, consecutiveFailures })
        // Client-side expiry: liveness has lapsed on the backend by now, whatever the transport says.
        if (pastDeadline) this.setConnection('lost', error)
      },
      onSuccess: (lateByMs) => {
        if (lateByMs > 0) emit('heartbeatFailed', { reason: 'late', consecutiveFailures: 0, lateByMs })
        this.#warnings.recovered(isOutageKey)
        if (this.#connection === 'lost') this.setConnection('reconnected')
      },
      onExpired: () => this.setConnection('lost', new ConnectionError(`no heartbeat succeeded within the ${this.#heart.intervalMs} ms liveness window`)),
      deadline: this.driver.livenessDeadline && (() => this.driver.livenessDeadline!()),
    })
  }

  get state(): CoordinatorState {
    return this.#state
  }

  get connection(): ConnectionState | undefined {
    return this.#connection
  }

  get health(): Health {
    return {
      lastHeartbeatAt: this.#lastBeatAt,
      consecutiveFailures: this.#heart.consecutiveFailures,
      heartbeatIntervalMs: this.#heart.intervalMs,
      heldLocks: this.locks.size,
    }
  }

  async start(): Promise<void> {
    if (this.#state !== 'created' && this.#state !== 'failed') throw new InvalidStateError(`start() cannot run in state ${this.#state}`)
    this.#state = 'starting'
    const first = await traced(connectChannel, () => ({ ...this.trace }), () => this.#start())
    // The loops run in rollcall's own async context, not in the caller's nor in the connect span:
    // a tracer sees each background beat and poll as a root, not as a child of whoever connected.
    // stop() called meanwhile has cleared the loops already: start none.
    if ((this.#state as CoordinatorState) !== 'started') return
    BACKGROUND.runInAsyncScope(() => {
      if (first && this.#parts.heartbeat) this.#heart.start(first.nextBeatMs, first.sentAt)
      if (this.#parts.autoWatch) {
        this.#tick = setInterval(() => void this.#onTick(), this.#parts.watchIntervalMs)
        this.#tick.unref()
      }
    })
  }

  /** Connects and makes the first beat (when the driver beats): the part of start() traced as `connect`. */
  async #start(): Promise<{ nextBeatMs: number; sentAt: number } | undefined> {
    try {
      await this.driver.start()
      this.#state = 'started'
      if (this.#connection === undefined) this.setConnection('connected')
      if (!this.driver.heartbeat) return undefined
      const sentAt = Date.now()
      return { nextBeatMs: await this.beat(), sentAt }
    } catch (err) {
      this.#state = 'failed'
      await this.driver.stop().catch(() => {})
      throw this.translate(err, 'connect')
    }
  }

  stop(): Promise<void> {
    if (this.#state === 'created' || this.#state === 'failed') {
      // tooz raises ToozError here too: there is nothing to stop, and saying so finds the bug.
      return Promise.reject(
        new InvalidStateError(`stop() was called on a coordinator that is not started (state ${this.#state}); start() it first, or do not stop it`),
      )
    }
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  /**
   * One heartbeat: driver liveness, lock leases, pending rejoins. Resolves to ms until the next is
   * needed. The heartbeat loop's beats start the rejoins and the releases of abandoned locks but do
   * not wait for them (`recover` false): liveness of what is held must not wait on restoring what
   * was lost. A rejoin or release sent to a server that is cut off hangs until its request timeout;
   * a beat waiting for it sent no keepalive meanwhile, so the lease lapsed client-side (etcd
   * partition seed 2702: a member on the majority side lost for 4 s after the election), and the
   * success it reported at last was dated from its start, past the deadline, so the member was
   * lost again at once. The application's own heartbeat() waits for them, as it always has.
   */
  beat({ recover = true }: { recover?: boolean } = {}): Promise<number> {
    return traced(heartbeatChannel, () => ({ ...this.trace, groups: this.membership.live.size, locks: this.locks.size }), () => this.#beat(recover))
  }

  async #beat(recover: boolean): Promise<number> {
    const d = this.driver
    // Locks the beat does not refresh are refreshed alongside it (driver.ts, beatRefreshesLocks);
    // observed at once, so that a beat failing first leaves no unhandled rejection.
    const alongside = d.heartbeat && d.beatRefreshesLocks ? undefined : this.#refreshLocks()
    alongside?.catch(() => {})
    // A group the beat finds gone is lost only if it has not been rejoined since the beat went out (the rejoin answers that).
    const epochs = new Map([...this.membership.live.keys()].map((g) => [g, this.membership.epoch(g)]))
    // A driver without heartbeat() keeps liveness by its session alone: nothing to refresh but locks.
    const result: HeartbeatResult = d.heartbeat
      ? await this.call('heartbeat', () => d.heartbeat!(this.membership.live, this.locks.driverLocks()), { internal: true })
      : { nextBeatMs: Number.POSITIVE_INFINITY, locks: { refreshed: false } }
    this.#lastBeatAt = new Date()
    const lostGroups = result.lostGroups
    if (lostGroups?.length) {
      const unchanged = (g: string): boolean => epochs.get(g) !== undefined && this.membership.epoch(g) === epochs.get(g)
      this.#later(() => this.membership.lost(lostGroups.filter(unchanged), 'the backend no longer lists this member'))
    }
    if (result.locks.refreshed) this.locks.lostInBeat(result.locks.lost)
    else await (alongside ?? this.#refreshLocks())
    const rejoins = this.membership.hasPending && this.#parts.autoWatch ? this.membership.rejoinPending() : undefined
    const releases = this.locks.releaseAbandoned()
    if (recover) await Promise.all([rejoins, releases])
    return result.nextBeatMs
  }

  /**
   * tooz run_watchers(): delivers queued reports, re-reads every watched group, runs one election
   * round and the pending rejoins, and resolves once every callback it triggered has settled,
   * with the values the join and leave callbacks returned (since the last call).
   */
  async runWatchers(): Promise<unknown[]> {
    for (const report of this.#deferred.splice(0)) report()
    await Promise.all([this.watchers.poll(true), this.elections.runAll()])
    if (this.membership.hasPending) await this.membership.rejoinPending()
    return this.watchers.drainResults()
  }

  /** Refreshes every held lock whose driver did not refresh it in the beat. */
  async #refreshLocks(): Promise<void> {
    await this.locks.refresh().catch((err: unknown) => {
      throw this.translate(err, 'refresh a lock')
    })
  }

  /** Records a connection state and applies its consequences. */
  setConnection(state: ConnectionState, cause?: unknown): void {
    if (this.#state === 'stopping' || this.#state === 'stopped') return
    const previous = this.#connection
    if (state === previous || (state === 'reconnected' && previous === 'connected')) return
    // Lost stays lost until the backend answers again: a transport report that it broke says nothing new.
    if (state === 'suspended' && previous === 'lost') return
    this.#connection = state
    this.#emit('connectionStateChanged', { state, previous })
    if (state === 'connected' || state === 'reconnected') this.#warnings.recovered(isOutageKey)
    if (state === 'lost') this.#loseEverything(`the connection was lost${cause instanceof Error ? ` (${cause.message})` : ''}`)
    else if (state === 'reconnected') {
      // Back from lost: everything is restored anew (rejoins, the beat below), so liveness counts from now, as after a new session;
      // a beat still under way went out on the old connection and judges nothing now. Counted from the last beat's send instead, the
      // window had often all but passed, and the reconnect's own beat, queued behind the rejoins, came back just past it (PostgreSQL
      // partition run: lost again 22 ms after coming back from a 12 s cut).
      if (previous === 'lost') {
        this.#heart.renewConnection()
        this.#heart.restartDeadline()
      }
      void this.locks.releaseAbandoned()
      if (this.#parts.autoWatch) {
        void this.membership.rejoinPending()
        void this.watchers.poll(true)
      }
      // Whatever the outage cost (an emptied server, a lock taken meanwhile), the next beat tells: beat now.
      void this.#beatOnce()
    }
  }

  /**
   * The driver is on a new session: everything of the old one is lost, even if the Coordinator
   * already said so; then back. The liveness deadline restarts with the new session: the old
   * session's says nothing about it (counted on, a beat failing on the new session would find it
   * passed and lose again what the rejoin just restored).
   */
  #sessionReplaced(reason: string): void {
    if ((this.#state as CoordinatorState) !== 'started') return
    if (this.#connection === 'lost') this.#loseEverything(reason)
    else this.setConnection('lost', new ConnectionError(reason))
    this.#heart.restartDeadline()
    this.setConnection('reconnected')
  }

  /** Tells every lock, leadership and membership that it is gone; locks are released on the backend once it answers. */
  #loseEverything(reason: string): void {
    this.locks.loseAll(reason)
    this.elections.loseAll(reason)
    this.#later(() => this.membership.lostAll(reason))
  }

  /** One beat outside the schedule (the loop's, when it runs); failures are the loop's to report. */
  #beatOnce(): Promise<unknown> {
    if (this.#parts.heartbeat && this.driver.heartbeat) return this.#heart.beatNow()
    const beat = this.driver.heartbeat ? () => this.beat() : () => this.#refreshLocks()
    this.#extraBeat ??= beat().catch(() => undefined).finally(() => {
      this.#extraBeat = undefined
    })
    return this.#extraBeat
  }

  /** Applies a report now, or with autoWatch off at the next runWatchers(). */
  #later(report: () => void): void {
    if (this.#parts.autoWatch) report()
    else this.#deferred.push(report)
  }

  /** Member ids of a group, with the cheapest primitive the driver has. */
  async listIds(group: string): Promise<string[]> {
    const d = this.groups()
    return d.listMemberIds
      ? this.call('list members', () => d.listMemberIds!(group))
      : [...(await this.call('list members', () => d.listMembers(group))).keys()]
  }

  /** The driver, once it is known to support groups. */
  groups(): CoordinationDriver {
    this.require('groups', this.driver.listMembers, 'group membership')
    return this.driver
  }

  /**
   * Decodes stored capabilities. A value that does not decode (or that the driver could not read)
   * is a SerializationError naming the member, stamped with the driver: thrown (`raise`), or
   * returned as the value with a warning.
   */
  decodeMember(group: string, member: string, value: Uint8Array | SerializationError, { raise }: { raise: boolean }): unknown {
    let error: SerializationError
    if (value instanceof SerializationError) {
      error = stampDriver(value, this.definition.name)
    } else {
      try {
        return loads(value)
      } catch (err) {
        error = new SerializationError(
          `The capabilities of member ${JSON.stringify(member)} in group ${JSON.stringify(group)} cannot be decoded: ${(err as Error).message}`,
          { cause: err, driver: this.definition.name },
        )
      }
    }
    if (raise) throw error
    this.warn(error)
    return error
  }

  /** Returns the driver method behind a capability, or throws NotSupportedError naming it. */
  require<F>(capability: Capability, fn: F | undefined, what: string): F {
    if (fn === undefined || !this.capabilities.has(capability)) throw new NotSupportedError(capability, what, this.definition.name)
    return fn
  }

  /** Refuses, before any I/O, an id that is not a non-empty string or that the backend cannot store: InvalidIdError. */
  validateId(kind: IdKind, id: unknown): void {
    if (typeof id !== 'string' || id === '') {
      throw new InvalidIdError(`A ${kind} id must be a non-empty string, not ${id === '' ? 'an empty string' : typeof id}`)
    }
    const problem = this.definition.validateId?.(kind, id)
    if (problem) throw new InvalidIdError(`The ${kind} id ${JSON.stringify(shorten(id))} cannot be stored by the ${this.definition.name} driver: ${problem}`)
  }

  assertStarted(operation: string): void {
    if (this.#state !== 'started') throw new CoordinatorStoppedError(operation)
  }

  /** Runs a driver call; anything it throws comes out as a RollcallError. `internal` calls (the runtime's own) may run while stopping. */
  async call<T>(operation: string, fn: () => Promise<T>, { internal = false }: { internal?: boolean } = {}): Promise<T> {
    if (!internal) this.assertStarted(operation)
    try {
      return await fn()
    } catch (err) {
      throw this.translate(err, operation)
    }
  }

  translate(err: unknown, operation: string): RollcallError {
    return translateError(err, operation, this.definition, this.#parts.redactedUrl, this.#parts.secrets)
  }

  /**
   * The application's listener or callback failed. It is told in a `warning` event (never from a
   * `warning` listener's own failure: that would loop), and logged at error level once per kind;
   * with no `warning` listener to hear it, it also goes to process.emitWarning() (stderr by
   * default), so that a failure is never silent.
   */
  listenerFailed(err: ListenerFailedError): void {
    const logged = this.#listenerFailures.warn(`${err.event}:${err.group ?? ''}`, err.message, { code: err.code, event: err.event, group: err.group })
    if (err.event !== 'warning' && this.#events.listenerCount('warning') > 0) this.#emit('warning', err)
    else if (logged) process.emitWarning(err)
  }

  /** rollcall's own reaction to one of its events: views doubt their snapshot when the connection or an outage might have hidden a change. */
  #observe<K extends keyof CoordinatorEvents>(event: K, payload: CoordinatorEvents[K][0]): void {
    const doubt = event === 'connectionStateChanged'
      || (event === 'heartbeatFailed' && (payload as CoordinatorEvents['heartbeatFailed'][0]).reason === 'error')
      || (event === 'warning' && (payload as RollcallError).retryable)
    if (doubt) this.watchers.doubtViews()
  }

  /**
   * Reports a warning: always as a `warning` event; in the log, once per kind (a retryable error
   * is one kind per code: the backend is down, whichever group noticed), then a summary now and then.
   */
  warn(err: RollcallError): void {
    // Work in flight when stop() was called ends quietly: being stopped is what the caller asked for.
    if (err instanceof CoordinatorStoppedError && this.#state !== 'started') return
    this.#warnings.warn(err.retryable ? `${OUTAGE}${err.code}` : `${err.code}:${err.message}`, err.message, { code: err.code })
    this.#emit('warning', err)
  }

  async #onTick(): Promise<void> {
    this.#ticks += 1
    await Promise.all([this.watchers.poll(this.#ticks % RESYNC_EVERY_TICKS === 0), this.elections.runAll()])
  }

  async #stop(): Promise<void> {
    this.#state = 'stopping'
    this.#heart.stop()
    clearInterval(this.#tick)
    // Watches end first: a read in flight is dropped without a word, and leaving our own groups
    // below wakes no new one (every read would fail now anyway, the coordinator being stopped).
    await this.watchers.stop()
    await this.elections.stop()
    await this.locks.releaseAll()
    await Promise.allSettled(this.membership.groups.map((g) => {
      this.membership.delete(g)
      return this.driver.leaveGroup(g)
    }))
    this.#parts.stopController.abort(new CoordinatorStoppedError('continue'))
    await this.driver.stop().catch((err: unknown) => this.#parts.logger.warn('driver stop failed', { error: String(err) }))
    this.#state = 'stopped'
  }
}
