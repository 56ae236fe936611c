/**
 * The `mc` driver (deprecated: emits DeprecationWarning ROLLCALL_DEP_MC once per process): Nova's
 * memcache driver. Liveness lives only in memcached; everything else stays in the catalog.
 *
 * - Key `<topic>:<host>` (topic, not binary, as Nova's), value = the report time (ISO-8601 UTC),
 *   expiry = service_down_time (memcached counts whole seconds: a fraction rounds up).
 * - Up iff the key exists: strictly before expiry. No created_at grace: a new service is down
 *   until its first report (initial_report_delay).
 * - getAll(): one multi-key `get` for every host of the topic, whatever their number.
 * - leave(): deletes the key.
 * - `[memcache] servers` is a fail-over list (the first that answers is used), not a shard map.
 *
 * Hazards (why it is deprecated): memcached may evict a key before its expiry under memory
 * pressure, making a live service read down until its next report; a restarted memcached forgets
 * every service at once; two servers in the list never share keys, so all readers and writers
 * must reach the same one.
 */
import { ConnectionError, InvalidArgumentError, ServiceGroupUnavailableError, type RollcallError } from '../../index.js'
import { MemcachedClient, MemcachedServerError, keyProblem } from '../../clients/memcached/memcached-client.js'
import { warnDeprecated } from '../deprecation.js'
import type { DriverStats, LiveView, ServiceGroupDriver } from '../driver.js'
import { toDate } from '../times.js'
import type { ServiceRecord, ServiceRef } from '../types.js'

/** Client timeouts of the mc driver. */
export const MC_TIMEOUTS = { connectMs: 3_000, requestMs: 3_000 } as const

/** Options of the mc driver. */
export interface McDriverOptions {
  /** `host:port` entries (already validated). */
  servers: readonly string[]
  serviceDownTimeSeconds: number
}

/** Nova's key: `<topic>:<host>`. */
export function mcKey(service: { topic: string; host: string }): string {
  return `${service.topic}:${service.host}`
}

function parseServer(text: string): { host: string; port: number } {
  const at = text.lastIndexOf(':')
  return { host: text.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(text.slice(at + 1)) }
}

/** The mc service-group driver. */
export class McDriver implements ServiceGroupDriver {
  readonly name = 'mc' as const
  readonly backendName = 'memcache server'
  readonly reportsOnJoin = false
  readonly needsServiceRecord = true
  readonly keepsReportTime = true
  readonly stats: DriverStats = { reads: 0, writes: 0 }
  readonly #options: McDriverOptions
  readonly #client: MemcachedClient

  constructor(options: McDriverOptions) {
    if (options.servers.length === 0) throw new InvalidArgumentError('The mc driver needs [memcache] servers')
    warnDeprecated('mc')
    this.#options = options
    this.#client = new MemcachedClient({
      hosts: options.servers.map(parseServer),
      connectTimeoutMs: MC_TIMEOUTS.connectMs,
      requestTimeoutMs: MC_TIMEOUTS.requestMs,
    })
  }

  /** The memcached client (for tests that look at the keys). */
  get client(): MemcachedClient {
    return this.#client
  }

  async start(): Promise<void> {}

  async report(service: ServiceRecord): Promise<void> {
    const key = this.#key(service)
    this.stats.writes += 1
    try {
      await this.#client.store('set', key, Buffer.from(new Date().toISOString()), 0, this.#options.serviceDownTimeSeconds)
    } catch (err) {
      throw this.#error(err, 'report')
    }
  }

  async isUp(service: ServiceRef): Promise<boolean> {
    return (await this.#read([service])).has(mcKey(service))
  }

  async getAll(_topic: string, services: readonly ServiceRef[]): Promise<LiveView> {
    const items = await this.#read(services)
    return {
      isUp: (s) => items.has(mcKey(s)),
      reportedAt: (s) => items.get(mcKey(s)) ?? null,
    }
  }

  async leave(host: string, topic: string): Promise<void> {
    const key = this.#key({ host, topic })
    this.stats.writes += 1
    try {
      await this.#client.delete(key)
    } catch (err) {
      throw this.#error(err, 'leave')
    }
  }

  async close(): Promise<void> {
    await this.#client.close()
  }

  /** Key → report time for the services whose key exists: one `get` naming every key. */
  async #read(services: readonly ServiceRef[]): Promise<Map<string, Date | null>> {
    const keys = [...new Set(services.map(mcKey).filter((k) => keyProblem(k) === undefined))]
    if (keys.length === 0) return new Map()
    this.stats.reads += 1
    let items
    try {
      items = await this.#client.get(keys)
    } catch (err) {
      throw this.#error(err, 'read')
    }
    const out = new Map<string, Date | null>()
    for (const [key, item] of items) {
      let at: Date | null = null
      try {
        at = toDate(item.value.toString('utf8'))
      } catch {
        // Written by something else (Nova pickles a datetime): present, so up, but no time.
      }
      out.set(key, at)
    }
    return out
  }

  #key(service: { topic: string; host: string }): string {
    const key = mcKey(service)
    const problem = keyProblem(key)
    if (problem) throw new InvalidArgumentError(`The memcache key ${JSON.stringify(key)} of ${service.host} in ${service.topic} cannot be stored: ${problem}`)
    return key
  }

  #error(err: unknown, op: 'report' | 'read' | 'leave'): RollcallError {
    const detail = (err as Error)?.message ?? String(err)
    // Reports feed the latch (retryable = "lost connection", logged once); reads raise Nova's error.
    if (op === 'read') return new ServiceGroupUnavailableError('mc', detail, { cause: err })
    const retryable = !(err instanceof MemcachedServerError) || err.kind === 'SERVER_ERROR'
    return new ConnectionError(`memcached ${op} failed: ${detail}`, { cause: err, retryable, driver: 'mc' })
  }
}
