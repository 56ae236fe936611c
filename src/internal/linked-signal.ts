/**
 * One AbortSignal for a wait that ends on any of several signals or at a deadline, made without
 * AbortSignal.any() and AbortSignal.timeout(): on Node 20 those cost weak references, a
 * finalization registry entry and a DOMException per call, which a lock wait (one per contended
 * acquire) paid on every acquisition. A wait on one signal alone gets that signal: on Node 20
 * every AbortController leaves about 260 bytes in V8's old space, which only a full (mark-compact)
 * collection frees, and a process looping on a lock made one per acquisition (ZooKeeper, 2
 * processes: a mark-compact every second, each stalling the loop for 5-8 ms).
 */

const noop = (): void => {}

/**
 * Keeps one 'abort' listener on a long-lived `signal` for good, so that the waits that listen on
 * it and leave cost no garbage in V8's old space: Node's EventTarget drops the 'abort' entry of its
 * listener map when the last listener goes and adds it back with the next, and on a signal that
 * has lived through a few collections that map is old, where every such change allocates (about 54
 * bytes per listener added and removed). Returns `signal`.
 */
export function keepListenedTo(signal: AbortSignal): AbortSignal {
  signal.addEventListener('abort', noop)
  return signal
}

/** A combined signal and the call that detaches it from its sources. */
export interface LinkedSignal {
  readonly signal: AbortSignal
  /** Removes the listeners on the sources and the timer; call it when the wait is over. */
  dispose(): void
}

/**
 * A signal that aborts, with the first source's reason, when any of `sources` aborts, or after
 * `timeoutMs` (reason: a TimeoutError DOMException, as AbortSignal.timeout gives). The timer does
 * not keep the process alive, as AbortSignal.timeout's does not.
 */
export function linkedSignal(sources: readonly (AbortSignal | undefined)[], timeoutMs?: number): LinkedSignal {
  if (timeoutMs === undefined) {
    const given = sources.filter((s) => s !== undefined)
    if (given.length === 1) return { signal: given[0]!, dispose: noop }
  }
  const controller = new AbortController()
  const listening: AbortSignal[] = []
  let timer: NodeJS.Timeout | undefined
  const dispose = (): void => {
    clearTimeout(timer)
    for (const s of listening) s.removeEventListener('abort', onAbort)
    listening.length = 0
  }
  function onAbort(this: AbortSignal): void {
    dispose()
    controller.abort(this.reason)
  }
  for (const s of sources) {
    if (!s) continue
    if (s.aborted) {
      dispose()
      controller.abort(s.reason)
      return { signal: controller.signal, dispose }
    }
    s.addEventListener('abort', onAbort, { once: true })
    listening.push(s)
  }
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => {
      dispose()
      controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
    }, timeoutMs)
    timer.unref()
  }
  return { signal: controller.signal, dispose }
}
