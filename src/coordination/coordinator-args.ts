/**
 * The Coordinator facade's argument checks: capabilities that must encode as msgpack, and option
 * durations that must be in range. Each throws InvalidArgumentError naming the argument.
 */
import { InvalidArgumentError } from '../errors.js'
import { dumps } from './codec/index.js'

/** The longest a Node timer can wait (2^31−1 ms). */
const MAX_TIMER_MS = 2_147_483_647

/** A member's capabilities as msgpack bytes; InvalidArgumentError when they have no msgpack form. */
export function encodeCapabilities(capabilities: unknown): Uint8Array {
  try {
    return dumps(capabilities)
  } catch (err) {
    throw new InvalidArgumentError(`Capabilities must be msgpack-able: ${(err as Error).message}`)
  }
}

/** viewGroup()'s `resyncIntervalMs`: unset, or above 0 and no longer than a Node timer can wait. */
export function checkResyncIntervalMs(resyncIntervalMs: number | undefined): void {
  if (resyncIntervalMs !== undefined && !(Number.isFinite(resyncIntervalMs) && resyncIntervalMs > 0 && resyncIntervalMs <= MAX_TIMER_MS)) {
    throw new InvalidArgumentError(`resyncIntervalMs must be a number of milliseconds above 0 and at most ${MAX_TIMER_MS}, not ${String(resyncIntervalMs)}`)
  }
}

/** standDownGroupLeader()'s `holdOffMs`: unset, or a finite number >= 0. */
export function checkHoldOffMs(holdOffMs: number | undefined): void {
  if (holdOffMs !== undefined && (!Number.isFinite(holdOffMs) || holdOffMs < 0)) {
    throw new InvalidArgumentError(`holdOffMs must be a number of milliseconds >= 0, not ${String(holdOffMs)}`)
  }
}
