/**
 * The tables rollcall keeps in PostgreSQL and MySQL/MariaDB (each dialect's statements are in
 * postgresql/postgresql-schema.ts and mysql/mysql-schema.ts).
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
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(namespace)) {
    return 'it must start with a letter or "_" and contain only letters, digits and "_" (it prefixes table names)'
  }
  if (namespace.length > MAX_NAMESPACE_LENGTH) return `it must be at most ${MAX_NAMESPACE_LENGTH} characters (table and constraint names are limited to 63)`
  return undefined
}

/** The object names for a namespace (already checked with namespaceProblem). */
export function sqlNames(namespace: string): SqlNames {
  const n = namespace.toLowerCase()
  return {
    groups: `${n}groups`,
    members: `${n}members`,
    leaders: `${n}leaders`,
    fence: `${n}fence`,
    memberGroupFk: `${n}members_group_fk`,
    channel: `${n}changes`,
  }
}

/** Names of the statements the shared membership code runs (see {@link SqlStatements}). */
export type StatementName =
  | 'probe'
  | 'createGroup'
  | 'deleteExpired'
  | 'deleteGroup'
  | 'listGroups'
  | 'groupExists'
  | 'joinMember'
  | 'deleteMember'
  | 'listMembers'
  | 'listMemberIds'
  | 'collectExpired'
  | 'updateCapabilities'
  | 'memberInfo'
  | 'setLeader'
  | 'clearLeader'
  | 'getLeader'

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
