/**
 * The contract between the dialect-neutral SQL driver (sql-driver.ts) and each dialect
 * (PostgreSQL, MySQL/MariaDB): the statements it runs, its session locks, and how its errors read.
 */
import type { DriverLock } from '../../driver.js'
import type { StatementName } from './sql-schema.js'

/** One statement's outcome. `affected` counts changed rows (or returned rows, for SELECT). */
export interface SqlResult {
  rows: Record<string, unknown>[]
  affected: number
}

/** What a failed statement means, as far as the shared code cares. */
export type SqlFailure = 'duplicate' | 'foreignKey' | 'connection'

/** A lock held on a session (connection) of its own; ended by release or by the session ending. */
export interface SessionLock extends DriverLock {
  /** The holding session's id on the server (PostgreSQL backend pid, MySQL connection id) while held. */
  readonly sessionId: number | undefined
}

/** The dialect-specific half of a SQL driver. */
export interface SqlDialect {
  /** Connects (and creates the tables if missing); fails with ConnectionError within the timeout. */
  open(): Promise<void>
  /** Closes every connection, lock sessions included. */
  close(): Promise<void>
  /** Runs one named statement (sql-schema.ts) with its canonical parameters on the shared pool. */
  run(statement: StatementName, params: readonly unknown[]): Promise<SqlResult>
  /**
   * Pushes `expires_at` forward for `member` in each of `groups` where its row is still live, in
   * one UPDATE; returns the groups that were refreshed.
   */
  refreshMembers(member: string, groups: readonly string[], ttlMs: number): Promise<string[]>
  /** Classifies an error of run()/refreshMembers(); undefined for anything else. */
  classify(err: unknown): SqlFailure | undefined
  /** A lock on a dedicated session; `onLost` is called if the session ends while the lock is held. */
  sessionLock(name: string, onLost: (reason: string) => void): SessionLock
  /** Work once the server has answered a heartbeat (not awaited by it; a failure waits for the next beat). */
  afterBeat?(): Promise<void>
}
