/**
 * Which SQLite engine the catalog uses: `better-sqlite3` when the application installed it (an
 * optional peer dependency: it compiles a native module, so rollcall does not pull it in), else
 * Node's own `node:sqlite` where the running Node has it (22.13 and later), else a
 * DriverUnavailableError that names the package to install. Both engines are synchronous and are
 * given the same small interface here, so the connection code does not know which one it has.
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
  readonly name: 'better-sqlite3' | 'node:sqlite'
  open(path: string, busyTimeoutMs: number): SqliteDatabase
  /** The SQLite result-code name of an engine error (`SQLITE_BUSY`), or '' when it has none. */
  codeOf(err: unknown): string
}

/** What the message of a missing engine says: the package, and the other way out. */
const WHAT = 'SQLite catalog (the default [database] connection; Node 22.13+ has node:sqlite built in)'

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

function nodeEngine(Ctor: NodeCtor): SqliteEngine {
  return {
    name: 'node:sqlite',
    open(path, busyTimeoutMs) {
      const db = new Ctor(path, { timeout: busyTimeoutMs })
      let open = true
      return {
        prepare(sql) {
          const st = db.prepare(sql)
          const reader = typeof st.columns === 'function' ? st.columns().length > 0 : READS.test(sql)
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
      const n = (err as { errcode?: unknown })?.errcode
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
    return betterEngine((await import('better-sqlite3')).default as unknown as BetterCtor)
  } catch (err) {
    betterError = err
  }
  // A variable specifier: Node 20's type declarations have no node:sqlite.
  const builtin = 'node:sqlite'
  try {
    const mod = (await import(builtin)) as { DatabaseSync: NodeCtor }
    return nodeEngine(mod.DatabaseSync)
  } catch (err) {
    // better-sqlite3 installed but broken (built for another Node) says more than "not built in".
    throw new DriverUnavailableError(WHAT, 'better-sqlite3', { cause: isMissing(betterError) ? err : betterError })
  }
}
