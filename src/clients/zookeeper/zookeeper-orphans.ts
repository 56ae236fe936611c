/**
 * Nodes this process created, or may have created, but could not delete because the connection
 * broke: deleted once connected again within the same session. A lost session drops the list, as
 * the server deletes its ephemeral nodes with it.
 */
import { ZK_CODES, zkCode } from './zookeeper-errors.js'

/** What the clean-up needs of a connection. */
export interface OrphanRemover {
  readonly generation: number
  getChildren(path: string): Promise<string[]>
  remove(path: string): Promise<void>
}

/** The children of `parent` that `match` selects, noted in session `generation`. */
interface Orphans {
  generation: number
  parent: string
  match: (child: string) => boolean
}

/** The pending clean-ups of one connection. */
export class OrphanNodes {
  readonly #due: Orphans[] = []

  /** Notes the children of `parent` that `match` selects, to delete in session `generation`. */
  add(generation: number, parent: string, match: (child: string) => boolean): void {
    this.#due.push({ generation, parent, match })
  }

  /** The session is gone: its nodes go with it. */
  clear(): void {
    this.#due.length = 0
  }

  /** Deletes what is due in the current session; what fails is kept for the next reconnect. */
  async deleteNow(conn: OrphanRemover): Promise<void> {
    const generation = conn.generation
    const due = this.#due.filter((o) => o.generation === generation)
    this.#due.length = 0
    for (const o of due) {
      try {
        const children = await conn.getChildren(o.parent)
        await Promise.all(
          children.filter(o.match).map((c) =>
            conn.remove(`${o.parent}/${c}`).catch((err: unknown) => {
              if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
            })
          ),
        )
      } catch (err) {
        if (zkCode(err) === ZK_CODES.NO_NODE) continue
        // Try again at the next reconnect (or the nodes die with the session).
        if (generation === conn.generation) this.#due.push(o)
      }
    }
  }
}
