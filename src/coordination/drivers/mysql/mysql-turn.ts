/**
 * Fair, cheap hand-over of MySQL/MariaDB locks between rollcall processes (issue 14).
 *
 * GET_LOCK waiters queue in the server, first come first served, so a holder that releases and
 * re-takes a lock in a loop hands it over on every release: each acquisition then costs a server
 * thread wake-up and a process switch. Python tooz barges instead (it polls `GET_LOCK(name, 0)`),
 * which is faster and starves its waiters for seconds. rollcall waits in turns:
 * - beside lock `name` there is a turn lock, `rollcall.turn.<sha1 hex of name>` (a second GET_LOCK
 *   name on the same server; tooz never takes it). A rollcall acquire that has to wait first queues
 *   for the turn lock, in the server's own queue, and only its holder waits for the lock itself;
 * - the turn's holder keeps the turn lock across its releases for up to turnSize(TURN_RULES.mysql) acquisitions
 *   within TURN_MS of the first (kit/lock-turn.ts): re-taking the lock meanwhile costs one round
 *   trip and no hand-over, since every other rollcall waiter queues on the turn lock, not on the
 *   lock;
 * - the release that ends the turn frees both in one statement, and the server hands the turn lock
 *   to the next waiter in line. A holder that does not re-take the lock by the next turn of its
 *   event loop frees the turn lock then (one more round trip, off the caller's path);
 * - an acquire's first attempt takes a free lock at once only while nobody holds the turn lock
 *   (`IF(IS_FREE_LOCK(turn), GET_LOCK(name, 0), 0)`), so an uncontended acquire stays one round
 *   trip, and a holder whose turn just ended queues behind the waiters instead of barging.
 *
 * Why exclusion cannot break: the lock is still only tooz's GET_LOCK(name), taken and freed by
 * exactly the statements it was before; the turn lock only decides who asks for it. Python tooz
 * ignores the turn lock: it may take a free lock ahead of rollcall waiters, never overlap a holder.
 * A session never waits for the turn lock while it holds the lock, and waits for the lock only
 * holding nothing or the turn lock, so the two names cannot deadlock. A crashed holder's session
 * ends and frees both. A non-blocking tryAcquire() ignores the turn lock (as tooz's does), so
 * "released, then taken at once by another process" holds even while a turn lock is being freed.
 * On MySQL before 5.7 a session holds one GET_LOCK at a time: taking the lock frees the turn lock,
 * which degrades this to the server's plain queue, never to a wrong answer.
 */
import { createHash } from 'node:crypto'
import { Turn, TURN_RULES, turnSize } from '../kit/lock-turn.js'

/** The GET_LOCK name of `name`'s turn lock (54 characters, within MySQL's 64). */
export function turnLockName(name: string): string {
  return `rollcall.turn.${createHash('sha1').update(name, 'utf8').digest('hex')}`
}

/** A turn held by one lock object, on the session that holds the turn lock. */
export class SessionTurn<S> extends Turn {
  readonly session: S

  constructor(session: S) {
    super(turnSize(TURN_RULES.mysql))
    this.session = session
  }
}
