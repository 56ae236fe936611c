/**
 * Keepalives that a hung one cannot hold up. An etcd member forwards a lease keepalive to the
 * leader it knows; when that leader is gone the keepalive hangs there (up to etcd's request
 * timeout), while one sent after the new leader is known is answered at once. So while a
 * keepalive is unanswered another goes out every `everyMs`, each bounded by its own timeout, and
 * the first answer counts.
 */

/**
 * Runs `send` now and again every `everyMs` while every earlier one is still in flight, up to
 * `count` in all; resolves with the first answer, rejects with the last failure once all failed.
 */
export function hedged<T>(send: () => Promise<T>, everyMs: number, count: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let pending = 0
    let sent = 0
    let done = false
    let timer: NodeJS.Timeout | undefined
    const next = (): void => {
      timer = undefined
      if (done) return
      sent += 1
      pending += 1
      send().then((value) => {
        if (done) return
        done = true
        clearTimeout(timer)
        resolve(value)
      }, (err: unknown) => {
        pending -= 1
        if (done || pending > 0) return
        // None in flight: a fast failure (refused, lease gone) is the answer; nothing hangs to hedge.
        done = true
        clearTimeout(timer)
        reject(err)
      })
      if (!done && sent < count) timer = setTimeout(next, everyMs).unref()
    }
    next()
  })
}
