/**
 * Which SQLite engine the catalog uses: `better-sqlite3` when the application installed it (an
 * optional peer dependency: it compiles a native module, so rollcall does not pull it in) and it
 * loads, else the runtime's own: `node:sqlite` on Node 22.13 and later, `bun:sqlite` on Bun; else
 * a DriverUnavailableError that names the package to install. A better-sqlite3 that is installed
 * but cannot load (built for another Node ABI, or under Bun, which cannot load it) is tried with
 * an in-memory database first, so that it falls back instead of failing at the first open. The
 * engines are synchronous and are given the same small interface here, so the connection code
 * does not know which one it has.
 *
 * Node prints "ExperimentalWarning: SQLite is an experimental feature" when node:sqlite loads:
 * that one warning is dropped (every other warning passes), since the catalog's use of it is
 * rollcall's choice, not the user's.
 */
import { DriverUnavailableError } from '../../index.js'
import type { Row } from './sql.js'

/** A prepared statement. */
export interface SqliteStatement {
  /** True when the statement returns rows. */
  readonly reader: boolean
  all(...params: unknown[]): Row[]
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
}

/** An open database, whichever engine opened it. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement
  exec(sql: string): void
  close(): void
  readonly open: boolean
}

/** One engine: its name (for messages) and how it opens a file. */
export interface SqliteEngine {
  readonly name: 'better-sqlite3' | 'node:sqlite' | 'bun:sqlite'
  open(path: string, busyTimeoutMs: number): SqliteDatabase
  /** The SQLite result-code name of an engine error (`SQLITE_BUSY`), or '' when it has none. */
  codeOf(err: unknown): string
}

/** What the message of a missing engine says: the package, and the other way out. */
const WHAT = 'SQLite catalog (the default [database] connection; Node 22.13+ and Bun have SQLite built in)'

type BetterCtor = new(path: string, options?: { timeout?: number }) => {
  prepare(sql: string): SqliteStatement
  exec(sql: string): void
  close(): void
  readonly open: boolean
}

interface NodeStatement {
  all(...params: unknown[]): Row[]
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
  columns?(): unknown[]
}
interface NodeDatabase {
  prepare(sql: string): NodeStatement
  exec(sql: string): void
  close(): void
  readonly isOpen?: boolean
}
type NodeCtor = new(path: string, options?: { timeout?: number }) => NodeDatabase

interface BunStatement {
  all(...params: unknown[]): Row[]
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint }
  readonly columnNames?: readonly string[]
}
interface BunDatabase {
  prepare(sql: string): BunStatement
  exec(sql: string): void
  close(): void
}
type BunCtor = new(path: string, options?: { create?: boolean }) => BunDatabase

/** SQLite's primary result codes, for engines that report numbers (node:sqlite's `errcode`). */
const PRIMARY_CODES: Record<number, string> = {
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  15: 'SQLITE_PROTOCOL',
}

/** Statements that return rows, for engines that cannot say (node:sqlite before columns()). */
const READS = /^\s*(SELECT|WITH|PRAGMA|VALUES|EXPLAIN)\b|\bRETURNING\b/i

function betterEngine(Ctor: BetterCtor): SqliteEngine {
  return {
    name: 'better-sqlite3',
    open: (path, busyTimeoutMs) => new Ctor(path, { timeout: busyTimeoutMs }),
    codeOf: (err) => String((err as { code?: unknown })?.code ?? ''),
  }
}

/** The engine of a runtime's built-in module: node:sqlite or bun:sqlite, whose APIs differ only in these few places. */
function builtinEngine<D extends { prepare(sql: string): NodeStatement | BunStatement; exec(sql: string): void; close(): void; readonly isOpen?: boolean }>(
  name: 'node:sqlite' | 'bun:sqlite',
  create: (path: string, busyTimeoutMs: number) => D,
): SqliteEngine {
  return {
    name,
    open(path, busyTimeoutMs) {
      const db = create(path, busyTimeoutMs)
      let open = true
      return {
        prepare(sql) {
          const st = db.prepare(sql)
          const columns = 'columnNames' in st ? st.columnNames : 'columns' in st && typeof st.columns === 'function' ? st.columns() : undefined
          const reader = columns === undefined ? READS.test(sql) : columns.length > 0
          return { reader, all: (...p) => st.all(...p), run: (...p) => st.run(...p) }
        },
        exec: (sql) => db.exec(sql),
        close() {
          open = false
          db.close()
        },
        get open() {
          return db.isOpen ?? open
        },
      }
    },
    codeOf(err) {
      // bun:sqlite names the code (SQLITE_BUSY); node:sqlite gives its number (errcode).
      const named = (err as { code?: unknown })?.code
      if (typeof named === 'string' && named.startsWith('SQLITE_')) return named.replace(/^(SQLITE_[A-Z]+).*/, '$1')
      const n = (err as { errcode?: unknown; errno?: unknown })?.errcode ?? (err as { errno?: unknown })?.errno
      return typeof n === 'number' ? (PRIMARY_CODES[n & 0xff] ?? `SQLITE_${n}`) : ''
    },
  }
}

function isMissing(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || code === 'ERR_UNKNOWN_BUILTIN_MODULE'
}

let loaded: Promise<SqliteEngine> | undefined

/** The engine of this process, chosen once. Throws DriverUnavailableError when there is none. */
export function loadSqliteEngine(): Promise<SqliteEngine> {
  loaded ??= choose().catch((err: unknown) => {
    loaded = undefined
    throw err
  })
  return loaded
}

async function choose(): Promise<SqliteEngine> {
  let betterError: unknown
  try {
    const engine = betterEngine((await import('better-sqlite3')).default as unknown as BetterCtor)
    // The native module loads at the first open: one now, so that a broken install falls back.
    engine.open(':memory:', 0).close()
    return engine
  } catch (err) {
    betterError = err
  }
  try {
    return await builtin()
  } catch (err) {
    // better-sqlite3 installed but broken (built for another Node) says more than "not built in".
    throw new DriverUnavailableError(WHAT, 'better-sqlite3', { cause: isMissing(betterError) ? err : betterError })
  }
}

/** The runtime's own SQLite: bun:sqlite on Bun, else node:sqlite (without its ExperimentalWarning). */
async function builtin(): Promise<SqliteEngine> {
  // Variable specifiers: Node 20's type declarations have neither module.
  if (process.versions.bun !== undefined) {
    const bunSqlite = 'bun:sqlite'
    const { Database } = (await import(bunSqlite)) as { Database: BunCtor }
    return builtinEngine('bun:sqlite', (path) => new Database(path, { create: true }))
  }
  const nodeSqlite = 'node:sqlite'
  const { DatabaseSync } = await withoutSqliteWarning(() => import(nodeSqlite) as Promise<{ DatabaseSync: NodeCtor }>)
  return builtinEngine('node:sqlite', (path, busyTimeoutMs) => new DatabaseSync(path, { timeout: busyTimeoutMs }))
}

/** Runs `load` with Node's "SQLite is an experimental feature" warning dropped; every other warning passes. */
async function withoutSqliteWarning<T>(load: () => Promise<T>): Promise<T> {
  const emitWarning = process.emitWarning
  const filtered = function(this: unknown, warning: string | Error, ...rest: unknown[]): void {
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: unknown } | undefined)?.type ?? (warning as Error)?.name
    const text = typeof warning === 'string' ? warning : warning?.message
    if (type === 'ExperimentalWarning' && /^SQLite is an experimental feature/.test(String(text))) return
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest)
  }
  process.emitWarning = filtered as typeof process.emitWarning
  try {
    return await load()
  } finally {
    if (process.emitWarning === filtered) process.emitWarning = emitWarning
  }
}
