/**
 * The application's own ioredis client (`connect('redis://?namespace=app', { client })`): what
 * rollcall accepts, and what it requires of it.
 *
 * Required: an ioredis `Redis` (a single server, or a master found through Sentinel), not
 * `Cluster` (the scripts touch keys in several hash slots), without `keyPrefix` (tooz's key layout
 * is built inside the scripts, where ioredis cannot prefix it; use the namespace option). Not
 * closed (`quit()`/`disconnect()`): rollcall connects a lazy one (`lazyConnect`), as its first
 * command would, and waits for one that is connecting.
 *
 * Hazards, taken as the application configured them: with `maxRetriesPerRequest: null` a command
 * issued while the connection is down waits for it to come back instead of failing (heartbeats
 * then stall until the Coordinator presumes the membership lost); with
 * `autoResendUnfulfilledCommands` (ioredis's default) a command in flight when the connection
 * broke is sent again (a join answered twice reads as MemberExistsError). rollcall's own client
 * sets `maxRetriesPerRequest: 0` and `autoResendUnfulfilledCommands: false`.
 */

import { kindOf } from '../kit/client-kind.js'

/**
 * What connect() takes as a Redis client: an ioredis `Redis` instance (typed by its shape, so
 * that rollcall's types do not need ioredis installed).
 */
export interface RedisOwnClient {
  /** ioredis's connection status (`wait`, `connecting`, `ready`, `end`, ...). */
  readonly status: string
  /** ioredis's options. */
  readonly options: object
  /** A new connection with the same settings (rollcall's subscriber connection, which it owns). */
  duplicate(override?: Record<string, unknown>): unknown
  /** Sends a command and answers Buffers. */
  callBuffer(command: string, ...args: (string | number | Buffer)[]): Promise<unknown>
}

/** Why `value` cannot serve as the redis driver's client, or undefined when it can. */
export function redisClientProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return `got ${value === null ? 'null' : typeof value}; pass new Redis(...) from ioredis`
  const c = value as Record<string, unknown>
  if (c.isCluster === true) {
    return 'got an ioredis Cluster; rollcall needs one server or a Sentinel master (its scripts touch keys in several hash slots), as tooz does'
  }
  if (typeof c.isOpen === 'boolean' && typeof c.sendCommand === 'function') return 'got a node-redis client (createClient()); pass an ioredis Redis instead'
  const shape = ['duplicate', 'callBuffer', 'defineCommand', 'connect', 'disconnect'].every((m) => typeof c[m] === 'function')
  if (!shape || typeof c.status !== 'string' || c.options === null || typeof c.options !== 'object') {
    return `got ${kindOf(value)}; pass new Redis(...) from ioredis`
  }
  const options = c.options as Record<string, unknown>
  if (typeof options.keyPrefix === 'string' && options.keyPrefix !== '') {
    return `its keyPrefix (${JSON.stringify(options.keyPrefix)}) cannot apply to keys built inside rollcall's scripts; use a client without keyPrefix and the `
      + 'namespace option (redis://?namespace=...)'
  }
  // quit()/disconnect() leave the status 'ready' until the socket's close event; ioredis marks the
  // client as closing at once (manuallyClosing, cleared when the close completes).
  if (c.status === 'end' || c.status === 'close' || c.manuallyClosing === true) {
    return 'it is closed (quit() or disconnect() was called); pass an open client'
  }
  return undefined
}
