/**
 * The driver contract: backend primitives only.
 *
 * Everything that is the same for every backend (lifecycle, the heartbeat loop, watcher diffing
 * and dispatch, leader election on top of locks, rejoin after lost membership, lock waiting and
 * timeouts, argument validation, error wrapping, capability encoding) lives once in the
 * Coordinator. A driver is a folder, drivers/<name>/, whose index.ts exports `defineDriver({...})`
 * (memory.ts, the reference, is a single file), and one line in config/registry.ts.
 *
 * Nothing a driver does is meant by leaving something out: each rule between a driver and the
 * Coordinator is written below, in the member it concerns.
 *
 * Capabilities travel as encoded bytes (oslo msgpack, see codec/index.ts): the Coordinator encodes and
 * decodes them, so a corrupt value written by someone else fails for that member alone.
 */
import type { RollcallError, SerializationError } from '../errors.js'
import type { Capability } from './capabilities.js'
import type { Logger } from './logger.js'
import type { OptionSpecs, ResolvedOptions } from './config/options.js'
import type { BackendUrl } from './config/url.js'

/**
 * Connection health, in Curator's vocabulary.
 * - `connected`: the first connection is up.
 * - `suspended`: the connection broke; membership and locks may still be valid on the backend.
 * - `reconnected`: back after `suspended` or `lost`.
 * - `lost`: membership, locks and leadership must be presumed gone (session expired, lease
 *   lapsed, or heartbeats failed for longer than the backend keeps them).
 */
export type ConnectionState = 'connected' | 'suspended' | 'reconnected' | 'lost'

/** What a driver reports to its Coordinator, outside of method results. */
export interface DriverEvents {
  /**
   * The transport changed state. Report `lost` only when the backend itself dropped our session.
   * Recovery is the Coordinator's alone: on `reconnected` it beats at once (one beat), refreshes
   * every held lock the beat did not, and rejoins lost groups. A driver reports the state and
   * re-beats, re-checks or re-joins nothing of its own, so that every loss is told once, by it.
   * A driver that reported `lost` tells its return with sessionReplaced(), never `reconnected`:
   * a lost session does not come back, a new one does.
   */
  connectionState(state: ConnectionState, cause?: unknown): void
  /**
   * The backend ended this member's session and the driver is already on a new one (a lapsed
   * lease replaced, a restarted server, a new ZooKeeper session): every membership, lock and
   * leadership of the old one is gone. The Coordinator reports them lost, whatever state it was
   * in, then `reconnected`, rejoins and beats at once; liveness is counted afresh from this call
   * (the old session's deadline says nothing about the new one). The one way to say "lost, and
   * back". A driver may report `lost` when the old session ends and this once the new one is up
   * (ZooKeeper does); it then calls this before any answer on the new session is read, so that
   * nothing gained on it (a rejoin, a lock) is reported lost with the old session.
   */
  sessionReplaced(reason: string): void
  /** The backend dropped this member from these groups (an evicted key, a lapsed lease). */
  membershipLost(groups: readonly string[], reason: string): void
  /** A lock this process held is no longer held (its lease lapsed or its node vanished). */
  lockLost(lock: DriverLock, reason: string): void
  /** Something odd that did not stop the operation, such as a corrupt entry written by someone else. */
  warning(err: RollcallError): void
}

/** What a driver's `create()` receives. */
export interface DriverContext<O> {
  /** The parsed URL; `url.redacted` is the only form that may appear in messages. */
  readonly url: BackendUrl
  /** Resolved options (defaults, then URL, then code). */
  readonly options: O
  /** This coordinator's member id. */
  readonly memberId: string
  /** Channel for unsolicited reports. */
  readonly events: DriverEvents
  /** Aborted when the coordinator stops: end loops, streams and waits on it. */
  readonly signal: AbortSignal
  readonly log: Logger
  /**
   * The application's own client (`connect(url, { client })`), already accepted by the driver's
   * {@link DriverClientSupport.check}; undefined when the driver opens its own connections. The
   * driver must never close or reconfigure it: it closes only what it derived from it.
   */
  readonly client?: unknown
}

/**
 * How a driver takes an application's own client (`connect(url, { client })`). Absent: the driver
 * refuses one.
 */
export interface DriverClientSupport {
  /** What the driver takes, for messages (`an ioredis Redis instance`). */
  readonly expects: string
  /** For docs/drivers.md: what the driver requires of the client and what it derives from it. */
  readonly doc: string
  /** Why `value` cannot serve (a sentence naming the fix), or undefined when it can. No I/O. */
  check(value: unknown): string | undefined
  /**
   * Options (programmatic names) that configure the connection, which the client decides instead:
   * giving one beside a client is an InvalidOptionError.
   */
  readonly connectionOptions: readonly string[]
  /** Why this URL cannot go with a client (e.g. `rediss://`, which asks for TLS), beyond the host, credentials and path that no client URL may have. */
  urlProblem?(url: BackendUrl): string | undefined
}

/**
 * What a beat did with the held locks it was handed; every driver says it, none by leaving it out.
 * - `{ refreshed: false }`: the beat left them alone. A driver without
 *   {@link CoordinationDriver.beatRefreshesLocks} always answers this, and the Coordinator has
 *   called refresh() on each alongside the beat; a driver with it answers this only when it could
 *   not refresh them (etcd: the lease was gone), and the Coordinator calls refresh() on each after
 *   the beat.
 * - `{ refreshed: true, lost }`: the beat refreshed every one of them (in the same round trip);
 *   `lost` names those whose lease lapsed or that another holder took (`[]`: all kept). The
 *   Coordinator sends no refresh of its own. Only a driver with `beatRefreshesLocks` answers this.
 */
export type BeatLocks<L extends DriverLock = DriverLock> =
  | { readonly refreshed: false }
  | { readonly refreshed: true; readonly lost: readonly L[] }

/** The result of one driver heartbeat. */
export interface HeartbeatResult<L extends DriverLock = DriverLock> {
  /**
   * Milliseconds until this member's liveness (and any lock lease) lapses without another beat.
   * The Coordinator beats again after about half of it (tooz's Heart does the same).
   */
  nextBeatMs: number
  /** Joined groups where the backend no longer lists this member; the Coordinator rejoins them. */
  lostGroups?: readonly string[]
  /** Whether the beat refreshed the held locks, and which it lost (see {@link BeatLocks}). */
  locks: BeatLocks<L>
}

/** getMemberInfo()'s raw answer. */
export interface DriverMemberInfo {
  capabilities: Uint8Array
  createdAt: Date
  updatedAt: Date
}

/** The mode of an acquisition: `shared` only on locks with tryAcquireShared(). */
export type LockMode = 'exclusive' | 'shared'

/**
 * How a blocking acquire waits for a busy lock. Each lock declares exactly one model; the
 * Coordinator reads it once and never mixes two:
 * - {@link PollWaiting}: the Coordinator polls with capped backoff;
 * - {@link NotifyWaiting}: the Coordinator polls too, but the driver pauses it until a release may
 *   have freed the lock, and its attempts are a waiter's, which the driver may queue for fairness;
 * - {@link QueueWaiting}: the driver waits in the backend's own queue, without polling.
 *
 * In every model the first attempt of a wait is tryAcquire() or tryAcquireShared() (in the
 * backend's queue only at a deadline of 0; otherwise the wait is all acquireWaiting()), and no wait
 * begins once the deadline has passed. tryAcquire() is always the same non-waiting take, never a
 * waiter's.
 */
export type LockWaiting = PollWaiting | NotifyWaiting | QueueWaiting

/** The Coordinator polls: tryAcquire() (or tryAcquireShared()), a capped backoff sleep, again. */
export interface PollWaiting {
  /** Polling, nothing more. */
  readonly kind: 'poll'
}

/**
 * The Coordinator polls, paused by the driver until a release may have freed the lock. A wait
 * goes: tryAcquire(), then waitForRelease() and tryAcquireAsWaiter() in turn until one takes the
 * lock, then endWait() unless it did.
 */
export interface NotifyWaiting {
  /** Polling paused by the driver. */
  readonly kind: 'notify'
  /**
   * Waits, instead of the Coordinator's sleep between two attempts, until the backend announces
   * that the lock may be free (a release naming this waiter, the holder's lease lapsing), at most
   * `timeoutMs`, or until `signal` aborts; never throws. The Coordinator makes an attempt after it
   * whatever happened, so a lost announcement only costs time. Its first call starts the wait (the
   * driver may register this waiter in a queue of its own); the wait lasts until an attempt takes
   * the lock or endWait().
   */
  waitForRelease(signal: AbortSignal, timeoutMs: number): Promise<void>
  /**
   * A waiter's attempt, made only after waitForRelease() within a wait: like tryAcquire() (or,
   * in `shared` mode, tryAcquireShared()), but as the waiter that waitForRelease() started, which
   * the driver may make wait its turn (a queue, for fairness) or keep its place by. Taking the
   * lock ends the wait.
   */
  tryAcquireAsWaiter(mode: LockMode): Promise<boolean>
  /** Called once a wait that called waitForRelease() ends without the lock (timeout, abort): leave any queue. */
  endWait(): Promise<void>
}

/**
 * The driver waits in the backend's own queue; the Coordinator does not poll. A driver whose named
 * locks wait so declares `lockWaitQueue`, and one whose named locks do not leaves it out (the
 * conformance suite checks both).
 */
export interface QueueWaiting {
  /** The backend's own queue. */
  readonly kind: 'queue'
  /**
   * Waits in the backend's own queue until acquired, in `mode` (`shared` only on a lock with
   * tryAcquireShared()). Resolves false if `signal` aborts first, after withdrawing from the
   * queue.
   */
  acquireWaiting(signal: AbortSignal, mode: LockMode): Promise<boolean>
}

/**
 * One named lock as the backend sees it. The Coordinator adds waiting, timeouts, AbortSignal,
 * re-entrancy rules, refresh scheduling and lost-lock events on top.
 */
export interface DriverLock {
  /**
   * Takes the lock if it is free; never waits, and is never a waiter's attempt (a waiter's is
   * {@link NotifyWaiting.tryAcquireAsWaiter}). By an object that holds the lock already (taken by
   * it, and neither released nor found lost by it since), or while an attempt of its own is under
   * way, it resolves false and changes nothing: locks are not re-entrant, as in tooz, and a second
   * take never renews the lease or the fencing token. The Coordinator calls release() on a lock it
   * gives up (a lost connection); release() forgets the hold at once, before any round trip.
   */
  tryAcquire(): Promise<boolean>
  /**
   * Takes the lock in shared (reader) mode if no exclusive holder has it; never waits. Shared
   * holders hold together and exclude exclusive ones. Only with `sharedLocks`; release() ends
   * either mode. A shared wait follows the same {@link DriverLock.waiting} as an exclusive one.
   */
  tryAcquireShared?(): Promise<boolean>
  /** How a blocking acquire of this lock waits while it is busy: exactly one model (see {@link LockWaiting}). */
  readonly waiting: LockWaiting
  /** Releases the lock if this object holds it; false when it did not (or no longer did). */
  release(): Promise<boolean>
  /** Extends the lock's lease; false when the lock turned out not to be ours any more. */
  refresh?(): Promise<boolean>
  /** Asks the backend whether this object still holds the lock. */
  isStillOwner(): Promise<boolean>
  /** Deletes the lock whoever holds it (tooz `break_`); true when there was something to delete. */
  break(): Promise<boolean>
  /**
   * After a tryAcquire() that failed: in how many ms (from this answer) the lock may be free, that
   * is when the holder's lease lapses unless it is refreshed; where the backend frees a dead
   * holder's lock at once and trying is a cheap local call, how soon to try again. Undefined when
   * nobody can tell (no lease). Only with `electionWake`: a candidate retries then.
   */
  nextChanceInMs?(): Promise<number | undefined>
  /** After a successful acquire, on drivers with `fencing`: a token larger than any earlier holder's. */
  readonly fencingToken: bigint | undefined
}

/**
 * The primitives a backend implements. Optional members are absent, never stubbed to throw.
 * `L` is the driver's own lock type: the Coordinator hands back to heartbeat() only locks that
 * this driver's createLock() or leaderLock() made.
 */
export interface CoordinationDriver<L extends DriverLock = DriverLock> {
  /** Connects. Must fail within the driver's connect timeout with a ConnectionError naming the host. */
  start(): Promise<void>
  /** Closes connections and ends every timer and stream. The Coordinator has already left groups and released locks. */
  stop(): Promise<void>
  /**
   * Refreshes liveness for the given joined groups (group → encoded capabilities). `heldLocks` are
   * the locks this member holds; a driver may refresh them in the same beat, and says in
   * {@link HeartbeatResult.locks} whether it did.
   */
  heartbeat?(joined: ReadonlyMap<string, Uint8Array>, heldLocks: ReadonlySet<L>): Promise<HeartbeatResult<L>>
  /**
   * True when heartbeat() refreshes the held locks it is handed, in the beat's own round trip
   * (etcd: keys on the lease; memcached: touches in the same batch). Otherwise the Coordinator
   * sends each lock's refresh() at the same time as the beat, not after its answer: the beat stays
   * one round trip, which the liveness deadline (counted from the send) assumes. A process stalled
   * across a beat (a loaded machine, a long GC) then finds every answer waiting when it runs again,
   * instead of one answer and a refresh still to send after the deadline.
   */
  readonly beatRefreshesLocks?: boolean
  /**
   * When (Date.now() ms) liveness lapses as things stand now, for a driver whose session is kept
   * between beats (ZooKeeper's pings and reconnects answer for it): the Coordinator's lapse
   * deadline, counted from the last good beat, moves to it when it is later. Without it, a session
   * the server keeps answering while beats fail (each cut in flight) or while none is due would be
   * presumed lost.
   */
  livenessDeadline?(): number
  createGroup(group: string): Promise<void>
  deleteGroup(group: string): Promise<void>
  listGroups(): Promise<string[]>
  joinGroup(group: string, capabilities: Uint8Array): Promise<void>
  leaveGroup(group: string): Promise<void>
  /** Live members with their encoded capabilities, in as few round trips as the backend allows. */
  listMembers(group: string): Promise<Map<string, Uint8Array | SerializationError>>
  /** Live member ids only, when that is cheaper than listMembers(). */
  listMemberIds?(group: string): Promise<string[]>
  /**
   * When (performance.now() ms) the first member seen by the latest listing of `group` expires
   * unless it beats again; undefined when unknown or when none will. For backends whose expiries
   * are not pushed: the Coordinator re-reads the group then, instead of at its next poll.
   */
  nextExpiryAt?(group: string): number | undefined
  /** One member's encoded capabilities, when that is cheaper than listMembers(). */
  getMemberCapabilities?(group: string, member: string): Promise<Uint8Array>
  updateCapabilities?(group: string, capabilities: Uint8Array): Promise<void>
  getMemberInfo?(group: string, member: string): Promise<DriverMemberInfo>
  createLock(name: string): L
  /**
   * Subscribes to membership changes of a group; `onChange` is called (with no details) whenever
   * the member list may have changed. Resolves once the subscription is in place, with a function
   * that ends it. Declare `pushWatch` only if expiries (crashed members) are pushed too; a driver
   * that pushes joins and leaves but not expiries may still offer watchGroup(), and the
   * Coordinator keeps polling its groups as well.
   */
  watchGroup?(group: string, onChange: () => void): Promise<() => Promise<void>>
  /** The lock whose holder leads `group`, laid out as tooz lays it out. Only with `leaderElection`. */
  leaderLock?(group: string): L
  /** The leader of `group`, or null when there is none. Only with `getLeader`. */
  getLeader?(group: string): Promise<string | null>
}

/** What kind of identifier validateId() is asked about. */
export type IdKind = 'group' | 'member' | 'lock'

/** A driver's declaration: docs, capabilities, options and a factory. */
export interface DriverDefinition<S extends OptionSpecs = OptionSpecs> {
  /** Primary name, also the primary URL scheme. */
  readonly name: string
  /** One paragraph for docs/drivers.md. */
  readonly summary: string
  /** URL forms, as examples. */
  readonly urlForms: readonly string[]
  /** Consistency and liveness guarantees, one paragraph. */
  readonly consistency: string
  /** What can go wrong, plainly. */
  readonly hazards: readonly string[]
  /** The npm package the driver loads lazily, if any. */
  readonly clientPackage?: string
  readonly capabilities: readonly Capability[]
  readonly options: S
  /** Returns why `id` cannot be stored (a sentence naming the rule), or undefined when it can. */
  validateId?(kind: IdKind, id: string): string | undefined
  /**
   * Maps a client-library error to a rollcall error; undefined leaves it to the generic wrapper.
   * `context` says what was being done and to which backend (its URL redacted), for the message.
   */
  translateError?(err: unknown, context: TranslateContext): RollcallError | undefined
  /** Present when the driver can run on the application's own client (`connect(url, { client })`). */
  readonly client?: DriverClientSupport
  /** Builds the driver. Must not do I/O (start() does); may throw InvalidUrlError. */
  create(ctx: DriverContext<ResolvedOptions<S>>): CoordinationDriver
}

/** What a driver's translateError() is told, to word its message. */
export interface TranslateContext {
  /** What failed, as a verb phrase (`join group "api"`). */
  operation: string
  /** The backend URL without credentials. */
  redactedUrl: string
}

/** Declares a driver; only an identity function that keeps the option types. */
export function defineDriver<S extends OptionSpecs>(def: DriverDefinition<S>): DriverDefinition<S> {
  return def
}
