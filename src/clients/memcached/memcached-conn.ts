/**
 * One memcached connection's state: its socket, the reply buffer, the requests awaiting replies
 * (matched in order), and its single deadline timer. memcached-client.ts drives it.
 */
import type { Socket } from 'node:net'
import { ReplyReader, type Parser } from './memcached-protocol.js'

/** A request written and awaiting its reply. */
export interface PendingCommand {
  command: string
  parse: Parser<unknown>
  resolve(value: unknown): void
  reject(err: Error): void
  timeoutMs: number
  /** performance.now() by which the reply must have come. */
  deadline: number
}

/** One socket with its own reply buffer and queue of requests awaiting replies. */
export interface Conn {
  readonly socket: Socket
  readonly reader: ReplyReader
  readonly pending: PendingCommand[]
  /** True once the handshake succeeded and the connection was announced. */
  established: boolean
  /** True while writes are being gathered for one write at the end of this tick. */
  corked: boolean
  /**
   * One timer per connection, not one per request: it fires at the earliest deadline it was
   * armed for, fails the connection if a reply is overdue, and otherwise re-arms for the next.
   */
  timer: NodeJS.Timeout | undefined
  timerAt: number
}

/** A fresh connection over `socket`: nothing pending, not yet established. */
export function newConn(socket: Socket): Conn {
  return { socket, reader: new ReplyReader(), pending: [], established: false, corked: false, timer: undefined, timerAt: 0 }
}

/** Takes `entry` off the connection's queue (if still on it) and settles its promise. */
export function settle(conn: Conn, entry: PendingCommand, err?: Error, value?: unknown): void {
  const i = conn.pending.indexOf(entry)
  if (i < 0) return
  conn.pending.splice(i, 1)
  if (err) entry.reject(err)
  else entry.resolve(value)
}
