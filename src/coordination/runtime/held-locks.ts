/**
 * The locks one Coordinator holds (leader locks included), and what becomes of them: refreshed
 * after each beat where the driver did not refresh them itself, reported lost when the backend
 * says so or the connection is lost, and — once given up — released on the backend as soon as it
 * answers again, so that a lease not lapsed yet blocks nobody.
 * @internal
 */
import { ConnectionError } from '../../errors.js'
import type { DriverLock } from '../driver.js'
import type { HeldLock } from '../lock.js'
import { settleLapses } from './heartbeat.js'

/** Why a lock the beat could not keep is lost. */
export const LEASE_LAPSED = 'its lease lapsed or another holder took it'

/** The held locks of one Coordinator. @internal */
export class HeldLocks {
  readonly #held = new Set<HeldLock>()
  /** Driver locks given up on a lost connection, to release on the backend once it answers. */
  readonly #abandoned = new Set<DriverLock>()
  /** Releases of abandoned driver locks under way: nothing takes such a lock again until its release has settled. */
  readonly #releasing = new Map<DriverLock, Promise<unknown>>()
  /** Acquisitions under way, by driver lock (acquiring()): no release of an abandoned lock starts meanwhile. */
  readonly #acquiring = new Map<DriverLock, number>()

  get size(): number {
    return this.#held.size
  }

  /** The driver locks of the locks held now. */
  driverLocks(): Set<DriverLock> {
    return new Set([...this.#held].map((l) => l.driverLock))
  }

  /** Records a grant (a lock, a leader lock): a lapse in this process due by now is told first (settleLapses). */
  track(lock: HeldLock): void {
    settleLapses()
    this.#held.add(lock)
  }

  untrack(lock: HeldLock): void {
    this.#held.delete(lock)
  }

  /** The driver's beat refreshed the locks itself and names those it could not keep. */
  lostInBeat(lostLocks: readonly DriverLock[]): void {
    // A lock released while the beat ran is no longer held: its failed refresh is no loss.
    for (const lock of lostLocks) this.lost(lock, LEASE_LAPSED)
  }

  /** Refreshes every held lock whose driver has refresh(); rejects with the first failure's cause. */
  async refresh(): Promise<void> {
    const outcomes = await Promise.allSettled(
      [...this.#held].filter((l) => l.driverLock.refresh).map(async (l) => {
        if (!(await l.driverLock.refresh!())) l.lost(LEASE_LAPSED)
      }),
    )
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')
    if (failed) throw failed.reason
  }

  /** The driver reports `lock` lost. */
  lost(lock: DriverLock, reason: string): void {
    for (const held of [...this.#held]) if (held.driverLock === lock) held.lost(reason)
  }

  /** Every held lock is lost (the connection was); each is released on the backend once it answers. */
  loseAll(reason: string): void {
    for (const l of [...this.#held]) {
      // Owed before it is told: a campaign that the loss starts again finds the release to send first (acquiring()).
      this.#abandoned.add(l.driverLock)
      l.lost(reason)
    }
    void this.releaseAbandoned()
  }

  /**
   * A release of `lock` failed with `err`. One that got no answer (ConnectionError) may not have
   * reached the backend, which then keeps the lock until its lease lapses (on etcd, longer: each
   * change of leader renews every lease): it is sent again, as for a lock given up on a lost
   * connection, once the backend answers. The etcd partition run: a release and its revoke were
   * lost in a cut, and nobody was granted the lock for the 30 s that the lease lived on.
   */
  releaseFailed(lock: DriverLock, err: unknown): void {
    if (err instanceof ConnectionError) this.#abandoned.add(lock)
  }

  /**
   * Frees, on the backend, locks given up when the connection was lost: if the backend still has
   * our entry (a lease not lapsed yet, or a false alarm), it must not block others, or our own
   * re-election. Release compares ownership, so it never frees another holder; a lock taken again
   * meanwhile is left alone, and so is one being taken again (acquiring()). Kept until the backend
   * answers.
   *
   * One release at a time per lock: a session lock (SQL) releases whatever its session holds when
   * the call gets to it, so a second call made while the first awaits its answer could free the
   * lock taken again meanwhile, before the Lock or election that took it is tracked.
   */
  async releaseAbandoned(): Promise<void> {
    if (this.#abandoned.size === 0) return
    const tracked = this.driverLocks()
    await Promise.all([...this.#abandoned].map(async (lock) => {
      // Being taken again: released once that acquisition has failed, dropped once it has succeeded (tracked).
      if (this.#acquiring.has(lock)) return
      if (tracked.has(lock)) this.#abandoned.delete(lock)
      else await this.#release(lock)
    }))
  }

  /** Sends the release of abandoned `lock`; still unreachable, it is kept for the next beat or reconnect, unless taken again meanwhile. */
  async #release(lock: DriverLock): Promise<void> {
    this.#abandoned.delete(lock)
    const release = lock.release()
    this.#releasing.set(lock, release)
    try {
      await release
    } catch {
      if (!this.driverLocks().has(lock)) this.#abandoned.add(lock)
    } finally {
      if (this.#releasing.get(lock) === release) this.#releasing.delete(lock)
    }
  }

  /**
   * Before an acquisition of `lock`: a release of it given up on a lost connection settles first
   * (one still waiting for the backend to answer is sent now), and none starts until the returned
   * function is called, once the acquisition has settled. The release frees whatever the lock
   * holds when it gets to the backend (a session lock releases on the session it finds, an answer
   * lost in a cut is sent again), so a hold taken meanwhile would be freed under its holder, who
   * would not be told. MariaDB partition runs: a holder granted the lock just after its reconnect
   * lost it on the server 21 ms later, the next holder granted it 436 ms before the first was told;
   * and, a release still to send when the reconnect's beat went out, a leader elected 5 ms after
   * its reconnect lost the lock to that release, and the next leader was elected 217 ms before
   * the first was told.
   */
  async acquiring(lock: DriverLock): Promise<() => void> {
    this.#acquiring.set(lock, (this.#acquiring.get(lock) ?? 0) + 1)
    let ended = false
    const end = (): void => {
      if (ended) return
      ended = true
      const left = this.#acquiring.get(lock)! - 1
      if (left > 0) this.#acquiring.set(lock, left)
      else this.#acquiring.delete(lock)
    }
    if (this.#abandoned.has(lock) && !this.#releasing.has(lock)) await this.#release(lock)
    else await this.#releasing.get(lock)?.catch(() => {})
    return end
  }

  /** The coordinator stops: every held lock is released (best effort) and told so. */
  async releaseAll(): Promise<void> {
    const locks = [...this.#held]
    this.#held.clear()
    await Promise.allSettled(locks.map((l) => l.driverLock.release()))
    for (const l of locks) l.lost('the coordinator stopped', { quiet: true })
  }
}
