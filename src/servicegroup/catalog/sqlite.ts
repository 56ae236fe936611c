/**
 * The SQLite connection of the catalog: one file, WAL journal and a busy timeout so that several
 * processes of one host can register and report at once. The engine (better-sqlite3 or
 * node:sqlite, see sqlite-engine.ts) is loaded only when a SQLite catalog is opened; both are
 * synchronous, and each call is short.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { ConnectionError, BackendError, RollcallError } from '../../index.js'
import type { SqlConnection, CatalogSqlResult } from './sql.js'
import { loadSqliteEngine, type SqliteDatabase, type SqliteEngine, type SqliteStatement } from './sqlite-engine.js'

/** How long a statement waits for another process's write lock before failing (SQLITE_BUSY). */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000

/** SQLite result codes that mean "cannot get at the file right now" rather than a bug. */
const TRANSIENT = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|READONLY|PROTOCOL)/

/** Opens (creating if needed) the SQLite file at `path` (`:memory:` for a private in-memory one). */
export async function openSqlite(path: string, shownAs: string): Promise<SqlConnection> {
  const engine = await loadSqliteEngine()
  let db: SqliteDatabase
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    db = engine.open(path, SQLITE_BUSY_TIMEOUT_MS)
    db.exec('PRAGMA journal_mode = WAL')
    db.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`)
  } catch (err) {
    throw new ConnectionError(`Cannot open the services database ${shownAs}: ${(err as Error).message}`, { cause: err })
  }
  return new SqliteConnection(engine, db, path === ':memory:' ? `:memory:${Math.random()}` : path, shownAs)
}

/** Per database file: the schema upgrade of this process's connections, one at a time. */
const schemaTurns = new Map<string, Promise<void>>()

class SqliteConnection implements SqlConnection {
  readonly dialect = 'sqlite' as const
  readonly shownAs: string
  readonly #engine: SqliteEngine
  readonly #db: SqliteDatabase
  readonly #path: string
  readonly #statements = new Map<string, SqliteStatement>()

  constructor(engine: SqliteEngine, db: SqliteDatabase, path: string, shownAs: string) {
    this.#engine = engine
    this.#db = db
    this.#path = path
    this.shownAs = shownAs
  }

  async query(sql: string, params: readonly unknown[] = []): Promise<CatalogSqlResult> {
    try {
      let st = this.#statements.get(sql)
      if (!st) this.#statements.set(sql, st = this.#db.prepare(sql))
      // Neither engine binds booleans.
      const values = params.map((p) => (typeof p === 'boolean' ? Number(p) : p))
      if (st.reader) return { rows: st.all(...values), affected: 0 }
      const r = st.run(...values)
      return { rows: [], affected: Number(r.changes), insertId: Number(r.lastInsertRowid) }
    } catch (err) {
      throw this.#translate(err)
    }
  }

  async withSchemaLock<T>(_name: string, fn: () => Promise<T>): Promise<T> {
    // Connections of this process take turns first: the engine waits for a lock synchronously,
    // so a second connection waiting here would freeze the event loop of the one holding it.
    const previous = schemaTurns.get(this.#path) ?? Promise.resolve()
    let done!: () => void
    const mine = new Promise<void>((r) => (done = r))
    const turn = previous.then(() => mine)
    schemaTurns.set(this.#path, turn)
    await previous
    try {
      return await this.#locked(fn)
    } finally {
      done()
      if (schemaTurns.get(this.#path) === turn) schemaTurns.delete(this.#path)
    }
  }

  async #locked<T>(fn: () => Promise<T>): Promise<T> {
    // BEGIN IMMEDIATE takes the write lock at once: another process waits (busy timeout) here.
    await this.query('BEGIN IMMEDIATE')
    try {
      const out = await fn()
      await this.query('COMMIT')
      return out
    } catch (err) {
      try {
        this.#db.exec('ROLLBACK')
      } catch {
        // No transaction left to roll back.
      }
      throw err
    }
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close()
  }

  #translate(err: unknown): RollcallError {
    const code = this.#engine.codeOf(err)
    const message = `The services database ${this.shownAs} failed: ${(err as Error)?.message ?? String(err)}`
    if (!this.#db.open || TRANSIENT.test(code)) return new ConnectionError(message, { cause: err })
    return new BackendError(message, { cause: err })
  }
}
