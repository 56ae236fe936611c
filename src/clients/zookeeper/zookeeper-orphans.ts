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
 * the election's queues for good). Such an entry (`maybe`) is kept for the life of its session and
 * checked again at every reconnect and at every listing of its parent by this client.
 */
import { ZK_CODES, zkCode } from './zookeeper-errors.js'

/** What the clean-up needs of a connection. */
export interface OrphanRemover {
  readonly generation: number
  getChildren(path: string): Promise<string[]>
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
  /** A create whose fate is unknown: kept, while its session lives, until a node it matches has been deleted. */
  maybe?: true
}

/** The pending clean-ups of one connection. */
export class OrphanNodes {
  readonly #due: Orphans[] = []

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

  /** Deletes what is due in the current session; what fails is kept for the next reconnect. */
  async deleteNow(conn: OrphanRemover): Promise<void> {
    const generation = conn.generation
    const due = this.#due.filter((o) => o.generation === generation || o.deadOwner !== undefined)
    // What belongs to neither this session nor a dead one (an older session the server expired) goes with its session.
    this.#due.length = 0
    for (const o of due) {
      try {
        const children = await conn.getChildren(o.parent)
        const matched = children.filter(o.match)
        if (o.maybe && o.deadOwner === undefined && matched.length === 0 && generation === conn.generation) {
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
