/**
 * {@link SqlDriver}: groups, membership with expiry and leader election on SQL tables, written once
 * for PostgreSQL and MySQL/MariaDB. Each dialect supplies a small {@link SqlDialect} (its statements, its
 * session locks, how its errors read); everything here is dialect-neutral.
 *
 * Liveness: a member row lives while `expires_at > now()` on the **server** (membership_timeout
 * after its last heartbeat); the client clock is never consulted. Any reader that lists a group
 * deletes the expired rows it saw (never its own: a member whose row lapsed finds out through its
 * heartbeat, which reports the group lost, and the Coordinator rejoins it).
 *
 * Election: the leader lock is the dialect's session lock named `leader_of_<group>` (the name
 * tooz's Redis driver uses), plus a `leaders` row naming the holder and its session, so that any
 * member can answer getLeader(). A row counts only while that session still holds the lock.
 *
 * Lock sessions: both dialects hold each lock on a server session of its own, drawn from one
 * LockSessions (sql-sessions.ts) per coordinator, which keeps a released session a few seconds for the next
 * acquire instead of opening a connection per acquire.
 */
import {
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  MemberExistsError,
  MemberNotJoinedError,
  SerializationError,
  asRollcallError,
} from '../../../errors.js'
import type { CoordinationDriver, DriverEvents, DriverLock, DriverMemberInfo, HeartbeatResult, IdKind } from '../../driver.js'
import { FirstExpiries } from '../kit/expiries.js'
import { DeadlineError, withDeadline } from '../../../internal/deadline.js'
import type { StatementName } from './sql-schema.js'
import { BreakLatch } from '../kit/break-latch.js'
import { LeaderLock, leaderLockName } from './sql-leader.js'
import type { SessionLock, SqlDialect, SqlResult } from './sql-dialect.js'
import { strictUtf8 } from '../../../internal/unicode.js'

/** Settings of {@link SqlDriver}. */
export interface SqlDriverSettings {
  readonly memberId: string
  /** How long a member row lives without a heartbeat. */
  readonly membershipTimeoutMs: number
  readonly events: DriverEvents
}

/** Longest group or member id, in UTF-8 bytes (the id columns hold 255). */
export const MAX_ID_BYTES = 255

/**
 * Why `id`, once known to have a UTF-8 form, cannot be stored by a SQL driver, or undefined when
 * it can. `maxLockChars` is the server's lock-name limit (MySQL: 64), which also bounds group ids
 * through `leader_of_<group>`.
 */
export function sqlIdProblem(kind: IdKind, id: string, maxLockChars?: number): string | undefined {
  if (id.includes('\0')) return 'it contains a NUL character, which SQL text and lock names cannot hold; remove it'
  if (kind !== 'lock' && Buffer.byteLength(id, 'utf8') > MAX_ID_BYTES) return `it is longer than ${MAX_ID_BYTES} bytes in UTF-8; use a shorter id`
  if (maxLockChars !== undefined) {
    const chars = [...id].length
    if (kind === 'lock' && chars > maxLockChars) return `lock names are at most ${maxLockChars} characters on this server (GET_LOCK); use a shorter name`
    const room = maxLockChars - leaderLockName('').length
    if (kind === 'group' && chars > room) {
      return `group ids are at most ${room} characters here, because the group's leader lock GET_LOCK('${
        leaderLockName('<group>')
      }') is limited to ${maxLockChars}; use a shorter id`
    }
  }
  return undefined
}

/** A text column as a string (MySQL VARBINARY arrives as bytes); undefined when not valid UTF-8. */
function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v
  try {
    return strictUtf8.decode(v as Uint8Array)
  } catch {
    return undefined
  }
}

/** A binary column as a plain Uint8Array (a copy: client Buffers may share a pooled slab). */
function bytes(v: unknown): Uint8Array {
  return Uint8Array.from(v as Uint8Array)
}

/** A boolean column: PostgreSQL gives true/false, MySQL 1/0. */
function truthy(v: unknown): boolean {
  return v === true || v === 1 || v === '1'
}

/** Every CoordinationDriver primitive on top of a {@link SqlDialect}. */
export class SqlDriver implements CoordinationDriver {
  readonly #dialect: SqlDialect
  readonly #settings: SqlDriverSettings
  readonly #breaks: BreakLatch
  /** When the first member of each group's latest listMemberIds() expires. */
  readonly #expiries = new FirstExpiries()

  constructor(dialect: SqlDialect, settings: SqlDriverSettings) {
    this.#dialect = dialect
    this.#settings = settings
    this.#breaks = new BreakLatch(settings.events)
  }

  async start(): Promise<void> {
    await this.#dialect.open()
  }

  async stop(): Promise<void> {
    await this.#dialect.close()
  }

  /**
   * One UPDATE of this member's rows; groups whose row is gone (or lapsed) are reported lost. No
   * answer within a quarter of membership_timeout is reported as a broken link (`suspended`), well
   * before the rows lapse; the beat itself waits up to membership_timeout, so a slow server (a
   * loaded machine, a first beat at start) is late, not failed, and its answer says `reconnected`.
   */
  async heartbeat(joined: ReadonlyMap<string, Uint8Array>): Promise<HeartbeatResult> {
    const nextBeatMs = this.#settings.membershipTimeoutMs
    const groups = [...joined.keys()]
    const beat = groups.length === 0
      ? this.#dialect.run('probe', []).then(() => [])
      : this.#dialect.refreshMembers(this.#settings.memberId, groups, nextBeatMs)
    const silent = setTimeout(() => this.#breaks.down(new DeadlineError(nextBeatMs / 4)), nextBeatMs / 4)
    silent.unref()
    let refreshed: Set<string>
    try {
      refreshed = new Set(await this.#guard(() => withDeadline(beat, nextBeatMs)))
    } finally {
      clearTimeout(silent)
    }
    this.#dialect.afterBeat?.().catch(() => {})
    const lostGroups = groups.filter((g) => !refreshed.has(g))
    return { nextBeatMs, ...(lostGroups.length ? { lostGroups } : {}), locks: { refreshed: false } }
  }

  async createGroup(group: string): Promise<void> {
    try {
      await this.#run('createGroup', [group])
    } catch (err) {
      if (this.#dialect.classify(err) === 'duplicate') throw new GroupExistsError(group, { cause: err })
      throw err
    }
  }

  async deleteGroup(group: string): Promise<void> {
    // Dead rows must not keep a group alive; live ones keep it through the foreign key, which
    // also settles a race with a concurrent join.
    await this.#run('deleteExpired', [group])
    let result: SqlResult
    try {
      result = await this.#run('deleteGroup', [group])
    } catch (err) {
      if (this.#dialect.classify(err) === 'foreignKey') throw new GroupNotEmptyError(group, { cause: err })
      throw err
    }
    if (result.affected === 0) throw new GroupNotFoundError(group)
  }

  async listGroups(): Promise<string[]> {
    const { rows } = await this.#run('listGroups', [])
    return rows.map((r) => this.#id(r.group_id, 'group')).filter((g): g is string => g !== undefined)
  }

  /** One round trip; a lapsed row of ours is not a live member, so it gives way (a rejoin). */
  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    const me = this.#settings.memberId
    let result: SqlResult
    try {
      result = await this.#run('joinMember', [group, me, capabilities, this.#settings.membershipTimeoutMs])
    } catch (err) {
      const failure = this.#dialect.classify(err)
      if (failure === 'duplicate') throw new MemberExistsError(group, me, { cause: err })
      if (failure === 'foreignKey') throw new GroupNotFoundError(group, { cause: err })
      throw err
    }
    if (result.affected === 0) throw new MemberExistsError(group, me)
  }

  async leaveGroup(group: string): Promise<void> {
    const { affected } = await this.#run('deleteMember', [group, this.#settings.memberId])
    if (affected === 0) await this.#notJoined(group, this.#settings.memberId)
  }

  /** One query; expired rows of others seen on the way are deleted afterwards. */
  async listMembers(group: string): Promise<Map<string, Uint8Array>> {
    const members = new Map<string, Uint8Array>()
    await this.#list('listMembers', group, (member, row) => members.set(member, bytes(row.capabilities)))
    return members
  }

  /** listMembers() without the capabilities column (the same liveness rule and collection), noting when the first expires. */
  async listMemberIds(group: string): Promise<string[]> {
    const ids: string[] = []
    let soonestMs = Infinity
    this.#expiries.note(group, Infinity)
    await this.#list('listMemberIds', group, (member, row) => {
      ids.push(member)
      soonestMs = Math.min(soonestMs, Number(row.ttl_ms))
    })
    this.#expiries.note(group, soonestMs)
    return ids
  }

  async getMemberCapabilities(group: string, member: string): Promise<Uint8Array> {
    return (await this.getMemberInfo(group, member)).capabilities
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    const me = this.#settings.memberId
    const { affected } = await this.#run('updateCapabilities', [group, me, capabilities, this.#settings.membershipTimeoutMs])
    if (affected === 0) await this.#notJoined(group, me)
  }

  /** created_at is the join, updated_at the last capabilities change, both by the server's clock. */
  async getMemberInfo(group: string, member: string): Promise<DriverMemberInfo> {
    const { rows } = await this.#run('memberInfo', [group, member])
    const row = rows[0]
    if (!row) throw new GroupNotFoundError(group)
    if (row.member_id === null || row.member_id === undefined) throw new MemberNotJoinedError(group, member)
    return { capabilities: bytes(row.capabilities), createdAt: row.created_at as Date, updatedAt: row.updated_at as Date }
  }

  createLock(name: string): DriverLock {
    const lock: SessionLock = this.#dialect.sessionLock(name, (reason) => this.#settings.events.lockLost(lock, reason))
    return lock
  }

  leaderLock(group: string): DriverLock {
    const lock: LeaderLock = new LeaderLock(
      group,
      this.#settings.memberId,
      (s, p) => this.#run(s, p),
      (onLost) => this.#dialect.sessionLock(leaderLockName(group), onLost),
      (reason) => this.#settings.events.lockLost(lock, reason),
    )
    return lock
  }

  /** The member named by the group's leaders row, if its session still holds the leader lock. */
  async getLeader(group: string): Promise<string | null> {
    const { rows } = await this.#run('getLeader', [group, leaderLockName(group)])
    return rows[0] ? this.#id(rows[0].member_id, `leader of group ${JSON.stringify(group)}`) ?? null : null
  }

  /** Throws MemberNotJoinedError, or GroupNotFoundError when the group itself is missing. */
  async #notJoined(group: string, member: string): Promise<never> {
    const { rows } = await this.#run('groupExists', [group])
    if (rows.length === 0) throw new GroupNotFoundError(group)
    throw new MemberNotJoinedError(group, member)
  }

  nextExpiryAt(group: string): number | undefined {
    return this.#expiries.get(group)
  }

  /** Runs a member listing, hands each live row to `live`, then collects others' expired rows. */
  async #list(statement: 'listMembers' | 'listMemberIds', group: string, live: (member: string, row: Record<string, unknown>) => void): Promise<void> {
    const { rows } = await this.#run(statement, [group])
    if (rows.length === 0) throw new GroupNotFoundError(group)
    let expired = 0
    for (const row of rows) {
      if (row.member_id === null || row.member_id === undefined) continue
      const member = this.#id(row.member_id, `member of group ${JSON.stringify(group)}`)
      if (member === undefined) continue
      if (truthy(row.live)) live(member, row)
      else if (member !== this.#settings.memberId) expired += 1
    }
    if (expired > 0) {
      await this.#run('collectExpired', [group, this.#settings.memberId]).catch((err: unknown) => {
        this.#settings.events.warning(asRollcallError(err, `Deleting ${expired} expired member row(s) of group ${JSON.stringify(group)}`))
      })
    }
  }

  #id(v: unknown, what: string): string | undefined {
    const id = text(v)
    if (id === undefined) this.#settings.events.warning(new SerializationError(`Skipped a ${what} whose id is not valid UTF-8 (written by another program?)`))
    return id
  }

  #run(statement: StatementName, params: readonly unknown[]): Promise<SqlResult> {
    return this.#guard(() => this.#dialect.run(statement, params))
  }

  /** Reports the shared connection going down (`suspended`) and coming back (`reconnected`). */
  async #guard<T>(fn: () => Promise<T>): Promise<T> {
    let result: T
    try {
      result = await fn()
    } catch (err) {
      if (this.#dialect.classify(err) === 'connection') this.#breaks.down(err)
      throw err
    }
    this.#breaks.up()
    return result
  }
}
