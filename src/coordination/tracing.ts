/**
 * rollcall's diagnostics_channel tracing hooks, all defined here: what undici, pg and mysql2
 * publish, so that an OpenTelemetry (or any other) tracer can make spans of rollcall's work
 * without rollcall depending on a tracer. Each operation is published from the one place in the
 * coordinator or its runtime where it happens, never from a driver.
 *
 * Async operations are TracingChannels (`tracing:rollcall:<operation>:start|end|asyncStart|asyncEnd|error`,
 * reached with `diagnostics_channel.tracingChannel('rollcall:<operation>')`); the payload is a plain
 * object that the channel fills in with `result` or `error`. Election outcomes are moments, not
 * spans: plain channels `rollcall:election.won` and `rollcall:election.lost`.
 *
 * With nobody subscribed the cost is one `hasSubscribers` check per operation: no payload is built.
 * No payload carries a credential: `url` is the coordinator's redacted URL.
 */
import diagnostics_channel from 'node:diagnostics_channel'

/** The fields every rollcall trace payload carries: who did it, against what. */
export interface TraceBase {
  /** The coordinator's member id. */
  memberId: string
  /** The driver's name (`redis`, `zookeeper`, `memory`, ...). */
  backend: string
  /** The backend URL with any user name and password replaced by `***`. */
  url: string
}

/** `rollcall:connect`: a coordinator's start() (connection, then its first heartbeat). */
export interface ConnectTrace extends TraceBase {
  /** Set by the channel when start() fails. */
  error?: unknown
}

/** `rollcall:group.join` and `rollcall:group.leave`. */
export interface GroupTrace extends TraceBase {
  group: string
  /** True when rollcall rejoins by itself a group this member was dropped from (join only). */
  rejoin: boolean
  error?: unknown
}

/** `rollcall:heartbeat`: one beat (liveness, lock leases, pending rejoins). */
export interface HeartbeatTrace extends TraceBase {
  /** Groups this member is in, as the beat started. */
  groups: number
  /** Locks (and leader locks) held, as the beat started. */
  locks: number
  /** Set by the channel: the milliseconds until the next beat is needed. */
  result?: number
  error?: unknown
}

/** `rollcall:lock.acquire`: one acquire() of a Lock, waiting included. */
export interface LockAcquireTrace extends TraceBase {
  lock: string
  shared: boolean
  blocking: boolean
  /** The wait's bound, when one was given. */
  timeoutMs: number | undefined
  /** Set by the channel: true once held, false on timeout or when busy. */
  result?: boolean
  error?: unknown
}

/** `rollcall:lock.release`: one release() of a Lock. */
export interface LockReleaseTrace extends TraceBase {
  lock: string
  /** Set by the channel: false when the Lock object did not hold it. */
  result?: boolean
  error?: unknown
}

/** `rollcall:election.won`: this member was elected leader of `group`. */
export interface ElectionWonTrace extends TraceBase {
  group: string
  /** The term's fencing token, on drivers with `fencing`. */
  term: bigint | undefined
}

/** `rollcall:election.lost`: this member's term as leader of `group` ended. */
export interface ElectionLostTrace extends TraceBase {
  group: string
  /** Why (`stood down`, `resigned`, a lost session or lease, `the coordinator stopped`, ...). */
  reason: string
}

/**
 * `rollcall:watch.dispatch`: one membership change delivered: the `memberJoined`/`memberLeft`
 * event and the watch callbacks; the span ends when every callback has settled. A callback's own
 * work runs in this span's async context.
 */
export interface WatchDispatchTrace extends TraceBase {
  group: string
  member: string
  event: 'join' | 'leave'
}

/** The name of every channel rollcall publishes on (TracingChannel names, then plain channels). */
export const TRACING_CHANNELS = {
  connect: 'rollcall:connect',
  groupJoin: 'rollcall:group.join',
  groupLeave: 'rollcall:group.leave',
  heartbeat: 'rollcall:heartbeat',
  lockAcquire: 'rollcall:lock.acquire',
  lockRelease: 'rollcall:lock.release',
  watchDispatch: 'rollcall:watch.dispatch',
  electionWon: 'rollcall:election.won',
  electionLost: 'rollcall:election.lost',
} as const

/** @internal */
export const connectChannel = diagnostics_channel.tracingChannel<unknown, ConnectTrace>(TRACING_CHANNELS.connect)
/** @internal */
export const groupJoinChannel = diagnostics_channel.tracingChannel<unknown, GroupTrace>(TRACING_CHANNELS.groupJoin)
/** @internal */
export const groupLeaveChannel = diagnostics_channel.tracingChannel<unknown, GroupTrace>(TRACING_CHANNELS.groupLeave)
/** @internal */
export const heartbeatChannel = diagnostics_channel.tracingChannel<unknown, HeartbeatTrace>(TRACING_CHANNELS.heartbeat)
/** @internal */
export const lockAcquireChannel = diagnostics_channel.tracingChannel<unknown, LockAcquireTrace>(TRACING_CHANNELS.lockAcquire)
/** @internal */
export const lockReleaseChannel = diagnostics_channel.tracingChannel<unknown, LockReleaseTrace>(TRACING_CHANNELS.lockRelease)
/** @internal */
export const watchDispatchChannel = diagnostics_channel.tracingChannel<unknown, WatchDispatchTrace>(TRACING_CHANNELS.watchDispatch)
/** @internal */
export const electionWonChannel = diagnostics_channel.channel(TRACING_CHANNELS.electionWon)
/** @internal */
export const electionLostChannel = diagnostics_channel.channel(TRACING_CHANNELS.electionLost)

/** A TracingChannel whose payload type is C. */
type Traced<C extends object> = diagnostics_channel.TracingChannel<unknown, C>

/**
 * Whether anyone listens on one of the five channels. Bun (1.4) has no `hasSubscribers` on a
 * TracingChannel (Node has it since 20.13): there each channel is asked, or nothing would be traced.
 * @internal
 */
export function anySubscriber(channel: Traced<object>): boolean {
  const all = channel.hasSubscribers as boolean | undefined
  if (all !== undefined) return all
  return channel.start.hasSubscribers || channel.end.hasSubscribers || channel.asyncStart.hasSubscribers || channel.asyncEnd.hasSubscribers
    || channel.error.hasSubscribers
}

/**
 * Runs `fn` as a traced operation on `channel`; with nobody subscribed, just runs it (the payload
 * is never built).
 * @internal
 */
export function traced<T, C extends object>(channel: Traced<C>, payload: () => C, fn: () => Promise<T>): Promise<T> {
  if (!anySubscriber(channel)) return fn()
  return channel.tracePromise(fn, payload())
}

/**
 * Publishes a moment (an election outcome) on a plain channel, when someone listens.
 * @internal
 */
export function publish<C extends object>(channel: diagnostics_channel.Channel, payload: () => C): void {
  if (channel.hasSubscribers) channel.publish(payload())
}
