/**
 * MySQL/MariaDB locks exactly as tooz takes them (`tooz/drivers/mysql.py`): the server's named
 * user lock `GET_LOCK(name, timeout)` / `RELEASE_LOCK(name)`, unprefixed, on a connection opened
 * for that one lock and closed on release.
 *
 * The server frees a GET_LOCK lock when its session ends (process crash, closed connection,
 * KILL), which is what makes a crashed holder safe. Names are limited to 64 characters by MySQL
 * (validateId enforces it; MariaDB would allow more, MySQL 5.7+ would refuse). Whether `Job` and
 * `job` are one lock depends on the server: MySQL 5.7+ documents case-insensitive names, MariaDB
 * 10.11 compared them exactly in our tests.
 */
import { sleep } from '../../internal/sleep.js'
import type { SessionLock } from './sql-membership.js'

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
  /** A new connected connection, used by one lock only; it already has an 'error' listener. */
  connect(): Promise<MysqlConnection>
  /** Runs a statement on the shared pool and returns its rows. */
  query(sql: string, values: unknown[]): Promise<Record<string, unknown>[]>
  /** Ends a connection, forcibly if the server does not answer. */
  endSession(conn: MysqlConnection): Promise<void>
  /** `UPDATE <fence> SET value = LAST_INSERT_ID(value + 1) WHERE id = 1`. */
  readonly fenceSql: string
}

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

/** One GET_LOCK lock on a session of its own. */
export class MysqlLock implements SessionLock {
  fencingToken: bigint | undefined
  readonly #host: MysqlLockHost
  readonly #name: string
  readonly #onLost: (reason: string) => void
  #conn: MysqlConnection | undefined

  constructor(host: MysqlLockHost, name: string, onLost: (reason: string) => void) {
    this.#host = host
    this.#name = name
    this.#onLost = onLost
  }

  get sessionId(): number | undefined {
    return this.#conn?.threadId ?? undefined
  }

  async tryAcquire(): Promise<boolean> {
    if (this.#conn) return false
    const conn = await this.#host.connect()
    let ok: unknown
    try {
      ok = rowsOf(await conn.query('SELECT GET_LOCK(?, 0) AS ok', [this.#name]))[0]?.ok
    } catch (err) {
      await this.#host.endSession(conn)
      throw err
    }
    // 1: taken; 0: held by another session; NULL: an error. tooz closes the connection unless taken.
    if (Number(ok) !== 1) {
      await this.#host.endSession(conn)
      return false
    }
    await this.#taken(conn)
    return true
  }

  /** Waits on the server in GET_LOCK rounds of half a second; an abort closes the connection at once. */
  async acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (this.#conn || signal.aborted) return false
    const conn = await this.#host.connect()
    const onAbort = (): void => conn.destroy()
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      while (!signal.aborted) {
        const ok = rowsOf(await conn.query('SELECT GET_LOCK(?, ?) AS ok', [this.#name, WAIT_SLICE_S]))[0]?.ok
        if (Number(ok) === 1) break
      }
    } catch (err) {
      await this.#host.endSession(conn)
      if (signal.aborted) return false
      throw err
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
    if (signal.aborted) {
      // Taken just as the wait was abandoned: ending the session gives it back.
      await this.#host.endSession(conn)
      return false
    }
    await this.#taken(conn)
    return true
  }

  async release(): Promise<boolean> {
    const conn = this.#conn
    if (!conn) return false
    this.#conn = undefined
    this.fencingToken = undefined
    try {
      return Number(rowsOf(await conn.query('SELECT RELEASE_LOCK(?) AS ok', [this.#name]))[0]?.ok) === 1
    } catch {
      // The session is gone, and the server released the lock with it.
      return false
    } finally {
      await this.#host.endSession(conn)
    }
  }

  refresh(): Promise<boolean> {
    return this.isStillOwner()
  }

  /** Asks on the lock's own session (which also keeps it from idling out: wait_timeout). */
  async isStillOwner(): Promise<boolean> {
    const conn = this.#conn
    if (!conn) return false
    try {
      const ok = rowsOf(await conn.query('SELECT IS_USED_LOCK(?) = CONNECTION_ID() AS ok', [this.#name]))[0]?.ok
      if (Number(ok) === 1) return true
    } catch {
      // fall through: a session we cannot talk to is given up, which frees the lock if it held it
    }
    if (this.#conn === conn) this.#conn = undefined
    await this.#host.endSession(conn)
    return false
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

  async #taken(conn: MysqlConnection): Promise<void> {
    try {
      // LAST_INSERT_ID(expr) makes the new counter value this statement's insert id.
      const [header] = await conn.query(this.#host.fenceSql)
      this.fencingToken = BigInt(String((header as { insertId: number | string }).insertId))
    } catch (err) {
      await this.#host.endSession(conn)
      throw err
    }
    this.#conn = conn
    const gone = (reason: string): void => {
      if (this.#conn !== conn) return
      this.#conn = undefined
      this.#onLost(reason)
    }
    conn.on('error', (err) => gone(`its MySQL session failed (${err.message})`))
    conn.on('end', () => gone('its MySQL session ended'))
  }
}
