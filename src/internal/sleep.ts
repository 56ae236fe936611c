/**
 * An unref'd sleep that ends early, rejecting with the signal's reason, when `signal` aborts.
 * Pass `ref` for a wait the caller is awaiting (a lock acquire), which must keep the process
 * alive on backends without a socket of their own (file://).
 * @internal
 */
export function sleep(ms: number, signal?: AbortSignal, ref = false): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, Math.max(0, ms))
    if (!ref) timer.unref()
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
