/**
 * Server sessions for SQL locks. tooz takes every lock on a connection of its own (an advisory
 * lock or GET_LOCK belongs to the session); opening one per acquire cost a connection setup each
 * time, so a coordinator keeps a released session a few seconds for its next acquire. The shared
 * pool's session is given up when a statement on it goes unanswered (onPooledSession()), and its
 * successor connects within a short bound (poolConnectMs()).
 */
import { ConnectionError } from '../../../errors.js'
import { DeadlineError, withDeadline } from '../../../internal/deadline.js'

/** How {@link LockSessions} opens and ends one dialect's server sessions. */
export interface SessionOps<S> {
  /** A new connected session (fails with the dialect's error once the driver is stopped). */
  open(): Promise<S>
  /** Ends a session, forcibly if the server does not answer. */
  end(session: S): Promise<void>
  /** Calls `onDeath` when the session fails or ends; called once per session. */
  onDeath(session: S, onDeath: (reason: string) => void): void
}

/** A server session that reports its failure ('error') and its end ('end'), as mysql2 and pg clients do. */
export interface EndingSession {
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'end', listener: () => void): unknown
}

/** {@link SessionOps.onDeath} for an {@link EndingSession}; `product` names it in the reason. */
export function diesOnErrorOrEnd(product: string): (session: EndingSession, onDeath: (reason: string) => void) => void {
  return (session, died) => {
    session.on('error', (err) => died(`its ${product} session failed (${err.message})`))
    session.on('end', () => died(`its ${product} session ended`))
  }
}

/** A client's socket, as far as {@link probeServer} and a forced end use it. */
export interface SessionSocket {
  setKeepAlive?(enable: boolean, initialDelayMs: number): unknown
  destroy(): void
}

/** The socket under a pg or mysql2 client: both keep it as `connection.stream` (the TLS socket once upgraded). */
export function sessionSocket(session: object): SessionSocket | undefined {
  return (session as { connection?: { stream?: SessionSocket } }).connection?.stream
}

/**
 * Has the kernel probe the server once `session`'s connection has been silent for `idleMs` (TCP
 * keepalive; Node then probes every second and gives up after ten unanswered probes; a TLS socket
 * passes the setting on to its TCP socket). While the server waits for a lock on a session's
 * behalf, its client sends nothing. If the server's TCP gives up on the connection during a cut
 * (PostgreSQL: the keepalive rollcall asks of lock sessions; MariaDB: the retransmissions of its
 * answer to a GET_LOCK round), nothing of that reaches the client, which would wait on the
 * open-looking socket for the kernel's two hours (issue 27: a candidate never elected again after a
 * cut of the server). With the probe, the first one after the heal is reset, or the probes time out
 * during the cut: either way the wait fails with a connection error and is made again. A Unix
 * socket has nothing to probe (and no cut).
 */
export function probeServer(session: object, idleMs: number): void {
  // Node counts whole seconds, and 0 would leave the kernel's default.
  sessionSocket(session)?.setKeepAlive?.(true, Math.max(1_000, idleMs))
}

/**
 * Runs `work` on a session of the shared pool, within `ms`; past that the session's socket is
 * destroyed, `giveBack` is told to have the pool drop it, and the call rejects with DeadlineError.
 * The pool holds one session (POOL_SIZE), and a statement sent into a cut waits after the heal for
 * TCP to retransmit it, backed off as long as the cut lasted, with every later statement,
 * heartbeats included, queued behind it (PostgreSQL partition run: the coordinators were connected
 * again 6.5 s after a heal, their leader election with them, while their lock sessions, opened
 * anew, worked at once).
 *
 * `checkOut` is the pool's callback form, and `work` writes its statement inside that callback,
 * as the pool's own query() does: pg-pool and mysql2 hand an idle session over in a
 * process.nextTick callback, and an awaited checkout would write the statement a microtask later,
 * after whatever the caller's turn queued meanwhile (test/fault/process-stall.test.ts: a beat
 * written after a stall of the process, past the liveness deadline, and the member told lost).
 */
export function onPooledSession<S extends object, T>(
  checkOut: (handOver: (err: unknown, session?: S) => void) => void,
  work: (session: S) => Promise<T>,
  giveBack: (session: S, unanswered: boolean) => void,
  ms: number,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    checkOut((err, session) => {
      if (err || !session) {
        reject(err)
        return
      }
      const answer = work(session)
      withDeadline(answer, ms).then(
        (result) => {
          giveBack(session, false)
          resolve(result)
        },
        (failure: unknown) => {
          const unanswered = failure instanceof DeadlineError
          if (unanswered) {
            answer.catch(() => {})
            sessionSocket(session)?.destroy()
          }
          giveBack(session, unanswered)
          reject(failure)
        },
      )
    })
  })
}

/**
 * How long a new session of the shared pool may take to connect: a quarter of membership_timeout,
 * at least 1 s, at most the connect timeout. A session given up in a cut is replaced by one opened
 * during the cut, whose lost SYN TCP sends again 1, 3 and 7 s later: the first one after the heal
 * may come seconds after it. A bounded attempt that fails is made again by the next statement (the
 * heartbeat retries within a quarter of membership_timeout), with a SYN of its own.
 */
export function poolConnectMs(timeoutMs: number, membershipTimeoutMs: number): number {
  return Math.min(timeoutMs, Math.max(1_000, membershipTimeoutMs / 4))
}

/**
 * Whether a lock still holds on its own session (undefined: it holds none): `holds` asks the
 * server there. On no, or on a failure to ask (a session we cannot talk to is not trusted),
 * `giveUp` drops the session, and the server frees whatever it still held.
 */
export async function stillHeldOn<S>(session: S | undefined, holds: (session: S) => Promise<boolean>, giveUp: (session: S) => Promise<void>): Promise<boolean> {
  if (!session) return false
  try {
    if (await holds(session)) return true
  } catch {
    // fall through: given up below
  }
  await giveUp(session)
  return false
}

/** How long an unused lock session is kept for the next acquire before it is closed. */
export const LOCK_SESSION_IDLE_MS = 10_000
/** How many unused lock sessions a coordinator keeps at most. */
export const MAX_IDLE_LOCK_SESSIONS = 2

/** The hazard both SQL drivers declare about the server connections they use; `extra` names a driver's own (`, plus 1 ...`). */
export function connectionsHazard(extra = ''): string {
  return 'Server connections per coordinator (mind max_connections): 1 for membership and heartbeats, plus 1 per held or waiting lock, plus up to '
    + `${MAX_IDLE_LOCK_SESSIONS} unused lock sessions kept for ${LOCK_SESSION_IDLE_MS / 1000} s after a release${extra}.`
}

/**
 * The server sessions one coordinator's locks run on (the server ties each lock to a session).
 * A lock takes a session while it waits for or holds its lock, and gives it back once the server
 * confirmed the release; such a session holds no lock, so the next acquire of any lock may reuse
 * it. Unused sessions are kept for LOCK_SESSION_IDLE_MS, at most MAX_IDLE_LOCK_SESSIONS of them:
 * a lock taken again and again costs no connection set-up, and the server sees one session per
 * held or waiting lock plus those few. A session that may still hold a lock is never reused: it
 * is discarded (closed), and the server frees whatever it held.
 */
export class LockSessions<S extends object> {
  readonly #ops: SessionOps<S>
  readonly #live = new Set<S>()
  /** Unused sessions, the most recently used last, with the timers that close them. */
  readonly #idle = new Map<S, NodeJS.Timeout>()
  /** Whom to tell when a session holding a lock dies. */
  readonly #holders = new Map<S, (reason: string) => void>()
  #closed = false

  constructor(ops: SessionOps<S>) {
    this.#ops = ops
  }

  /**
   * The most recently used unused session, or a new one. `reused` tells the caller that the
   * session may have died unnoticed: if its statement fails, discard it and take another.
   */
  async take(): Promise<{ session: S; reused: boolean }> {
    const kept = [...this.#idle.keys()].pop()
    if (kept) {
      clearTimeout(this.#idle.get(kept))
      this.#idle.delete(kept)
      return { session: kept, reused: true }
    }
    const session = await this.#ops.open()
    this.#live.add(session)
    this.#ops.onDeath(session, (reason) => this.#died(session, reason))
    return { session, reused: false }
  }

  /** Marks `session` as holding a lock: `onLost` runs if it dies before give() or discard(). False when it is dead already. */
  hold(session: S, onLost: (reason: string) => void): boolean {
    if (!this.#live.has(session)) return false
    this.#holders.set(session, onLost)
    return true
  }

  /** Takes back a session that holds no lock (the server said so), to be reused or closed. */
  give(session: S): void {
    this.#holders.delete(session)
    if (!this.#live.has(session)) return
    if (this.#closed || this.#idle.size >= MAX_IDLE_LOCK_SESSIONS) {
      void this.#end(session)
      return
    }
    const timer = setTimeout(() => {
      this.#idle.delete(session)
      void this.#end(session)
    }, LOCK_SESSION_IDLE_MS)
    timer.unref()
    this.#idle.set(session, timer)
  }

  /** Closes a session that may hold a lock: its end frees the lock on the server. */
  async discard(session: S): Promise<void> {
    this.#holders.delete(session)
    clearTimeout(this.#idle.get(session))
    this.#idle.delete(session)
    await this.#end(session)
  }

  /** Closes every session, without reporting locks lost (the Coordinator released them). */
  async close(): Promise<void> {
    this.#closed = true
    for (const timer of this.#idle.values()) clearTimeout(timer)
    this.#idle.clear()
    this.#holders.clear()
    await Promise.all([...this.#live].map((s) => this.#end(s)))
  }

  #died(session: S, reason: string): void {
    if (!this.#live.delete(session)) return
    clearTimeout(this.#idle.get(session))
    this.#idle.delete(session)
    const onLost = this.#holders.get(session)
    this.#holders.delete(session)
    void this.#ops.end(session)
    onLost?.(reason)
  }

  async #end(session: S): Promise<void> {
    // Out of #live first: the 'end' this causes is ours, not a death to report.
    this.#live.delete(session)
    await this.#ops.end(session)
  }
}

/** How {@link OrphanSessions} asks one dialect's server about a session, by its id there. */
export interface OrphanOps<C> {
  /** Whether session `id` still holds what `claim` names: the lock itself, and anything at all of it (MySQL: also the turn lock). */
  holds(id: number, claim: C): Promise<{ lock: boolean; any: boolean }>
  /** Ends session `id` on the server (one gone already is no failure); the server frees what it held. */
  kill(id: number): Promise<void>
}

/** The error of a release of lock `name` that got no answer: its session is an orphan, and the release is sent again once the server answers (HeldLocks). */
export function unansweredRelease(name: string, failure: unknown): ConnectionError {
  return new ConnectionError(`The release of lock ${JSON.stringify(name)} got no answer (${String(failure)}); it is sent again once the server answers`, {
    cause: failure,
  })
}

/**
 * Lock sessions given up with a statement unanswered (a lock round or a release sent into a cut),
 * by their id on the server. The client has closed them, but the server learns of a close only
 * when it gets there, after a cut when TCP retransmits next (backed off as long as the cut
 * lasted), and keeps the session, with any lock it was granted meanwhile, until then: a MariaDB
 * partition run had a candidate's waiting round granted the leader lock while the candidate was
 * cut off, and nobody led for the rest of the run; a PostgreSQL run had a release sent 0.8 s into
 * a 7.1 s cut, and nobody was granted the lock in the 7.7 s after the heal. Once the server
 * answers again, each orphan that still holds what it claimed is ended (its own user's right); a
 * lock taken since by another session is left alone. Session ids are the server's (a MariaDB
 * connection id, a PostgreSQL backend pid); one reused meanwhile by another session that holds the
 * same lock would be ended too, which its holder would see as its session lost.
 */
export class OrphanSessions<C> {
  readonly #ops: OrphanOps<C>
  /** Session id to what its session may hold. */
  readonly #orphans = new Map<number, C>()
  /** The orphan of each lock whose release got no answer, for that release sent again (endOwedBy()). */
  readonly #owed = new WeakMap<object, number>()
  #sweeping: Promise<void> | undefined

  constructor(ops: OrphanOps<C>) {
    this.#ops = ops
  }

  /**
   * Records a session given up that may hold `claim` on the server, by its `id`; false when it has
   * none (it never connected: nothing to end). With `owner`, the lock whose release got no answer
   * on it, the release sent again ends it (endOwedBy()).
   */
  add(id: number | null | undefined, claim: C, owner?: object): boolean {
    if (id === null || id === undefined) return false
    this.#orphans.set(id, claim)
    if (owner) this.#owed.set(owner, id)
    return true
  }

  /** The release of `owner` sent again: ends its orphan if it still holds the lock; true if it did. */
  async endOwedBy(owner: object): Promise<boolean> {
    const id = this.#owed.get(owner)
    if (id === undefined) return false
    const held = await this.end(id)
    if (this.#owed.get(owner) === id) this.#owed.delete(owner)
    return held
  }

  /** Ends orphan `id` if it still holds anything it claimed; true if it held the lock. Kept on a failure to ask. */
  async end(id: number): Promise<boolean> {
    const claim = this.#orphans.get(id)
    if (claim === undefined) return false
    const held = await this.#ops.holds(id, claim)
    if (held.any) await this.#ops.kill(id)
    this.#orphans.delete(id)
    return held.lock
  }

  /** Ends every orphan that still holds a lock (after a beat the server answered); one sweep at a time. */
  sweep(): Promise<void> {
    if (this.#orphans.size === 0) return Promise.resolve()
    this.#sweeping ??= (async () => {
      try {
        for (const id of [...this.#orphans.keys()]) await this.end(id)
      } finally {
        this.#sweeping = undefined
      }
    })()
    return this.#sweeping
  }
}
