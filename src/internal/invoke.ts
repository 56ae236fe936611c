/**
 * Calls an application callback so that nothing it does can break the caller: a throw or a
 * rejected promise goes to `onError`. Returns what the callback returned (undefined if it threw).
 * @internal
 */
export function invokeCallback<E>(cb: (event: E) => unknown, event: E, onError: (err: unknown) => void): unknown {
  try {
    const result = cb(event)
    if (result instanceof Promise) result.catch(onError)
    return result
  } catch (err) {
    onError(err)
    return undefined
  }
}
