/**
 * Lock wake-ups over Redis pub/sub: one subscriber connection per coordinator, opened on the
 * first contended wait, shared by every lock of that coordinator. Each waiting lock object has its
 * own channel (`<key>:wake:<token>`), subscribed on its first wait and kept until it has not waited
 * for LINGER_MS. A release that ends a holder's turn while rollcall waiters are queued PUBLISHes on
 * the head waiter's channel (redis-scripts.ts rollcallLockRelease), so one hand-over wakes one
 * process, which tries again at once (one channel per lock woke all 7 waiting processes of the
 * 8-process bench on every hand-over).
 *
 * Nothing depends on a message arriving: waiters keep their fallback poll (lock.ts), so a lost
 * message, a killed subscriber connection or a server restart costs a poll interval, never a stuck
 * waiter. A waiter queues only once its SUBSCRIBE is confirmed, and a release whose PUBLISH reaches
 * nobody drops that waiter from the queue (it queues again at its next attempt): so a waiter whose
 * process died does not keep a free lock from the others. Channels are not keys: tooz's key layout is untouched.
 */
import type { Redis } from 'ioredis'

/** How long an unused channel stays subscribed (a lock contended in a loop keeps its channel). */
const LINGER_MS = 30_000

interface Channel {
  /** Waiting lock objects, by token. */
  readonly wakes: Map<string, () => void>
  linger: NodeJS.Timeout | undefined
  /** When (performance.now() ms) a message came with nobody listening: the waiter was between two attempts. */
  missedAt: number | undefined
  /** The server confirmed the SUBSCRIBE. */
  subscribed: boolean
  /** Waiters to wake once it does (they queue then: see isSubscribed()). */
  readonly onSubscribed: Set<() => void>
}

/** A message missed by a waiter between two attempts wakes its next wait at once if it came this recently. */
const MISSED_FRESH_MS = 1_000

/** The subscriber connection and who waits on what. */
export class RedisWakeups {
  readonly #open: () => Redis
  readonly #channels = new Map<string, Channel>()
  #sub: Redis | undefined
  #stopped = false

  /** `open` makes the subscriber connection (a duplicate of the driver's, not yet connected). */
  constructor(open: () => Redis) {
    this.#open = open
  }

  /**
   * Calls `wake` when a release on `channel` names `token`, until the returned function is called.
   * Subscribes the channel if needed, without waiting for it: a message before the SUBSCRIBE is
   * confirmed is lost, and the waiter's poll covers that.
   */
  listen(channel: string, token: string, wake: () => void): () => void {
    if (this.#stopped) return () => {}
    const entry = this.#channels.get(channel) ?? this.#subscribe(channel)
    clearTimeout(entry.linger)
    entry.linger = undefined
    entry.wakes.set(token, wake)
    // A release that named this waiter while it was sending its next attempt: that attempt may have been answered before the
    // release (told to wait for the turn's end), so the message counts now.
    const missed = entry.missedAt !== undefined && performance.now() - entry.missedAt < MISSED_FRESH_MS
    entry.missedAt = undefined
    if (missed) queueMicrotask(wake)
    return () => {
      if (entry.wakes.get(token) !== wake) return
      entry.wakes.delete(token)
      if (entry.wakes.size > 0 || this.#stopped) return
      entry.linger = setTimeout(() => {
        if (entry.wakes.size > 0 || this.#channels.get(channel) !== entry) return
        this.#forget(channel)
        this.#sub?.unsubscribe(channel).catch(() => {})
      }, LINGER_MS)
      entry.linger.unref()
    }
  }

  /**
   * True once the server confirmed the SUBSCRIBE of `channel`: only then may its waiter queue, since
   * a release drops a queued waiter that nobody listens for (redis-scripts.ts wakeHead).
   */
  isSubscribed(channel: string): boolean {
    return this.#channels.get(channel)?.subscribed === true
  }

  /**
   * Calls `wake` once `channel` is subscribed (at once, in a microtask, if it is), until the returned
   * function is called: a waiter that could not queue yet tries again the moment it can.
   */
  whenSubscribed(channel: string, wake: () => void): () => void {
    const entry = this.#channels.get(channel)
    if (!entry) return () => {}
    if (entry.subscribed) {
      queueMicrotask(wake)
      return () => {}
    }
    entry.onSubscribed.add(wake)
    return () => void entry.onSubscribed.delete(wake)
  }

  /** Closes the subscriber connection; waiters go on polling. */
  stop(): void {
    this.#stopped = true
    for (const c of this.#channels.values()) clearTimeout(c.linger)
    this.#channels.clear()
    this.#sub?.disconnect()
    this.#sub = undefined
  }

  /** Starts listening on `channel` (the SUBSCRIBE is not awaited). */
  #subscribe(channel: string): Channel {
    const entry: Channel = { wakes: new Map(), linger: undefined, missedAt: undefined, subscribed: false, onSubscribed: new Set() }
    this.#channels.set(channel, entry)
    this.#client().subscribe(channel).then(
      () => {
        entry.subscribed = true
        for (const wake of entry.onSubscribed) wake()
        entry.onSubscribed.clear()
      },
      () => this.#forget(channel),
    )
    return entry
  }

  /** A channel whose SUBSCRIBE failed (or that lingered unused) is subscribed again by its next waiter. */
  #forget(channel: string): void {
    const c = this.#channels.get(channel)
    if (!c) return
    clearTimeout(c.linger)
    this.#channels.delete(channel)
  }

  #client(): Redis {
    if (this.#sub) return this.#sub
    const sub = this.#open()
    sub.on('error', () => {})
    sub.on('message', (channel: string, token: string) => {
      const c = this.#channels.get(channel)
      if (!c) return
      const wake = c.wakes.get(token)
      if (wake) wake()
      else c.missedAt = performance.now()
    })
    this.#sub = sub
    return sub
  }
}
