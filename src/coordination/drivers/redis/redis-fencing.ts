/**
 * Fencing tokens that survive a Redis Sentinel failover (URL form: `redis://SENTINEL:PORT?sentinel=<master>`).
 *
 * Hazard met here: replication is asynchronous, so a promoted replica may lack the last INCRs of
 * the old master's fencing counter, and an old master cut off from the Sentinels (with clients of
 * its own) keeps granting tokens from that counter while the new master grants from what
 * replicated: the same tokens twice (issue 27 measured 2 and 2). A counter alone cannot order
 * them; the Sentinel config epoch can: each failover adopts a strictly higher one, and a master
 * never hears of its successor's epoch while it is cut off from the Sentinels that elected it.
 *
 * So a token is (epoch, counter), compared in that order, packed into one number as
 * `epoch · 2^40 + counter` (below 2^63 up to 2^23 epochs; 2^40 acquisitions of one lock within one
 * epoch). The epoch is the Sentinel config epoch at which a Sentinel named the server that grants
 * it as the master: the driver asks a Sentinel (SENTINEL MASTER: address, run id and config epoch
 * in one reply) and matches the server it is connected to (its run id from INFO, else its
 * address) before its first acquisition on each connection, and the acquire script keeps the
 * highest epoch it was ever given beside the lock (`<lock key>:fence:epoch`, restarting the counter
 * when it rises). An old master therefore only grants tokens of epochs at which it was the master,
 * all below the epoch of any master promoted after it. The same check, repeated every second
 * while the client has joined a group or holds a lock, tells a client whose server the Sentinels
 * no longer name (it reconnects, then beats and re-checks its locks on the new master) — if it can
 * reach a Sentinel at all. A member on the majority side of a cut master needs it as much as a
 * holder: its beats would otherwise hang on the silent old master until its keys lapse on the new.
 *
 * Without Sentinel the epoch stays 0 and a token is the counter, as before. A client connected to
 * a Sentinel-managed master directly (not through the Sentinels) asks no Sentinel: it uses the
 * epoch the master stores, which a promoted master keeps from its predecessor until a client that
 * asked the Sentinels acquires there, so its tokens can repeat an old master's.
 */
import type { Redis } from 'ioredis'
import { ConnectionError } from '../../../errors.js'
import { withDeadline } from '../../../internal/deadline.js'
import type { HostPort } from '../../config/url.js'
import { SENTINEL_PORT } from './redis-connection.js'

/** Bits of a token below the epoch: the counter's share. */
export const EPOCH_SHIFT = 40n

/**
 * How often a client with something to keep alive (a joined group, a held lock) asks the Sentinels
 * whether its server is still the master they name.
 */
export const MASTER_CHECK_MS = 1_000

/**
 * How long one Sentinel may take to connect and answer SENTINEL MASTER before it is skipped: a
 * Sentinel answers from memory, and one cut off silently would otherwise hold every check for the
 * whole socket_timeout, the stretch in which a failover must be noticed.
 */
export const SENTINEL_ANSWER_MS = MASTER_CHECK_MS

/** The fencing token of an acquisition: `epoch · 2^40 + counter` (the counter alone at epoch 0). */
export function fencingToken(epoch: number, counter: number): bigint {
  return (BigInt(epoch) << EPOCH_SHIFT) + BigInt(counter)
}

/** What one Sentinel says of the master: all fields from one SENTINEL MASTER reply. */
export interface MasterView {
  host: string
  port: number
  /** Empty when the Sentinel has not read the master's INFO yet (just after a failover). */
  runId: string
  configEpoch: number
  /**
   * False while the Sentinel thinks the master down or fails it over: it has then already raised
   * the config epoch but still names the old master, so the view proves nothing about who masters
   * at which epoch.
   */
  settled: boolean
  /** Which Sentinel said so. */
  sentinel: HostPort
}

/**
 * Asks the Sentinels about one master, in the order the URL names them, the last one that answered
 * first; each within SENTINEL_ANSWER_MS.
 */
export class SentinelAsker {
  readonly #sentinels: readonly HostPort[]
  readonly #master: string
  readonly #connect: (sentinel: HostPort) => Redis
  /** Index of the Sentinel that answered last, asked first next time. */
  #current = 0
  #client: Redis | undefined

  constructor(sentinels: readonly HostPort[], master: string, connect: (sentinel: HostPort) => Redis) {
    this.#sentinels = sentinels
    this.#master = master
    this.#connect = connect
  }

  /** The first answer of a Sentinel that knows the master; ConnectionError when none answers. */
  async ask(): Promise<MasterView> {
    const errors: string[] = []
    for (let i = 0; i < this.#sentinels.length; i++) {
      const index = (this.#current + i) % this.#sentinels.length
      const sentinel = this.#sentinels[index]!
      const name = `${sentinel.host}:${sentinel.port}`
      try {
        if (index !== this.#current || !this.#client) {
          this.#client?.disconnect()
          const client = this.#connect(sentinel)
          client.on('error', () => {})
          // Kept before it is up, so that a failure below closes it.
          this.#client = client
          await withDeadline(client.connect(), SENTINEL_ANSWER_MS)
          this.#current = index
        }
        const reply = await withDeadline(this.#client.call('SENTINEL', 'MASTER', this.#master), SENTINEL_ANSWER_MS)
        return parseMasterView(reply, sentinel)
      } catch (err) {
        errors.push(`${name}: ${(err as Error).message}`)
        this.#client?.disconnect()
        this.#client = undefined
      }
    }
    throw new ConnectionError(`No sentinel confirmed the master "${this.#master}" (${errors.join('; ')})`)
  }

  /**
   * The settled view with the highest config epoch among every sentinel that answers, each asked
   * on a connection of its own: a second opinion when the usual sentinel names another master
   * (one that has not yet heard of a failover does for a second or two) or is failing it over.
   * ConnectionError when none answers with a settled view.
   */
  async newest(): Promise<MasterView> {
    const views = await Promise.all(this.#sentinels.map(async (sentinel) => {
      const client = this.#connect(sentinel)
      client.on('error', () => {})
      try {
        const reply = await withDeadline(client.connect().then(() => client.call('SENTINEL', 'MASTER', this.#master)), SENTINEL_ANSWER_MS)
        return parseMasterView(reply, sentinel)
      } catch {
        return undefined
      } finally {
        client.disconnect()
      }
    }))
    const answered = views.filter((v): v is MasterView => v !== undefined && v.settled)
    if (answered.length === 0) throw new ConnectionError(`No sentinel confirmed the master "${this.#master}" (none answered, or a failover is in progress)`)
    return answered.reduce((a, b) => (b.configEpoch > a.configEpoch ? b : a))
  }

  stop(): void {
    this.#client?.disconnect()
    this.#client = undefined
  }
}

/** SENTINEL MASTER's flat field/value list to a view; throws when a field is missing. */
export function parseMasterView(reply: unknown, sentinel: HostPort): MasterView {
  if (!Array.isArray(reply)) throw new Error(`unexpected SENTINEL MASTER reply ${String(reply)}`)
  const fields = new Map<string, string>()
  for (let i = 0; i + 1 < reply.length; i += 2) fields.set(String(reply[i]), String(reply[i + 1]))
  const port = Number(fields.get('port'))
  const configEpoch = Number(fields.get('config-epoch'))
  const host = fields.get('ip')
  if (host === undefined || !Number.isSafeInteger(port) || !Number.isSafeInteger(configEpoch) || configEpoch < 0) {
    throw new Error(`SENTINEL MASTER reply lacks ip, port or config-epoch`)
  }
  const settled = !/\b(s_down|o_down|failover_in_progress)\b/.test(fields.get('flags') ?? '')
  return { host, port, runId: fields.get('runid') ?? '', configEpoch, settled, sentinel }
}

/**
 * Has ioredis's next connect through the Sentinels ask `sentinel` first. ioredis goes on from the
 * Sentinel after the one it used last (it starts its list again only once it has tried them
 * all), and one cut off silently holds the connect for the whole connectTimeout
 * (socket_connect_timeout): issue 27, Redis full form, a master cut off alone: the member whose
 * ioredis went on to the Sentinel on the master's host lapsed 8.4 s after the cut, while the
 * others moved to the promoted master within 4.5 s. Reaches into ioredis's SentinelConnector
 * (its sentinelIterator, checked against ioredis's own in test/drivers/redis.test.ts); a shape it
 * does not know, or a Sentinel not in its list, is left as it is.
 */
export function askSentinelFirst(client: Redis, sentinel: HostPort): void {
  const iterator = (client as unknown as { connector?: { sentinelIterator?: { sentinels?: unknown; cursor?: unknown } } }).connector?.sentinelIterator
  if (!iterator || !Array.isArray(iterator.sentinels) || typeof iterator.cursor !== 'number') return
  const list = iterator.sentinels as Partial<HostPort>[]
  const at = list.findIndex((s) => s.host === sentinel.host && (s.port ?? SENTINEL_PORT) === (sentinel.port ?? SENTINEL_PORT))
  if (at < 0) return
  list.unshift(...list.splice(at, 1))
  iterator.cursor = 0
}

/** The server a connection reaches: its run id (INFO server) and the address of the socket. */
export interface ServerIdentity {
  runId: string
  host: string | undefined
  port: number | undefined
}

/** Reads the identity of the server behind `client`'s current connection. */
export async function serverIdentity(client: Redis): Promise<ServerIdentity> {
  const info = await client.info('server')
  const stream = (client as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream
  return {
    runId: /^run_id:([0-9a-f]+)\s*$/m.exec(info)?.[1] ?? '',
    host: stream?.remoteAddress?.replace(/^::ffff:/, ''),
    port: stream?.remotePort,
  }
}

/** True when the Sentinel's master is the server: same run id, or (run id not known yet or stale after a restart) same address. */
export function isNamedMaster(view: MasterView, server: ServerIdentity): boolean {
  if (view.runId !== '' && view.runId === server.runId) return true
  return server.host !== undefined && view.host.replace(/^::ffff:/, '') === server.host && view.port === server.port
}
