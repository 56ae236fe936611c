/**
 * A fault-injecting TCP proxy on loopback, in front of a real server (etcd3's test Proxy is the
 * model). Point a client at `proxy.port`; then:
 * - pause(): stop forwarding in both directions; connections stay open and silent (a partition);
 * - resume(): forward again, delivering what was held back; with pause({ lateDelivery: true }),
 *   also what a client sent before it closed its connection (as the kernel still delivers what
 *   an orphaned socket had sent, once a partition heals); with pause({ repliesOnly: true }), what
 *   clients send goes on and only the server's answers are held (a one-way cut: the server hears
 *   its clients, they do not hear it, as with the partition nemesis's `drop-out`);
 * - cut(): reset every connection and refuse new ones (a dead link) until restore();
 * - stall(): the connections open now go silent for good, new ones forward (half-open links);
 * - stallUntil(): the connections open now, and those opened until unstall(), go silent for good
 *   (a cut whose retransmissions, and whose SYNs, have backed off past its heal: only connections
 *   opened after the heal get through);
 * - stallOn(text): from now on, a connection whose client sends `text` (case-insensitive, within
 *   one read) goes silent for good from that write on (a server that stalls one kind of request,
 *   or a link lost in a partition whose retransmissions have backed off);
 *   silent for good: nothing more of a stalled connection reaches the other end, not even its
 *   client's close (the server's side stays open until the proxy closes);
 * - stallAfter(text): once: the next connection whose client sends `text` delivers that write,
 *   then goes silent for good (a request that reached the server before a cut lost its answer);
 * - endMidFrame(tail): sends `tail` to every client, then closes its connection politely (a
 *   reply cut off part way);
 * - close(): end everything.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'

/** A running proxy. */
export class TcpProxy {
  readonly port: number
  readonly #server: Server
  readonly #pairs = new Set<[Socket, Socket]>()
  readonly #stalled = new Set<[Socket, Socket]>()
  #paused = false
  /** While paused: a client's close waits for resume() to deliver what it sent (see pause()). */
  #lateDelivery = false
  /** While paused: only the server's answers are held (see pause()). */
  #repliesOnly = false
  #cut = false
  /** stallUntil() until unstall(): new connections go silent at once. */
  #stallNew = false
  #stallOn: string | undefined
  #stallAfter: string | undefined
  /** Writes held back while paused, in order. */
  readonly #held: (() => void)[] = []

  private constructor(server: Server, port: number) {
    this.#server = server
    this.port = port
  }

  /** Starts a proxy on a free port of loopback address `host` forwarding to host:targetPort. */
  static start(targetPort: number, host: '127.0.0.1' | '::1' = '127.0.0.1'): Promise<TcpProxy> {
    return new Promise((resolve, reject) => {
      let proxy: TcpProxy
      const server = createServer((client) => proxy.#accept(client, targetPort, host))
      server.on('error', reject)
      server.listen(0, host, () => {
        proxy = new TcpProxy(server, (server.address() as { port: number }).port)
        resolve(proxy)
      })
    })
  }

  /** Live connections through the proxy. */
  get connections(): number {
    return this.#pairs.size
  }

  pause({ lateDelivery = false, repliesOnly = false }: { lateDelivery?: boolean; repliesOnly?: boolean } = {}): void {
    this.#paused = true
    this.#lateDelivery = lateDelivery
    this.#repliesOnly = repliesOnly
  }

  resume(): void {
    this.#paused = false
    for (const flush of this.#held.splice(0)) flush()
  }

  cut(): void {
    this.#cut = true
    for (const [a, b] of this.#pairs) {
      reset(a)
      reset(b)
    }
    this.#pairs.clear()
    this.#held.length = 0
  }

  stall(): void {
    for (const pair of this.#pairs) this.#stalled.add(pair)
  }

  stallUntil(): void {
    this.stall()
    this.#stallNew = true
  }

  unstall(): void {
    this.#stallNew = false
  }

  stallOn(text: string): void {
    this.#stallOn = text.toLowerCase()
  }

  stallAfter(text: string): void {
    this.#stallAfter = text.toLowerCase()
  }

  endMidFrame(tail: Buffer): void {
    for (const pair of this.#pairs) {
      this.#stalled.add(pair)
      pair[0].end(tail)
    }
  }

  restore(): void {
    this.#cut = false
  }

  async close(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  #accept(client: Socket, targetPort: number, host: string): void {
    if (this.#cut) {
      reset(client)
      return
    }
    const upstream = connect(targetPort, host)
    const pair: [Socket, Socket] = [client, upstream]
    this.#pairs.add(pair)
    if (this.#stallNew) this.#stalled.add(pair)
    const end = (): void => {
      this.#pairs.delete(pair)
      this.#stalled.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    const clientGone = (): void => {
      // A stalled connection's end never reaches the server either: close() or cut() ends it.
      if (this.#stalled.has(pair)) client.destroy()
      // The server gets what the client sent before it went, then the connection's end.
      else if (this.#paused && this.#lateDelivery && !upstream.destroyed) this.#held.push(() => upstream.end())
      else end()
    }
    client.on('error', clientGone).on('close', clientGone)
    upstream.on('error', end).on('close', end)
    // Forwarding by hand (not pipe()), so that a pause holds data back deterministically.
    const forward = (from: Socket, to: Socket): void => {
      from.on('data', (chunk: Buffer) => {
        if (this.#stalled.has(pair)) return
        const text = from === client && (this.#stallOn ?? this.#stallAfter) !== undefined ? chunk.toString('latin1').toLowerCase() : undefined
        const clientSends = (what: string | undefined): boolean => text !== undefined && what !== undefined && text.includes(what)
        if (clientSends(this.#stallOn)) {
          this.#stalled.add(pair)
          return
        }
        const write = (): void => {
          if (!to.destroyed) to.write(chunk)
        }
        if (clientSends(this.#stallAfter)) {
          this.#stallAfter = undefined
          write()
          this.#stalled.add(pair)
          return
        }
        if (this.#paused && (from === upstream || !this.#repliesOnly)) this.#held.push(write)
        else write()
      })
    }
    forward(client, upstream)
    forward(upstream, client)
  }
}

/**
 * Ends `socket` with a reset (RST), or, when its own end (FIN) is already under way, by destroying
 * it. Node 20 refuses a reset while a shutdown is in flight (an 'error', EINVAL, syscall "reset"),
 * yet marks the handle closing without closing it: the event loop then ends, but the process spins
 * at exit (Environment::CleanupHandles waits for that handle) and never exits. A proxied socket
 * ends itself when its peer ends (allowHalfOpen is off), so a cut right after a peer closed hit it.
 */
function reset(socket: Socket): void {
  if (socket.writableEnded) socket.destroy()
  else socket.resetAndDestroy()
}
