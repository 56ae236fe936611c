/** The raw floor on PostgreSQL and MariaDB: rollcall's tables (tooz keeps no groups there), with pg and mysql2. */
import { createHash } from 'node:crypto'
import pg from 'pg'
import mysql from 'mysql2/promise'
import type { RawBackend, RawMember } from '../raw.js'

/** tooz's PostgreSQL lock key: the first two bytes of md5(name), as two integers. */
function pgLockKey(name: string): [number, number] {
  const d = createHash('md5').update(name).digest()
  return [d[0]!, d[1]!]
}

export class PostgresRaw implements RawBackend {
  readonly #pool: pg.Pool
  constructor(url: string) {
    this.#pool = new pg.Pool({ connectionString: url.replace(/\?.*$/, ''), max: 2 })
  }
  async populate(group: string, members: readonly RawMember[], ttl: number): Promise<void> {
    await this.#pool.query('INSERT INTO rollcall_groups (group_id, created_at) VALUES ($1, now()) ON CONFLICT DO NOTHING', [group])
    for (let i = 0; i < members.length; i += 5000) {
      const chunk = members.slice(i, i + 5000)
      await this.#pool.query(
        `INSERT INTO rollcall_members (group_id, member_id, capabilities, created_at, updated_at, expires_at)
        SELECT $1, m, c, now(), now(), now() + $4 * interval '1 second' FROM unnest($2::text[], $3::bytea[]) AS t(m, c)`,
        [
          group,
          chunk.map((m) => m.id),
          chunk.map((m) => Buffer.from(m.caps)),
          ttl,
        ],
      )
    }
  }
  async readIds(group: string): Promise<string[]> {
    return (await this.#pool.query('SELECT member_id FROM rollcall_members WHERE group_id = $1 AND expires_at > now()', [group])).rows.map((r) => r.member_id)
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    const { rows } = await this.#pool.query('SELECT member_id, capabilities FROM rollcall_members WHERE group_id = $1 AND expires_at > now()', [group])
    return new Map(rows.map((r) => [r.member_id as string, r.capabilities as Uint8Array]))
  }
  async beat(id: string, ttl: number): Promise<void> {
    await this.#pool.query("UPDATE rollcall_members SET expires_at = now() + $2 * interval '1 second' WHERE member_id = $1 AND expires_at > now()", [id, ttl])
  }
  async join(group: string, m: RawMember, ttl: number): Promise<void> {
    await this.#pool.query(
      `INSERT INTO rollcall_members (group_id, member_id, capabilities, created_at, updated_at, expires_at)
      VALUES ($1, $2, $3, now(), now(), now() + $4 * interval '1 second')`,
      [group, m.id, Buffer.from(m.caps), ttl],
    )
  }
  async lockCycle(name: string): Promise<void> {
    const c = await this.#pool.connect()
    try {
      const k = pgLockKey(name)
      if (!(await c.query('SELECT pg_try_advisory_lock($1, $2) AS ok', k)).rows[0].ok) throw new Error('raw pg lock busy')
      await c.query('SELECT pg_advisory_unlock($1, $2)', k)
    } finally {
      c.release()
    }
  }
  async drop(group: string): Promise<void> {
    await this.#pool.query('DELETE FROM rollcall_members WHERE group_id = $1', [group])
    await this.#pool.query('DELETE FROM rollcall_groups WHERE group_id = $1', [group])
  }
  async close(): Promise<void> {
    await this.#pool.end()
  }
}

export class MysqlRaw implements RawBackend {
  readonly #pool: mysql.Pool
  constructor(url: string) {
    this.#pool = mysql.createPool({ uri: url.replace(/\?.*$/, ''), connectionLimit: 2 })
  }
  async populate(group: string, members: readonly RawMember[], ttl: number): Promise<void> {
    await this.#pool.query('INSERT IGNORE INTO rollcall_groups (group_id, created_at) VALUES (?, UTC_TIMESTAMP(6))', [group])
    for (let i = 0; i < members.length; i += 2000) {
      const rows = members.slice(i, i + 2000).map((m) => [group, m.id, Buffer.from(m.caps)])
      await this.#pool.query(
        `INSERT INTO rollcall_members (group_id, member_id, capabilities, created_at, updated_at, expires_at)
        SELECT v.g, v.m, v.c, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), TIMESTAMPADD(SECOND, ?, UTC_TIMESTAMP(6)) FROM (${
          rows.map(() => 'SELECT ? AS g, ? AS m, ? AS c').join(' UNION ALL ')
        }) v`,
        [ttl, ...rows.flat()],
      )
    }
  }
  async readIds(group: string): Promise<string[]> {
    const [rows] = await this.#pool.query('SELECT member_id FROM rollcall_members WHERE group_id = ? AND expires_at > UTC_TIMESTAMP(6)', [group])
    return (rows as any[]).map((r) => String(r.member_id))
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    const [rows] = await this.#pool.query('SELECT member_id, capabilities FROM rollcall_members WHERE group_id = ? AND expires_at > UTC_TIMESTAMP(6)', [group])
    return new Map((rows as any[]).map((r) => [String(r.member_id), r.capabilities as Uint8Array]))
  }
  async beat(id: string, ttl: number): Promise<void> {
    await this.#pool.query(
      'UPDATE rollcall_members SET expires_at = TIMESTAMPADD(SECOND, ?, UTC_TIMESTAMP(6)) WHERE member_id = ? AND expires_at > UTC_TIMESTAMP(6)',
      [ttl, id],
    )
  }
  async join(group: string, m: RawMember, ttl: number): Promise<void> {
    await this.#pool.query(
      `INSERT INTO rollcall_members (group_id, member_id, capabilities, created_at, updated_at, expires_at)
      VALUES (?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), TIMESTAMPADD(SECOND, ?, UTC_TIMESTAMP(6)))`,
      [group, m.id, Buffer.from(m.caps), ttl],
    )
  }
  async lockCycle(name: string): Promise<void> {
    const c = await this.#pool.getConnection()
    try {
      const [r] = await c.query('SELECT GET_LOCK(?, 0) AS ok', [name])
      if ((r as any[])[0].ok !== 1) throw new Error('raw mysql lock busy')
      await c.query('SELECT RELEASE_LOCK(?)', [name])
    } finally {
      c.release()
    }
  }
  async drop(group: string): Promise<void> {
    await this.#pool.query('DELETE FROM rollcall_members WHERE group_id = ?', [group])
    await this.#pool.query('DELETE FROM rollcall_groups WHERE group_id = ?', [group])
  }
  async close(): Promise<void> {
    await this.#pool.end()
  }
}
