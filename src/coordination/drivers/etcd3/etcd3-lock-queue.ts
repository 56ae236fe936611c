/**
 * The wait queue and the turn of an etcd lock (rollcall only; etcd3-lock.ts says how a lock uses
 * them and why they cannot break exclusion). Under `/rollcall/locks/<base64url of the name>/`:
 * - `q/<waiter id>`: one key per queued waiter, on the coordinator's waiter lease (etcd3-waiter-
 *   lease.ts), ordered by create revision. The waiter whose key is oldest is the head;
 * - `turn`: the lock object whose turn it is (its lock value), on that object's lock lease.
 *
 * A waiter watches this prefix, and so hears of the keys ahead of it leaving, and of turns
 * starting and ending; once it is the head it also watches the lock key for its DELETE. Only the
 * head sends a txn, and only when the lock may be free: when the key was deleted, or the turn
 * ended, after its last attempt. So a hand-over costs one txn, not one per waiter.
 */
import { key } from './etcd3-layout.js'
import { prefixEnd, type Compare, type EtcdGateway, type KeyValue, type RequestOp, type TxnResult } from './etcd3-gateway.js'
import { openWatch, type EtcdWatchEvent, type Watch } from './etcd3-watch.js'

/**
 * How long after a waiter saw a turn start it counts that turn as abandoned (its holder died, or
 * could not end it), and may take a free lock anyway: well past TURN_MS, which a live holder ends
 * its turn within (up to one acquisition later).
 */
export const TURN_STALE_MS = 1_000

/** The rollcall keys of one lock. */
export interface QueueKeys {
  /** Every key below: what a waiter watches. */
  readonly prefix: Buffer
  /** The queue: `<prefix>q/`, and the end of its range. */
  readonly queue: Buffer
  readonly queueEnd: Uint8Array
  /** The turn key. */
  readonly turn: Buffer
}

/** The queue and turn keys of lock `name`. The name is base64url-encoded so that no name's keys fall in another's range. */
export function queueKeys(name: string): QueueKeys {
  const prefix = key(`/rollcall/locks/${Buffer.from(name, 'utf8').toString('base64url')}/`)
  const queue = Buffer.concat([prefix, key('q/')])
  return { prefix, queue, queueEnd: prefixEnd(queue), turn: Buffer.concat([prefix, key('turn')]) }
}

/** A txn comparison that holds while no queue key exists. */
export const queueEmpty = (k: QueueKeys): Compare => ({ key: k.queue, rangeEnd: k.queueEnd, target: 'CREATE', result: 'EQUAL', operand: 0n })

/** The ops that queue `waiterKey` on `lease` and read what a waiter starts from (with {@link QueueWait.start}). */
export function enqueueOps(k: QueueKeys, lockKey: Buffer, waiterKey: Buffer, lease: string): RequestOp[] {
  return [{ put: { key: waiterKey, value: Buffer.alloc(0), lease } }, { range: { key: k.prefix, rangeEnd: prefixEnd(k.prefix) } }, {
    range: { key: lockKey, keysOnly: true },
  }]
}

/** The ops a failed head attempt reads (the lock key, the turn), so that its waiter knows why it failed ({@link QueueWait}). */
export const headFailureOps = (k: QueueKeys, lockKey: Buffer): RequestOp[] => [{ range: { key: lockKey, keysOnly: true } }, { range: { key: k.turn } }]

/** What a queued wait needs from its lock. */
export interface QueueWaitHost {
  readonly gw: EtcdGateway
  readonly keys: QueueKeys
  readonly lockKey: Buffer
  readonly waiterKey: Buffer
  /** The lock object's value (the value of its turns). */
  readonly value: Buffer
  /** Queues the waiter key again (a fresh txn of {@link enqueueOps}, on the current waiter lease). */
  enqueue(): Promise<TxnResult>
  /**
   * The head's attempt: take the lock if it is free, no key in the queue is older than revision
   * `queuedAt`, and the turn key is absent (or, when `staleTurn` is given, still at that mod
   * revision); then start this object's turn and leave the queue, in the same txn. A failed
   * attempt reads {@link headFailureOps}.
   */
  tryAsHead(queuedAt: bigint, staleTurn: bigint | undefined): Promise<TxnResult & { acquired: boolean }>
}

/** The turn as a waiter saw it. */
interface SeenTurn {
  value: Buffer
  modRevision: bigint
  /**
   * Set by the timer TURN_STALE_MS after this waiter first saw it (its own turns are stale at
   * once). The timer decides, not a clock read: a timer may fire a little before performance.now()
   * says its delay is over, and a waiter that then found the turn fresh would never look again.
   */
  stale: boolean
}

/** One queued wait, from the enqueue txn's answer until the lock is taken or the signal aborts. */
export class QueueWait {
  readonly #host: QueueWaitHost
  readonly #signal: AbortSignal
  /** The create revision of this waiter's key. */
  #queuedAt = 0n
  /** The revision of the last state read whole (enqueue); events at or before it are already in it. */
  #readAt = 0n
  /** The keys (latin1) of waiters ahead of this one. */
  readonly #ahead = new Set<string>()
  #turn: SeenTurn | undefined
  /** The latest revision at which the lock may have become free to the head (key deleted, turn ended, head reached). */
  #mayBeFreeAt = 0n
  /** The revision of this waiter's last failed attempt. */
  #triedAt = 0n
  /** The mod revision of the stale turn already tried against. */
  #staleTried: bigint | undefined
  #ownKeyGone = false
  #gap = false
  #prefixWatch: Watch | undefined
  #lockWatch: Watch | undefined
  #staleTimer: NodeJS.Timeout | undefined
  /** Set by every event (and abort) since the loop last looked; the loop blocks only while it is clear. */
  #news = false
  #resolveWait = (): void => {}

  constructor(host: QueueWaitHost, signal: AbortSignal) {
    this.#host = host
    this.#signal = signal
  }

  /** Waits from `queued` (the answer of a txn whose ops were {@link enqueueOps}) until the lock is taken (true) or the signal aborts (false). */
  async run(queued: TxnResult): Promise<boolean> {
    const onAbort = (): void => this.#wake()
    this.#signal.addEventListener('abort', onAbort, { once: true })
    try {
      this.#read(queued)
      this.#prefixWatch = await openWatch(this.#host.gw, {
        key: this.#host.keys.prefix,
        rangeEnd: prefixEnd(this.#host.keys.prefix),
        startRevision: this.#readAt + 1n,
      }, {
        onEvents: (events) => this.#onPrefixEvents(events),
        onGap: () => this.#onGap(),
      })
      for (;;) {
        if (this.#signal.aborted) return false
        if (this.#ownKeyGone || this.#gap) {
          this.#read(await this.#host.enqueue())
          continue
        }
        const stale = this.#staleTurn()
        if (this.#ahead.size === 0 && (this.#turn === undefined || stale !== undefined)) {
          this.#lockWatch ??= await this.#watchLock()
          const fresh = this.#mayBeFreeAt > this.#triedAt || (stale !== undefined && stale !== this.#staleTried)
          if (fresh) {
            this.#staleTried = stale
            const r = await this.#host.tryAsHead(this.#queuedAt, stale)
            if (r.acquired) return true
            this.#failedTry(r, stale)
            continue
          }
        }
        // Events that came while the loop awaited something else (opening a watch) are not lost: it looks again.
        if (!this.#news) await new Promise<void>((resolve) => (this.#resolveWait = resolve))
        this.#news = false
      }
    } finally {
      this.#signal.removeEventListener('abort', onAbort)
      clearTimeout(this.#staleTimer)
      this.#prefixWatch?.close()
      this.#lockWatch?.close()
    }
  }

  #wake(): void {
    this.#news = true
    this.#resolveWait()
  }

  /** Takes the state from an enqueue txn's answer (the range sees the txn's own put). */
  #read(r: TxnResult): void {
    const [, prefix = [], lock = []] = r.responses
    // A put on a key that still exists (queued again after a watch gap) keeps its place: its create revision.
    this.#queuedAt = prefix.find((kv) => kv.key.equals(this.#host.waiterKey))?.createRevision ?? r.revision
    this.#readAt = r.revision
    this.#ownKeyGone = false
    this.#gap = false
    this.#ahead.clear()
    this.#setTurn(undefined)
    for (const kv of prefix) {
      if (kv.key.equals(this.#host.keys.turn)) this.#setTurn(kv)
      else if (kv.createRevision < this.#queuedAt && !kv.key.equals(this.#host.waiterKey)) this.#ahead.add(kv.key.toString('latin1'))
    }
    // A lock free now may be taken at once; one held needs a DELETE after this read.
    this.#mayBeFreeAt = lock.length === 0 ? r.revision : 0n
    this.#triedAt = lock.length === 0 ? 0n : r.revision
  }

  /**
   * Learns why a head attempt failed, from what it read at its revision: a turn other than the one
   * this waiter tried against (take it as the turn), and the lock held (wait for its DELETE). With
   * neither, a key older than this waiter's is in the queue although none was seen: read again.
   */
  #failedTry(r: TxnResult, triedTurn: bigint | undefined): void {
    const [lock = [], [turn] = []] = r.responses
    const turnChanged = turn?.modRevision !== triedTurn
    if (turnChanged) this.#setTurn(turn)
    if (lock.length > 0) {
      if (r.revision > this.#triedAt) this.#triedAt = r.revision
      return
    }
    this.#mayFree(r.revision)
    if (!turnChanged) this.#gap = true
  }

  #onPrefixEvents(events: EtcdWatchEvent[]): void {
    for (const { type, kv } of events) {
      if (kv.modRevision <= this.#readAt) continue
      if (kv.key.equals(this.#host.keys.turn)) {
        if (this.#turn !== undefined && kv.modRevision <= this.#turn.modRevision) continue
        this.#setTurn(type === 'PUT' ? kv : undefined)
        if (type === 'DELETE') this.#mayFree(kv.modRevision)
      } else if (type === 'DELETE' && kv.key.equals(this.#host.waiterKey)) {
        // The waiter lease lapsed (or someone deleted the key): queue again, at the back.
        this.#ownKeyGone = true
      } else if (type === 'DELETE' && this.#ahead.delete(kv.key.toString('latin1')) && this.#ahead.size === 0) {
        this.#mayFree(kv.modRevision)
      }
    }
    this.#wake()
  }

  #onGap(): void {
    this.#gap = true
    this.#wake()
  }

  #mayFree(revision: bigint): void {
    if (revision > this.#mayBeFreeAt) this.#mayBeFreeAt = revision
  }

  #setTurn(kv: KeyValue | undefined): void {
    clearTimeout(this.#staleTimer)
    const seen = kv && { value: kv.value, modRevision: kv.modRevision, stale: kv.value.equals(this.#host.value) }
    this.#turn = seen
    if (seen && !seen.stale) {
      this.#staleTimer = setTimeout(() => {
        seen.stale = true
        this.#wake()
      }, TURN_STALE_MS)
      this.#staleTimer.unref()
    }
  }

  /** The mod revision of a turn this waiter may override: one of its own object left behind, or one seen for TURN_STALE_MS. */
  #staleTurn(): bigint | undefined {
    const t = this.#turn
    if (t === undefined) return undefined
    return t.stale ? t.modRevision : undefined
  }

  /** The head also watches the lock key, from the revision it became head at (no earlier DELETE matters to it any more). */
  #watchLock(): Promise<Watch> {
    const from = (this.#readAt > this.#mayBeFreeAt ? this.#readAt : this.#mayBeFreeAt) + 1n
    return openWatch(this.#host.gw, { key: this.#host.lockKey, startRevision: from, filters: ['NOPUT'] }, {
      onEvents: (events) => {
        for (const e of events) this.#mayFree(e.kv.modRevision)
        this.#wake()
      },
      onGap: () => this.#onGap(),
    })
  }
}
