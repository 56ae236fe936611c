/** rollcall's tables and statements in PostgreSQL's dialect (the layout: sql/sql-schema.ts). */
import type { SqlNames, SqlStatements } from '../sql/sql-schema.js'

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

/**
 * PostgreSQL heartbeat: `$1` member, `$2` joined groups (text[]), `$3` TTL ms. Returns the groups
 * whose row was live and is now refreshed.
 */
export function postgresqlRefreshSql(t: SqlNames): string {
  return `UPDATE ${t.members} SET expires_at = now() + $3::double precision * interval '1 millisecond'
    WHERE member_id = $1 AND group_id = ANY($2::text[]) AND expires_at > now() RETURNING group_id`
}

/** Whether every table exists already (then no DDL runs, so a role without CREATE works). */
export function postgresqlTablesExistSql(t: SqlNames): string {
  return `SELECT to_regclass('${t.groups}') IS NOT NULL AND to_regclass('${t.members}') IS NOT NULL
    AND to_regclass('${t.leaders}') IS NOT NULL AND to_regclass('${t.fence}') IS NOT NULL AS ok`
}
