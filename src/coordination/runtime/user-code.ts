/**
 * The application's code, called from rollcall's own loops: event listeners, watch callbacks and
 * leader callbacks. One policy for all of them: whatever the code does (a throw, a rejected
 * promise from an async listener) cannot break the loop that called it; the failure becomes a
 * ListenerFailedError, handed to `report`, and the loop carries on with the next listener and
 * the rest of its work. withLock()'s function is not called through here: its error is the
 * caller's, and rejects withLock().
 *
 * Node's convention stays where it is stronger: an `error` event with no listener throws.
 * (Each export is @internal; a tag here would strip the imports below from the .d.ts.)
 */
import type { EventEmitter } from 'node:events'
import { ListenerFailedError } from '../../errors.js'
import { invokeCallback } from '../../internal/invoke.js'

/** Where the failures of the application's code go. */
export type ReportFailure = (err: ListenerFailedError) => void

/**
 * Calls `cb(arg)`; a throw or a rejection is reported as a ListenerFailedError naming `event` (an
 * event name, or the API that registered the callback) and the group of `arg`, if it has one.
 * Returns what `cb` returned (undefined when it threw).
 * @internal
 */
export function callUserCode<A>(cb: (arg: A) => unknown, arg: A, event: string, kind: 'listener' | 'callback', report: ReportFailure): unknown {
  return invokeCallback(cb, arg, (err) => report(new ListenerFailedError(event, kind, err, groupOf(arg))))
}

/**
 * EventEmitter.emit(), except that a listener cannot break the emitter's caller: each listener is
 * called through callUserCode(), in order, and every one is called even when an earlier one
 * threw. `once` listeners are removed as emit() removes them. `error` keeps Node's behaviour.
 * @internal
 */
export function emitSafely(
  emitter: EventEmitter,
  emit: (event: string | symbol, ...args: unknown[]) => boolean,
  event: string | symbol,
  args: unknown[],
  report: ReportFailure,
): boolean {
  if (event === 'error') return emit.call(emitter, event, ...args)
  // rawListeners() is a copy (a listener that removes another does not change this delivery) and
  // holds the `once` wrappers, which remove themselves when called.
  const listeners = emitter.rawListeners(event) as ((...a: unknown[]) => unknown)[]
  const name = String(event)
  for (const listener of listeners) callUserCode((a: unknown[]) => listener.apply(emitter, a), args, name, 'listener', report)
  return listeners.length > 0
}

/** The group an event's payload names (`{ group }`), if any. */
function groupOf(arg: unknown): string | undefined {
  const payload = Array.isArray(arg) ? arg[0] : arg
  const group = (payload as { group?: unknown } | null | undefined)?.group
  return typeof group === 'string' ? group : undefined
}
