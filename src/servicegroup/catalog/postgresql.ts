/**
 * The PostgreSQL connection of the catalog: a small `pg` pool. Schema upgrades are serialised
 * with a session advisory lock held on a dedicated client. Connection-level failures (refused,
 * reset, server shutting down, timeouts) become a retryable ConnectionError; anything else a
 * BackendError. Messages carry the redacted URL only.
 */
import { createHash } from 'node:crypto'
import { DriverUnavailableError, type RollcallError } from '../../index.js'
import { catalogError } from './catalog-errors.js'
import type { Row, SqlConnection, CatalogSqlResult } from './sql.js'
import { isPgConnectionFailure } from '../../internal/network-errors.js'

/** Bounds on connecting and on any one statement. */
export const PG_TIMEOUTS = { connectMs: 5_000, queryMs: 10_000 } as const

interface CatalogPgPool {
  query(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>
  connect(): Promise<{ query(text: string, values?: unknown[]): Promise<unknown>; release(err?: boolean): void }>
  end(): Promise<void>
  on(event: 'error', listener: (err: Error) => void): unknown
}

/** Opens a pool for `connectionString` (nothing is sent until the first query). */
export async function openPostgresql(connectionString: string, shownAs: string): Promise<SqlConnection> {
  let lib: { Pool: new(config: object) => CatalogPgPool }
  try {
    lib = (await import('pg')).default as unknown as typeof lib
  } catch (err) {
    throw new DriverUnavailableError('PostgreSQL catalog', 'pg', { cause: err })
  }
  const pool = new lib.Pool({
    connectionString,
    max: 4,
    idleTimeoutMillis: 10_000,
    allowExitOnIdle: true,
    connectionTimeoutMillis: PG_TIMEOUTS.connectMs,
    query_timeout: PG_TIMEOUTS.queryMs,
  })
  // An idle pooled connection failed: the next query opens a new one (and reports the outage).
  pool.on('error', () => undefined)
  return new PgConnection(pool, shownAs)
}

/** Numbers `?` placeholders as `$1, $2, ...` (statements here never hold a literal "?"). */
function numbered(sql: string): string {
  let i = 0
  return sql.replace(/\?/g, () => `$${++i}`)
}

class PgConnection implements SqlConnection {
  readonly dialect = 'postgresql' as const
  readonly shownAs: string
  readonly #pool: CatalogPgPool
  readonly #sql = new Map<string, string>()

  constructor(pool: CatalogPgPool, shownAs: string) {
    this.#pool = pool
    this.shownAs = shownAs
  }

  async query(sql: string, params: readonly unknown[] = []): Promise<CatalogSqlResult> {
    let text = this.#sql.get(sql)
    if (text === undefined) this.#sql.set(sql, text = numbered(sql))
    try {
      const r = await this.#pool.query(text, [...params])
      return { rows: r.rows, affected: r.rowCount ?? 0 }
    } catch (err) {
      throw this.#translate(err)
    }
  }

  async withSchemaLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const key = createHash('sha256').update(name).digest().readBigInt64BE(0).toString()
    let client: Awaited<ReturnType<CatalogPgPool['connect']>>
    try {
      client = await this.#pool.connect()
      await client.query('SELECT pg_advisory_lock($1)', [key])
    } catch (err) {
      throw this.#translate(err)
    }
    try {
      return await fn()
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [key]).then(() => client.release(), () => client.release(true))
    }
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => undefined)
  }

  #translate(err: unknown): RollcallError {
    return catalogError(err, this.shownAs, isPgConnectionFailure)
  }
}
