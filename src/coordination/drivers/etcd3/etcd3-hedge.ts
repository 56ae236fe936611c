/**
 * An idempotent request (a lease keepalive, a read) sent again to the next endpoint while no copy
 * has answered, so that one stuck member cannot hold up a member's liveness. A member that is
 * paused or cut off never answers; one whose leader is gone forwards a keepalive to that leader
 * and holds it for etcd's request timeout (5 s + 2 election timeouts), while a copy sent after the
 * new leader is known is answered at once. So a copy goes out every `everyMs` while none has
 * answered, each to the next endpoint in turn (back to the first after the last: a member that
 * has learnt the new leader meanwhile answers a fresh copy), all of them bounded together by
 * `withinMs`, and the first answer counts; the others are abandoned.
 */

/** How one request is hedged. */
export interface HedgePlan {
  /** How many endpoints there are: copy k goes to endpoint (first + k) mod endpoints. */
  readonly endpoints: number
  /** The endpoint of the first copy. */
  readonly first: number
  /** Another copy goes out this long after the latest one while none has answered. */
  readonly everyMs: number
  /** The bound on the whole request, every copy included. */
  readonly withinMs: number
}

/**
 * Copies of a request per lease TTL. The lapse deadline is at least half a TTL away when a beat
 * starts, and an election takes part of that: with a copy every twentieth of the TTL, one the new
 * leader can answer goes out at most that long after it is known.
 */
const COPIES_PER_TTL = 20

/**
 * The plan for a request that keeps a lease of `ttlMs` alive (or reads on its behalf): a copy
 * every twentieth of the TTL, the whole bounded by the TTL (an answer after it is of no use) and by
 * the gateway's request timeout.
 */
export function hedgeForTtl(ttlMs: number, timeoutMs: number): Pick<HedgePlan, 'everyMs' | 'withinMs'> {
  return { everyMs: ttlMs / COPIES_PER_TTL, withinMs: Math.min(ttlMs, timeoutMs) }
}

/**
 * Sends copies of one request as `plan` says; `send(endpoint, signal)` sends one, and `signal`
 * aborts when the request is over (answered elsewhere, or out of time). Resolves with the first
 * answer and the endpoint that gave it. A failure that `retriable` rejects (etcd answered: the
 * lease is gone, the request is wrong) is the answer too. A retriable failure (transport, no
 * leader, etcd's own timeout) sends the next copy at once, until as many have failed as there are
 * endpoints; once every copy sent has failed that way, the last failure is thrown, as it is when
 * `withinMs` passes with copies still unanswered (`timedOut()` makes the error when none failed).
 */
export function hedged<T>(
  plan: HedgePlan,
  send: (endpoint: number, signal: AbortSignal) => Promise<T>,
  retriable: (err: unknown) => boolean,
  timedOut: () => Error,
): Promise<{ value: T; endpoint: number }> {
  return new Promise((resolve, reject) => {
    // One controller per copy (a shared signal would carry one abort listener per copy: Node warns past ten).
    const copies = new Set<AbortController>()
    let over = false
    let sent = 0
    let inFlight = 0
    let failed = 0
    let last: unknown
    let next: NodeJS.Timeout | undefined
    const finish = (): void => {
      over = true
      clearTimeout(next)
      clearTimeout(bound)
      for (const c of copies) c.abort()
    }
    const copy = (): void => {
      clearTimeout(next)
      if (over) return
      const endpoint = (plan.first + sent) % plan.endpoints
      const controller = new AbortController()
      copies.add(controller)
      sent += 1
      inFlight += 1
      send(endpoint, controller.signal).then((value) => {
        copies.delete(controller)
        if (over) return
        finish()
        resolve({ value, endpoint })
      }, (err: unknown) => {
        copies.delete(controller)
        inFlight -= 1
        if (over) return
        failed += 1
        last = err
        if (!retriable(err) || (inFlight === 0 && failed >= plan.endpoints)) {
          finish()
          reject(err)
        } else if (failed < plan.endpoints) {
          // Refused or turned away: the next endpoint now, not after the pause (at most once round them all).
          copy()
        }
      })
      next = setTimeout(copy, plan.everyMs)
      next.unref()
    }
    const bound = setTimeout(() => {
      finish()
      reject(last ?? timedOut())
    }, plan.withinMs)
    bound.unref()
    copy()
  })
}
