/**
 * The service catalog: the services table, on SQLite (default), PostgreSQL or MySQL/MariaDB.
 *
 * It holds what Nova keeps in its services table (host, binary, topic, zone, the admin flags,
 * version, report_count, last_seen_up and the row times); liveness is the drivers' business,
 * except for the db driver, whose liveness is this table. Rules the SQL enforces:
 * - register() is an upsert on (host, binary) among live rows: two workers of one host
 *   registering at once end with one row, never two and never an error;
 * - update() with a reportCount sets last_seen_up to the server's clock only when the count
 *   rises, so no admin change can make a dead service look up (Nova bug 1420848);
 * - delete() is soft (deleted_at), and a deleted row is invisible to every read.
 *
 * @example
 * ```ts
 * const catalog = await openCatalog('postgresql://rollcall@db/rollcall')
 * const svc = await catalog.register({ host: 'node-1', binary: 'rollcall-worker', topic: 'worker' })
 * await catalog.update(svc.id, { disabled: true, disabledReason: 'maintenance' })
 * ```
 */
import { isAbsolute, resolve } from 'node:path'
import { displayUrl } from '../../internal/redact.js'
import { InvalidConfigError, ServiceNotFoundError, parseBackendUrl } from '../../index.js'
import { toDate } from '../times.js'
import type { ServiceChanges, ServiceRecord, ServiceSpec } from '../types.js'
import { openMysql } from './mysql.js'
import { openPostgresql } from './postgresql.js'
import { MIGRATIONS, SCHEMA_VERSION, catalogNames, schemaTableDdl, type CatalogNames } from './schema.js'
import { dialectSql, tablePrefixProblem, type Dialect, type DialectSql, type Row, type SqlConnection } from './sql.js'
import { openSqlite } from './sqlite.js'

/** The setting named in configuration errors. */
const SETTING = '[database] connection'

/** A connection URL, understood. */
export interface CatalogTarget {
  dialect: Dialect
  /** What the client library is given: a file path (SQLite) or a URL. */
  target: string
  /** For messages: the URL with the password replaced by `***`. */
  shownAs: string
}

/** The default SQLite file name, created beside the configuration file (or in the working directory). */
export const DEFAULT_SQLITE_FILE = 'rollcall.sqlite'

/**
 * Reads a `[database] connection` URL (SQLAlchemy spellings are accepted, so Nova's work):
 * - `sqlite:///relative/file.db` (relative to `baseDir`), `sqlite:////absolute/file.db`,
 *   `sqlite://` or `sqlite:///:memory:` (a private in-memory database);
 * - `postgresql://user:pass@host:5432/db` (also `postgres://`, `postgresql+psycopg2://`);
 * - `mysql://user:pass@host:3306/db` (also `mariadb://`, `mysql+pymysql://`; query options such
 *   as `?charset=utf8` are dropped: rollcall always uses utf8mb4).
 * Throws InvalidConfigError naming the setting, the (redacted) value and the accepted forms.
 */
export function parseCatalogUrl(url: string, baseDir = process.cwd()): CatalogTarget {
  const m = /^([a-z][a-z0-9]*)(\+[a-z0-9_]+)?:\/\/(.*)$/is.exec(url.trim())
  const scheme = m?.[1]?.toLowerCase()
  const rest = m?.[3] ?? ''
  if (scheme === 'sqlite') {
    const shownAs = displayUrl(url)
    if (rest === '' || rest === '/:memory:' || rest === '/') return { dialect: 'sqlite', target: ':memory:', shownAs }
    if (!rest.startsWith('/')) throw badUrl(shownAs, 'a SQLite URL has no host: write sqlite:///relative.db or sqlite:////absolute/path.db')
    const path = rest.slice(1)
    return { dialect: 'sqlite', target: isAbsolute(path) ? path : resolve(baseDir, path), shownAs }
  }
  if (scheme !== 'postgresql' && scheme !== 'postgres' && scheme !== 'mysql' && scheme !== 'mariadb') {
    throw badUrl(displayUrl(url), 'expected sqlite:///FILE, postgresql://USER:PASS@HOST/DB or mysql://USER:PASS@HOST/DB')
  }
  // The client libraries parse URLs their own way and echo them in their errors: check the shape
  // (credentials percent-encoded, valid hosts and ports) first, with the password never shown.
  let shownAs: string
  try {
    shownAs = parseBackendUrl(url.trim()).redacted
  } catch (err) {
    throw new InvalidConfigError(SETTING, `Invalid ${SETTING}: ${(err as Error).message}`)
  }
  if (scheme === 'postgresql' || scheme === 'postgres') return { dialect: 'postgresql', target: `postgresql://${rest}`, shownAs }
  return { dialect: 'mysql', target: `mysql://${rest.replace(/\?.*$/s, '')}`, shownAs }
}

function badUrl(shownAs: string, allowed: string): InvalidConfigError {
  return new InvalidConfigError(SETTING, `Invalid ${SETTING} = "${shownAs}": ${allowed}`)
}

/** Options of {@link openCatalog}. */
export interface CatalogOptions {
  /** Prefix of the table names (default ''); lets several catalogs share one database. */
  tablePrefix?: string
  /** Directory that relative SQLite paths resolve against (default: the working directory). */
  baseDir?: string
  /** Create or upgrade the schema (default true). */
  migrate?: boolean
}

/** Opens the catalog named by `connection`, creating or upgrading its schema. */
export async function openCatalog(connection: string, options: CatalogOptions = {}): Promise<Catalog> {
  const prefix = options.tablePrefix ?? ''
  const problem = tablePrefixProblem(prefix)
  if (problem) throw new InvalidConfigError('[database] table_prefix', `Invalid [database] table_prefix = "${prefix}": ${problem}`)
  const t = parseCatalogUrl(connection, options.baseDir)
  const conn = t.dialect === 'sqlite'
    ? await openSqlite(t.target, t.shownAs)
    : t.dialect === 'postgresql'
    ? await openPostgresql(t.target, t.shownAs)
    : await openMysql(t.target, t.shownAs)
  const catalog = new Catalog(conn, prefix)
  if (options.migrate ?? true) {
    try {
      await catalog.migrate()
    } catch (err) {
      await conn.close()
      throw err
    }
  }
  return catalog
}

/** Filters of {@link Catalog.list}. */
export interface ListFilter {
  topic?: string
  host?: string
  binary?: string
}

const COLUMNS = [
  'id',
  'host',
  'binary',
  'topic',
  'availability_zone',
  'disabled',
  'disabled_reason',
  'forced_down',
  'version',
  'report_count',
  'last_seen_up',
  'created_at',
  'updated_at',
  'deleted_at',
] as const

/** The services table of one database. Build it with {@link openCatalog}. */
export class Catalog {
  /** Which database it is. */
  readonly dialect: Dialect
  /** The connection URL with any password replaced by `***`. */
  readonly shownAs: string
  readonly #connection: SqlConnection
  readonly #dialect: DialectSql
  readonly #names: CatalogNames
  readonly #table: string
  readonly #cols: string
  #queries = 0

  /** @internal Use openCatalog(). */
  constructor(connection: SqlConnection, tablePrefix = '') {
    this.#connection = connection
    this.dialect = connection.dialect
    this.shownAs = connection.shownAs
    this.#dialect = dialectSql(connection.dialect)
    this.#names = catalogNames(tablePrefix)
    this.#table = this.#dialect.q(this.#names.services)
    this.#cols = COLUMNS.map((c) => this.#dialect.q(c)).join(', ')
  }

  /** Statements sent so far (one per call, two for register/update/delete on MySQL). */
  get queryCount(): number {
    return this.#queries
  }

  /** The table names in use. */
  get tables(): { services: string; schema: string } {
    return { services: this.#names.services, schema: this.#names.schema }
  }

  /** Creates the tables or upgrades them to {@link SCHEMA_VERSION}; returns the version. Idempotent. */
  async migrate(): Promise<number> {
    return this.#connection.withSchemaLock(`rollcall:${this.#names.schema}`, async () => {
      await this.#q(schemaTableDdl(this.dialect, this.#names))
      const table = this.#dialect.q(this.#names.schema)
      const rows = (await this.#q(`SELECT version FROM ${table}`)).rows
      const current = rows.length ? Number(rows[0]!.version) : 0
      if (current > SCHEMA_VERSION) {
        throw new InvalidConfigError(
          SETTING,
          `The services table in ${this.shownAs} has schema version ${current}, newer than this rollcall knows (${SCHEMA_VERSION}): upgrade rollcall`,
        )
      }
      if (rows.length === 0) await this.#q(`INSERT INTO ${table} (version) VALUES (0)`)
      for (const m of MIGRATIONS.filter((x) => x.version > current)) {
        for (const sql of m.statements(this.dialect, this.#names)) await this.#q(sql)
        await this.#q(`UPDATE ${table} SET version = ?`, [m.version])
      }
      return SCHEMA_VERSION
    })
  }

  /**
   * Registers a service (Nova's get-or-create in Service.start): inserts a row, or, when a live
   * row for this host and binary exists, updates its topic, zone and version (never lowering the
   * version) and returns it. Safe against concurrent registrations of the same host and binary.
   */
  async register(spec: ServiceSpec): Promise<ServiceRecord> {
    const { q, now } = this.#dialect
    const t = this.#table
    const values = [spec.host, spec.binary, spec.topic, spec.availabilityZone ?? null, spec.version ?? 0]
    const insert = `INSERT INTO ${t} (host, ${q('binary')}, topic, availability_zone, version, created_at) VALUES (?, ?, ?, ?, ?, ${now})`
    if (this.dialect === 'mysql') {
      // LAST_INSERT_ID(id) makes insertId the existing row's id when the unique key matched.
      const r = await this.#q(
        `${insert} ON DUPLICATE KEY UPDATE topic = VALUES(topic), availability_zone = COALESCE(VALUES(availability_zone), availability_zone),
        version = GREATEST(version, VALUES(version)), updated_at = ${now}, id = LAST_INSERT_ID(id)`,
        values,
      )
      return this.get(r.insertId!)
    }
    const r = await this.#q(
      `${insert} ON CONFLICT (host, ${q('binary')}) WHERE deleted_at IS NULL DO UPDATE SET topic = excluded.topic,
      availability_zone = COALESCE(excluded.availability_zone, ${t}.availability_zone), version = ${
        this.dialect === 'sqlite' ? 'MAX' : 'GREATEST'
      }(${t}.version, excluded.version),
      updated_at = ${now} RETURNING ${this.#cols}`,
      values,
    )
    return toRecord(r.rows[0]!)
  }

  /** The live record with this id (ServiceNotFoundError otherwise). */
  async get(id: number): Promise<ServiceRecord> {
    const rows = (await this.#q(`SELECT ${this.#cols} FROM ${this.#table} WHERE id = ? AND deleted_at IS NULL`, [id])).rows
    if (rows.length === 0) throw new ServiceNotFoundError(`with id ${id}`)
    return toRecord(rows[0]!)
  }

  /** The live record of this host and binary, or undefined. */
  async find(host: string, binary: string): Promise<ServiceRecord | undefined> {
    const rows =
      (await this.#q(`SELECT ${this.#cols} FROM ${this.#table} WHERE host = ? AND ${this.#dialect.q('binary')} = ? AND deleted_at IS NULL`, [host, binary]))
        .rows
    return rows.length ? toRecord(rows[0]!) : undefined
  }

  /** Live records, in id order, optionally filtered: one statement whatever the count. */
  async list(filter: ListFilter = {}): Promise<ServiceRecord[]> {
    const where = ['deleted_at IS NULL']
    const params: unknown[] = []
    for (const [column, value] of [['topic', filter.topic], ['host', filter.host], ['binary', filter.binary]] as const) {
      if (value === undefined) continue
      where.push(`${this.#dialect.q(column)} = ?`)
      params.push(value)
    }
    const rows = (await this.#q(`SELECT ${this.#cols} FROM ${this.#table} WHERE ${where.join(' AND ')} ORDER BY id`, params)).rows
    return rows.map(toRecord)
  }

  /**
   * Saves changes to a live record and returns it (ServiceNotFoundError when it is gone). With
   * `reportCount`, last_seen_up becomes the server's now only if the count rose (Nova's
   * service_update). Every save sets updated_at.
   */
  async update(id: number, changes: ServiceChanges): Promise<ServiceRecord> {
    const { q, now } = this.#dialect
    // last_seen_up first: MySQL evaluates SET left to right, seeing columns already assigned.
    const sets: string[] = []
    const params: unknown[] = []
    if (changes.reportCount !== undefined) {
      sets.push(`last_seen_up = CASE WHEN ? > report_count THEN ${now} ELSE last_seen_up END`, 'report_count = ?')
      params.push(changes.reportCount, changes.reportCount)
    }
    const plain: [string, unknown][] = [
      ['disabled', changes.disabled],
      ['disabled_reason', changes.disabledReason],
      ['forced_down', changes.forcedDown],
      ['version', changes.version],
      ['availability_zone', changes.availabilityZone],
      ['topic', changes.topic],
    ]
    for (const [column, value] of plain) {
      if (value === undefined) continue
      sets.push(`${q(column)} = ?`)
      params.push(value)
    }
    sets.push(`updated_at = ${now}`)
    return this.#updateWhere(id, sets.join(', '), params)
  }

  /** Soft-deletes a live record and returns it as it was (ServiceNotFoundError when already gone). */
  async delete(id: number): Promise<ServiceRecord> {
    const before = await this.get(id)
    const r = await this.#q(`UPDATE ${this.#table} SET deleted_at = ${this.#dialect.now} WHERE id = ? AND deleted_at IS NULL`, [id])
    if (r.affected === 0) throw new ServiceNotFoundError(`with id ${id}`)
    return before
  }

  /**
   * Makes the live records of `host` in `topic` read down at once under the db driver by stamping
   * last_seen_up with the Unix epoch (the db driver's leave()). The next report brings them back.
   */
  async markDown(host: string, topic: string): Promise<number> {
    const r = await this.#q(`UPDATE ${this.#table} SET last_seen_up = ${this.#dialect.epoch} WHERE host = ? AND topic = ? AND deleted_at IS NULL`, [
      host,
      topic,
    ])
    return r.affected
  }

  /** Drops both tables and everything in them (tests, and uninstalling). Irreversible. */
  async dropTables(): Promise<void> {
    for (const t of [this.#names.services, this.#names.schema]) await this.#q(`DROP TABLE IF EXISTS ${this.#dialect.q(t)}`)
  }

  /** Closes the connection. */
  close(): Promise<void> {
    return this.#connection.close()
  }

  async #updateWhere(id: number, set: string, params: unknown[]): Promise<ServiceRecord> {
    const sql = `UPDATE ${this.#table} SET ${set} WHERE id = ? AND deleted_at IS NULL`
    if (this.#dialect.returning) {
      const r = await this.#q(`${sql} RETURNING ${this.#cols}`, [...params, id])
      if (r.rows.length === 0) throw new ServiceNotFoundError(`with id ${id}`)
      return toRecord(r.rows[0]!)
    }
    await this.#q(sql, [...params, id])
    return this.get(id)
  }

  #q(sql: string, params?: readonly unknown[]): ReturnType<SqlConnection['query']> {
    this.#queries += 1
    return this.#connection.query(sql, params)
  }
}

function text(v: unknown): string | null {
  if (v === null || v === undefined) return null
  return Buffer.isBuffer(v) ? v.toString('utf8') : String(v)
}

function time(v: unknown): Date | null {
  return toDate(v as string | Date | null)
}

/** A database row as a ServiceRecord (booleans from 0/1, times as Dates, texts from Buffers). */
function toRecord(row: Row): ServiceRecord {
  return {
    id: Number(row.id),
    host: text(row.host)!,
    binary: text(row.binary)!,
    topic: text(row.topic)!,
    availabilityZone: text(row.availability_zone),
    disabled: Boolean(Number(row.disabled)),
    disabledReason: text(row.disabled_reason),
    forcedDown: Boolean(Number(row.forced_down)),
    version: Number(row.version),
    reportCount: Number(row.report_count),
    lastSeenUp: time(row.last_seen_up),
    createdAt: time(row.created_at)!,
    updatedAt: time(row.updated_at),
    deletedAt: time(row.deleted_at),
  }
}
