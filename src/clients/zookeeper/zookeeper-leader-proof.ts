/**
 * Which answered requests prove that the ZooKeeper LEADER renewed the session, and from when.
 *
 * The leader alone expires sessions (SessionTrackerImpl: expiry = roundToNextInterval(touch time
 * + timeout)). A follower answers a client's requests and pings itself and only records the
 * session in a touch table; the table reaches the leader in the follower's reply to the leader's
 * next PING (Learner.ping), and the leader sends one to every learner each tickTime / 2
 * (Leader.lead). A follower cut off from the leader keeps answering pings until its own read of
 * the leader times out (syncLimit × tickTime), none of which the leader hears: an answer alone
 * proves nothing about the session's clock on the leader.
 *
 * A `sync`, though, is forwarded by the follower to the leader (FollowerRequestProcessor) and
 * answered only once the leader has answered it (Follower: Leader.SYNC), on the same ordered
 * stream as the touch tables. So when a sync sent at `s` is answered, every touch table the
 * follower wrote before forwarding it has reached the leader. A request the follower answered
 * (and so touched) at `a` is in such a table if a leader PING reached the follower between `a`
 * and `s`: one does at least every tickTime / 2, and a server's sessions last two ticks at least
 * (minSessionTimeout defaults to 2 × tickTime), so `relayLagMs` = timeout / 4 bounds it; a sixth
 * more is kept for the leader's loop and thread scheduling. The leader then renewed the session
 * no earlier than that request's send time, which is the proven time returned here.
 *
 * A handshake answer is proof too: a new session is a transaction the leader commits, and a
 * resumed one is revalidated by the leader (LearnerHandler REVALIDATE), which touches it.
 * Against the leader itself, or a standalone server, the rule is merely conservative.
 */

/** How long after a follower answered a request the leader is sure to have heard of it: a quarter of the session timeout, and a sixth more. */
export function relayLagMs(timeoutMs: number): number {
  return (timeoutMs / 4) * (7 / 6)
}

/**
 * Answers within this many ms of the first of a group are kept as one (the latest send and answer times): bounded memory
 * under any request rate. Measured from the group's first answer, not from its latest: a window that slid with every
 * answer would grow for as long as answers keep coming less than this apart, and steady traffic would prove nothing.
 */
const COALESCE_MS = 10

/** The proof kept for one connection. */
export class LeaderProof {
  /** Send time (now() ms) of the latest request the leader is proven to have counted. */
  provenSentAt: number
  /** Answered requests not proven yet, oldest first: the group's latest send and answer times, and its first answer's. */
  readonly #answers: { sentAt: number; at: number; firstAt: number }[] = []
  readonly #lagMs: number

  /** `handshakeSentAt`: the send time of the answered handshake; `timeoutMs`: the negotiated session timeout. */
  constructor(handshakeSentAt: number, timeoutMs: number) {
    this.provenSentAt = handshakeSentAt
    this.#lagMs = relayLagMs(timeoutMs)
  }

  /** A request sent at `sentAt` was answered at `at` (both now() ms). */
  answered(sentAt: number, at: number): void {
    const last = this.#answers.at(-1)
    if (last && at - last.firstAt < COALESCE_MS) {
      // Later times only delay the proof (by COALESCE_MS at most): safe.
      last.sentAt = Math.max(last.sentAt, sentAt)
      last.at = at
    } else this.#answers.push({ sentAt, at, firstAt: at })
  }

  /** A sync sent at `sentAt` was answered (call after answered() for it). */
  synced(sentAt: number): void {
    let proven = -1
    for (let i = 0; i < this.#answers.length; i++) {
      if (this.#answers[i]!.at + this.#lagMs > sentAt) break
      proven = i
    }
    if (proven < 0) return
    const p = this.#answers[proven]!
    if (p.sentAt > this.provenSentAt) this.provenSentAt = p.sentAt
    // Keep the proven entry's successors only: the proof never moves back.
    this.#answers.splice(0, proven + 1)
  }
}
