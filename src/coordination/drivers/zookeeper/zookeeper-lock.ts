/**
 * kazoo's lock recipe (kazoo/recipe/lock.py `Lock`), which tooz uses for its ZooKeeper locks and
 * leader elections, so that Python and Node contenders stand in one queue.
 *
 * Layout: each contender creates an EPHEMERAL_SEQUENTIAL child `<uuid4hex>__lock__<10 digits>` of
 * the lock's node, holding its member id. Contenders are ordered by that sequence (as kazoo does:
 * by the digit string); the first one holds the lock, each other one watches the contender just
 * before it. A non-blocking attempt that is not first deletes its node again.
 *
 * Unlike kazoo, a node this process can no longer delete because the connection broke is deleted
 * as soon as the session reconnects (ZkConnection.deleteWhenConnected): an abandoned contender left
 * in the queue would otherwise make every later contender wait on a holder that never comes.
 * And unlike kazoo, a lock taken in a session that was lost answers false to isStillOwner().
 *
 * The fencing token is the node's sequence number: ZooKeeper draws it from the parent's child
 * version, which grows with every create and delete, so each new holder's is larger.
 */
import { randomUUID } from 'node:crypto'
import { ConnectionError } from '../../../errors.js'
import type { DriverLock } from '../../driver.js'
import { isConnectionProblem, ZK_CODES, zkCode, type ZkConnection } from '../../../clients/zookeeper/zookeeper-client.js'

/** What follows the uuid in a contender's name (kazoo `Lock._NODE_NAME`). */
export const LOCK_NODE_NAME = '__lock__'

/** kazoo's contender pattern: `(?:__lock__)(-?\d{10})$`. */
const CONTENDER = /(?:__lock__)(-?\d{10})$/

/** One contender node. */
export interface Contender {
  /** The node's name (a child of the lock node). */
  name: string
  /** Its sequence number as written (10 digits, maybe signed). */
  sequence: string
}

/** The contenders among `children`, in kazoo's order: by the sequence string. */
export function sortContenders(children: readonly string[]): Contender[] {
  const out: Contender[] = []
  for (const name of children) {
    const m = CONTENDER.exec(name)
    if (m) out.push({ name, sequence: m[1]! })
  }
  return out.sort((a, b) => (a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0))
}

/**
 * The data of the first contender under `parent` (tooz get_leader: `contenders()[0]`), or null when
 * there is none or it holds no data. Reads only: never creates `parent` (kazoo's contenders() does).
 */
export async function readHolder(conn: ZkConnection, parent: string): Promise<string | null> {
  let children: string[]
  try {
    children = await conn.getChildren(parent)
  } catch (err) {
    if (zkCode(err) === ZK_CODES.NO_NODE) return null
    throw err
  }
  for (const c of sortContenders(children)) {
    try {
      const { data } = await conn.getData(`${parent}/${c.name}`)
      return data.length > 0 ? data.toString('utf8') : null
    } catch (err) {
      // Gone since the listing: the next one is first now.
      if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
    }
  }
  return null
}

/** One kazoo-compatible lock at `parent`, owned by one Lock object of the Coordinator. */
export class ZkLock implements DriverLock {
  readonly #conn: ZkConnection
  readonly #parent: string
  readonly #data: Buffer
  #node: string | undefined
  #generation = 0
  fencingToken: bigint | undefined

  /** `parent` is the lock's node (`/<ns>/locks/<name>` or `/<ns>/<group>/leader`). */
  constructor(conn: ZkConnection, parent: string, memberId: string) {
    this.#conn = conn
    this.#parent = parent
    this.#data = Buffer.from(memberId, 'utf8')
  }

  async tryAcquire(): Promise<boolean> {
    if (await this.#stillHeld()) return true
    const generation = this.#conn.generation
    const node = await this.#create()
    try {
      const order = sortContenders(await this.#conn.getChildren(this.#parent))
      if (order[0]?.name === node) {
        this.#take(node, generation)
        return true
      }
    } catch (err) {
      await this.#withdraw(node, generation)
      throw err
    }
    // Not first: leave the queue at once, as kazoo's non-blocking acquire does.
    await this.#withdraw(node, generation)
    return false
  }

  async acquireWaiting(signal: AbortSignal): Promise<boolean> {
    if (await this.#stillHeld()) return true
    try {
      await this.#conn.whenConnected(signal)
    } catch (err) {
      if (signal.aborted) return false
      throw err
    }
    const generation = this.#conn.generation
    const session = this.#conn.sessionSignal
    const until = AbortSignal.any([signal, session])
    let node: string | undefined = await this.#create()
    try {
      for (;;) {
        if (signal.aborted) break
        if (session.aborted || generation !== this.#conn.generation) {
          throw new ConnectionError(`The ZooKeeper session ended while waiting for the lock at ${this.#parent}`, { cause: session.reason })
        }
        let order: Contender[]
        try {
          order = sortContenders(await this.#conn.getChildren(this.#parent))
        } catch (err) {
          if (!isConnectionProblem(err) || this.#conn.stopped) throw err
          await this.#conn.whenConnected(until).catch(() => {})
          continue
        }
        const at = order.findIndex((c) => c.name === node)
        if (at === 0) {
          this.#take(node, generation)
          node = undefined
          return true
        }
        if (at < 0) {
          // Someone deleted our node (break()) while the session lives on: queue again, as kazoo does.
          node = await this.#create()
          continue
        }
        await this.#waitForDeletion(`${this.#parent}/${order[at - 1]!.name}`, until)
      }
    } finally {
      if (node !== undefined) await this.#withdraw(node, generation)
    }
    return false
  }

  async release(): Promise<boolean> {
    const node = this.#node
    const generation = this.#generation
    this.#forget()
    // A lock of a lost session died with it; never touch what a newer session may own.
    if (node === undefined || generation !== this.#conn.generation) return false
    try {
      await this.#conn.remove(`${this.#parent}/${node}`)
      return true
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return false
      if (isConnectionProblem(err)) this.#conn.deleteWhenConnected(this.#parent, (c) => c === node)
      throw err
    }
  }

  refresh(): Promise<boolean> {
    return this.isStillOwner()
  }

  async isStillOwner(): Promise<boolean> {
    const node = this.#node
    if (node === undefined) return false
    if (this.#generation !== this.#conn.generation) {
      this.#forget()
      return false
    }
    try {
      const { data, stat } = await this.#conn.getData(`${this.#parent}/${node}`)
      if (data.equals(this.#data) && stat.ephemeralOwner === this.#conn.sessionId) return true
    } catch (err) {
      if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
    }
    if (this.#node === node) this.#forget()
    return false
  }

  async break(): Promise<boolean> {
    let children: string[]
    try {
      children = await this.#conn.getChildren(this.#parent)
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return false
      throw err
    }
    const holder = sortContenders(children)[0]
    if (!holder) return false
    try {
      await this.#conn.remove(`${this.#parent}/${holder.name}`)
      return true
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return false
      throw err
    }
  }

  /** True when this object still holds the lock in the current session (the Coordinator may have given it up). */
  async #stillHeld(): Promise<boolean> {
    return this.#node !== undefined && this.isStillOwner()
  }

  #take(node: string, generation: number): void {
    this.#node = node
    this.#generation = generation
    this.fencingToken = BigInt(CONTENDER.exec(node)![1]!)
  }

  #forget(): void {
    this.#node = undefined
    this.fencingToken = undefined
  }

  /** Creates our contender node and returns its name. A create that may have happened is cleaned up later. */
  async #create(): Promise<string> {
    const prefix = `${randomUUID().replaceAll('-', '')}${LOCK_NODE_NAME}`
    const path = `${this.#parent}/${prefix}`
    try {
      let created: string
      try {
        created = await this.#conn.create(path, this.#data, 'EPHEMERAL_SEQUENTIAL')
      } catch (err) {
        if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
        await this.#conn.ensurePath(this.#parent)
        created = await this.#conn.create(path, this.#data, 'EPHEMERAL_SEQUENTIAL')
      }
      return created.slice(this.#parent.length + 1)
    } catch (err) {
      // The server may have created it before the connection broke (kazoo finds it by the uuid prefix).
      if (isConnectionProblem(err)) this.#conn.deleteWhenConnected(this.#parent, (c) => c.startsWith(prefix))
      throw err
    }
  }

  /** Leaves the queue; a node that cannot be deleted now is deleted on reconnect. Never rejects. */
  async #withdraw(node: string, generation: number): Promise<void> {
    if (generation !== this.#conn.generation) return
    try {
      await this.#conn.remove(`${this.#parent}/${node}`)
    } catch (err) {
      if (zkCode(err) !== ZK_CODES.NO_NODE) this.#conn.deleteWhenConnected(this.#parent, (c) => c === node)
    }
  }

  /** Waits until `path` is deleted (or changes), or `until` aborts. Returns at once if it is gone. */
  async #waitForDeletion(path: string, until: AbortSignal): Promise<void> {
    if (until.aborted) return
    let wake: (() => void) | undefined
    const fired = new Promise<void>((resolve) => (wake = resolve))
    try {
      await this.#conn.getData(path, () => wake!())
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return
      if (!isConnectionProblem(err)) throw err
      await this.#conn.whenConnected(until).catch(() => {})
      return
    }
    // `until` may have aborted while the read was under way: a listener added now would never fire.
    if (until.aborted) return
    // The watch survives reconnects within the session (setWatches re-registers it); a lost session aborts `until`.
    await new Promise<void>((resolve) => {
      const done = (): void => {
        until.removeEventListener('abort', done)
        resolve()
      }
      until.addEventListener('abort', done, { once: true })
      void fired.then(done)
    })
  }
}
