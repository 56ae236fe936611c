/**
 * Nodes this process created, or may have created, but could not delete because the connection
 * broke: deleted once connected again within the same session. When the session is presumed
 * expired on the client (no server answered within its timeout), the server may keep it, and its
 * ephemeral nodes, for up to a session timeout more (a new leader restarts every session's clock):
 * a lock node of it would hold the lock for nobody, every later contender waiting behind it
 * (ZooKeeper partition seed 21: the lock granted to no one for the 6.6 s between a heal and the
 * next cut). Its entries are then kept and deleted from the next session, each node only if that
 * dead session still owns it.
 *
 * A create that failed with the connection may not have been applied yet: a server cut off from
 * the leader can hold it and have it committed when the cut heals, seconds after this client moved
 * to another server and found nothing to delete (ZooKeeper partition seed 2701: contender nodes
 * created 12-21 s after their create failed, owned by live sessions, at the head of the lock's and
 * the election's queues for good). Such an entry (`maybe`) is kept for the life of this connection
 * (a dead session's too: the server may keep that session, and commit its create, for up to a
 * timeout after anything last renewed it) and looked for again at every reconnect, at every
 * listing of its parent by this client, and whenever that parent's children change (a child watch
 * it keeps there): a waiter lists its queue once and then watches only the node before its own, so
 * a late node behind it would otherwise be found only if this client happened to list again.
 */
import { ZK_CODES, zkCode } from './zookeeper-errors.js'
import type { ZkWatcher } from './zookeeper-watches.js'

/** What the clean-up needs of a connection. */
export interface OrphanRemover {
  readonly generation: number
  getChildren(path: string, watcher?: ZkWatcher): Promise<string[]>
  remove(path: string, version?: number): Promise<void>
  exists(path: string): Promise<{ ephemeralOwner: string; version: number } | null>
}

/** The children of `parent` that `match` selects, noted in session `generation`. */
interface Orphans {
  generation: number
  parent: string
  match: (child: string) => boolean
  /** Set once session `generation` is presumed expired: its id, which a node must still have as owner to be deleted. */
  deadOwner?: string
  /** A create whose fate is unknown: kept until a node it matches has been deleted (or, of a live session, until that session ends). */
  maybe?: true
}

/** The pending clean-ups of one connection. */
export class OrphanNodes {
  readonly #conn: OrphanRemover
  readonly #due: Orphans[] = []
  /** The child watch left on the parent of each pending `maybe` entry: a change there looks again (one function, so one watch per parent). */
  readonly #changed: ZkWatcher = (event) => void this.deleteNow(event.path)

  /** The clean-ups of `conn`, which deletes them. */
  constructor(conn: OrphanRemover) {
    this.#conn = conn
  }

  /**
   * Notes the children of `parent` that `match` selects, to delete in session `generation` (or, with
   * `deadOwner`, from any later one); with `maybe`, nodes a failed create may yet make.
   */
  add(generation: number, parent: string, match: (child: string) => boolean, { deadOwner, maybe }: { deadOwner?: string; maybe?: boolean } = {}): void {
    this.#due.push({ generation, parent, match, ...(deadOwner === undefined ? {} : { deadOwner }), ...(maybe ? { maybe: true as const } : {}) })
  }

  /** True when `children`, a listing of `parent` in session `generation`, holds a node due for deletion. */
  dueAmong(generation: number, parent: string, children: readonly string[]): boolean {
    return this.#due.some((o) => o.parent === parent && (o.generation === generation || o.deadOwner !== undefined) && children.some(o.match))
  }

  /** Session `generation`, id `owner`, is presumed expired: its entries are deleted from the next session, if it still owns the nodes. */
  retire(generation: number, owner: string): void {
    for (const o of this.#due) if (o.generation === generation && o.deadOwner === undefined) o.deadOwner = owner
  }

  /**
   * Deletes what is due in the current session (with `only`, under that parent alone); what fails is
   * kept for the next reconnect. Each parent is listed once, with a child watch where a `maybe` entry is.
   */
  async deleteNow(only?: string): Promise<void> {
    const conn = this.#conn
    const generation = conn.generation
    // What belongs to neither this session nor a dead one (an older session the server expired) goes with its session.
    const live = this.#due.filter((o) => o.generation === generation || o.deadOwner !== undefined)
    const due = only === undefined ? live : live.filter((o) => o.parent === only)
    this.#due.splice(0, this.#due.length, ...(only === undefined ? [] : live.filter((o) => o.parent !== only)))
    const listings = new Map<string, Promise<string[]>>()
    const list = (parent: string): Promise<string[]> => {
      let listing = listings.get(parent)
      if (!listing) {
        listing = conn.getChildren(parent, due.some((o) => o.parent === parent && o.maybe) ? this.#changed : undefined)
        listings.set(parent, listing)
      }
      return listing
    }
    for (const o of due) {
      try {
        const children = await list(o.parent)
        const matched = children.filter(o.match)
        if (o.maybe && matched.length === 0 && (o.deadOwner !== undefined || generation === conn.generation)) {
          this.#due.push(o)
          continue
        }
        await Promise.all(
          matched.map(async (c) => {
            const path = `${o.parent}/${c}`
            try {
              if (o.deadOwner === undefined) return await conn.remove(path)
              const stat = await conn.exists(path)
              if (stat?.ephemeralOwner === o.deadOwner) await conn.remove(path, stat.version)
            } catch (err) {
              if (zkCode(err) !== ZK_CODES.NO_NODE && zkCode(err) !== ZK_CODES.BAD_VERSION) throw err
            }
          }),
        )
      } catch (err) {
        if (zkCode(err) === ZK_CODES.NO_NODE) continue
        // Try again at the next reconnect (or the nodes die with the session).
        if (generation === conn.generation || o.deadOwner !== undefined) this.#due.push(o)
      }
    }
  }
}
