/**
 * Keeps the event loop alive while something the application awaits is pending: a lock wait,
 * a watch, a candidacy. Backends with a socket keep the process alive by themselves; memory://
 * and file:// have none, and a timed wait (AbortSignal.timeout() is unref'd) would otherwise
 * leave the process to exit with an unsettled promise (exit code 13). One ref'd timer that does
 * nothing is held while any hold is open.
 * @internal
 */
let holds = 0
let timer: NodeJS.Timeout | undefined

/** Opens a hold; the returned function closes it (calling it again does nothing). */
export function keepAlive(): () => void {
  holds += 1
  timer ??= setInterval(() => {}, 2 ** 30)
  let open = true
  return () => {
    if (!open) return
    open = false
    holds -= 1
    if (holds === 0) {
      clearInterval(timer)
      timer = undefined
    }
  }
}
