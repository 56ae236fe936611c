/**
 * The tables rollcall keeps in PostgreSQL and MySQL/MariaDB, and every statement run on them.
 *
 * tooz's SQL drivers are lock-only and store nothing, so this layout is rollcall's own (Python
 * tooz never reads it). Four objects, all named `<namespace><name>` (default prefix `rollcall_`):
 *
 * | object    | columns                                                                        |
 * |-----------|--------------------------------------------------------------------------------|
 * | `groups`  | group_id (PK), created_at                                                      |
 * | `members` | group_id (FK → groups), member_id, capabilities (oslo msgpack bytes),          |
 * |           | created_at, updated_at (capabilities last set), expires_at; PK (group, member) |
 * | `leaders` | group_id (PK), member_id, session_id (holder's backend pid / connection id), elected_at |
 * | `fence`   | PostgreSQL: a SEQUENCE; MySQL: one counter row (id 1) bumped with LAST_INSERT_ID(expr) |
 *
 * Every time is the **server's** clock (`now()`, `UTC_TIMESTAMP(6)`): a member is alive while
 * `expires_at > now()` on the server, so client clocks never matter. The foreign key makes
 * join-versus-delete races safe without transactions: joining a group being deleted fails with a
 * missing parent, deleting a group someone just joined fails with a referenced row.
 *
 * Statements are written once per dialect with numbered parameters (`$1`, `$2`, ...) in one
 * canonical order per statement; the MySQL dialect rewrites them to positional `?`.
 */

/** Object names derived from the namespace prefix. */
export interface SqlNames {
  readonly groups: string
  readonly members: string
  readonly leaders: string
  readonly fence: string
  /** The foreign key constraint (MySQL wants it unique per database). */
  readonly memberGroupFk: string
  /** PostgreSQL NOTIFY channel carrying the id of a group whose members changed. */
  readonly channel: string
}

/** Longest namespace accepted: the longest derived name must fit in 63 characters. */
export const MAX_NAMESPACE_LENGTH = 40

/**
 * Returns why `namespace` cannot prefix table names, or undefined when it can. Names are pasted
 * into SQL unquoted, hence the strict rule.
 */
export function namespaceProblem(namespace: string): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(namespace)) return 'it must start with a letter or "_" and contain only letters, digits and "_" (it prefixes table names)'
  if (namespace.length > MAX_NAMESPACE_LENGTH) return `it must be at most ${MAX_NAMESPACE_LENGTH} characters (table and constraint names are limited to 63)`
  return undefined
}

/** The object names for a namespace (already checked with namespaceProblem). */
export function sqlNames(namespace: string): SqlNames {
  const n = namespace.toLowerCase()
  return {
    groups: `${n}groups`, members: `${n}members`, leaders: `${n}leaders`, fence: `${n}fence`,
    memberGroupFk: `${n}members_group_fk`, channel: `${n}changes`,
  }
}

/** Names of the statements the shared membership code runs (see {@link SqlStatements}). */
export type StatementName =
  | 'probe' | 'createGroup' | 'deleteExpired' | 'deleteGroup' | 'listGroups' | 'groupExists'
  | 'joinMember' | 'deleteMember' | 'listMembers' | 'listMemberIds' | 'collectExpired'
  | 'updateCapabilities' | 'memberInfo' | 'setLeader' | 'clearLeader' | 'getLeader'

/**
 * Every statement, per dialect. Parameters by statement (canonical order):
 * - createGroup, deleteExpired, deleteGroup, groupExists: `$1` group
 * - deleteMember, memberInfo: `$1` group, `$2` member
 * - joinMember, updateCapabilities: `$1` group, `$2` member, `$3` capabilities, `$4` TTL ms.
 *   joinMember inserts the row, or replaces this member's own lapsed row, in one round trip. A
 *   live row in the way (already a member): 0 rows on PostgreSQL, a duplicate key error on MySQL.
 *   A missing group: a foreign key error.
 * - listMembers: `$1` group. Rows: member_id (null for an empty group), capabilities, live.
 *   No row at all: the group does not exist. listMemberIds: the same without capabilities, plus
 *   ttl_ms, the milliseconds (server clock) until the row expires.
 * - collectExpired: `$1` group, `$2` the member that must never be collected (self)
 * - setLeader: `$1` group, `$2` member, `$3` session id; clearLeader: `$1` group, `$2` session id
 * - getLeader: `$1` group, `$2` leader lock name
 * Statements that change membership report the rows they touched as their row count, on
 * PostgreSQL through `SELECT pg_notify(...)` over the changed rows (one NOTIFY per change).
 */
export type SqlStatements = Readonly<Record<StatementName, string>>

/** PostgreSQL DDL: run inside one transaction holding the schema advisory lock. */
export function postgresqlSchema(t: SqlNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.groups} (
      group_id text PRIMARY KEY,
      created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE TABLE IF NOT EXISTS ${t.members} (
      group_id text NOT NULL,
      member_id text NOT NULL,
      capabilities bytea NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (group_id, member_id),
      CONSTRAINT ${t.memberGroupFk} FOREIGN KEY (group_id) REFERENCES ${t.groups} (group_id))`,
    `CREATE TABLE IF NOT EXISTS ${t.leaders} (
      group_id text PRIMARY KEY,
      member_id text NOT NULL,
      session_id bigint NOT NULL,
      elected_at timestamptz NOT NULL)`,
    `CREATE SEQUENCE IF NOT EXISTS ${t.fence}`,
  ]
}

/** MySQL/MariaDB DDL. Ids are VARBINARY: byte-exact, case-sensitive, no trailing-space padding. */
export function mysqlSchema(t: SqlNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.groups} (
      group_id VARBINARY(255) NOT NULL PRIMARY KEY,
      created_at DATETIME(6) NOT NULL) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.members} (
      group_id VARBINARY(255) NOT NULL,
      member_id VARBINARY(255) NOT NULL,
      capabilities MEDIUMBLOB NOT NULL,
      created_at DATETIME(6) NOT NULL,
      updated_at DATETIME(6) NOT NULL,
      expires_at DATETIME(6) NOT NULL,
      PRIMARY KEY (group_id, member_id),
      CONSTRAINT ${t.memberGroupFk} FOREIGN KEY (group_id) REFERENCES ${t.groups} (group_id)) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.leaders} (
      group_id VARBINARY(255) NOT NULL PRIMARY KEY,
      member_id VARBINARY(255) NOT NULL,
      session_id BIGINT UNSIGNED NOT NULL,
      elected_at DATETIME(6) NOT NULL) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.fence} (
      id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
      value BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB`,
    `INSERT IGNORE INTO ${t.fence} (id, value) VALUES (1, 0)`,
  ]
}

/** The PostgreSQL statements. `now()` is the statement's (autocommit: the transaction's) start. */
export function postgresqlStatements(t: SqlNames): SqlStatements {
  const ttl = `now() + $4::double precision * interval '1 millisecond'`
  // A data-modifying CTE plus pg_notify: one round trip, and a NOTIFY only when a row changed.
  const notifying = (dml: string): string => `WITH changed AS (${dml} RETURNING group_id) SELECT pg_notify('${t.channel}', group_id) FROM changed`
  return {
    probe: 'SELECT 1',
    createGroup: `INSERT INTO ${t.groups} (group_id, created_at) VALUES ($1, now())`,
    deleteExpired: `DELETE FROM ${t.members} WHERE group_id = $1 AND expires_at <= now()`,
    deleteGroup: notifying(`DELETE FROM ${t.groups} WHERE group_id = $1`),
    listGroups: `SELECT group_id FROM ${t.groups}`,
    groupExists: `SELECT 1 FROM ${t.groups} WHERE group_id = $1`,
    // A conflicting row is taken over only when it has lapsed (a lapsed row of ours is not a live
    // member); a live one makes the upsert return nothing, and nothing is NOTIFYed.
    joinMember: notifying(`INSERT INTO ${t.members} AS m (group_id, member_id, capabilities, created_at, updated_at, expires_at)
      VALUES ($1, $2, $3, now(), now(), ${ttl})
      ON CONFLICT (group_id, member_id) DO UPDATE SET capabilities = EXCLUDED.capabilities, created_at = EXCLUDED.created_at,
        updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at WHERE m.expires_at <= now()`),
    deleteMember: notifying(`DELETE FROM ${t.members} WHERE group_id = $1 AND member_id = $2`),
    listMembers: `SELECT m.member_id, m.capabilities, m.expires_at > now() AS live
      FROM ${t.groups} g LEFT JOIN ${t.members} m ON m.group_id = g.group_id WHERE g.group_id = $1`,
    listMemberIds: `SELECT m.member_id, m.expires_at > now() AS live, EXTRACT(EPOCH FROM m.expires_at - now())::float8 * 1000 AS ttl_ms
      FROM ${t.groups} g LEFT JOIN ${t.members} m ON m.group_id = g.group_id WHERE g.group_id = $1`,
    collectExpired: `DELETE FROM ${t.members} WHERE group_id = $1 AND member_id <> $2 AND expires_at <= now()`,
    updateCapabilities: notifying(`UPDATE ${t.members} SET capabilities = $3, updated_at = now(), expires_at = ${ttl}
      WHERE group_id = $1 AND member_id = $2 AND expires_at > now()`),
    memberInfo: `SELECT m.member_id, m.capabilities, m.created_at, m.updated_at FROM ${t.groups} g
      LEFT JOIN ${t.members} m ON m.group_id = g.group_id AND m.member_id = $2 AND m.expires_at > now() WHERE g.group_id = $1`,
    setLeader: `INSERT INTO ${t.leaders} (group_id, member_id, session_id, elected_at) VALUES ($1, $2, $3, now())
      ON CONFLICT (group_id) DO UPDATE SET member_id = EXCLUDED.member_id, session_id = EXCLUDED.session_id, elected_at = EXCLUDED.elected_at`,
    clearLeader: `DELETE FROM ${t.leaders} WHERE group_id = $1 AND session_id = $2`,
    // The row counts only while its session still holds the advisory lock (tooz's key: the first
    // two bytes of md5(name), as two int4 → classid, objid, objsubid 2), in this database.
    getLeader: `SELECT l.member_id FROM ${t.leaders} l JOIN pg_locks p ON p.pid = l.session_id
      WHERE l.group_id = $1 AND p.locktype = 'advisory' AND p.granted AND p.objsubid = 2
        AND p.classid = get_byte(decode(md5(convert_to($2::text, 'UTF8')), 'hex'), 0)::oid
        AND p.objid = get_byte(decode(md5(convert_to($2::text, 'UTF8')), 'hex'), 1)::oid
        AND p.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  }
}

/** The MySQL statements. UTC_TIMESTAMP(6) does not depend on the session's time zone. */
export function mysqlStatements(t: SqlNames): SqlStatements {
  const now = 'UTC_TIMESTAMP(6)'
  const ttl = `TIMESTAMPADD(MICROSECOND, $4 * 1000, ${now})`
  return {
    probe: 'SELECT 1',
    createGroup: `INSERT INTO ${t.groups} (group_id, created_at) VALUES ($1, ${now})`,
    deleteExpired: `DELETE FROM ${t.members} WHERE group_id = $1 AND expires_at <= ${now}`,
    deleteGroup: `DELETE FROM ${t.groups} WHERE group_id = $1`,
    listGroups: `SELECT group_id FROM ${t.groups}`,
    groupExists: `SELECT 1 FROM ${t.groups} WHERE group_id = $1`,
    // Two statements in one round trip (the pool allows multiple statements): clear a lapsed row of
    // ours, which is not a live member, then insert; a live row makes the INSERT fail as a duplicate.
    // (An upsert cannot tell "inserted" from "left alone": mysql2 counts found rows, 1 for both.)
    joinMember: `DELETE FROM ${t.members} WHERE group_id = $1 AND member_id = $2 AND expires_at <= ${now};
      INSERT INTO ${t.members} (group_id, member_id, capabilities, created_at, updated_at, expires_at)
      VALUES ($1, $2, $3, ${now}, ${now}, ${ttl})`,
    deleteMember: `DELETE FROM ${t.members} WHERE group_id = $1 AND member_id = $2`,
    listMembers: `SELECT m.member_id, m.capabilities, m.expires_at > ${now} AS live
      FROM ${t.groups} g LEFT JOIN ${t.members} m ON m.group_id = g.group_id WHERE g.group_id = $1`,
    listMemberIds: `SELECT m.member_id, m.expires_at > ${now} AS live, TIMESTAMPDIFF(MICROSECOND, ${now}, m.expires_at) DIV 1000 AS ttl_ms
      FROM ${t.groups} g LEFT JOIN ${t.members} m ON m.group_id = g.group_id WHERE g.group_id = $1`,
    collectExpired: `DELETE FROM ${t.members} WHERE group_id = $1 AND member_id <> $2 AND expires_at <= ${now}`,
    updateCapabilities: `UPDATE ${t.members} SET capabilities = $3, updated_at = ${now}, expires_at = ${ttl}
      WHERE group_id = $1 AND member_id = $2 AND expires_at > ${now}`,
    memberInfo: `SELECT m.member_id, m.capabilities, m.created_at, m.updated_at FROM ${t.groups} g
      LEFT JOIN ${t.members} m ON m.group_id = g.group_id AND m.member_id = $2 AND m.expires_at > ${now} WHERE g.group_id = $1`,
    setLeader: `INSERT INTO ${t.leaders} (group_id, member_id, session_id, elected_at) VALUES ($1, $2, $3, ${now})
      ON DUPLICATE KEY UPDATE member_id = VALUES(member_id), session_id = VALUES(session_id), elected_at = VALUES(elected_at)`,
    clearLeader: `DELETE FROM ${t.leaders} WHERE group_id = $1 AND session_id = $2`,
    // IS_USED_LOCK() names the connection holding the GET_LOCK lock, or NULL: a row whose session
    // no longer holds the lock never matches.
    getLeader: `SELECT member_id FROM ${t.leaders} WHERE group_id = $1 AND session_id = IS_USED_LOCK($2)`,
  }
}

/**
 * PostgreSQL heartbeat: `$1` member, `$2` joined groups (text[]), `$3` TTL ms. Returns the groups
 * whose row was live and is now refreshed.
 */
export function postgresqlRefreshSql(t: SqlNames): string {
  return `UPDATE ${t.members} SET expires_at = now() + $3::double precision * interval '1 millisecond'
    WHERE member_id = $1 AND group_id = ANY($2::text[]) AND expires_at > now() RETURNING group_id`
}

/** MySQL heartbeat: member, TTL ms, joined groups (mysql2 expands the array in `IN (?)`). */
export function mysqlRefreshSql(t: SqlNames): { update: string; live: string } {
  return {
    update: `UPDATE ${t.members} SET expires_at = TIMESTAMPADD(MICROSECOND, ? * 1000, UTC_TIMESTAMP(6))
      WHERE member_id = ? AND group_id IN (?) AND expires_at > UTC_TIMESTAMP(6)`,
    live: `SELECT group_id FROM ${t.members} WHERE member_id = ? AND group_id IN (?) AND expires_at > UTC_TIMESTAMP(6)`,
  }
}

/** Whether every table exists already (then no DDL runs, so a role without CREATE works). */
export function postgresqlTablesExistSql(t: SqlNames): string {
  return `SELECT to_regclass('${t.groups}') IS NOT NULL AND to_regclass('${t.members}') IS NOT NULL
    AND to_regclass('${t.leaders}') IS NOT NULL AND to_regclass('${t.fence}') IS NOT NULL AS ok`
}

/** Same for MySQL: counts the four tables in the current database. */
export function mysqlTablesExistSql(t: SqlNames): string {
  return `SELECT COUNT(*) = 4 AS ok FROM information_schema.tables WHERE table_schema = DATABASE()
    AND table_name IN ('${t.groups}', '${t.members}', '${t.leaders}', '${t.fence}')`
}

/**
 * Rewrites `$n` parameters to positional `?` and returns the order in which to pass the
 * canonical parameters (a parameter used twice is passed twice).
 */
export function toPositional(sql: string): { text: string; order: number[] } {
  const order: number[] = []
  const text = sql.replace(/\$(\d+)/g, (_m, n: string) => {
    order.push(Number(n) - 1)
    return '?'
  })
  return { text, order }
}
