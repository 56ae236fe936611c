/**
 * The groups this member has joined, with the capabilities it joined with, and the rejoin logic.
 *
 * tooz forgets a membership the backend dropped (a ZooKeeper session that expired, a Redis that
 * restarted empty, a memcached key that was evicted): the process keeps running, believing it is
 * in the group, while nobody sees it. Here every loss is reported (`membershipLost`) and, unless
 * `rejoin` is off, the member is put back with its last capabilities (`rejoined`) as soon as the
 * backend answers again, creating the group if it vanished too.
 */
import { GroupExistsError, GroupNotFoundError, MemberExistsError, MemberNotJoinedError, asRollcallError, type RollcallError } from '../../errors.js'

interface Joined {
  capabilities: Uint8Array
  /** Changes on every (re)join; lets a watcher tell a stale read from a real loss. */
  epoch: number
}

/** What membership bookkeeping needs from the Coordinator. @internal */
export interface MembershipHost {
  readonly rejoin: boolean
  /** autoWatch off: rejoins run only when rejoinPending() is called (by runWatchers). */
  readonly manual: boolean
  /**
   * Whether rejoins may run now: not while the connection is lost. A membership found in place
   * then may stand on a session or lease that is about to lapse (etcd partition seed 2702: a
   * member's rejoin found its key still there on the lease it had presumed lapsed, reported it
   * rejoined, and the lease lapsed 0.3 s later); the return (`reconnected`, or a new session)
   * runs them.
   */
  mayRejoin(): boolean
  join(group: string, capabilities: Uint8Array): Promise<void>
  /**
   * Renews a membership the backend lists, its capabilities and its lease (the driver's
   * updateCapabilities); rejects with MemberNotJoinedError when it has lapsed. Absent where the
   * driver has none.
   */
  renew?(group: string, capabilities: Uint8Array): Promise<void>
  create(group: string): Promise<void>
  emitLost(group: string, reason: string): void
  emitRejoined(group: string): void
  warn(err: RollcallError): void
}

/** Joined groups and pending rejoins of one Coordinator. @internal */
export class Membership {
  readonly #host: MembershipHost
  readonly #joined = new Map<string, Joined>()
  readonly #pending = new Set<string>()
  /** Groups given up on a loss with rejoin off, until joined or left again (see wasDropped()). */
  readonly #dropped = new Set<string>()
  #epochs = 0
  #rejoining: Promise<void> | undefined

  constructor(host: MembershipHost) {
    this.#host = host
  }

  /** Joined groups, including those waiting to be rejoined. */
  get groups(): string[] {
    return [...this.#joined.keys()]
  }

  /** Group → encoded capabilities, for the driver's heartbeat. Excludes groups awaiting rejoin. */
  get live(): ReadonlyMap<string, Uint8Array> {
    return new Map([...this.#joined].filter(([g]) => !this.#pending.has(g)).map(([g, j]) => [g, j.capabilities]))
  }

  /** True when some lost membership still waits to be restored. */
  get hasPending(): boolean {
    return this.#pending.size > 0
  }

  has(group: string): boolean {
    return this.#joined.has(group)
  }

  capabilities(group: string): Uint8Array | undefined {
    return this.#joined.get(group)?.capabilities
  }

  /** See WatcherHost.joinEpoch. Undefined while not joined or while a rejoin is pending. */
  epoch(group: string): number | undefined {
    return this.#pending.has(group) ? undefined : this.#joined.get(group)?.epoch
  }

  /** Records a successful join (or capability update). */
  set(group: string, capabilities: Uint8Array): void {
    this.#joined.set(group, { capabilities, epoch: ++this.#epochs })
    this.#pending.delete(group)
    this.#dropped.delete(group)
  }

  /** Forgets a group (left, or given up). Returns what it held, to restore if leaving fails. */
  delete(group: string): Uint8Array | undefined {
    const j = this.#joined.get(group)
    this.#joined.delete(group)
    this.#pending.delete(group)
    this.#dropped.delete(group)
    return j?.capabilities
  }

  /**
   * Whether this member was told it lost `group` (rejoin off) and has not joined or left it since.
   * The loss may be presumed (client-side expiry counts from a beat's send, the backend from its
   * arrival), so the backend can still list the member: a join then finds its own membership.
   */
  wasDropped(group: string): boolean {
    return this.#dropped.has(group)
  }

  /** The backend dropped this member from `groups`: report, then rejoin or forget. */
  lost(groups: readonly string[], reason: string): void {
    for (const group of groups) {
      if (!this.#joined.has(group) || this.#pending.has(group)) continue
      this.#host.emitLost(group, reason)
      if (this.#host.rejoin) this.#pending.add(group)
      else {
        this.#joined.delete(group)
        this.#dropped.add(group)
      }
    }
    if (this.#pending.size > 0 && !this.#host.manual) void this.rejoinPending()
  }

  /** Like lost(), for a membership found missing by a read that began at `epoch`. */
  lostAt(group: string, epoch: number, reason: string): void {
    if (this.#joined.get(group)?.epoch === epoch) this.lost([group], reason)
  }

  /** Every joined group is presumed lost (the connection was lost). */
  lostAll(reason: string): void {
    this.lost(this.groups, reason)
  }

  /** Tries to restore every pending membership once (none while mayRejoin() says no); failures stay pending. Never rejects. */
  rejoinPending(): Promise<void> {
    if (!this.#host.mayRejoin()) return this.#rejoining ?? Promise.resolve()
    this.#rejoining ??= this.#rejoinAll().finally(() => {
      this.#rejoining = undefined
    })
    return this.#rejoining
  }

  async #rejoinAll(): Promise<void> {
    for (const group of [...this.#pending]) {
      if (!this.#host.mayRejoin()) return
      const capabilities = this.#joined.get(group)?.capabilities
      if (capabilities === undefined) continue
      try {
        await this.#joinCreating(group, capabilities)
      } catch (err) {
        this.#host.warn(asRollcallError(err, `Rejoining group ${group}`))
        continue
      }
      if (!this.#pending.delete(group)) continue
      this.#joined.set(group, { capabilities, epoch: ++this.#epochs })
      this.#host.emitRejoined(group)
    }
  }

  /**
   * A membership the backend still lists, though this member was told it lost it: renewed with
   * `capabilities` (its lease too), or, lapsed meanwhile, joined anew with `join`. Left as it is,
   * it lapses when its last lease does, as nothing renewed it since the loss: a PostgreSQL
   * partition run, a rejoin 0.1 s after a heal found the row still live, and it lapsed 0.6 s later,
   * before the next beat.
   */
  async takeBack(group: string, capabilities: Uint8Array, join: () => Promise<void>): Promise<void> {
    if (!this.#host.renew) return
    try {
      await this.#host.renew(group, capabilities)
    } catch (err) {
      if (!(err instanceof MemberNotJoinedError)) throw err
      await join()
    }
  }

  async #joinCreating(group: string, capabilities: Uint8Array): Promise<void> {
    try {
      await this.#host.join(group, capabilities)
    } catch (err) {
      // Still (or again) listed: that is what a rejoin wants, renewed.
      if (err instanceof MemberExistsError) return this.takeBack(group, capabilities, () => this.#host.join(group, capabilities))
      if (!(err instanceof GroupNotFoundError)) throw err
      await this.#host.create(group).catch((e: unknown) => {
        if (!(e instanceof GroupExistsError)) throw e
      })
      await this.#host.join(group, capabilities)
    }
  }
}
