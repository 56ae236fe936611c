/**
 * Every error rollcall throws on purpose descends from {@link RollcallError}, carries a stable
 * `code` (what the CLI, the HTTP API and retry logic branch on; never parse `message`), a
 * `retryable` flag and, when it wraps a client library's error, the ES2022 `cause`.
 *
 * The coordination errors map one to one onto tooz's exceptions; each class names its tooz
 * counterpart in `toozName`, so code ported from Python can translate `except` clauses
 * mechanically (see docs/errors.md).
 */
import type { Capability } from './coordination/capabilities.js'

/** Stable error codes. New codes may be added; existing ones never change meaning. */
export type ErrorCode =
  | 'BACKEND_ERROR'
  | 'CONNECTION_FAILED'
  | 'OPERATION_TIMEOUT'
  | 'GROUP_NOT_FOUND'
  | 'GROUP_EXISTS'
  | 'GROUP_NOT_EMPTY'
  | 'MEMBER_EXISTS'
  | 'MEMBER_NOT_JOINED'
  | 'LOCK_ACQUIRE_FAILED'
  | 'LOCK_LOST'
  | 'LEADERSHIP_LOST'
  | 'WATCH_CALLBACK_NOT_FOUND'
  | 'NOT_SUPPORTED'
  | 'CAPABILITY_MISMATCH'
  | 'SERIALIZATION'
  | 'UNKNOWN_NODE'
  | 'COORDINATOR_STOPPED'
  | 'INVALID_STATE'
  | 'INVALID_URL'
  | 'INVALID_OPTION'
  | 'INVALID_ID'
  | 'INVALID_ARGUMENT'
  | 'UNKNOWN_DRIVER'
  | 'DRIVER_UNAVAILABLE'
  | 'INVALID_CONFIG'
  | 'SERVICE_NOT_FOUND'
  | 'SERVICEGROUP_UNAVAILABLE'
  | 'AUTH_FAILED'
  | 'LISTENER_FAILED'
  | 'METRICS_UNAVAILABLE'

/** Construction options shared by every rollcall error. */
export interface RollcallErrorOptions {
  /** The error this one wraps (a client library's error, usually). */
  cause?: unknown
  /** Overrides the class default. */
  retryable?: boolean
  /** The driver that raised it, when one did. */
  driver?: string
}

/** The root of every error rollcall throws on purpose. */
export class RollcallError extends Error {
  /** The tooz exception this class corresponds to, if any. */
  static readonly toozName: string = 'ToozError'
  /** Stable machine-readable code. */
  readonly code: ErrorCode
  /** True when the same call may succeed if simply tried again later. */
  readonly retryable: boolean
  /** Name of the driver that raised the error, when one did. */
  readonly driver: string | undefined

  constructor(message: string, code: ErrorCode = 'BACKEND_ERROR', options: RollcallErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = code
    this.retryable = options.retryable ?? false
    this.driver = options.driver
  }
}

/** A backend operation failed for a reason that is not one of the more specific errors. */
export class BackendError extends RollcallError {
  constructor(message: string, options: RollcallErrorOptions = {}) {
    super(message, 'BACKEND_ERROR', options)
  }
}

/** The backend could not be reached, or the connection broke (tooz `ToozConnectionError`). */
export class ConnectionError extends RollcallError {
  static override readonly toozName = 'ToozConnectionError'
  constructor(message: string, options: RollcallErrorOptions = {}) {
    super(message, 'CONNECTION_FAILED', { retryable: true, ...options })
  }
}

/**
 * The backend refused the credentials: wrong user name or password, or an unknown user (tooz has
 * no such exception: it raises `ToozConnectionError`). Not retryable: the same credentials will
 * be refused again.
 */
export class AuthenticationError extends RollcallError {
  static override readonly toozName = 'ToozConnectionError'
  constructor(message: string, options: RollcallErrorOptions = {}) {
    super(message, 'AUTH_FAILED', { retryable: false, ...options })
  }
}

/** An operation did not finish in time (tooz `OperationTimedOut`). */
export class OperationTimeoutError extends RollcallError {
  static override readonly toozName = 'OperationTimedOut'
  constructor(message: string, options: RollcallErrorOptions = {}) {
    super(message, 'OPERATION_TIMEOUT', { retryable: true, ...options })
  }
}

/** The group does not exist (tooz `GroupNotCreated`). */
export class GroupNotFoundError extends RollcallError {
  static override readonly toozName = 'GroupNotCreated'
  constructor(readonly groupId: string, options: RollcallErrorOptions = {}) {
    super(`Group ${JSON.stringify(groupId)} does not exist; create it first or use joinGroupCreate()`, 'GROUP_NOT_FOUND', options)
  }
}

/** The group exists already (tooz `GroupAlreadyExist`). */
export class GroupExistsError extends RollcallError {
  static override readonly toozName = 'GroupAlreadyExist'
  constructor(readonly groupId: string, options: RollcallErrorOptions = {}) {
    super(`Group ${JSON.stringify(groupId)} already exists`, 'GROUP_EXISTS', options)
  }
}

/** The group still has members, possibly dead ones not yet collected (tooz `GroupNotEmpty`). */
export class GroupNotEmptyError extends RollcallError {
  static override readonly toozName = 'GroupNotEmpty'
  constructor(readonly groupId: string, options: RollcallErrorOptions = {}) {
    super(`Group ${JSON.stringify(groupId)} is not empty; every member must leave before it can be deleted`, 'GROUP_NOT_EMPTY', options)
  }
}

/** This member id is already in the group (tooz `MemberAlreadyExist`). */
export class MemberExistsError extends RollcallError {
  static override readonly toozName = 'MemberAlreadyExist'
  constructor(readonly groupId: string, readonly memberId: string, options: RollcallErrorOptions = {}) {
    super(`Member ${JSON.stringify(memberId)} has already joined group ${JSON.stringify(groupId)}`, 'MEMBER_EXISTS', options)
  }
}

/** The member is not in the group (tooz `MemberNotJoined`). */
export class MemberNotJoinedError extends RollcallError {
  static override readonly toozName = 'MemberNotJoined'
  constructor(readonly groupId: string, readonly memberId: string, options: RollcallErrorOptions = {}) {
    super(`Member ${JSON.stringify(memberId)} has not joined group ${JSON.stringify(groupId)}`, 'MEMBER_NOT_JOINED', options)
  }
}

/** A lock could not be taken where the caller asked for it to be (tooz `LockAcquireFailed`). */
export class LockAcquireFailedError extends RollcallError {
  static override readonly toozName = 'LockAcquireFailed'
  constructor(readonly lockName: string, detail = 'it is held by someone else', options: RollcallErrorOptions = {}) {
    super(`Acquiring lock ${JSON.stringify(lockName)} failed: ${detail}`, 'LOCK_ACQUIRE_FAILED', options)
  }
}

/** A lock was lost while held: its lease lapsed, its session ended, or someone broke it. */
export class LockLostError extends RollcallError {
  constructor(readonly lockName: string, reason: string) {
    super(`Lock ${JSON.stringify(lockName)} was lost: ${reason}`, 'LOCK_LOST', { retryable: true })
  }
}

/**
 * A term of leadership ended (stood down, resigned, its leader lock lapsed, the connection was
 * lost, or the coordinator stopped): the reason of a Leadership's `signal`.
 */
export class LeadershipLostError extends RollcallError {
  constructor(readonly groupId: string, reason: string) {
    super(`Leadership of group ${JSON.stringify(groupId)} ended: ${reason}`, 'LEADERSHIP_LOST', { retryable: true })
  }
}

/** unwatch*() was given a callback that was never registered (tooz `WatchCallbackNotFound`). */
export class WatchCallbackNotFoundError extends RollcallError {
  static override readonly toozName = 'WatchCallbackNotFound'
  constructor(readonly groupId: string, options: RollcallErrorOptions = {}) {
    super(`That callback is not registered on group ${JSON.stringify(groupId)}`, 'WATCH_CALLBACK_NOT_FOUND', options)
  }
}

/** The driver cannot do this (tooz `NotImplemented`). `capability` names what is missing. */
export class NotSupportedError extends RollcallError {
  static override readonly toozName = 'NotImplemented'
  /**
   * `capability` is the coordination capability the call needs (undefined for a service-group
   * feature); `what` says in words what was asked ("leader election").
   */
  constructor(readonly capability: Capability | undefined, what: string, driver: string, hint = '') {
    super(`The ${driver} driver does not support ${what}${hint ? `; ${hint}` : ''}`, 'NOT_SUPPORTED', { driver })
  }
}

/** connect() was asked for capabilities the driver lacks (tooz `ToozDriverChosenPoorly`). */
export class CapabilityMismatchError extends RollcallError {
  static override readonly toozName = 'ToozDriverChosenPoorly'
  constructor(readonly missing: readonly string[], driver: string) {
    super(`The ${driver} driver lacks the required capabilities: ${missing.join(', ')}`, 'CAPABILITY_MISMATCH', { driver })
  }
}

/** A value could not be encoded, or a stored value could not be decoded (tooz `SerializationError`). */
export class SerializationError extends RollcallError {
  static override readonly toozName = 'SerializationError'
  constructor(message: string, options: RollcallErrorOptions = {}) {
    super(message, 'SERIALIZATION', options)
  }
}

/** HashRing.removeNode() was given a node that is not on the ring (tooz `UnknownNode`). */
export class UnknownNodeError extends RollcallError {
  static override readonly toozName = 'UnknownNode'
  constructor(readonly node: string) {
    super(`Unknown node ${JSON.stringify(node)}`, 'UNKNOWN_NODE')
  }
}

/** A call was made on a coordinator that was stopped, or never started. */
export class CoordinatorStoppedError extends RollcallError {
  constructor(operation: string) {
    super(`Cannot ${operation}: the coordinator is stopped; call connect() again for a new one`, 'COORDINATOR_STOPPED')
  }
}

/**
 * The application's own code failed inside rollcall: an event listener, a watch callback or a
 * leader callback threw, or the promise it returned rejected. Never thrown: rollcall carries on
 * with what it was doing and reports it in a `warning` event (see docs/api.md, "Listeners and
 * callbacks"). `event` names what was being delivered (`memberJoined`, `changed`,
 * `watchJoinGroup`, `watchElectedAsLeader`, ...), `group` the group concerned when there is one,
 * and `cause` holds what the listener threw.
 */
export class ListenerFailedError extends RollcallError {
  constructor(readonly event: string, kind: 'listener' | 'callback', cause: unknown, readonly group?: string) {
    const what = cause instanceof Error ? cause.message : String(cause)
    super(
      `A ${event} ${kind}${
        group === undefined ? '' : ` on group ${JSON.stringify(group)}`
      } failed: ${what}; rollcall carried on (catch errors inside the ${kind} to handle them there)`,
      'LISTENER_FAILED',
      { cause },
    )
  }
}

/** A call that is not valid in the object's current state (for example releasing twice). */
export class InvalidStateError extends RollcallError {
  constructor(message: string) {
    super(message, 'INVALID_STATE')
  }
}

/** A backend URL could not be parsed, or names something the driver cannot use. */
export class InvalidUrlError extends RollcallError {
  constructor(message: string) {
    super(message, 'INVALID_URL')
  }
}

/** An option is unknown, or its value is out of range. */
export class InvalidOptionError extends RollcallError {
  constructor(message: string) {
    super(message, 'INVALID_OPTION')
  }
}

/** A group, member or lock id the backend cannot store. Nothing was written. */
export class InvalidIdError extends RollcallError {
  constructor(message: string) {
    super(message, 'INVALID_ID')
  }
}

/** An argument of the wrong type or shape (the caller's mistake, never the backend's). */
export class InvalidArgumentError extends RollcallError {
  constructor(message: string) {
    super(message, 'INVALID_ARGUMENT')
  }
}

/** No driver is registered for the URL scheme. */
export class UnknownDriverError extends RollcallError {
  constructor(scheme: string, known: readonly string[]) {
    super(`No driver for URL scheme "${scheme}:"; known schemes: ${known.join(', ')}`, 'UNKNOWN_DRIVER')
  }
}

/** The driver's client library could not be loaded. */
export class DriverUnavailableError extends RollcallError {
  constructor(driver: string, pkg: string, options: RollcallErrorOptions = {}) {
    super(`The ${driver} driver needs the npm package "${pkg}"; install it with: npm install ${pkg}`, 'DRIVER_UNAVAILABLE', { driver, ...options })
  }
}

/**
 * Prometheus metrics were asked for (registerMetrics(), a status handler with metrics, the
 * /metrics of `rollcall serve`) but prom-client, an optional peer dependency, cannot be loaded. The message
 * names the fix: `npm install prom-client`.
 */
export class MetricsUnavailableError extends RollcallError {
  constructor(options: RollcallErrorOptions = {}) {
    super(
      'Prometheus metrics need the npm package "prom-client" (an optional peer of rollcall); install it with: npm install prom-client',
      'METRICS_UNAVAILABLE',
      options,
    )
  }
}

/** True when `err` says the same call may succeed later. */
export function isRetryable(err: unknown): boolean {
  return err instanceof RollcallError && err.retryable
}

/**
 * Returns `err` when it is a RollcallError; otherwise wraps it in a BackendError whose message
 * starts with `what` ("Refreshing group g1 failed: ...").
 */
export function asRollcallError(err: unknown, what: string): RollcallError {
  if (err instanceof RollcallError) return err
  return new BackendError(`${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err })
}

/**
 * A service-group driver cannot answer right now: its backend is unreachable or failed (Nova's
 * `ServiceGroupUnavailable`). Retryable. `driver` names the service-group driver (`tooz`, `mc`,
 * `zk`, `db`); `cause` holds the backend's error.
 */
export class ServiceGroupUnavailableError extends RollcallError {
  constructor(driver: string, detail: string, options: RollcallErrorOptions = {}) {
    super(`The service from servicegroup driver ${driver} is temporarily unavailable: ${detail}`, 'SERVICEGROUP_UNAVAILABLE', {
      retryable: true,
      driver,
      ...options,
    })
  }
}

/** No (live) record in the services table has this id, or this host and binary (Nova's `ServiceNotFound`). */
export class ServiceNotFoundError extends RollcallError {
  constructor(readonly service: string, options: RollcallErrorOptions = {}) {
    super(`Service ${service} not found in the services table`, 'SERVICE_NOT_FOUND', options)
  }
}

/**
 * A configuration setting is invalid. `setting` is its name as written in the INI file
 * (`[DEFAULT] report_interval`); the message also names the value (redacted when it may hold a
 * credential), where it came from and what is allowed. Raised before any I/O.
 */
export class InvalidConfigError extends RollcallError {
  constructor(readonly setting: string, message: string) {
    super(message, 'INVALID_CONFIG')
  }
}
