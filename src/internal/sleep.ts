/**
 * An unref'd sleep that ends early, rejecting with the signal's reason, when `signal` aborts.
 * @internal
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
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
    timer.unref()
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
