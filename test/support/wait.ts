/** Polls `check` until it returns a truthy value or `ms` pass; returns the value or throws naming `what`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, ms: number, everyMs = 25): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms
  let last: unknown
  for (;;) {
    try {
      const v = await check()
      if (v) return v as NonNullable<T>
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/** Resolves with the first emission of `event` matching `filter`, or rejects after `ms`. */
export function nextEvent<T>(
  emitter: { on(e: string, l: (v: T) => void): unknown; off(e: string, l: (v: T) => void): unknown },
  event: string,
  filter: (v: T) => boolean,
  ms: number,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      emitter.off(event, listener)
      reject(new Error(`No ${event} event within ${ms} ms`))
    }, ms)
    const listener = (v: T): void => {
      if (!filter(v)) return
      clearTimeout(timer)
      emitter.off(event, listener)
      resolve(v)
    }
    emitter.on(event, listener)
  })
}

/** A random id with a readable prefix; tests never share names. */
export function rid(prefix: string): string {
  return `${prefix}-${Math.random().toString(36).slice(2, 10)}`
}
