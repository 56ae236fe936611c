/**
 * The MySQL/MariaDB connection of the catalog: a small `mysql2` pool with `timezone: 'Z'`, so
 * that DATETIME columns (which hold UTC) read back as the right instant. Schema upgrades are
 * serialised with GET_LOCK on a dedicated connection. Connection-level failures become a
 * retryable ConnectionError; anything else a BackendError.
 */
import { ConnectionError, DriverUnavailableError, type RollcallError } from '../../index.js'
import { catalogError } from './catalog-errors.js'
import type { Row, SqlConnection, CatalogSqlResult } from './sql.js'
import { isMysqlConnectionFailure } from '../../internal/network-errors.js'

/** Bounds on connecting and on waiting for the schema lock. */
export const MYSQL_TIMEOUTS = { connectMs: 5_000, schemaLockSeconds: 30 } as const

interface MysqlConn {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>
  release(): void
}
interface CatalogMysqlPool {
  query(sql: string, values?: unknown[]): Promise<[unknown, unknown]>
  getConnection(): Promise<MysqlConn>
  end(): Promise<void>
  on(event: string, listener: (...args: unknown[]) => void): unknown
}

/** Opens a pool for `uri` (a mysql:// URL; nothing is sent until the first query). */
export async function openMysql(uri: string, shownAs: string): Promise<SqlConnection> {
  let lib: { createPool(config: object): CatalogMysqlPool }
  try {
    lib = (await import('mysql2/promise')) as unknown as typeof lib
  } catch (err) {
    throw new DriverUnavailableError('MySQL catalog', 'mysql2', { cause: err })
  }
  const pool = lib.createPool({
    uri,
    timezone: 'Z',
    connectionLimit: 4,
    maxIdle: 4,
    idleTimeout: 10_000,
    connectTimeout: MYSQL_TIMEOUTS.connectMs,
    supportBigNumbers: true,
  })
  return new CatalogMysqlConnection(pool, shownAs)
}

class CatalogMysqlConnection implements SqlConnection {
  readonly dialect = 'mysql' as const
  readonly shownAs: string
  readonly #pool: CatalogMysqlPool

  constructor(pool: CatalogMysqlPool, shownAs: string) {
    this.#pool = pool
    this.shownAs = shownAs
  }

  async query(sql: string, params: readonly unknown[] = []): Promise<CatalogSqlResult> {
    try {
      const [result] = await this.#pool.query(sql, [...params])
      if (Array.isArray(result)) return { rows: result as Row[], affected: 0 }
      const header = result as { affectedRows: number; insertId: number }
      return { rows: [], affected: header.affectedRows, insertId: header.insertId }
    } catch (err) {
      throw this.#translate(err)
    }
  }

  async withSchemaLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    let conn: MysqlConn
    try {
      conn = await this.#pool.getConnection()
      const [rows] = await conn.query('SELECT GET_LOCK(?, ?) AS got', [name, MYSQL_TIMEOUTS.schemaLockSeconds])
      if ((rows as { got: number | null }[])[0]?.got !== 1) {
        conn.release()
        throw new ConnectionError(
          `Timed out after ${MYSQL_TIMEOUTS.schemaLockSeconds} s waiting for another process to finish upgrading the services schema in ${this.shownAs}`,
        )
      }
    } catch (err) {
      throw err instanceof ConnectionError ? err : this.#translate(err)
    }
    try {
      return await fn()
    } finally {
      await conn.query('SELECT RELEASE_LOCK(?)', [name]).catch(() => undefined)
      conn.release()
    }
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => undefined)
  }

  #translate(err: unknown): RollcallError {
    return catalogError(err, this.shownAs, isMysqlConnectionFailure)
  }
}
