/**
 * The `zk` driver (deprecated: emits DeprecationWarning ROLLCALL_DEP_ZK once per process): Nova's
 * last ZooKeeper driver (Kilo/Liberty), on rollcall's ZooKeeper connection.
 *
 * - Layout: an ephemeral node `<sg_prefix>/<topic>/<host>/<pid>` per service process (so workers
 *   of one host never collide: Nova's "Duplicated membership name" fix), under persistent topic
 *   and host nodes. A host is up while its node has at least one child.
 * - The session is the heartbeat: a process that dies is down once its session expires
 *   (`[zookeeper] recv_timeout`, default 4000 ms, clamped by the server to 2–20 ticks). A report
 *   only checks that the node is there and re-creates it if not (after an admin's leave, or a
 *   replaced session, whose ephemerals the server deleted).
 * - Reads come from child watches (zk-view.ts): fresh while the session is connected.
 * - leave() deletes the process nodes of that host in that topic.
 *
 * Hazards (why it is deprecated): a ZooKeeper ensemble to run for liveness alone; a pid reused
 * on the same host by a new process while the old session has not expired yet makes the new one
 * wait (its report fails, latched) until the old node goes.
 */
import { BackendError, ConnectionError, InvalidArgumentError, ServiceGroupUnavailableError, type Logger, type RollcallError } from '../../index.js'
import { OPEN_ACL, ZK_CODES, ZkConnection, isConnectionProblem, zkCode } from '../../clients/zookeeper/zookeeper-client.js'
import { warnDeprecated } from '../deprecation.js'
import type { DriverStats, LiveView, LivenessChange, ServiceGroupDriver } from '../driver.js'
import type { ServiceRecord, ServiceRef } from '../types.js'
import { ZkTopicView } from './zk-view.js'

/** Options of the zk driver (Nova's `[zookeeper]` group). */
export interface ZkDriverOptions {
  /** `host:port[,host:port...]`. */
  address: string
  /** Session timeout, milliseconds. */
  recvTimeoutMs: number
  /** Absolute path under which topics live. */
  sgPrefix: string
  logger: Logger
  /** The process id in node names (default process.pid); tests give two in-process services distinct ones. */
  pid?: number
}

/** The zk service-group driver. */
export class ZkDriver implements ServiceGroupDriver {
  readonly name = 'zk' as const
  readonly backendName = 'ZooKeeper'
  readonly reportsOnJoin = true
  readonly needsServiceRecord = false
  readonly keepsReportTime = true
  readonly stats: DriverStats = { reads: 0, writes: 0 }
  readonly #options: ZkDriverOptions
  readonly #views = new Map<string, ZkTopicView>()
  /** Node paths this process owns, by `<topic>\0<host>`. */
  readonly #nodes = new Map<string, string>()
  #conn: ZkConnection | undefined

  constructor(options: ZkDriverOptions) {
    warnDeprecated('zk')
    this.#options = options
  }

  async start(): Promise<void> {
    const servers = this.#options.address.split(',').map((s) => {
      const at = s.trim().lastIndexOf(':')
      return { host: s.trim().slice(0, at).replace(/^\[|\]$/g, ''), port: Number(s.trim().slice(at + 1)) }
    })
    const conn = new ZkConnection({
      servers,
      randomizeHosts: true,
      sessionTimeoutMs: this.#options.recvTimeoutMs,
      connectTimeoutMs: Math.max(this.#options.recvTimeoutMs, 2_000),
      opTimeoutMs: Math.max(this.#options.recvTimeoutMs, 2_000),
      digestAuth: undefined,
      acl: OPEN_ACL,
      shownAs: `zookeeper://${this.#options.address}${this.#options.sgPrefix}`,
      onState: (state) => {
        for (const v of this.#views.values()) v.markStale()
        if (state !== 'suspended') { for (const v of this.#views.values()) if (v.index.listeners.size) void v.refresh().catch(() => undefined) }
      },
      // The old session's ephemerals are gone with it: put ours back before saying we are back.
      onNewSession: async () => {
        await Promise.allSettled([...this.#nodes.values()].map((path) => this.#create(path)))
      },
    })
    await conn.start()
    this.#conn = conn
    try {
      await conn.ensurePath(this.#options.sgPrefix)
    } catch (err) {
      await conn.stop()
      throw new ConnectionError(`Cannot create ${this.#options.sgPrefix} in ZooKeeper: ${(err as Error).message}`, { cause: err })
    }
  }

  async report(service: ServiceRecord): Promise<void> {
    const key = `${service.topic}\u0000${service.host}`
    const path = this.#nodes.get(key) ?? this.#nodePath(service.topic, service.host)
    this.#nodes.set(key, path)
    try {
      this.stats.reads += 1
      const stat = await this.#connection().exists(path)
      if (stat && stat.ephemeralOwner === this.#connection().sessionId) return
      await this.#create(path)
      // A watched topic's view learns of the new node only when its watch fires: read it again at
      // the next use, so that every read of this process sees its own join at once.
      this.#views.get(service.topic)?.markStale()
    } catch (err) {
      throw this.#reportError(err, path)
    }
  }

  async isUp(service: ServiceRef): Promise<boolean> {
    return (await this.#fresh(service.topic)).index.isUp(service.host)
  }

  async getAll(topic: string, _services: readonly ServiceRef[]): Promise<LiveView> {
    const { index } = await this.#fresh(topic)
    return { isUp: (s) => index.isUp(s.host), reportedAt: () => null }
  }

  async leave(host: string, topic: string): Promise<void> {
    this.#nodes.delete(`${topic}\u0000${host}`)
    // Read again next time rather than wait for the watch to say so.
    this.#views.get(topic)?.markStale()
    const parent = `${this.#options.sgPrefix}/${topic}/${host}`
    try {
      this.stats.reads += 1
      const pids = await this.#connection().getChildren(parent)
      this.stats.writes += pids.length
      await Promise.all(pids.map((pid) =>
        this.#connection().remove(`${parent}/${pid}`).catch((err: unknown) => {
          if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
        })
      ))
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return
      throw new ServiceGroupUnavailableError('zk', `leaving ${topic}/${host} failed: ${(err as Error).message}`, { cause: err })
    }
  }

  async watch(topic: string, listener: (change: LivenessChange) => void): Promise<() => void> {
    const view = await this.#fresh(topic)
    view.index.listeners.add(listener)
    return () => void view.index.listeners.delete(listener)
  }

  async close(): Promise<void> {
    for (const v of this.#views.values()) v.close()
    this.#views.clear()
    // Closing the session deletes our ephemeral nodes at once.
    await this.#conn?.stop()
  }

  #connection(): ZkConnection {
    if (!this.#conn) throw new InvalidArgumentError('The zk service-group driver is not started')
    return this.#conn
  }

  #nodePath(topic: string, host: string): string {
    for (const [what, v] of [['topic', topic], ['host', host]] as const) {
      if (v === '' || v.includes('/') || v === '.' || v === '..') {
        throw new InvalidArgumentError(`A ${what} stored by the zk driver cannot be empty, ".", ".." or contain "/": ${JSON.stringify(v)}`)
      }
    }
    return `${this.#options.sgPrefix}/${topic}/${host}/${this.#options.pid ?? process.pid}`
  }

  /** Creates our ephemeral node (and its parents); replaces a leftover of a dead session of ours. */
  async #create(path: string): Promise<void> {
    const conn = this.#connection()
    this.stats.writes += 1
    await conn.ensurePath(path.slice(0, path.lastIndexOf('/')))
    try {
      await conn.create(path, Buffer.from(new Date().toISOString()), 'EPHEMERAL')
    } catch (err) {
      if (zkCode(err) !== ZK_CODES.NODE_EXISTS) throw err
      const stat = await conn.exists(path)
      const owner = stat?.ephemeralOwner
      if (!stat || owner === conn.sessionId) return
      if (!conn.isDeadSession(owner!)) throw err
      await conn.remove(path, stat.version)
      await conn.create(path, Buffer.from(new Date().toISOString()), 'EPHEMERAL')
    }
  }

  async #fresh(topic: string): Promise<ZkTopicView> {
    let view = this.#views.get(topic)
    if (view?.fresh) return view
    if (!view) this.#views.set(topic, view = new ZkTopicView(() => this.#connection(), this.#options.sgPrefix, topic, () => void (this.stats.reads += 1)))
    try {
      await view.refresh()
    } catch (err) {
      throw new ServiceGroupUnavailableError('zk', `reading ${this.#options.sgPrefix}/${topic} failed: ${(err as Error).message}`, { cause: err })
    }
    return view
  }

  #reportError(err: unknown, path: string): RollcallError {
    if (err instanceof InvalidArgumentError) return err
    const message = `ZooKeeper report of ${path} failed: ${(err as Error)?.message ?? String(err)}`
    if (zkCode(err) === ZK_CODES.NODE_EXISTS) {
      return new ConnectionError(
        `${path} is held by another live session (a process with the same pid on this host, or one whose session has not expired yet); retrying at the `
          + `next report`,
        { cause: err, driver: 'zk' },
      )
    }
    if (isConnectionProblem(err)) return new ConnectionError(message, { cause: err, driver: 'zk' })
    return new BackendError(message, { cause: err, driver: 'zk' })
  }
}
