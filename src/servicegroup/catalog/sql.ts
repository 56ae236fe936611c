/**
 * What the catalog needs from a SQL database, and the three dialects' differences in one place:
 * identifier quoting, the server clock, booleans and the upsert. Statements are written with `?`
 * placeholders; the PostgreSQL connection numbers them.
 */

/** The SQL databases the catalog runs on. */
export type Dialect = 'sqlite' | 'postgresql' | 'mysql'

/** A row as the client library returns it. */
export type Row = Record<string, unknown>

/** The result of one statement. */
export interface CatalogSqlResult {
  rows: Row[]
  /** Rows changed by INSERT/UPDATE/DELETE. */
  affected: number
  /** MySQL: LAST_INSERT_ID() of the statement. */
  insertId?: number
}

/** One database connection (or pool), as the catalog uses it. */
export interface SqlConnection {
  readonly dialect: Dialect
  /** The connection URL with any password replaced by `***`. */
  readonly shownAs: string
  /** Runs one statement with `?` placeholders. */
  query(sql: string, params?: readonly unknown[]): Promise<CatalogSqlResult>
  /** Runs `fn` while holding a database-wide lock that serialises schema upgrades across processes. */
  withSchemaLock<T>(name: string, fn: () => Promise<T>): Promise<T>
  close(): Promise<void>
}

/** Dialect-specific SQL fragments. */
export interface DialectSql {
  /** Quotes an identifier (`binary` is a reserved word in MySQL). */
  q(identifier: string): string
  /** The server's current UTC time, as stored in timestamp columns. */
  readonly now: string
  /** The Unix epoch, as stored in timestamp columns (leave() stamps it into last_seen_up). */
  readonly epoch: string
  /** True when UPDATE/INSERT ... RETURNING * is available. */
  readonly returning: boolean
}

const DIALECTS: Record<Dialect, DialectSql> = {
  sqlite: {
    q: (id) => `"${id}"`,
    // Same host, same clock; stored as ISO-8601 text so that operators can read it.
    now: `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`,
    epoch: `'1970-01-01T00:00:00.000Z'`,
    returning: true,
  },
  postgresql: { q: (id) => `"${id}"`, now: 'now()', epoch: 'to_timestamp(0)', returning: true },
  // DATETIME(6) holding UTC, read back with timezone 'Z'.
  mysql: { q: (id) => `\`${id}\``, now: 'UTC_TIMESTAMP(6)', epoch: `'1970-01-01 00:00:00'`, returning: false },
}

/** The fragments of one dialect. */
export function dialectSql(dialect: Dialect): DialectSql {
  return DIALECTS[dialect]
}

/** Longest table prefix accepted (index names must fit in 63 characters). */
export const MAX_TABLE_PREFIX_LENGTH = 40

/** Why `prefix` cannot prefix table names, or undefined when it can. */
export function tablePrefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix)) {
    return 'it must start with a letter or "_" and hold only letters, digits and "_" (it is pasted into table names)'
  }
  if (prefix.length > MAX_TABLE_PREFIX_LENGTH) return `it must be at most ${MAX_TABLE_PREFIX_LENGTH} characters`
  return undefined
}
