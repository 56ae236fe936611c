/**
 * MySQL/MariaDB locks exactly as tooz takes them (`tooz/drivers/mysql.py`): the server's named
 * user lock `GET_LOCK(name, timeout)` / `RELEASE_LOCK(name)`, unprefixed, on a session that holds
 * no other lock.
 *
 * The server frees a GET_LOCK lock when its session ends (process crash, closed connection,
 * KILL), which is what makes a crashed holder safe. Names are limited to 64 characters by MySQL
 * (validateId enforces it; MariaDB would allow more, MySQL 5.7+ would refuse). Whether `Job` and
 * `job` are one lock depends on the server: MySQL 5.7+ documents case-insensitive names, MariaDB
 * 10.11 compared them exactly in our tests.
 *
 * As tooz's driver keeps one connection per Lock object, a released session is kept (in the
 * coordinator's LockSessions, sql-sessions.ts) for the next acquire: a lock taken in a loop
 * costs two round trips per cycle (GET_LOCK with its fencing token, RELEASE_LOCK). Contended
 * rollcall acquires wait in turns (mysql-turn.ts): a second GET_LOCK name orders them, and the
 * session that holds it may also hold the lock.
 *
 * The fencing token is an InnoDB counter row bumped in the acquire's round trip: a committed
 * write, so one redo-log flush per acquire (with innodb_flush_log_at_trx_commit = 1), and
 * acquirers of any lock queue on that one row. Nothing cheaper is monotonic across server
 * restarts and across the holders' sessions (connection ids repeat when a kept session takes the
 * lock again and restart at 1 with the server; clocks step back), so the trade is offered
 * instead: `fencing=false` skips the counter (GET_LOCK alone, as tooz) and leaves fencingToken
 * undefined.
 */
import { BackendError, ConnectionError } from '../../../errors.js'
import { withDeadline } from '../../../internal/deadline.js'
import { sleep } from '../../../internal/sleep.js'
import type { QueueWaiting } from '../../driver.js'
import type { SessionLock } from '../sql/sql-dialect.js'
import { stillHeldOn, unansweredRelease, type LockSessions, type OrphanOps, type OrphanSessions } from '../sql/sql-sessions.js'
import { SessionTurn, turnLockName } from './mysql-turn.js'

/** The subset of a mysql2/promise connection these drivers use. */
export interface MysqlConnection {
  query(sql: string, values?: unknown): Promise<[unknown, unknown]>
  end(): Promise<void>
  destroy(): void
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'end', listener: () => void): unknown
  /** The server's connection id (CONNECTION_ID()). */
  readonly threadId: number | null
}

/** What a lock needs from its driver. */
export interface MysqlLockHost {
  /** The coordinator's lock sessions (connections that allow multiple statements). */
  readonly sessions: LockSessions<MysqlConnection>
  /** Runs a statement on the shared pool and returns its rows. */
  query(sql: string, values: unknown[]): Promise<Record<string, unknown>[]>
  /** {@link mysqlLockSql}, or {@link MYSQL_LOCK_SQL_UNFENCED} with fencing=false. */
  readonly lockSql: string
  /** False with fencing=false: lockSql takes no token. */
  readonly fencing: boolean
  /** How long a release waits for its answer. */
  readonly timeoutMs: number
  /** Sessions given up while their server side may still hold a lock, with the lock names (the lock, its turn lock) each may hold. */
  readonly orphans: OrphanSessions<readonly string[]>
}

/**
 * How MySQL/MariaDB answers {@link OrphanSessions} for this driver's sessions: IS_USED_LOCK of each
 * name against the connection id, then KILL CONNECTION.
 */
export function mysqlOrphanOps(query: MysqlLockHost['query']): OrphanOps<readonly string[]> {
  return {
    async holds(id, names) {
      const row = (await query(`SELECT ${names.map((_, i) => `IS_USED_LOCK(?) AS h${i}`).join(', ')}`, [...names]))[0] ?? {}
      const held = names.map((_, i) => row[`h${i}`] !== null && row[`h${i}`] !== undefined && Number(row[`h${i}`]) === id)
      return { lock: held[0] === true, any: held.some(Boolean) }
    },
    async kill(id) {
      await query(`KILL CONNECTION ${id}`, []).catch((err: unknown) => {
        // Gone between the two statements: freed with it.
        if (!/unknown thread/i.test(String(err))) throw err
      })
    },
  }
}

/**
 * GET_LOCK alone (fencing=false), as tooz takes it, asked only when the first parameter is 1 or
 * nobody holds the turn lock (mysql-turn.ts). Parameters: 1 or 0, turn lock name, name, timeout in
 * seconds.
 */
export const MYSQL_LOCK_SQL_UNFENCED = 'SELECT IF(? OR IS_FREE_LOCK(?), GET_LOCK(?, ?), 0) AS ok'

/** A granted GET_LOCK, with its fencing token unless fencing=false. */
interface Granted {
  fence: bigint | undefined
}

/**
 * {@link MYSQL_LOCK_SQL_UNFENCED} and the fencing token in one round trip (two statements): the
 * counter row is bumped, with LAST_INSERT_ID(expr) making the new value the statement's insert id,
 * only when this session now holds the lock. Parameters: those of the first statement, then name.
 */
export function mysqlLockSql(fenceTable: string): string {
  return `${MYSQL_LOCK_SQL_UNFENCED};
    UPDATE ${fenceTable} SET value = LAST_INSERT_ID(value + 1) WHERE id = 1 AND IS_USED_LOCK(?) = CONNECTION_ID()`
}

/** Thrown inside #acquireWaiting() when its signal aborts a statement in flight. */
const ABORTED = Symbol('aborted')

/**
 * A blocked acquire waits in GET_LOCK(name, WAIT_SLICE_S) rounds: the server wakes it the moment
 * the lock is free, and an abort (which closes the connection) costs the server at most one
 * slice of a waiter nobody listens to. Order among waiters is not kept across rounds.
 */
const WAIT_SLICE_S = 0.5
/** How long break() waits for the killed holder's lock to be freed. */
const KILL_WAIT_MS = 5_000

function rowsOf(result: [unknown, unknown]): Record<string, unknown>[] {
  return Array.isArray(result[0]) ? (result[0] as Record<string, unknown>[]) : []
}

/** True when a statement's first row answers `ok` = 1 (GET_LOCK, RELEASE_LOCK and the like; 0 or NULL otherwise). */
function okOf(result: [unknown, unknown]): boolean {
  return Number(rowsOf(result)[0]?.ok) === 1
}

/** One GET_LOCK lock, on a session of the coordinator's LockSessions while held. */
export class MysqlLock implements SessionLock {
  fencingToken: bigint | undefined
  /** Waiters queue in the server, for the turn lock, then for the lock itself (mysql-turn.ts). */
  readonly waiting: QueueWaiting = { kind: 'queue', acquireWaiting: (signal) => this.#acquireWaiting(signal) }
  readonly #host: MysqlLockHost
  readonly #name: string
  readonly #turnName: string
  readonly #onLost: (reason: string) => void
  #conn: MysqlConnection | undefined
  /** The turn this object holds (mysql-turn.ts), on the session that holds the turn lock. */
  #turn: SessionTurn<MysqlConnection> | undefined
  /** An acquire is under way: a held turn must not be freed under it. */
  #busy = false

  constructor(host: MysqlLockHost, name: string, onLost: (reason: string) => void) {
    this.#host = host
    this.#name = name
    this.#turnName = turnLockName(name)
    this.#onLost = onLost
  }

  get sessionId(): number | undefined {
    return this.#conn?.threadId ?? undefined
  }

  /** Takes the lock if free, as tooz does, whoever holds the turn lock. */
  async tryAcquire(): Promise<boolean> {
    if (this.#conn || this.#busy) return false
    this.#busy = true
    try {
      for (;;) {
        const { session: conn, reused } = await this.#session()
        let token: Granted | undefined
        try {
          token = await this.#attempt(conn, 0, true)
        } catch (err) {
          // The lock may have been taken before the error: closing the session frees it, once the server learns of it.
          await this.#abandon(conn)
          // A kept session may have died unnoticed: once more, on another session.
          if (reused) continue
          throw err
        }
        if (token === undefined) {
          this.#idle(conn)
          return false
        }
        this.#taken(conn, token)
        return true
      }
    } finally {
      this.#busy = false
    }
  }

  /**
   * Takes a free lock at once unless a rollcall process has the turn; else queues for the turn
   * lock, then waits for the lock itself (mysql-turn.ts). Waits run in GET_LOCK rounds of half a
   * second. An abort resolves false at once (the client does not end a statement in flight when
   * its connection is destroyed, so the round is not awaited) and closes the connection, which
   * frees anything the round took.
   */
  async #acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (this.#conn || this.#busy || signal.aborted) return false
    this.#busy = true
    try {
      for (;;) {
        const { session: conn, reused } = await this.#session()
        // Aborted while a session was being opened: the listener below would never hear it, and the rounds would go on for good.
        if (signal.aborted) {
          this.#idle(conn)
          return false
        }
        let onAbort = (): void => {}
        const aborted = new Promise<typeof ABORTED>((resolve) => {
          onAbort = () => {
            conn.destroy()
            resolve(ABORTED)
          }
        })
        signal.addEventListener('abort', onAbort, { once: true })
        const step = async <T>(statement: Promise<T>): Promise<T> => {
          const first = await Promise.race([statement, aborted])
          if (first !== ABORTED) return first as T
          statement.catch(() => {})
          throw ABORTED
        }
        let token: Granted | undefined
        try {
          if (this.#turn?.session !== conn) {
            token = await step(this.#attempt(conn, 0, false))
            while (token === undefined && this.#turn?.session !== conn) {
              if (okOf(await step(conn.query('SELECT GET_LOCK(?, ?) AS ok', [this.#turnName, WAIT_SLICE_S])))) this.#turn = new SessionTurn(conn)
            }
          }
          while (token === undefined) token = await step(this.#attempt(conn, WAIT_SLICE_S, true))
        } catch (err) {
          if (err === ABORTED) {
            void this.#abandon(conn)
            return false
          }
          await this.#abandon(conn)
          if (signal.aborted) return false
          if (reused) continue
          throw err
        } finally {
          signal.removeEventListener('abort', onAbort)
        }
        if (signal.aborted) {
          // Taken just as the wait was abandoned: ending the session gives it back.
          await this.#discard(conn)
          return false
        }
        this.#taken(conn, token)
        return true
      }
    } finally {
      this.#busy = false
    }
  }

  /**
   * RELEASE_LOCK on the holding session, within the request timeout. A release that gets no
   * answer closes the session, but the server learns of a close only when it gets there: after a
   * cut, when the client's TCP retransmits next, which backs off to as long as the cut lasted (a
   * MariaDB partition run: a release sent into an 8 s cut, then a second cut, freed the lock 27 s
   * later, 20 s after the holder's coordinator was connected again). So the session is an orphan
   * (OrphanSessions), and the release rejects with a ConnectionError: the coordinator sends it
   * again once the backend answers (HeldLocks), which ends the orphan if a beat has not already.
   */
  async release(): Promise<boolean> {
    const conn = this.#conn
    if (!conn) return this.#host.orphans.endOwedBy(this)
    this.#conn = undefined
    this.fencingToken = undefined
    const turn = this.#turn?.session === conn ? this.#turn : undefined
    const endTurn = turn?.over === true
    let released = false
    let failure: unknown
    try {
      const statement = endTurn
        ? conn.query('SELECT RELEASE_LOCK(?) AS ok, RELEASE_LOCK(?) AS turn', [this.#name, this.#turnName])
        : conn.query('SELECT RELEASE_LOCK(?) AS ok', [this.#name])
      released = okOf(await withDeadline(statement, this.#host.timeoutMs))
    } catch (err) {
      failure = err
    }
    // Only a session that the server says holds nothing any more serves another lock.
    if (!released) await this.#discard(conn)
    else if (endTurn) {
      this.#turn = undefined
      this.#host.sessions.give(conn)
    } else this.#idle(conn)
    if (failure !== undefined && this.#host.orphans.add(conn.threadId, [this.#name, this.#turnName], this)) {
      throw unansweredRelease(this.#name, failure)
    }
    return released
  }

  refresh(): Promise<boolean> {
    return this.isStillOwner()
  }

  /** Asks on the lock's own session (which also keeps it from idling out: wait_timeout). */
  isStillOwner(): Promise<boolean> {
    return stillHeldOn(this.#conn, async (conn) => okOf(await conn.query('SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS ok', [this.#name])), async (conn) => {
      if (this.#conn === conn) this.#conn = undefined
      await this.#discard(conn)
    })
  }

  /**
   * Kills the connection holding the lock (tooz `break_`), then waits until the server has freed
   * it. Needs the right to KILL that connection (its own user, or CONNECTION ADMIN / SUPER).
   */
  async break(): Promise<boolean> {
    const holder = (await this.#host.query('SELECT IS_USED_LOCK(?) AS id', [this.#name]))[0]?.id
    if (holder === null || holder === undefined) return false
    await this.#host.query(`KILL CONNECTION ${Number(holder)}`, [])
    const deadline = Date.now() + KILL_WAIT_MS
    while (Date.now() < deadline) {
      const now = (await this.#host.query('SELECT IS_USED_LOCK(?) AS id', [this.#name]))[0]?.id
      if (now === null || now === undefined || String(now) !== String(holder)) break
      await sleep(20)
    }
    return true
  }

  /**
   * One GET_LOCK(name, waitS) with its fence: the token when taken, undefined when not (GET_LOCK
   * answers 1 when taken, 0 on timeout, NULL on an error; tooz takes only 1). Unless `always`, the
   * lock is asked for only while nobody holds its turn lock.
   */
  async #attempt(conn: MysqlConnection, waitS: number, always: boolean): Promise<Granted | undefined> {
    const params = [always ? 1 : 0, this.#turnName, this.#name, waitS]
    if (!this.#host.fencing) {
      return okOf(await conn.query(this.#host.lockSql, params)) ? { fence: undefined } : undefined
    }
    const [results] = await conn.query(this.#host.lockSql, [...params, this.#name])
    const [rows, header] = results as [Record<string, unknown>[], { affectedRows: number; insertId: number | string }]
    if (Number(rows[0]?.ok) !== 1) return undefined
    if (header.affectedRows !== 1) throw new BackendError('The fencing counter row is missing (id 1 of the fence table): the lock was not kept')
    return { fence: BigInt(String(header.insertId)) }
  }

  /** The session that holds this object's turn, else one of the coordinator's. */
  async #session(): Promise<{ session: MysqlConnection; reused: boolean }> {
    const turn = this.#turn
    return turn ? { session: turn.session, reused: true } : await this.#host.sessions.take()
  }

  /**
   * A session whose lock is not held: one holding this object's turn is kept for the next acquire
   * and frees the turn lock if that acquire has not begun by the next turn of the event loop; any
   * other goes back to the coordinator's sessions.
   */
  #idle(conn: MysqlConnection): void {
    const turn = this.#turn
    if (turn?.session !== conn) {
      this.#host.sessions.give(conn)
      return
    }
    setImmediate(() => {
      if (this.#turn !== turn || this.#conn || this.#busy) return
      this.#turn = undefined
      conn.query('SELECT RELEASE_LOCK(?) AS ok', [this.#turnName]).then(
        (result) => okOf(result) ? this.#host.sessions.give(conn) : this.#discard(conn),
        () => this.#discard(conn),
      )
    })
  }

  /** Closes a session that may hold the lock or the turn lock; the server frees both. */
  async #discard(conn: MysqlConnection): Promise<void> {
    this.#forgetTurn(conn)
    await this.#host.sessions.discard(conn)
  }

  /** Closes a session whose last statement got no answer: an orphan until the server learns of the close (OrphanSessions). */
  async #abandon(conn: MysqlConnection): Promise<void> {
    this.#host.orphans.add(conn.threadId, [this.#name, this.#turnName])
    await this.#discard(conn)
  }

  /** The turn held on `conn` is gone with it (the session ended or is being closed). */
  #forgetTurn(conn: MysqlConnection): void {
    if (this.#turn?.session === conn) this.#turn = undefined
  }

  /** Records a granted lock; from now on the end of its session reports the lock lost. */
  #taken(conn: MysqlConnection, token: Granted): void {
    this.#conn = conn
    this.fencingToken = token.fence
    if (this.#turn?.session === conn) this.#turn.count()
    const alive = this.#host.sessions.hold(conn, (reason) => {
      this.#forgetTurn(conn)
      if (this.#conn !== conn) return
      this.#conn = undefined
      this.#onLost(reason)
    })
    if (!alive) {
      this.#conn = undefined
      this.#forgetTurn(conn)
      throw new ConnectionError('The MySQL session ended just as the lock was granted')
    }
  }
}
