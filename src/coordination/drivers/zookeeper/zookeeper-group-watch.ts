/**
 * The zookeeper driver's group watches: each subscription tells its owner when the group's
 * children may have changed, and the owner re-reads the group.
 *
 * On ZooKeeper 3.6+ a subscription is one persistent watch on the group node (addWatch): a
 * membership change then costs the owner's re-read alone (one getChildren), with no re-arm. On an
 * older server (the client falls back, remembered per session) it is a one-shot child watch, or an
 * existence watch while the group is missing, re-armed with a second getChildren after each fire.
 *
 * ZooKeeper re-adds persistent watches after a reconnect within the session without reporting
 * what they missed (unlike setWatches for one-shot ones): the Coordinator re-reads every watched
 * group on `reconnected` anyway (runtime/runtime.ts), which covers it. After a new session every
 * subscription is set again and its owner re-reads (onNewSession).
 */
import { BackendError } from '../../../errors.js'
import type { DriverContext } from '../../driver.js'
import { isConnectionProblem, ZK_CODES, zkCode, type ZkConnection, type ZkWatchEvent } from '../../../clients/zookeeper/zookeeper-client.js'

interface ZkGroupWatch {
  readonly group: string
  readonly path: string
  readonly onChange: () => void
  active: boolean
  /** True once a persistent watch was set (rather than one-shot ones). */
  persistent: boolean
  /** The one-shot watcher: reports, then re-arms. */
  readonly oneShot: () => void
  /** The persistent watcher: reports membership events (not data changes of the group node). */
  readonly always: (e: ZkWatchEvent) => void
}

/** The group watches of one driver. */
export class GroupWatches {
  readonly #watches = new Set<ZkGroupWatch>()
  readonly #conn: () => ZkConnection
  readonly #ctx: Pick<DriverContext<unknown>, 'events' | 'signal'>

  constructor(conn: () => ZkConnection, ctx: Pick<DriverContext<unknown>, 'events' | 'signal'>) {
    this.#conn = conn
    this.#ctx = ctx
  }

  /** Watches the group node at `path`; resolves to the unsubscribe function once the watch is set. */
  async watch(group: string, path: string, onChange: () => void): Promise<() => Promise<void>> {
    // Functions per subscription: the client keeps one copy of a watcher per path and kind, and fires it once.
    const w: ZkGroupWatch = {
      group,
      path,
      onChange,
      active: true,
      persistent: false,
      oneShot: () => {
        if (!w.active) return
        onChange()
        void this.#arm(w)
      },
      always: (e) => {
        if (w.active && e.name !== 'NODE_DATA_CHANGED') onChange()
      },
    }
    this.#watches.add(w)
    try {
      await this.#armOnce(w)
    } catch (err) {
      this.#watches.delete(w)
      w.active = false
      throw err
    }
    return async () => {
      w.active = false
      this.#watches.delete(w)
      if (w.persistent) await this.#unset(w)
    }
  }

  /** Ends every subscription (the driver stops; the session's end takes the server's watches). */
  stopAll(): void {
    for (const w of this.#watches) w.active = false
    this.#watches.clear()
  }

  /** A replacement session: set every watch again and have the owners re-read. */
  async onNewSession(): Promise<void> {
    await Promise.all([...this.#watches].map(async (w) => {
      await this.#arm(w)
      if (w.active) w.onChange()
    }))
  }

  /** Sets the persistent watch or, without one, the one-shot child watch (an existence watch while the group is missing). */
  async #armOnce(w: ZkGroupWatch): Promise<void> {
    const conn = this.#conn()
    if (await conn.addWatch(w.path, 'PERSISTENT', w.always)) {
      w.persistent = true
      // Unsubscribed while the watch was being set.
      if (!w.active) await this.#unset(w)
      return
    }
    w.persistent = false
    for (;;) {
      try {
        await conn.getChildren(w.path, w.oneShot)
        return
      } catch (err) {
        if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
      }
      if (!(await conn.exists(w.path, w.oneShot))) return
    }
  }

  async #unset(w: ZkGroupWatch): Promise<void> {
    const conn = this.#conn()
    if (!conn.stopped) await conn.removeWatch(w.path, 'PERSISTENT', w.always)
  }

  /** Arms after a fire or a new session, retrying through disconnections until the watch ends. */
  async #arm(w: ZkGroupWatch): Promise<void> {
    const conn = this.#conn()
    while (w.active) {
      try {
        await this.#armOnce(w)
        return
      } catch (err) {
        if (!w.active) return
        if (!isConnectionProblem(err)) {
          this.#ctx.events.warning(
            new BackendError(`Cannot watch group ${JSON.stringify(w.group)} in ZooKeeper: ${(err as Error).message}`, { cause: err }),
          )
          return
        }
        await conn.whenConnected(this.#ctx.signal).catch(() => {})
        // A stopped connection rejects at once: retrying would spin.
        if (this.#ctx.signal.aborted || conn.stopped) return
      }
    }
  }
}
