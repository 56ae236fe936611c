/**
 * A fake ZooKeeper server on 127.0.0.1 for the hostile-server tests: it shakes hands, answers
 * pings and closeSession, and hands every other request to a script that answers it as it likes
 * (truncated, oversized, misaddressed, random bytes...).
 */
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { JuteWriter } from '../../src/clients/zookeeper/jute.js'
import { framed, OP } from '../../src/clients/zookeeper/zookeeper-frames.js'

/** The session id the fake grants. */
export const SESSION_ID = 0x1234_5678_9abc_def0n

/** A ConnectResponse frame. */
export function connectResponse(timeoutMs = 4000): Buffer {
  return framed(new JuteWriter().int(0).int(0).int(timeoutMs).long(SESSION_ID).buffer(Buffer.alloc(16, 7)).bool(false))
}

/** A reply frame: header and body. */
export function reply(xid: number, err: number, body: (w: JuteWriter) => void = () => {}): Buffer {
  const w = new JuteWriter().int(0).int(xid).long(5n).int(err)
  body(w)
  return framed(w)
}

/** A Stat of 68 bytes. */
export function stat(w: JuteWriter, dataLength = 0): void {
  w.long(1n).long(2n).long(1_700_000_000_000n).long(1_700_000_000_000n).int(0).int(0).int(0).long(0n).int(dataLength).int(0).long(1n)
}

/** One connection to the fake: its index (0 first), the socket, and what the client asked. */
export interface FakeConn {
  index: number
  sock: Socket
  /**
   * Runs `write` once every write queued before it has finished (at once, as a plain write, when none is under way): a
   * frame written slowly, a byte at a time, is never interleaved with another, as no server interleaves its replies.
   * The fake's own ping and closeSession answers go through it.
   */
  queue(write: () => void | Promise<void>): void
}

/** How the fake behaves; by default it shakes hands, answers pings and closeSession, and is silent otherwise. */
export interface Script {
  handshake?(c: FakeConn): void | Promise<void>
  /** `frame` is the request's frame after its length (xid, type, body). */
  request?(c: FakeConn, xid: number, type: number, frame: Buffer): void | Promise<void>
}

/** A fake ZooKeeper on 127.0.0.1:0 following `script`. */
export class FakeZk {
  readonly #server: Server
  readonly sockets = new Set<Socket>()
  connections = 0

  private constructor(server: Server) {
    this.#server = server
  }

  get port(): number {
    return (this.#server.address() as { port: number }).port
  }

  static async start(script: Script): Promise<FakeZk> {
    let fake!: FakeZk
    const server = createServer((sock) => fake.#accept(sock, script))
    fake = new FakeZk(server)
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return fake
  }

  #accept(sock: Socket, script: Script): void {
    // Writes queued and not finished, and the last of them.
    let queued = 0
    let tail: Promise<void> = Promise.resolve()
    const queue = (write: () => void | Promise<void>): void => {
      const done = (): void => void (queued -= 1)
      if (queued === 0) {
        const slow = write()
        if (slow === undefined) return
        queued += 1
        tail = slow.catch(() => {}).finally(done)
      } else {
        queued += 1
        tail = tail.then(write).catch(() => {}).finally(done)
      }
    }
    const c: FakeConn = { index: this.connections++, sock, queue }
    this.sockets.add(sock)
    sock.setNoDelay(true)
    sock.on('close', () => this.sockets.delete(sock))
    sock.on('error', () => {})
    let buf = Buffer.alloc(0)
    let shook = false
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const frame = buf.subarray(4, 4 + buf.readInt32BE(0))
        buf = buf.subarray(4 + frame.length)
        if (!shook) {
          shook = true
          void (script.handshake ?? ((c) => void c.sock.write(connectResponse())))(c)
          continue
        }
        const xid = frame.readInt32BE(0)
        const type = frame.readInt32BE(4)
        if (type === OP.ping || type === OP.closeSession) queue(() => void sock.write(reply(xid, 0)))
        else void script.request?.(c, xid, type, frame)
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
