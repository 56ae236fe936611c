/** rollcall's tables and statements in MySQL/MariaDB's dialect (the layout: sql/sql-schema.ts). */
import type { SqlNames, SqlStatements } from '../sql/sql-schema.js'

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

/** MySQL heartbeat: member, TTL ms, joined groups (mysql2 expands the array in `IN (?)`). */
export function mysqlRefreshSql(t: SqlNames): { update: string; live: string } {
  return {
    update: `UPDATE ${t.members} SET expires_at = TIMESTAMPADD(MICROSECOND, ? * 1000, UTC_TIMESTAMP(6))
      WHERE member_id = ? AND group_id IN (?) AND expires_at > UTC_TIMESTAMP(6)`,
    live: `SELECT group_id FROM ${t.members} WHERE member_id = ? AND group_id IN (?) AND expires_at > UTC_TIMESTAMP(6)`,
  }
}

/** Same for MySQL: counts the four tables in the current database. */
export function mysqlTablesExistSql(t: SqlNames): string {
  return `SELECT COUNT(*) = 4 AS ok FROM information_schema.tables WHERE table_schema = DATABASE()
    AND table_name IN ('${t.groups}', '${t.members}', '${t.leaders}', '${t.fence}')`
}
