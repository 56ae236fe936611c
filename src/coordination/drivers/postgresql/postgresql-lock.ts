/**
 * PostgreSQL locks exactly as tooz takes them (`tooz/drivers/pgsql.py`): a session-level advisory
 * lock `pg_advisory_lock(k1, k2)` where k1 and k2 are the first two bytes of md5(name) as small
 * integers, on a session that holds no other lock.
 *
 * Because the key is only 16 bits, there are 65,536 distinct locks: two different names whose md5
 * digests share their first two bytes exclude each other (false contention, never false sharing).
 * The lock is freed by `pg_advisory_unlock` or by the end of its session (process crash, closed
 * connection, terminated backend): PostgreSQL guarantees the latter, which is what makes a crashed
 * holder safe.
 *
 * Shared (reader) locks, which tooz's PostgreSQL driver lacks, are `pg_advisory_lock_shared` on
 * the same key: shared holders hold together, and they and tooz's exclusive holders exclude each
 * other. A shared hold has no fencing token (several hold at once).
 *
 * Unlike tooz, a released session is not closed at once: it goes back to the coordinator's
 * LockSessions (sql-sessions.ts) for the next acquire, so a lock taken in a loop costs two round
 * trips per cycle (lock with its fencing token, unlock) and no connection set-up.
 */
import { createHash } from 'node:crypto'
import { ConnectionError } from '../../../errors.js'
import { DeadlineError, withDeadline } from '../../../internal/deadline.js'
import { sleep } from '../../../internal/sleep.js'
import type { LockMode, QueueWaiting } from '../../driver.js'
import type { SessionLock } from '../sql/sql-dialect.js'
import { sessionSocket, stillHeldOn, unansweredRelease, type LockSessions, type OrphanOps, type OrphanSessions } from '../sql/sql-sessions.js'

/** The subset of a node-postgres Client these drivers use. */
export interface PgClient {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>
  end(): Promise<void>
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'end', listener: () => void): unknown
  on(event: 'notification', listener: (msg: { channel: string; payload?: string | undefined }) => void): unknown
  /** The backend pid, known once connected. */
  readonly processID: number | null
  /** pg's connection, whose `stream` is the socket (sql-sessions.ts sessionSocket()). */
  readonly connection?: unknown
}

/** What a lock needs from its driver. */
export interface PgLockHost {
  /** The coordinator's lock sessions. */
  readonly sessions: LockSessions<PgClient>
  /** Runs a statement on the shared pool. */
  query(text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
  /** The statements of {@link pgLockStatements}. */
  readonly lockSql: PgLockStatements
  /** How long a release waits for its answer. */
  readonly timeoutMs: number
  /** Sessions given up while their server side may still hold a lock, with the key each may hold. */
  readonly orphans: OrphanSessions<readonly [number, number]>
}

/** The lock statements; each answers one row whose `token` is the fencing token, or null when not taken. */
export interface PgLockStatements {
  readonly try: string
  readonly wait: string
  /** Shared mode: `token` is 'shared' when taken, null when not. */
  readonly tryShared: string
  readonly waitShared: string
}

/**
 * Lock and fencing token in one round trip. CASE evaluates nextval() only when the lock was taken;
 * in the waiting form the subquery (never flattened: it calls a volatile function) takes the lock
 * before the outer nextval() runs.
 */
export function pgLockStatements(fenceSequence: string): PgLockStatements {
  const next = `nextval('${fenceSequence}')::text`
  return {
    try: `SELECT CASE WHEN pg_try_advisory_lock($1, $2) THEN ${next} END AS token`,
    wait: `SELECT ${next} AS token FROM (SELECT pg_advisory_lock($1, $2)) AS granted`,
    tryShared: `SELECT CASE WHEN pg_try_advisory_lock_shared($1, $2) THEN 'shared' END AS token`,
    waitShared: `SELECT 'shared' AS token FROM (SELECT pg_advisory_lock_shared($1, $2)) AS granted`,
  }
}

/** tooz's key for a lock name: the first two bytes of md5(UTF-8 name), each 0–255. */
export function pgLockKey(name: string): [number, number] {
  const digest = createHash('md5').update(name, 'utf8').digest()
  return [digest[0]!, digest[1]!]
}

/** Selects the advisory locks (granted, in this database) held under a key; `$1`, `$2` = k1, k2. */
const HOLDERS = `FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objid = $2::oid AND objsubid = 2
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

/**
 * How PostgreSQL answers {@link OrphanSessions} for this driver's sessions: pg_locks for the key
 * and the backend pid, then pg_terminate_backend, which waits for the backend to exit.
 */
export function pgOrphanOps(query: PgLockHost['query']): OrphanOps<readonly [number, number]> {
  return {
    async holds(pid, key) {
      const held = (await query(`SELECT EXISTS (SELECT 1 ${HOLDERS} AND pid = $3) AS held`, [...key, pid])).rows[0]?.held === true
      return { lock: held, any: held }
    },
    async kill(pid) {
      // False (with a warning) for a backend gone meanwhile: freed with it.
      await query(`SELECT pg_terminate_backend($1, ${TERMINATE_WAIT_MS})`, [pid])
    },
  }
}

/** How often a cancelled wait re-sends pg_cancel_backend (the first one may arrive before the query). */
const CANCEL_REPEAT_MS = 500
/** How long break() waits for a terminated holder to exit (pg_terminate_backend's timeout, PostgreSQL ≥ 14). */
const TERMINATE_WAIT_MS = 5_000

/** One named advisory lock, on a session of the coordinator's LockSessions while held. */
export class PgLock implements SessionLock {
  fencingToken: bigint | undefined
  /** Waiters queue in the server (a blocking pg_advisory_lock on a session of their own). */
  readonly waiting: QueueWaiting = { kind: 'queue', acquireWaiting: (signal, mode) => this.#acquireWaiting(signal, mode) }
  readonly #host: PgLockHost
  readonly #name: string
  readonly #key: [number, number]
  readonly #onLost: (reason: string) => void
  #client: PgClient | undefined
  /** The mode of the hold, while held. */
  #shared = false

  constructor(host: PgLockHost, name: string, onLost: (reason: string) => void) {
    this.#host = host
    this.#name = name
    this.#key = pgLockKey(name)
    this.#onLost = onLost
  }

  /** The lock's key, as tooz computes it. */
  get key(): readonly [number, number] {
    return this.#key
  }

  get sessionId(): number | undefined {
    return this.#client?.processID ?? undefined
  }

  tryAcquire(): Promise<boolean> {
    return this.#try(this.#host.lockSql.try, false)
  }

  tryAcquireShared(): Promise<boolean> {
    return this.#try(this.#host.lockSql.tryShared, true)
  }

  #acquireWaiting(signal: AbortSignal, mode: LockMode): Promise<boolean> {
    return mode === 'shared' ? this.#wait(signal, this.#host.lockSql.waitShared, true) : this.#wait(signal, this.#host.lockSql.wait, false)
  }

  async #try(statement: string, shared: boolean): Promise<boolean> {
    if (this.#client) return false
    const { sessions } = this.#host
    for (;;) {
      const { session: client, reused } = await sessions.take()
      let token: unknown
      try {
        token = (await client.query(statement, this.#key)).rows[0]?.token
      } catch (err) {
        // The lock may have been taken before the error: closing the session frees it, once the server learns of it.
        this.#host.orphans.add(client.processID, this.#key)
        await sessions.discard(client)
        // A kept session may have died unnoticed: once more, on another session.
        if (reused) continue
        throw err
      }
      if (token === null || token === undefined) {
        sessions.give(client)
        return false
      }
      this.#taken(client, token, shared)
      return true
    }
  }

  /**
   * Waits in PostgreSQL's own lock queue (a blocking pg_advisory_lock): the server wakes the
   * waiter when the holder releases or its session ends. An abort resolves false at once and
   * cancels the query with pg_cancel_backend; once it has ended, its session is closed, which
   * gives back the lock if it was granted meanwhile.
   */
  async #wait(signal: AbortSignal, statement: string, shared: boolean): Promise<boolean> {
    if (this.#client || signal.aborted) return false
    const { sessions } = this.#host
    for (;;) {
      const { session: client, reused } = await sessions.take()
      if (signal.aborted) {
        sessions.give(client)
        return false
      }
      let repeat: NodeJS.Timeout | undefined
      const cancel = (): void => {
        void this.#host.query('SELECT pg_cancel_backend($1)', [client.processID]).catch(() => sessions.discard(client))
      }
      const onAbort = (): void => {
        cancel()
        repeat = setInterval(cancel, CANCEL_REPEAT_MS)
        repeat.unref()
      }
      let abandon = (): void => {}
      const abandoned = new Promise<'aborted'>((resolve) => (abandon = () => resolve('aborted')))
      const onAbortNow = (): void => {
        onAbort()
        abandon()
      }
      signal.addEventListener('abort', onAbortNow, { once: true })
      const query = client.query(statement, this.#key)
      let token: unknown
      try {
        const first = await Promise.race([query, abandoned])
        if (first === 'aborted') {
          // Answer the caller now; the cancelled (or, too late, granted) query ends on its own, and
          // closing its session afterwards gives back anything it took.
          void query.catch(() => undefined).finally(() => {
            clearInterval(repeat)
            void sessions.discard(client)
          })
          return false
        }
        token = first.rows[0]?.token
      } catch (err) {
        clearInterval(repeat)
        await sessions.discard(client)
        if (signal.aborted) return false
        if (reused) continue
        throw err
      } finally {
        signal.removeEventListener('abort', onAbortNow)
      }
      clearInterval(repeat)
      if (signal.aborted) {
        // Granted as the wait was abandoned. A cancel may still be on its way to this session, so
        // it is closed (which gives the lock back) rather than kept.
        await sessions.discard(client)
        return false
      }
      this.#taken(client, token, shared)
      return true
    }
  }

  /**
   * pg_advisory_unlock on the holding session, within the request timeout. A release that gets no
   * answer closes the session, but the server learns of a close only when it gets there: after a
   * cut, when the client's TCP retransmits next, and the server's keepalive probes, answered by the
   * client's kernel once the cut heals, keep the session meanwhile (a PostgreSQL partition run: a
   * release sent 0.8 s into a 7.1 s cut, and nobody was granted the lock in the 7.7 s after the
   * heal). So the session is an orphan (OrphanSessions), and the release rejects with a
   * ConnectionError: the coordinator sends it again once the backend answers (HeldLocks), which
   * ends the orphan if a beat has not already. Any other failure ended the session (pg ends a
   * query under way when its client ends: a release cut short by stop()), which frees the lock.
   */
  async release(): Promise<boolean> {
    const client = this.#client
    if (!client) return this.#host.orphans.endOwedBy(this)
    this.#client = undefined
    this.fencingToken = undefined
    let released = false
    let failure: unknown
    try {
      const unlock = this.#shared ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock'
      const { rows } = await withDeadline(client.query(`SELECT ${unlock}($1, $2) AS ok`, this.#key), this.#host.timeoutMs)
      released = rows[0]?.ok === true
    } catch (err) {
      // Any failure but silence ended the session (closed by stop(), reset, terminated), and the server released the lock with it.
      if (err instanceof DeadlineError) failure = err
    }
    // Only a session that the server says holds nothing any more serves another lock.
    if (released) this.#host.sessions.give(client)
    else await this.#host.sessions.discard(client)
    if (failure !== undefined && this.#host.orphans.add(client.processID, this.#key, this)) {
      throw unansweredRelease(this.#name, failure)
    }
    return released
  }

  refresh(): Promise<boolean> {
    return this.isStillOwner()
  }

  /** Asks pg_locks on the lock's own session; an error there means the session cannot be trusted. */
  isStillOwner(): Promise<boolean> {
    const asked = async (client: PgClient): Promise<boolean> =>
      (await client.query(`SELECT EXISTS (SELECT 1 ${HOLDERS} AND pid = pg_backend_pid()) AS ok`, this.#key)).rows[0]?.ok === true
    return stillHeldOn(this.#client, asked, async (client) => {
      if (this.#client === client) this.#client = undefined
      await this.#host.sessions.discard(client)
    })
  }

  /**
   * Terminates whichever session holds the key (tooz `break_`) and waits for it to exit, which
   * frees the lock. Needs the right to signal that backend: a superuser, the same role, or
   * pg_signal_backend.
   */
  async break(): Promise<boolean> {
    const { rows } = await this.#host.query(`SELECT pg_terminate_backend(pid, ${TERMINATE_WAIT_MS}) AS done ${HOLDERS}`, [...this.#key])
    return rows.length > 0
  }

  /** Records a granted lock; from now on the end of its session reports the lock lost. */
  #taken(client: PgClient, token: unknown, shared: boolean): void {
    this.#client = client
    this.#shared = shared
    this.fencingToken = shared ? undefined : BigInt(String(token))
    const alive = this.#host.sessions.hold(client, (reason) => {
      if (this.#client !== client) return
      this.#client = undefined
      this.#onLost(reason)
    })
    if (!alive) {
      this.#client = undefined
      throw new ConnectionError('The PostgreSQL session ended just as the lock was granted')
    }
  }
}

/** Ends a client politely, then forcibly when the server does not let go within `graceMs`. */
export async function endPgClient(client: PgClient, graceMs = 1_000): Promise<void> {
  const ended = client.end().then(() => true, () => true)
  // A backend blocked in a lock wait reads nothing, so the polite Terminate may never be seen.
  if (await Promise.race([ended, sleep(graceMs).then(() => false)])) return
  sessionSocket(client)?.destroy()
}
