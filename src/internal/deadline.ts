/**
 * A deadline raced against work that cannot itself be cancelled (a connect, a query, a health
 * probe). The work goes on after the deadline; callers that care stop it themselves.
 * @internal
 */

/** Rejected by {@link withDeadline}: no answer in time. Reads as a network timeout (ETIMEDOUT). */
export class DeadlineError extends Error {
  readonly code = 'ETIMEDOUT'
  constructor(readonly afterMs: number) {
    super(`no answer within ${afterMs >= 1_000 ? `${afterMs / 1000} s` : `${afterMs} ms`}`)
  }
}

/** Resolves as `work` does, or rejects with DeadlineError after `ms`; the unref'd timer is always cleared. */
export async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(ms)), ms)
    timer.unref()
  })
  try {
    return await Promise.race([work, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/** How long a driver's stop() waits for the server's last answers (a member key deleted, a pool ended) before it lets go regardless. */
export const STOP_GRACE_MS = 2_000

/** Waits for `work` (tidying a driver does on stop) at most STOP_GRACE_MS, whatever it answers: stop() always ends. */
export async function withinStopGrace(work: Promise<unknown>): Promise<void> {
  await withDeadline(work, STOP_GRACE_MS).catch(() => undefined)
}
