/**
 * The one-shot watches of a session, kept on the client as ZooKeeper's Java client keeps them
 * (ZKWatchManager): per path, data, existence and child watchers. A watcher function passed
 * twice for one path and kind is kept once, so it fires once. A notification fires and removes
 * the watchers it concerns: created and data-changed fire data and existence watchers;
 * children-changed fires child watchers; deleted fires all three.
 *
 * Persistent watches (addWatch, ZooKeeper 3.6+) stay until removed or the session ends: a
 * PERSISTENT watcher hears every event of its node (created, deleted, data and children
 * changed); a PERSISTENT_RECURSIVE one hears created, deleted and data-changed of its node and
 * every node below it (the server sends no children-changed for those).
 *
 * The paths are what setWatches (setWatches2 with persistent watches) re-registers on a new
 * connection within the session.
 */
import { EVENT, type WatchEvent } from './zookeeper-frames.js'
import type { WatchPaths } from './zookeeper-wire.js'

/** What a watcher receives. */
export interface ZkWatchEvent {
  /** `NODE_CREATED`, `NODE_DELETED`, `NODE_DATA_CHANGED` or `NODE_CHILDREN_CHANGED`. */
  name: 'NODE_CREATED' | 'NODE_DELETED' | 'NODE_DATA_CHANGED' | 'NODE_CHILDREN_CHANGED'
  /** The node, as the caller named it (chroot removed). */
  path: string
}

/** A one-shot watcher. */
export type ZkWatcher = (event: ZkWatchEvent) => void

/** The kind of watch a read leaves, or an addWatch sets (`persistent`, `recursive`). */
export type WatchKind = 'data' | 'exist' | 'child' | 'persistent' | 'recursive'

const NAMES: Record<number, ZkWatchEvent['name']> = {
  [EVENT.nodeCreated]: 'NODE_CREATED',
  [EVENT.nodeDeleted]: 'NODE_DELETED',
  [EVENT.nodeDataChanged]: 'NODE_DATA_CHANGED',
  [EVENT.nodeChildrenChanged]: 'NODE_CHILDREN_CHANGED',
}

/** Watchers by kind and path. */
export class WatchRegistry {
  readonly #by: Record<WatchKind, Map<string, Set<ZkWatcher>>> = {
    data: new Map(),
    exist: new Map(),
    child: new Map(),
    persistent: new Map(),
    recursive: new Map(),
  }

  /** Registers `watcher` (once per path and kind). */
  add(kind: WatchKind, path: string, watcher: ZkWatcher): void {
    const m = this.#by[kind]
    let set = m.get(path)
    if (!set) m.set(path, set = new Set())
    set.add(watcher)
  }

  /** Forgets `watcher`; true when it was the last watcher of `kind` on `path`. */
  remove(kind: WatchKind, path: string, watcher: ZkWatcher): boolean {
    const set = this.#by[kind].get(path)
    if (!set?.delete(watcher) || set.size > 0) return false
    this.#by[kind].delete(path)
    return true
  }

  /** True while some watcher of `kind` is registered on `path`. */
  has(kind: WatchKind, path: string): boolean {
    return this.#by[kind].has(path)
  }

  /** The number of watched (path, kind) pairs. */
  get size(): number {
    return Object.values(this.#by).reduce((n, m) => n + m.size, 0)
  }

  /** The watched paths, for setWatches. */
  paths(): WatchPaths {
    const keys = (k: WatchKind): string[] => [...this.#by[k].keys()]
    return { data: keys('data'), exist: keys('exist'), child: keys('child'), persistent: keys('persistent'), recursive: keys('recursive') }
  }

  /** Fires the watchers `event` concerns, removing the one-shot ones (`path` already stripped of the chroot). */
  fire(event: WatchEvent, path: string): void {
    const name = NAMES[event.type]
    if (!name) return
    const kinds: WatchKind[] = event.type === EVENT.nodeChildrenChanged
      ? ['child']
      : event.type === EVENT.nodeDeleted
      ? ['data', 'exist', 'child']
      : ['data', 'exist']
    const due = new Set<ZkWatcher>()
    for (const k of kinds) {
      const set = this.#by[k].get(path)
      if (!set) continue
      this.#by[k].delete(path)
      for (const w of set) due.add(w)
    }
    for (const w of this.#by.persistent.get(path) ?? []) due.add(w)
    if (event.type !== EVENT.nodeChildrenChanged) {
      // The path and each ancestor up to '/'. A path that is not absolute (a hostile server's:
      // 'a', '') has no ancestors; stepping up from it would stay on it for good.
      for (let p = path;; p = p.slice(0, Math.max(1, p.lastIndexOf('/')))) {
        for (const w of this.#by.recursive.get(p) ?? []) due.add(w)
        if (p === '/' || !p.startsWith('/')) break
      }
    }
    for (const w of due) {
      try {
        w({ name, path })
      } catch {
        // A watcher's own failure is its owner's business.
      }
    }
  }

  /** Forgets every watcher (the session ended). */
  clear(): void {
    for (const m of Object.values(this.#by)) m.clear()
  }
}
