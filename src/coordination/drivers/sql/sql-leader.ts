/**
 * The SQL drivers' leader lock: the dialect's session lock `leader_of_<group>` plus the `leaders`
 * row that lets any member's getLeader() name the holder and its session.
 */
import type { DriverLock, LockWaiting } from '../../driver.js'
import type { StatementName } from './sql-schema.js'
import type { SessionLock, SqlResult } from './sql-dialect.js'

/** The name of the lock whose holder leads `group`. */
export function leaderLockName(group: string): string {
  return `leader_of_${group}`
}

/**
 * The leader lock of one group: the session lock `leader_of_<group>` plus the `leaders` row that
 * lets getLeader() name the holder. The row is written before acquisition is reported, so a
 * member that sees itself leading is already visible to getLeader().
 */
export class LeaderLock implements DriverLock {
  /** The session lock's wait model, each acquisition it reports followed by the leaders row. */
  readonly waiting: LockWaiting
  readonly #group: string
  readonly #member: string
  readonly #run: (statement: StatementName, params: readonly unknown[]) => Promise<SqlResult>
  readonly #inner: SessionLock
  #session: number | undefined

  constructor(
    group: string,
    member: string,
    run: (s: StatementName, p: readonly unknown[]) => Promise<SqlResult>,
    makeLock: (onLost: (reason: string) => void) => SessionLock,
    onLost: (reason: string) => void,
  ) {
    this.#group = group
    this.#member = member
    this.#run = run
    this.#inner = makeLock(onLost)
    this.waiting = this.#claiming(this.#inner.waiting)
  }

  get fencingToken(): bigint | undefined {
    return this.#inner.fencingToken
  }

  async tryAcquire(): Promise<boolean> {
    return (await this.#inner.tryAcquire()) && this.#claim()
  }

  async release(): Promise<boolean> {
    const session = this.#session
    this.#session = undefined
    // Best effort: a stale row is harmless, getLeader() ignores rows whose session lost the lock.
    if (session !== undefined) await this.#run('clearLeader', [this.#group, session]).catch(() => undefined)
    return this.#inner.release()
  }

  refresh(): Promise<boolean> {
    return this.#inner.isStillOwner()
  }

  isStillOwner(): Promise<boolean> {
    return this.#inner.isStillOwner()
  }

  break(): Promise<boolean> {
    return this.#inner.break()
  }

  /** `inner` with each acquisition followed by the leaders row. */
  #claiming(inner: LockWaiting): LockWaiting {
    switch (inner.kind) {
      case 'poll':
        return inner
      case 'notify':
        return {
          kind: 'notify',
          waitForRelease: (signal, timeoutMs) => inner.waitForRelease(signal, timeoutMs),
          tryAcquireAsWaiter: async (mode) => (await inner.tryAcquireAsWaiter(mode)) && this.#claim(),
          endWait: () => inner.endWait(),
        }
      case 'queue':
        return { kind: 'queue', acquireWaiting: async (signal, mode) => (await inner.acquireWaiting(signal, mode)) && this.#claim() }
    }
  }

  async #claim(): Promise<true> {
    const session = this.#inner.sessionId
    try {
      await this.#run('setLeader', [this.#group, this.#member, session])
    } catch (err) {
      await this.#inner.release().catch(() => false)
      throw err
    }
    this.#session = session
    return true
  }
}
