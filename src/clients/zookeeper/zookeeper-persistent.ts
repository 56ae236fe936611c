/**
 * Persistent watches (addWatch, ZooKeeper 3.6+) on one session. Unlike a one-shot watch, a
 * persistent watch stays registered after it fires, so a watcher need not re-arm (one read less
 * per change); it lasts until removed or the session ends, and a reconnect within the session
 * restores it (setWatches2, zookeeper-wire.ts).
 *
 * - A server without the OpCode answers UNIMPLEMENTED (3.5 and older) or MARSHALLING_ERROR: the
 *   session remembers it and addWatch resolves false at once from then on. After UNIMPLEMENTED the
 *   server closes the connection (UnimplementedRequestProcessor): the client drops it at once, so
 *   that the requests that follow wait for the next connection instead of being lost with it (one
 *   reconnect per session on such a server). A connection lost during the request rejects with
 *   CONNECTION_LOSS (the caller sets the watch again once connected), except that a second loss in
 *   a row counts as a server that drops the connection on an OpCode it does not know: false from
 *   then on. Falling back for one call only would mix watch kinds on one path, which ZooKeeper
 *   before 3.9 does not keep apart (ZOOKEEPER-4466: a one-shot child watch turns the connection's
 *   persistent watch on the path into a one-shot one).
 * - The server reports no change a persistent watch missed while the connection was down
 *   (setWatches2 re-adds it as it is): its owner re-reads after a reconnect.
 * - Removal uses WatcherType Any, the only type ZooKeeper 3.6 to 3.8 remove a persistent watch
 *   with; it would also remove this session's other watches on the path, so it is sent only once
 *   no watcher of any kind is left there (otherwise the server's watch lasts until the connection
 *   ends, and its events reach the remaining watchers only).
 */
import { ConnectionError } from '../../errors.js'
import { isConnectionProblem, zkCode, ZK_CODES } from './zookeeper-errors.js'
import { WATCHER_TYPE_ANY, type ZkWatchMode } from './zookeeper-ops.js'
import type { ZkSession } from './zookeeper-session.js'
import type { WatchKind, ZkWatcher } from './zookeeper-watches.js'

const KIND: Record<ZkWatchMode, WatchKind> = { PERSISTENT: 'persistent', PERSISTENT_RECURSIVE: 'recursive' }
const ALL_KINDS: readonly WatchKind[] = ['data', 'exist', 'child', 'persistent', 'recursive']

/**
 * Sets a persistent watch of `mode` on `path` (which need not exist); resolves true once it is
 * set, false when the server has no persistent watches; rejects with CONNECTION_LOSS (retry) or
 * the server's error.
 */
export async function addPersistentWatch(s: ZkSession, timeoutMs: number, path: string, mode: ZkWatchMode, watcher: ZkWatcher): Promise<boolean> {
  if (!s.persistentWatches) return false
  try {
    // Registered synchronously with the reply, before any later notification is handled.
    await s.request({ op: 'addWatch', path, mode }, timeoutMs, `watch ${path}`, (err) => {
      if (!err) return s.watch(KIND[mode], path, watcher)
      if (zkCode(err) !== ZK_CODES.UNIMPLEMENTED) return
      s.persistentWatches = false
      s.disconnect(new ConnectionError(`ZooKeeper at ${s.hostList()} has no persistent watches (before 3.6) and closes the connection after saying so`))
    })
    s.addWatchDrops = 0
    return true
  } catch (err) {
    const code = zkCode(err)
    if (code === ZK_CODES.CONNECTION_LOSS && ++s.addWatchDrops >= 2) s.persistentWatches = false
    if (code === ZK_CODES.UNIMPLEMENTED || code === ZK_CODES.MARSHALLING_ERROR) s.persistentWatches = false
    if (!s.persistentWatches) return false
    throw err
  }
}

/** Removes `watcher` from `path`, and the server's watch with the path's last watcher. */
export async function removePersistentWatch(s: ZkSession, timeoutMs: number, path: string, mode: ZkWatchMode, watcher: ZkWatcher): Promise<void> {
  const kind = KIND[mode]
  if (!s.watches.remove(kind, path, watcher) || s.abandoned || ALL_KINDS.some((k) => s.watches.has(k, path))) return
  try {
    await s.request({ op: 'removeWatches', path, type: WATCHER_TYPE_ANY }, timeoutMs, `stop watching ${path}`, () => {
      // An addWatch of the path answered in between was undone by this removal: set it again.
      if (s.watches.has(kind, path)) void s.request({ op: 'addWatch', path, mode }, timeoutMs, `watch ${path}`).catch(() => {})
    })
  } catch (err) {
    // Nothing left to remove, or no connection (its end takes the server's watch): done either way.
    if (zkCode(err) === ZK_CODES.NO_WATCHER || isConnectionProblem(err)) return
    throw err
  }
}
