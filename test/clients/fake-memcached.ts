/**
 * A fake memcached server on 127.0.0.1 for the hostile-server tests: it answers the client's
 * `stats` handshake, and hands every other request (its line, and the data block of a storage
 * command) to a script that answers it as it likes: malformed, truncated, oversized, lying or
 * unasked-for bytes.
 */
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/** The stats reply the fake shakes hands with. */
export const STATS_REPLY = 'STAT pid 4242\r\nSTAT uptime 10\r\nSTAT time 1700000010\r\nSTAT version 1.6.21\r\nEND\r\n'

/** Answers one request: `line` without its \r\n (`get a b`, `cas k 0 0 1 7`), on connection `index` (0 first). */
export type MemcachedScript = (sock: Socket, line: string, index: number) => void | Promise<void>

/** Commands whose line is followed by a data block, and which word (from 0) of the line gives its size. */
const DATA_FIELD: Record<string, number> = { set: 4, add: 4, replace: 4, cas: 4, ms: 2 }

/** A fake memcached on 127.0.0.1:0 following `script`. */
export class FakeMemcached {
  readonly #server: Server
  readonly sockets = new Set<Socket>()
  connections = 0

  private constructor(server: Server) {
    this.#server = server
  }

  get port(): number {
    return (this.#server.address() as { port: number }).port
  }

  static async start(script: MemcachedScript): Promise<FakeMemcached> {
    let fake!: FakeMemcached
    const server = createServer((sock) => fake.#accept(sock, script))
    fake = new FakeMemcached(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return fake
  }

  #accept(sock: Socket, script: MemcachedScript): void {
    const index = this.connections++
    this.sockets.add(sock)
    sock.setNoDelay(true)
    sock.on('close', () => this.sockets.delete(sock))
    sock.on('error', () => {})
    let buf = Buffer.alloc(0)
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      for (;;) {
        const end = buf.indexOf('\r\n')
        if (end < 0) return
        const line = buf.toString('latin1', 0, end)
        const words = line.split(' ')
        const field = DATA_FIELD[words[0]!]
        const dataBytes = field === undefined ? 0 : Number(words[field]) + 2
        if (buf.length < end + 2 + dataBytes) return
        buf = buf.subarray(end + 2 + dataBytes)
        if (line === 'stats') sock.write(STATS_REPLY)
        else void script(sock, line, index)
      }
    })
  }

  /** Closes the server; resolves once every connection is closed, rejects if one stays open. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()))
    const bound = sleep(2_000).then(() => {
      for (const s of this.sockets) s.destroy()
      throw new Error(`the client left ${this.sockets.size} connection(s) open`)
    })
    await Promise.race([closed, bound])
  }
}
