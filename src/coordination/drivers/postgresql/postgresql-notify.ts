/**
 * Membership change notifications over PostgreSQL LISTEN/NOTIFY.
 *
 * Every statement that changes a group's members (join, leave, capabilities update, group
 * deletion) also runs `pg_notify(<namespace>changes, <group id>)` in the same statement, so the
 * notification is sent exactly when the change commits. One connection per coordinator LISTENs,
 * opened with the first watched group and closed with the last.
 *
 * Expiry is not a statement (a crashed member's row merely ages), so it is never notified: the
 * Coordinator keeps polling watched groups, and this only makes joins and leaves arrive at once.
 * A notification lost while the listening connection was down is covered by that polling too;
 * after reconnecting, every subscriber is woken once to re-read.
 */
import type { Logger } from '../../logger.js'
import { endPgClient, type PgClient } from './postgresql-lock.js'

/** Reconnect delays of the listening connection: doubles from the first to the last. */
const RECONNECT_FIRST_MS = 250
const RECONNECT_MAX_MS = 5_000

/** The LISTEN side of one coordinator. */
export class PgNotifier {
  readonly #connect: () => Promise<PgClient>
  readonly #channel: string
  readonly #log: Logger
  readonly #subscribers = new Map<string, Set<() => void>>()
  #client: PgClient | undefined
  #connecting: Promise<void> | undefined
  #retry: NodeJS.Timeout | undefined
  #retryMs = RECONNECT_FIRST_MS
  #closed = false

  /** `channel` must be a lower-case identifier (sql-schema.ts makes it so). */
  constructor(connect: () => Promise<PgClient>, channel: string, log: Logger) {
    this.#connect = connect
    this.#channel = channel
    this.#log = log
  }

  /** Calls `onChange` on every notification for `group`; resolves once LISTEN is in place. */
  async subscribe(group: string, onChange: () => void): Promise<() => Promise<void>> {
    let set = this.#subscribers.get(group)
    if (!set) this.#subscribers.set(group, set = new Set())
    set.add(onChange)
    try {
      await this.#listen()
    } catch (err) {
      await this.#unsubscribe(group, onChange)
      throw err
    }
    return () => this.#unsubscribe(group, onChange)
  }

  /** Ends the listening connection for good. */
  async close(): Promise<void> {
    this.#closed = true
    this.#subscribers.clear()
    clearTimeout(this.#retry)
    await this.#connecting?.catch(() => undefined)
    await this.#drop()
  }

  async #unsubscribe(group: string, onChange: () => void): Promise<void> {
    const set = this.#subscribers.get(group)
    set?.delete(onChange)
    if (set?.size === 0) this.#subscribers.delete(group)
    if (this.#subscribers.size === 0) {
      clearTimeout(this.#retry)
      await this.#connecting?.catch(() => undefined)
      if (this.#subscribers.size === 0) await this.#drop()
    }
  }

  #listen(): Promise<void> {
    if (this.#client) return Promise.resolve()
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = undefined
    })
    return this.#connecting
  }

  async #open(): Promise<void> {
    const client = await this.#connect()
    const lost = (reason: string): void => {
      if (this.#client !== client) return
      this.#client = undefined
      this.#log.warn('the PostgreSQL LISTEN connection was lost; reconnecting', { reason })
      void endPgClient(client)
      this.#scheduleReconnect()
    }
    client.on('notification', (msg) => {
      if (msg.channel !== this.#channel || msg.payload === undefined) return
      for (const cb of this.#subscribers.get(msg.payload) ?? []) cb()
    })
    client.on('error', (err) => lost(err.message))
    client.on('end', () => lost('the connection ended'))
    try {
      await client.query(`LISTEN "${this.#channel}"`)
    } catch (err) {
      await endPgClient(client)
      throw err
    }
    if (this.#closed || this.#subscribers.size === 0) {
      await endPgClient(client)
      return
    }
    this.#client = client
    this.#retryMs = RECONNECT_FIRST_MS
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#subscribers.size === 0) return
    clearTimeout(this.#retry)
    this.#retry = setTimeout(() => {
      this.#listen().then(() => {
        // Notifications sent while nobody listened are gone: have every subscriber re-read.
        for (const set of this.#subscribers.values()) for (const cb of set) cb()
      }, (err: unknown) => {
        this.#log.warn('reconnecting the PostgreSQL LISTEN connection failed', { error: String(err) })
        this.#retryMs = Math.min(this.#retryMs * 2, RECONNECT_MAX_MS)
        this.#scheduleReconnect()
      })
    }, this.#retryMs)
    this.#retry.unref()
  }

  async #drop(): Promise<void> {
    const client = this.#client
    this.#client = undefined
    if (client) await endPgClient(client)
  }
}
