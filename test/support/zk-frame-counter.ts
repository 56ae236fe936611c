/**
 * A counting proxy for ZooKeeper on loopback: forwards bytes both ways unchanged and, after each
 * connection's handshake, counts the requests the client sent by OpCode and the notifications
 * (xid -1) the server sent. The tests read the cost of an operation from it.
 */
import { connect, createServer, type Server, type Socket } from 'node:net'
import { FrameSplitter } from '../../src/clients/zookeeper/zookeeper-frames.js'

/** Feeds a stream to a FrameSplitter (the client's own); `onFrame` gets each frame without its length. */
function framer(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  const splitter = new FrameSplitter()
  return (chunk) => splitter.push(chunk).forEach(onFrame)
}

/** A running counting proxy. */
export class ZkFrameCounter {
  readonly port: number
  /** Requests sent by clients, by OpCode (pings included: OpCode 11). */
  readonly requests = new Map<number, number>()
  /** Notifications sent by the server. */
  notifications = 0
  readonly #server: Server
  readonly #sockets = new Set<Socket>()

  private constructor(server: Server, port: number) {
    this.#server = server
    this.port = port
  }

  /** Starts a proxy on a free port of 127.0.0.1 forwarding to 127.0.0.1:targetPort. */
  static start(targetPort: number): Promise<ZkFrameCounter> {
    return new Promise((resolve, reject) => {
      let proxy: ZkFrameCounter
      const server = createServer((client) => proxy.#accept(client, targetPort))
      server.on('error', reject)
      server.listen(0, '127.0.0.1', () => resolve(proxy = new ZkFrameCounter(server, (server.address() as { port: number }).port)))
    })
  }

  /** Requests of OpCode `op` so far. */
  count(op: number): number {
    return this.requests.get(op) ?? 0
  }

  /** Requests so far, pings left out. */
  total(): number {
    return [...this.requests].reduce((n, [op, k]) => n + (op === 11 ? 0 : k), 0)
  }

  /** Stops listening and ends every connection. */
  close(): Promise<void> {
    for (const s of this.#sockets) s.destroy()
    return new Promise((resolve) => this.#server.close(() => resolve()))
  }

  #accept(client: Socket, targetPort: number): void {
    const server = connect({ host: '127.0.0.1', port: targetPort })
    for (const s of [client, server]) {
      this.#sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => {
        this.#sockets.delete(s)
        client.destroy()
        server.destroy()
      })
    }
    let clientShook = false
    let serverShook = false
    const up = framer((f) => {
      if (!clientShook) return void (clientShook = true)
      const op = f.readInt32BE(4)
      this.requests.set(op, (this.requests.get(op) ?? 0) + 1)
    })
    const down = framer((f) => {
      if (!serverShook) return void (serverShook = true)
      if (f.readInt32BE(0) === -1) this.notifications += 1
    })
    client.on('data', (chunk: Buffer) => {
      up(chunk)
      server.write(chunk)
    })
    server.on('data', (chunk: Buffer) => {
      down(chunk)
      client.write(chunk)
    })
  }
}
