/**
 * One AbortSignal for a wait that ends on any of several signals or at a deadline, made without
 * AbortSignal.any() and AbortSignal.timeout(): on Node 20 those cost weak references, a
 * finalization registry entry and a DOMException per call, which a lock wait (one per contended
 * acquire) paid on every acquisition.
 */

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
