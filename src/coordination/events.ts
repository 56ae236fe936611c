/**
 * The events a Coordinator emits. tooz only logs most of these; rollcall tells the application.
 * Each entry says when it fires and when it does not.
 */
import type { RollcallError } from '../errors.js'
import type { ConnectionState } from './driver.js'

/** A member joined or left a group. */
export interface MemberEvent {
  group: string
  member: string
}

/** A member became the leader of a group. */
export interface LeaderEvent {
  group: string
  member: string
}

/** Payload of `heartbeatFailed`. */
export interface HeartbeatFailure {
  /** `error`: the beat failed and will be retried. `late`: it succeeded, but after liveness had already lapsed. */
  reason: 'error' | 'late'
  error?: RollcallError
  /** Failed beats in a row, counting this one (0 for `late`). */
  consecutiveFailures: number
  /** For `late`: how long after the lapse the beat landed. */
  lateByMs?: number
}

/** Event name → listener arguments. */
export interface CoordinatorEvents {
  /**
   * A member appeared in a watched group. Fires for groups watched with watchJoinGroup(),
   * watchLeaveGroup() or watchGroup(); members present when the watch began do not fire.
   */
  memberJoined: [MemberEvent]
  /** A member vanished from a watched group (it left, its liveness lapsed, or the group was deleted). */
  memberLeft: [MemberEvent]
  /** This member won the election of a group it runs in (watchElectedAsLeader). Fires once per term. */
  leaderElected: [LeaderEvent]
  /**
   * This member stopped leading a group: it stood down, its leader lock lapsed, or the connection
   * was lost. Does not fire when the coordinator stops.
   */
  leadershipLost: [{ group: string; reason: string }]
  /**
   * This member is no longer in a group it joined and did not leave (session expiry, evicted or
   * lapsed keys, a restarted backend that kept no data). With `rejoin` on (the default), a
   * `rejoined` event follows once the member is back.
   */
  membershipLost: [{ group: string; reason: string }]
  /** The member is back in a group after `membershipLost`, with its last capabilities. */
  rejoined: [{ group: string }]
  /** A lock this coordinator held is gone without release() (lease lapsed, session lost). */
  lockLost: [{ name: string; reason: string }]
  /** The connection changed state; see ConnectionState. Not fired by stop(). */
  connectionStateChanged: [{ state: ConnectionState; previous: ConnectionState | undefined }]
  /** A heartbeat failed (it is retried) or landed after liveness had lapsed. Never an unhandled rejection. */
  heartbeatFailed: [HeartbeatFailure]
  /**
   * Something odd that did not stop work: a corrupt value from another writer (or one a typed
   * group's `parse` refused, for a joiner its watchJoined() withheld), a backend failure
   * that is retried, a listener or callback of the application that threw or rejected
   * (ListenerFailedError, code `LISTENER_FAILED`). Not fired for work in flight when stop() was
   * called, nor for a failing `warning` listener (that goes to process.emitWarning()).
   */
  warning: [RollcallError]
}
