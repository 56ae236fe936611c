/**
 * kazoo's lock recipes (kazoo/recipe/lock.py), which tooz uses for its ZooKeeper locks and
 * leader elections, so that Python and Node contenders stand in one queue.
 *
 * Layout: each contender creates an EPHEMERAL_SEQUENTIAL child of the lock's node, holding its
 * member id: `<uuid4hex>__lock__<10 digits>` for an exclusive contender, `<uuid4hex>__rlock__<10
 * digits>` for a shared one. Contenders are ordered by that sequence (as kazoo does: by the digit
 * string). An exclusive contender is kazoo's WriteLock: it holds once no contender of either kind
 * comes before it. A shared contender is kazoo's ReadLock: it holds once no exclusive contender
 * comes before it. A waiting contender watches the last contender before it that excludes it; a
 * non-blocking attempt that does not hold deletes its node again.
 *
 * tooz's own exclusive lock is kazoo's plain Lock, which counts only `__lock__` nodes: it excludes
 * rollcall's exclusive and (queued after it) shared contenders, but it takes the lock while
 * rollcall readers hold it. kazoo 2.8's ReadLock (Debian's) counts every `__lock__` node, even one
 * queued after its own, so a Python reader racing a rollcall writer may wait on that writer while
 * the writer waits on it, until one of them gives up.
 *
 * Unlike kazoo, a node this process can no longer delete because the connection broke is deleted
 * as soon as the session reconnects (ZkConnection.deleteWhenConnected): an abandoned contender left
 * in the queue would otherwise make every later contender wait on a holder that never comes.
 * And unlike kazoo, a lock taken in a session that was lost answers false to isStillOwner().
 *
 * The fencing token of an exclusive hold is the contender node's czxid, the zxid of the transaction
 * that created it (create2, ZooKeeper 3.5+, returns it with the name in the same round trip). zxids
 * only grow for the life of the ensemble (epoch in the high 32 bits, counter in the low), and holders
 * follow creation order (the sequence order within one lock node; a lock node is deleted only when
 * empty, so every contender of a new one came later), so each new holder's token is larger. Not the
 * sequence number kazoo orders by: it is drawn from the lock node's child version, which starts again
 * at 0 once an operator deletes an empty `/<ns>/locks/<name>` (a routine cleanup) and turns negative
 * at its 32-bit wrap. A shared hold has none (several hold at once).
 */
import { randomUUID } from 'node:crypto'
import { ConnectionError } from '../../../errors.js'
import type { DriverLock, QueueWaiting } from '../../driver.js'
import { linkedSignal } from '../../../internal/linked-signal.js'
import { isConnectionProblem, ZK_CODES, zkCode, type ZkConnection, type ZkCreated } from '../../../clients/zookeeper/zookeeper-client.js'

/** What follows the uuid in an exclusive contender's name (kazoo `Lock._NODE_NAME`, `WriteLock._NODE_NAME`). */
export const LOCK_NODE_NAME = '__lock__'
/** What follows the uuid in a shared contender's name (kazoo `ReadLock._NODE_NAME`). */
export const READ_LOCK_NODE_NAME = '__rlock__'

/** kazoo's contender pattern, for both kinds: `(?:__lock__|__rlock__)(-?\d{10})$`. */
const CONTENDER = /(__lock__|__rlock__)(-?\d{10})$/

/** One contender node. */
export interface Contender {
  /** The node's name (a child of the lock node). */
  name: string
  /** Its sequence number as written (10 digits, maybe signed). */
  sequence: string
  /** True for a shared (`__rlock__`) contender. */
  shared: boolean
}

/** The contenders of both kinds among `children`, in kazoo's order: by the sequence string. */
export function sortContenders(children: readonly string[]): Contender[] {
  const out: Contender[] = []
  for (const name of children) {
    const m = CONTENDER.exec(name)
    if (m) out.push({ name, sequence: m[2]!, shared: m[1] === READ_LOCK_NODE_NAME })
  }
  return out.sort((a, b) => (a.sequence < b.sequence ? -1 : a.sequence > b.sequence ? 1 : 0))
}

/**
 * The contender `node` waits for: the last one before it that excludes it (every kind excludes an
 * exclusive contender, only exclusive ones exclude a shared one); null when `node` holds, and
 * undefined when `node` is not in `order` at all.
 */
export function blockerOf(order: readonly Contender[], node: string): Contender | null | undefined {
  const at = order.findIndex((c) => c.name === node)
  if (at < 0) return undefined
  const shared = order[at]!.shared
  for (let i = at - 1; i >= 0; i--) {
    if (!shared || !order[i]!.shared) return order[i]!
  }
  return null
}

/** The contenders that hold the lock now: the first exclusive one if it leads, else the shared ones before any exclusive one. */
export function holdersOf(order: readonly Contender[]): Contender[] {
  if (order[0] && !order[0].shared) return [order[0]]
  const end = order.findIndex((c) => !c.shared)
  return end < 0 ? [...order] : order.slice(0, end)
}

/**
 * The data of the first exclusive contender under `parent` (tooz get_leader: kazoo Lock's
 * `contenders()[0]`), or null when there is none or it holds no data. Reads only: never creates
 * `parent` (kazoo's contenders() does).
 */
export async function readHolder(conn: ZkConnection, parent: string): Promise<string | null> {
  let children: string[]
  try {
    children = await conn.getChildren(parent)
  } catch (err) {
    if (zkCode(err) === ZK_CODES.NO_NODE) return null
    throw err
  }
  for (const c of sortContenders(children).filter((c) => !c.shared)) {
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
  /** Waiters queue as sequential children of the lock's node, each watching the one it waits behind (kazoo's recipe). */
  readonly waiting: QueueWaiting = { kind: 'queue', acquireWaiting: (signal, mode) => this.#wait(signal, mode === 'shared') }
  readonly #conn: ZkConnection
  readonly #parent: string
  readonly #data: Buffer
  #node: string | undefined
  #generation = 0
  /** The session the hold is in (its id). */
  #owner = ''
  fencingToken: bigint | undefined

  /** `parent` is the lock's node (`/<ns>/locks/<name>` or `/<ns>/<group>/leader`). */
  constructor(conn: ZkConnection, parent: string, memberId: string) {
    this.#conn = conn
    this.#parent = parent
    this.#data = Buffer.from(memberId, 'utf8')
  }

  tryAcquire(): Promise<boolean> {
    return this.#try(false)
  }

  tryAcquireShared(): Promise<boolean> {
    return this.#try(true)
  }

  async #try(shared: boolean): Promise<boolean> {
    // Not re-entrant (driver.ts): a hold this object still has is not taken again.
    if (await this.#stillHeld()) return false
    const generation = this.#conn.generation
    const owner = this.#conn.sessionId
    const { node, czxid, listed } = await this.#createAndList(shared)
    try {
      if (blockerOf(sortContenders(await listed), node) === null) {
        this.#take(node, czxid, generation)
        return true
      }
    } catch (err) {
      await this.#withdraw(node, generation, owner)
      throw err
    }
    // Not holding: leave the queue at once, as kazoo's non-blocking acquire does.
    await this.#withdraw(node, generation, owner)
    return false
  }

  async #wait(signal: AbortSignal, shared: boolean): Promise<boolean> {
    if (await this.#stillHeld()) return false
    try {
      await this.#conn.whenConnected(signal)
    } catch (err) {
      if (signal.aborted) return false
      throw err
    }
    const generation = this.#conn.generation
    const owner = this.#conn.sessionId
    const session = this.#conn.sessionSignal
    const ends = [signal, session]
    let node: string | undefined
    let czxid: bigint
    try {
      const created = await this.#createAndList(shared)
      ;({ node, czxid } = created)
      let listed: Promise<string[]> | undefined = created.listed
      for (;;) {
        if (signal.aborted) break
        if (session.aborted || generation !== this.#conn.generation) {
          throw new ConnectionError(`The ZooKeeper session ended while waiting for the lock at ${this.#parent}`, { cause: session.reason })
        }
        let order: Contender[]
        try {
          order = sortContenders(await (listed ?? this.#conn.getChildren(this.#parent)))
          listed = undefined
        } catch (err) {
          listed = undefined
          if (!isConnectionProblem(err) || this.#conn.stopped) throw err
          await this.#reconnected(ends)
          continue
        }
        const blocker = blockerOf(order, node)
        if (blocker === null) {
          this.#take(node, czxid, generation)
          node = undefined
          return true
        }
        if (blocker === undefined) {
          // Someone deleted our node (break()) while the session lives on: queue again, as kazoo does.
          ;({ node, czxid, listed } = await this.#createAndList(shared))
          continue
        }
        await this.#waitForDeletion(`${this.#parent}/${blocker.name}`, ends)
      }
    } finally {
      // A wait that ended at the caller's deadline (or abort) returns at once: the delete is written now, ahead of anything
      // this session sends next (ZooKeeper answers a session's requests in order), so a later try of this object queues
      // behind it. Meanwhile the leftover node may briefly lead the queue, which only keeps others waiting, as a holder would.
      if (node !== undefined) {
        const withdrawn = this.#withdraw(node, generation, owner)
        if (!signal.aborted) await withdrawn
      }
    }
    return false
  }

  async release(): Promise<boolean> {
    const node = this.#node
    const generation = this.#generation
    this.#forget()
    // A lock of a lost session died with it; never touch what a newer session may own.
    if (node === undefined) return false
    if (generation !== this.#conn.generation) {
      this.#leftInDeadSession(node)
      return false
    }
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
      this.#leftInDeadSession(node)
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

  /** Deletes every current holder: the leading exclusive contender, or the shared ones before any exclusive one. */
  async break(): Promise<boolean> {
    let children: string[]
    try {
      children = await this.#conn.getChildren(this.#parent)
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return false
      throw err
    }
    const removed = await Promise.all(
      holdersOf(sortContenders(children)).map(async (holder) => {
        try {
          await this.#conn.remove(`${this.#parent}/${holder.name}`)
          return true
        } catch (err) {
          if (zkCode(err) === ZK_CODES.NO_NODE) return false
          throw err
        }
      }),
    )
    return removed.includes(true)
  }

  /** True when this object still holds the lock, in either mode, in the current session; a hold found gone is forgotten. */
  async #stillHeld(): Promise<boolean> {
    return this.#node !== undefined && (await this.isStillOwner())
  }

  #take(node: string, czxid: bigint, generation: number): void {
    this.#node = node
    this.#generation = generation
    this.#owner = this.#conn.sessionId
    this.fencingToken = node.includes(READ_LOCK_NODE_NAME) ? undefined : czxid
  }

  /**
   * A node of session `owner` (by default the hold's), if this client presumed that session
   * expired: its holder was told it lost the lock then, but the server may keep the session, and
   * the node, for up to a timeout more, every later contender waiting behind it (ZooKeeper
   * partition seed 21: a candidate's node left no leader for the 6.6 s between a heal and the next
   * cut). Deleted from the current session while that session still owns it.
   */
  #leftInDeadSession(node: string, owner = this.#owner): void {
    if (this.#conn.isDeadSession(owner)) this.#conn.deleteWhenConnected(this.#parent, (c) => c === node, { deadOwner: owner })
  }

  #forget(): void {
    this.#node = undefined
    this.fencingToken = undefined
  }

  /**
   * Creates our contender node and lists the lock's children in the same round trip: ZooKeeper
   * answers one session's requests in the order they were sent, so the listing is read after the
   * create and includes the node (kazoo sends the two one after the other). Resolves to the node's
   * name, its czxid (the fencing token) and the listing (awaited by the caller, which may fail on its
   * own). A create that may have happened is cleaned up later.
   */
  async #createAndList(shared: boolean): Promise<{ node: string; czxid: bigint; listed: Promise<string[]> }> {
    const prefix = `${randomUUID().replaceAll('-', '')}${shared ? READ_LOCK_NODE_NAME : LOCK_NODE_NAME}`
    const path = `${this.#parent}/${prefix}`
    const createAndList = (): [Promise<ZkCreated>, Promise<string[]>] => {
      const created = this.#conn.createWithStat(path, this.#data, 'EPHEMERAL_SEQUENTIAL')
      const listed = this.#conn.getChildren(this.#parent)
      // Awaited only once the create succeeds: a listing that fails with it (no parent yet) is nobody's error.
      listed.catch(() => {})
      return [created, listed]
    }
    try {
      let [created, listed] = createAndList()
      let made: ZkCreated
      try {
        made = await created
      } catch (err) {
        if (zkCode(err) !== ZK_CODES.NO_NODE) throw err
        await this.#conn.ensurePath(this.#parent)
        ;[created, listed] = createAndList()
        made = await created
      }
      return { node: made.path.slice(this.#parent.length + 1), czxid: made.stat.czxid, listed }
    } catch (err) {
      // The server may have created it before the connection broke, or may yet (kazoo finds it by the uuid prefix).
      if (isConnectionProblem(err)) this.#conn.deleteWhenConnected(this.#parent, (c) => c.startsWith(prefix), { maybe: true })
      throw err
    }
  }

  /** Leaves the queue; a node that cannot be deleted now is deleted on reconnect. Never rejects. */
  async #withdraw(node: string, generation: number, owner: string): Promise<void> {
    if (generation !== this.#conn.generation) {
      this.#leftInDeadSession(node, owner)
      return
    }
    try {
      await this.#conn.remove(`${this.#parent}/${node}`)
    } catch (err) {
      if (zkCode(err) !== ZK_CODES.NO_NODE) this.#conn.deleteWhenConnected(this.#parent, (c) => c === node)
    }
  }

  /** Until the connection is back, or one of `ends` aborts (a rare path, which may combine them into one signal). */
  async #reconnected(ends: readonly AbortSignal[]): Promise<void> {
    const linked = linkedSignal(ends)
    await this.#conn.whenConnected(linked.signal).catch(() => {})
    linked.dispose()
  }

  /** Waits until `path` is deleted (or changes), or one of `ends` aborts. Returns at once if it is gone. */
  async #waitForDeletion(path: string, ends: readonly AbortSignal[]): Promise<void> {
    const ended = (): boolean => ends.some((s) => s.aborted)
    if (ended()) return
    let wake: (() => void) | undefined
    const fired = new Promise<void>((resolve) => (wake = resolve))
    try {
      await this.#conn.getData(path, () => wake!())
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return
      if (!isConnectionProblem(err)) throw err
      await this.#reconnected(ends)
      return
    }
    // An end may have come while the read was under way: a listener added now would never fire.
    if (ended()) return
    // The watch survives reconnects within the session (setWatches re-registers it); a lost session ends the wait.
    // Listeners on the signals themselves, not one combined signal: an AbortController per wait is garbage that Node 20
    // leaves in V8's old space (internal/linked-signal.ts), and a contended acquisition waits here once.
    await new Promise<void>((resolve) => {
      const done = (): void => {
        for (const s of ends) s.removeEventListener('abort', done)
        resolve()
      }
      for (const s of ends) s.addEventListener('abort', done, { once: true })
      void fired.then(done)
    })
  }
}
