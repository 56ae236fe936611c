/**
 * PostgreSQL locks exactly as tooz takes them (`tooz/drivers/pgsql.py`): a session-level advisory
 * lock `pg_advisory_lock(k1, k2)` where k1 and k2 are the first two bytes of md5(name) as small
 * integers, on a connection opened for that one lock and closed on release.
 *
 * Because the key is only 16 bits, there are 65,536 distinct locks: two different names whose md5
 * digests share their first two bytes exclude each other (false contention, never false sharing).
 * The lock is freed by `pg_advisory_unlock` or by the end of its session (process crash, closed
 * connection, terminated backend): PostgreSQL guarantees the latter, which is what makes a crashed
 * holder safe.
 */
import { createHash } from 'node:crypto'
import { sleep } from '../../internal/sleep.js'
import type { SessionLock } from './sql-membership.js'

/** The subset of a node-postgres Client these drivers use. */
export interface PgClient {
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>
  end(): Promise<void>
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'end', listener: () => void): unknown
  on(event: 'notification', listener: (msg: { channel: string; payload?: string | undefined }) => void): unknown
  /** The backend pid, known once connected. */
  readonly processID: number | null
}

/** What a lock needs from its driver. */
export interface PgLockHost {
  /** A new connected client, used by one lock only; it already has an 'error' listener. */
  connect(): Promise<PgClient>
  /** Runs a statement on the shared pool. */
  query(text: string, values: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
  /** Ends a client, forcibly if the server does not answer. */
  endSession(client: PgClient): Promise<void>
  /** `SELECT nextval(<fence sequence>)::text AS token`. */
  readonly fenceSql: string
}

/** tooz's key for a lock name: the first two bytes of md5(UTF-8 name), each 0–255. */
export function pgLockKey(name: string): [number, number] {
  const digest = createHash('md5').update(name, 'utf8').digest()
  return [digest[0]!, digest[1]!]
}

/** Selects the advisory locks (granted, in this database) held under a key; `$1`, `$2` = k1, k2. */
const HOLDERS = `FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objid = $2::oid AND objsubid = 2
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

/** How often a cancelled wait re-sends pg_cancel_backend (the first one may arrive before the query). */
const CANCEL_REPEAT_MS = 500
/** How long break() waits for a terminated holder to exit (pg_terminate_backend's timeout, PostgreSQL ≥ 14). */
const TERMINATE_WAIT_MS = 5_000

/** One named advisory lock on a session of its own. */
export class PgLock implements SessionLock {
  fencingToken: bigint | undefined
  readonly #host: PgLockHost
  readonly #key: [number, number]
  readonly #onLost: (reason: string) => void
  #client: PgClient | undefined

  constructor(host: PgLockHost, name: string, onLost: (reason: string) => void) {
    this.#host = host
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

  async tryAcquire(): Promise<boolean> {
    if (this.#client) return false
    const client = await this.#host.connect()
    try {
      const { rows } = await client.query('SELECT pg_try_advisory_lock($1, $2) AS ok', this.#key)
      if (rows[0]?.ok !== true) {
        // As tooz does: a lock object that does not hold its lock keeps no connection open.
        await this.#host.endSession(client)
        return false
      }
    } catch (err) {
      await this.#host.endSession(client)
      throw err
    }
    await this.#taken(client)
    return true
  }

  /**
   * Waits in PostgreSQL's own lock queue (a blocking pg_advisory_lock): the server wakes the
   * waiter when the holder releases or its session ends. An abort cancels the query with
   * pg_cancel_backend; if the lock was granted meanwhile, closing the session gives it back.
   */
  async acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (this.#client || signal.aborted) return false
    const client = await this.#host.connect()
    if (signal.aborted) {
      await this.#host.endSession(client)
      return false
    }
    let repeat: NodeJS.Timeout | undefined
    const cancel = (): void => {
      void this.#host.query('SELECT pg_cancel_backend($1)', [client.processID]).catch(() => this.#host.endSession(client))
    }
    const onAbort = (): void => {
      cancel()
      repeat = setInterval(cancel, CANCEL_REPEAT_MS)
      repeat.unref()
    }
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      await client.query('SELECT pg_advisory_lock($1, $2)', this.#key)
    } catch (err) {
      await this.#host.endSession(client)
      if (signal.aborted) return false
      throw err
    } finally {
      signal.removeEventListener('abort', onAbort)
      clearInterval(repeat)
    }
    if (signal.aborted) {
      await this.#host.endSession(client)
      return false
    }
    await this.#taken(client)
    return true
  }

  async release(): Promise<boolean> {
    const client = this.#client
    if (!client) return false
    this.#client = undefined
    this.fencingToken = undefined
    try {
      const { rows } = await client.query('SELECT pg_advisory_unlock($1, $2) AS ok', this.#key)
      return rows[0]?.ok === true
    } catch {
      // The session is gone, and the server released the lock with it.
      return false
    } finally {
      await this.#host.endSession(client)
    }
  }

  refresh(): Promise<boolean> {
    return this.isStillOwner()
  }

  /** Asks pg_locks on the lock's own session; an error there means the session cannot be trusted. */
  async isStillOwner(): Promise<boolean> {
    const client = this.#client
    if (!client) return false
    try {
      const { rows } = await client.query(`SELECT EXISTS (SELECT 1 ${HOLDERS} AND pid = pg_backend_pid()) AS ok`, this.#key)
      if (rows[0]?.ok === true) return true
    } catch {
      // fall through: give the session up, which frees the lock if it still held it
    }
    if (this.#client === client) this.#client = undefined
    await this.#host.endSession(client)
    return false
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

  async #taken(client: PgClient): Promise<void> {
    try {
      const { rows } = await client.query(this.#host.fenceSql)
      this.fencingToken = BigInt(String(rows[0]?.token))
    } catch (err) {
      await this.#host.endSession(client)
      throw err
    }
    this.#client = client
    const gone = (reason: string): void => {
      if (this.#client !== client) return
      this.#client = undefined
      this.#onLost(reason)
    }
    client.on('error', (err) => gone(`its PostgreSQL session failed (${err.message})`))
    client.on('end', () => gone('its PostgreSQL session ended'))
  }
}

/** Ends a client politely, then forcibly when the server does not let go within `graceMs`. */
export async function endPgClient(client: PgClient, graceMs = 1_000): Promise<void> {
  const ended = client.end().then(() => true, () => true)
  if (await Promise.race([ended, sleep(graceMs).then(() => false)])) return
  // A backend blocked in a lock wait reads nothing, so the polite Terminate may never be seen.
  ;(client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy()
}
