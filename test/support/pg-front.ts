/**
 * A PostgreSQL front on loopback, in front of the shared server (which has neither TLS nor
 * passwords: trust on 127.0.0.1), for tests of what a client's connection settings do. It speaks
 * the start of each session itself: it answers an SSLRequest (TLS with the test's certificate, or
 * 'N' without one), asks for a cleartext password when given one, and only then hands the
 * client's startup message to the server and forwards both ways. It counts the sessions it let
 * through and records each one's startup parameters.
 */
import { connect as netConnect, createServer, type Server, type Socket } from 'node:net'
import { createSecureContext, TLSSocket } from 'node:tls'

const SSL_REQUEST = 80877103
const GSS_REQUEST = 80877104
const CANCEL_REQUEST = 80877102

/** One session the front let through. */
export interface FrontSession {
  readonly tls: boolean
  /** The startup parameters (user, database, application_name, options, ...). */
  readonly params: Record<string, string>
}

/** What the front does with a session's start. */
export interface FrontOptions {
  /** Serve TLS with this key and certificate (PEM); without, an SSLRequest is answered 'N'. */
  readonly tls?: { key: Buffer; cert: Buffer }
  /** Ask for this password (cleartext, inside TLS when there is TLS); refuse others with 28P01. */
  readonly password?: string
}

/** Reads whole protocol messages off a socket. */
class Reader {
  #buffer = Buffer.alloc(0)
  #wake: (() => void) | undefined
  #ended = false
  readonly #onData = (chunk: Buffer): void => {
    this.#buffer = Buffer.concat([this.#buffer, chunk])
    this.#wake?.()
  }
  readonly #onEnd = (): void => {
    this.#ended = true
    this.#wake?.()
  }

  constructor(readonly socket: Socket) {
    socket.on('data', this.#onData)
    socket.on('end', this.#onEnd)
    socket.on('close', this.#onEnd)
  }

  /** The next message: untyped (int32 length first, as a startup message) or typed (a byte, then the length). */
  async next(typed: boolean): Promise<Buffer> {
    const head = typed ? 1 : 0
    for (;;) {
      if (this.#buffer.length >= head + 4) {
        const size = head + this.#buffer.readInt32BE(head)
        if (this.#buffer.length >= size) {
          const message = this.#buffer.subarray(0, size)
          this.#buffer = this.#buffer.subarray(size)
          return message
        }
      }
      if (this.#ended) throw new Error('the client left')
      await new Promise<void>((resolve) => (this.#wake = resolve))
    }
  }

  /** Stops reading; what was read and not taken is handed back. */
  detach(): Buffer {
    this.socket.off('data', this.#onData)
    this.socket.off('end', this.#onEnd)
    this.socket.off('close', this.#onEnd)
    return this.#buffer
  }
}

function startupParams(message: Buffer): Record<string, string> {
  const parts = message.subarray(8).toString('utf8').split('\0')
  const params: Record<string, string> = {}
  for (let i = 0; i + 1 < parts.length && parts[i] !== ''; i += 2) params[parts[i]!] = parts[i + 1]!
  return params
}

function typedMessage(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5)
  head.write(type, 0, 'latin1')
  head.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

/** A running front. */
export class PgFront {
  readonly port: number
  /** The sessions let through to the server, in order. */
  readonly sessions: FrontSession[] = []
  /** Sessions refused for a wrong password. */
  refused = 0
  readonly #server: Server
  readonly #sockets = new Set<Socket>()

  private constructor(server: Server, port: number) {
    this.#server = server
    this.port = port
  }

  /** Starts a front on a free port of 127.0.0.1 that hands sessions to 127.0.0.1:`targetPort`. */
  static start(targetPort: number, options: FrontOptions = {}): Promise<PgFront> {
    return new Promise((resolve, reject) => {
      let front: PgFront
      const server = createServer((socket) => {
        front.#sockets.add(socket)
        socket.on('error', () => socket.destroy())
        front.#serve(socket, targetPort, options).catch(() => socket.destroy())
      })
      server.on('error', reject)
      server.listen(0, '127.0.0.1', () => {
        front = new PgFront(server, (server.address() as { port: number }).port)
        resolve(front)
      })
    })
  }

  /** Stops listening and ends every connection. */
  close(): void {
    this.#server.close()
    for (const s of this.#sockets) s.destroy()
  }

  async #serve(raw: Socket, targetPort: number, options: FrontOptions): Promise<void> {
    let socket: Socket = raw
    let reader = new Reader(socket)
    let tls = false
    let message = await reader.next(false)
    let code = message.readInt32BE(4)
    while (code === SSL_REQUEST || code === GSS_REQUEST) {
      if (code === SSL_REQUEST && options.tls && !tls) {
        reader.detach()
        socket.write('S')
        const secure = new TLSSocket(raw, { isServer: true, secureContext: createSecureContext(options.tls) })
        secure.on('error', () => raw.destroy())
        this.#sockets.add(secure)
        socket = secure
        reader = new Reader(socket)
        tls = true
      } else {
        socket.write('N')
      }
      message = await reader.next(false)
      code = message.readInt32BE(4)
    }
    if (code !== CANCEL_REQUEST && options.password !== undefined) {
      socket.write(typedMessage('R', int32(3)))
      const answer = await reader.next(true)
      const given = answer.subarray(5, answer.length - 1).toString('utf8')
      if (answer[0] !== 'p'.charCodeAt(0) || given !== options.password) {
        this.refused++
        const fields = Buffer.from('SFATAL\0C28P01\0Mpassword authentication failed (pg front)\0\0', 'utf8')
        socket.end(typedMessage('E', fields))
        return
      }
    }
    const rest = reader.detach()
    const upstream = netConnect(targetPort, '127.0.0.1')
    this.#sockets.add(upstream)
    upstream.on('error', () => socket.destroy())
    socket.on('error', () => upstream.destroy())
    socket.on('close', () => upstream.destroy())
    upstream.on('close', () => socket.destroy())
    if (code !== CANCEL_REQUEST) this.sessions.push({ tls, params: startupParams(message) })
    upstream.write(message)
    if (rest.length > 0) upstream.write(rest)
    socket.pipe(upstream).pipe(socket)
  }
}
