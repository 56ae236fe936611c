/**
 * Helpers for the postgresql and mysql driver tests: a raw SQL connection to look at (and tamper
 * with) what the driver stored, a record of the statements drivers send, a lock holder in another
 * process to SIGKILL, and TCP endpoints that refuse or never answer.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import mysql from 'mysql2/promise'
import mysqlCore from 'mysql2'
import pg from 'pg'
import { connect, type ConnectOptions, type Coordinator } from '../../src/index.js'
import { toPositional } from '../../src/coordination/drivers/sql/sql-schema.js'
import { TIMING } from '../support/timing.js'
import { rid } from '../support/wait.js'

/** The two SQL backends. */
export type SqlBackend = 'postgresql' | 'mysql'

/** A raw connection pool to the test database; statements use `$1`-style parameters on both. */
export interface SqlAdmin {
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  /** True when a table of that name exists in the test database. */
  tableExists(name: string): Promise<boolean>
  /** Ends a server session (pg_terminate_backend / KILL). */
  killSession(id: number): Promise<void>
}

/** A raw SQL pool for `url`, closed when the test ends. */
export function sqlAdmin(t: TestContext, backend: SqlBackend, url: string): SqlAdmin {
  if (backend === 'postgresql') {
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    t.after(() => pool.end())
    const query = async (sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> => (await pool.query(sql, params)).rows
    return {
      query,
      tableExists: async (name) => (await query('SELECT to_regclass($1) IS NOT NULL AS ok', [name]))[0]?.ok === true,
      killSession: async (id) => void (await query('SELECT pg_terminate_backend($1, 5000)', [id])),
    }
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: 2, timezone: 'Z', supportBigNumbers: true, bigNumberStrings: true })
  t.after(() => pool.end())
  const query = async (sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> => {
    const { text, order } = toPositional(sql)
    const [rows] = await pool.query(text, order.map((i) => params[i]))
    return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : []
  }
  return {
    query,
    tableExists: async (name) =>
      Number((await query('SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = $1', [name]))[0]?.n) === 1,
    killSession: async (id) => void (await query(`KILL CONNECTION ${Number(id)}`)),
  }
}

/** One statement a driver sent: the connection it went through, its text and its values. */
export interface SentStatement {
  readonly session: object
  readonly text: string
  readonly values: readonly unknown[]
}

const recorders = new Set<SentStatement[]>()
const patched = new Set<SqlBackend>()

/**
 * Records every statement this test process sends through the client library (pg's Client,
 * mysql2's Connection, pooled or not) until the test ends. Tests run alongside each other: keep
 * the statements that name your own groups or locks.
 */
export function recordStatements(t: TestContext, backend: SqlBackend): SentStatement[] {
  if (!patched.has(backend)) {
    patched.add(backend)
    // Installed once and never removed, so that concurrent tests cannot undo each other's patch.
    const proto = (backend === 'postgresql' ? pg.Client.prototype : mysqlCore.Connection.prototype) as unknown as { query: (...args: unknown[]) => unknown }
    const original = proto.query
    proto.query = function(this: object, ...args: unknown[]): unknown {
      const [first, second] = args as [unknown, unknown]
      // mysql2's pool hands its connection a Query command (sql, values) instead of a string.
      const command = first as { text?: unknown; sql?: unknown; values?: unknown } | undefined
      const text = typeof first === 'string' ? first : String(command?.text ?? command?.sql ?? '')
      const values = Array.isArray(second) ? second : Array.isArray(command?.values) ? command.values : []
      for (const sent of recorders) sent.push({ session: this, text, values })
      return original.apply(this, args)
    }
  }
  const sent: SentStatement[] = []
  recorders.add(sent)
  t.after(() => recorders.delete(sent))
  return sent
}

/** A started coordinator, stopped when the test ends. */
export async function openSql(t: TestContext, url: string, options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

/** Appends a query parameter to a URL. */
export function withQuery(url: string, query: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${query}`
}

/** A process that takes lock `name` on `url`, prints "locked", then waits to be killed. */
export async function spawnLockHolder(t: TestContext, url: string, name: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/drivers/sql-lock-holder.ts', url, name], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  let out = ''
  child.stdout!.setEncoding('utf8')
  child.stdout!.on('data', (d: string) => (out += d))
  while (!out.includes('locked')) {
    const [first] = await Promise.race([once(child.stdout!, 'data'), once(child, 'exit')])
    if (child.exitCode !== null || typeof first === 'number') throw new Error(`lock holder exited early: ${out}`)
  }
  return child
}

/** A port nothing listens on (briefly bound, then closed). */
export async function closedPort(): Promise<number> {
  const s = createServer()
  s.listen(0, '127.0.0.1')
  await once(s, 'listening')
  const { port } = s.address() as { port: number }
  await new Promise((r) => s.close(r))
  return port
}

/** A TCP server on 127.0.0.1 that accepts connections and never sends a byte. */
export async function silentServer(t: TestContext): Promise<number> {
  const sockets: Socket[] = []
  const s = createServer((sock) => sockets.push(sock))
  s.listen(0, '127.0.0.1')
  await once(s, 'listening')
  t.after(() => {
    for (const sock of sockets) sock.destroy()
    s.close()
  })
  return (s.address() as { port: number }).port
}
