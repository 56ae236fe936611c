/**
 * The zk driver's live view of one topic, kept by ZooKeeper child watches, as Nova's Juno
 * MembershipMonitor did: one watch on `<prefix>/<topic>` (its hosts) and one on each
 * `<prefix>/<topic>/<host>` (that host's process nodes). A host is up while it has a child.
 *
 * Watches are one-shot and re-armed by the read that follows each notification; each path has
 * one stable watcher function, which the library registers once however often it is passed, so
 * notifications cannot multiply. All reads of a view run through one serial chain. The first
 * fill reads the topic and every host in one pipelined burst; afterwards only what changed is
 * read. The view is fresh while the session is connected and every read succeeded.
 */
import type { ZkConnection } from '../../clients/zookeeper/zookeeper-client.js'
import { ZK_CODES, zkCode } from '../../clients/zookeeper/zookeeper-client.js'
import { HostIndex } from './host-index.js'

/** One topic's view. */
export class ZkTopicView {
  readonly index: HostIndex
  readonly #conn: () => ZkConnection
  readonly #path: string
  readonly #watchers = new Map<string, () => void>()
  readonly #hosts = new Set<string>()
  #fresh = false
  #opened = false
  #chain: Promise<void> = Promise.resolve()
  /** Counts reads (for the driver's stats). */
  #onRead: () => void

  constructor(conn: () => ZkConnection, prefix: string, topic: string, onRead: () => void) {
    this.#conn = conn
    this.#path = `${prefix}/${topic}`
    this.index = new HostIndex(topic)
    this.#onRead = onRead
  }

  get fresh(): boolean {
    return this.#fresh
  }

  /** Casts doubt (the session broke or was replaced): the next use re-reads everything. */
  markStale(): void {
    this.#fresh = false
  }

  /** Reads the topic and every host, re-arming every watch. */
  refresh(): Promise<void> {
    return this.#enqueue(async () => {
      const hosts = await this.#children(this.#path)
      const pids = await Promise.all(hosts.map((h) => this.#children(`${this.#path}/${h}`)))
      this.#hosts.clear()
      hosts.forEach((h) => this.#hosts.add(h))
      const members = new Map<string, { host: string; binary: string; reportedAt: null }>()
      hosts.forEach((host, i) => {
        for (const pid of pids[i]!) members.set(`${host}/${pid}`, { host, binary: '', reportedAt: null })
      })
      this.index.replace(members, this.#opened)
      this.#opened = true
      this.#fresh = true
    })
  }

  /** Stops acting on notifications. */
  close(): void {
    this.#fresh = false
    this.#watchers.clear()
  }

  /** Children of `path` ([] when it does not exist), arming its child watch. */
  async #children(path: string): Promise<string[]> {
    this.#onRead()
    const conn = this.#conn()
    try {
      return await conn.getChildren(path, this.#watcher(path))
    } catch (err) {
      if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
      // No node yet: wait for its creation instead (exists() arms a watch that fires on create).
      if (await conn.exists(path, this.#watcher(path))) return this.#children(path)
      return []
    }
  }

  #watcher(path: string): () => void {
    let w = this.#watchers.get(path)
    if (!w) {
      w = () => {
        if (this.#watchers.get(path) !== w) return
        void this.#enqueue(() => (path === this.#path ? this.#topicChanged() : this.#hostChanged(path))).catch(() => this.markStale())
      }
      this.#watchers.set(path, w)
    }
    return w
  }

  async #topicChanged(): Promise<void> {
    const hosts = new Set(await this.#children(this.#path))
    for (const host of [...this.#hosts]) {
      if (hosts.has(host)) continue
      this.#hosts.delete(host)
      for (const id of this.index.membersOf(host)) this.index.delete(id, this.#opened)
    }
    for (const host of hosts) {
      if (this.#hosts.has(host)) continue
      this.#hosts.add(host)
      await this.#hostChanged(`${this.#path}/${host}`)
    }
  }

  async #hostChanged(path: string): Promise<void> {
    const host = path.slice(this.#path.length + 1)
    const pids = new Set(await this.#children(path))
    for (const id of this.index.membersOf(host)) if (!pids.has(id.slice(host.length + 1))) this.index.delete(id, this.#opened)
    for (const pid of pids) this.index.set(`${host}/${pid}`, { host, binary: '', reportedAt: null }, this.#opened)
  }

  #enqueue(fn: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(fn)
    this.#chain = run.catch(() => undefined)
    return run
  }
}
