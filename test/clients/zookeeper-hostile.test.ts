/**
 * The ZooKeeper client against a hostile fake server on loopback: truncated, oversized, negative,
 * garbage, misaddressed and misshapen frames, a frame split byte by byte, a handshake granting no
 * timeout, seeded random bytes, and a server without persistent watches (addWatch). Every case must end in a typed error whose message names the
 * problem (or, for the byte-by-byte frame, in the right answer): no hang (each wait is bounded),
 * no unhandled rejection or exception, no socket left open.
 */
import assert from 'node:assert/strict'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import { ConnectionError } from '../../src/errors.js'
import { OPEN_ACL, ZK_CODES, ZkConnection, ZkError } from '../../src/clients/zookeeper/zookeeper-client.js'
import { JuteWriter } from '../../src/clients/zookeeper/jute.js'
import { MAX_BATCHES_IN_FLIGHT, SINGLE_READS_PER_BATCH } from '../../src/clients/zookeeper/zookeeper-bulk.js'
import { ZkFrameError } from '../../src/clients/zookeeper/zookeeper-errors.js'
import { MAX_FRAME_BYTES, OP, XID } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { MIN_SESSION_GRANT_MS, WireOpenError, ZkWire } from '../../src/clients/zookeeper/zookeeper-wire.js'
import { connectResponse, type FakeConn, FakeZk, reply, SESSION_ID, stat, type Script } from './fake-zookeeper.js'
import { freePort } from '../support/servers.js'
import { scriptProcess } from '../support/script-process.js'
import { failOnUnhandled, rejection } from './hostile-support.js'

failOnUnhandled()

/** A ZkConnection to the fake (short timeouts: a case that hangs shows up as a timeout). */
function client(port: number, host = '127.0.0.1'): ZkConnection {
  return new ZkConnection({
    servers: [{ host, port }],
    randomizeHosts: false,
    sessionTimeoutMs: 4_000,
    connectTimeoutMs: 1_500,
    opTimeoutMs: 3_000,
    digestAuth: undefined,
    acl: OPEN_ACL,
    shownAs: 'zookeeper://fake',
    onState: () => {},
    onNewSession: async () => {},
  })
}

/** Runs `fn` with a started client on a fake following `script`, then stops both and checks that nothing is left open. */
async function withFake<T>(script: Script, fn: (c: ZkConnection, fake: FakeZk) => Promise<T>): Promise<T> {
  const fake = await FakeZk.start(script)
  const c = client(fake.port)
  try {
    await c.start()
    return await fn(c, fake)
  } finally {
    await c.stop()
    await fake.close()
  }
}

/** A request's failure: CONNECTION_LOSS caused by a ConnectionError whose message matches `problem`. */
function assertLost(err: Error, problem: RegExp, frameError = true): void {
  assert.ok(err instanceof ZkError, `a ZkError, not ${err.name}: ${err.message}`)
  assert.equal(err.code, ZK_CODES.CONNECTION_LOSS)
  assert.ok(err.cause instanceof ConnectionError, 'caused by a ConnectionError')
  if (frameError) assert.ok(err.cause instanceof ZkFrameError, `caused by a ZkFrameError, not ${(err.cause as Error).name}`)
  assert.match(err.message, problem)
}

/** A fake that answers the first connection's first request with `bytes` (then closes it if `end`). */
const answering = (bytes: (xid: number) => Buffer | Buffer[], end = false): Script => ({
  async request(c, xid) {
    if (c.index !== 0) return
    for (const b of [bytes(xid)].flat()) c.sock.write(b)
    if (end) c.sock.end()
  },
})

describe('ZooKeeper client against a hostile server: framing', () => {
  it('a truncated frame, then close: CONNECTION_LOSS naming the frame cut short', async () => {
    await withFake(answering((xid) => reply(xid, 0, (w) => w.buffer(Buffer.alloc(50))).subarray(0, 30), true), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /closed the connection in the middle of a frame \(26 of 70 bytes received\)/, false)
    })
  })

  it(`a length prefix over the client's maximum (${MAX_FRAME_BYTES} bytes): refused at once, nothing buffered`, async () => {
    const prefix = Buffer.alloc(4)
    prefix.writeInt32BE(MAX_FRAME_BYTES + 1)
    await withFake(answering(() => prefix), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), new RegExp(`a frame of ${MAX_FRAME_BYTES + 1} bytes \\(at most ${MAX_FRAME_BYTES}`))
    })
  })

  it('a negative length prefix', async () => {
    await withFake(answering(() => Buffer.from('fffffff6', 'hex')), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /a negative frame length \(-10\)/)
    })
  })

  it('garbage bytes (an HTTP answer)', async () => {
    await withFake(answering(() => Buffer.from('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /a frame of 1213486160 bytes/)
    })
  })

  it('a reply with an xid nobody asked for', async () => {
    await withFake(answering((xid) => reply(xid + 1000, 0)), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /answered xid \d+, which is not in flight/)
    })
  })

  it('an empty frame (no reply header)', async () => {
    await withFake(answering(() => Buffer.alloc(4)), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /ended inside reply\.xid/)
    })
  })

  it('a ping answer to no ping, and an auth answer to no auth', async () => {
    await withFake(answering(() => reply(XID.ping, 0)), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /answered a ping that was never sent/)
    })
    await withFake(answering(() => reply(XID.auth, 0)), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /answered an auth that was never sent/)
    })
  })
})

describe('ZooKeeper client against a hostile server: replies of the wrong shape', () => {
  it('getData answered with a stat only (an exists reply): the frame ends inside the stat', async () => {
    await withFake(answering((xid) => reply(xid, 0, (w) => stat(w))), async (c) => {
      assertLost(await rejection(c.getData('/a'), 1_000), /ended inside stat\./)
    })
  })

  it('exists answered with data and a stat (a getData reply): bytes left over are refused', async () => {
    await withFake(answering((xid) => reply(xid, 0, (w) => (w.buffer(Buffer.from('data')), stat(w, 4)))), async (c) => {
      assertLost(await rejection(c.exists('/a'), 1_000), /reply to exists has 8 bytes left over/)
    })
  })

  it('getChildren answered with a child count larger than the frame', async () => {
    await withFake(answering((xid) => reply(xid, 0, (w) => w.int(1_000_000).string('x'))), async (c) => {
      assertLost(await rejection(c.getChildren('/a'), 1_000), /impossible length \(1000000\)/)
    })
  })

  it('a multi answered with more results than operations, and one of unknown type', async () => {
    const result = (type: number) => (w: JuteWriter) => w.int(type).bool(false).int(-1)
    await withFake(
      answering((xid) => reply(xid, 0, (w) => (result(OP.delete)(w), result(OP.delete)(w), result(OP.delete)(w), w.int(-1).bool(true).int(-1)))),
      async (c) => {
        assertLost(await rejection(c.removeAll(['/a', '/b']), 1_000), /more results than the 2 operations sent/)
      },
    )
    await withFake(answering((xid) => reply(xid, 0, (w) => (result(77)(w), w.int(-1).bool(true).int(-1)))), async (c) => {
      assertLost(await rejection(c.removeAll(['/a']), 1_000), /result of unknown type 77/)
    })
  })
})

describe('ZooKeeper client against a hostile server: slow and odd but valid', () => {
  it('a handshake and a reply split byte by byte across TCP writes still decode', async () => {
    const dribble = async (sock: Socket, frame: Buffer): Promise<void> => {
      for (const byte of frame) {
        if (sock.destroyed) return
        sock.write(Buffer.from([byte]))
        await sleep(1)
      }
    }
    // One reply at a time (FakeConn.queue): a slow reply outlasts a sync period (a twelfth of the session) on a loaded
    // machine, and the watchdog's sync, or a ping, answered in the middle of it mixed two frames' bytes.
    const script: Script = {
      handshake: (c) => c.queue(() => dribble(c.sock, connectResponse())),
      request: (c, xid, type) =>
        c.queue(() =>
          dribble(c.sock, type === OP.sync ? reply(xid, 0, (w) => w.string('/')) : reply(xid, 0, (w) => (w.buffer(Buffer.from('hello')), stat(w, 5))))
        ),
    }
    await withFake(script, async (c) => {
      const r = await c.getData('/a')
      assert.equal(r.data.toString(), 'hello')
      assert.equal(r.stat.dataLength, 5)
    })
  })
})

describe('ZooKeeper client against a hostile server: the handshake', () => {
  /** Opens one connection to a fake whose handshake is `handshake`; returns the rejection. */
  async function openFails(handshake: Script['handshake'], sessionId = 0n): Promise<WireOpenError> {
    const fake = await FakeZk.start({ handshake })
    try {
      const err = await rejection(
        ZkWire.open({
          host: '127.0.0.1',
          port: fake.port,
          tls: undefined,
          handshake: { lastZxidSeen: 0n, timeoutMs: 4000, sessionId, password: Buffer.alloc(16), readOnly: false },
          connectTimeoutMs: 1_000,
          auth: [],
          watches: undefined,
          onNotification: () => {},
          onClose: () => {},
        }),
        1_500,
      )
      assert.ok(err instanceof WireOpenError, `a WireOpenError, not ${err.name}`)
      assert.ok(err instanceof ConnectionError)
      return err
    } finally {
      await fake.close()
    }
  }

  it('a new session granted a zero or negative timeout is a broken server, not an expired session', async () => {
    for (const timeoutMs of [0, -1]) {
      const err = await openFails((c) => void c.sock.write(connectResponse(timeoutMs)))
      assert.equal(err.failure, 'network')
      assert.match(err.message, new RegExp(`granted a new session a timeout of ${timeoutMs} ms`))
    }
  })

  it('a resumed session answered with a zero timeout has expired', async () => {
    const err = await openFails((c) => void c.sock.write(connectResponse(0)), SESSION_ID)
    assert.equal(err.failure, 'expired')
  })

  it('start() against a server granting no timeout fails with a ConnectionError naming it, and reports no session lost', async () => {
    const fake = await FakeZk.start({ handshake: (c) => void c.sock.write(connectResponse(0)) })
    const states: string[] = []
    const c = new ZkConnection({
      servers: [{ host: '127.0.0.1', port: fake.port }],
      randomizeHosts: false,
      sessionTimeoutMs: 4_000,
      connectTimeoutMs: 1_000,
      opTimeoutMs: 3_000,
      digestAuth: undefined,
      acl: OPEN_ACL,
      shownAs: 'zookeeper://fake',
      onState: (s) => void states.push(s),
      onNewSession: async () => {},
    })
    try {
      const err = await rejection(c.start(), 2_000)
      assert.ok(err instanceof ConnectionError)
      assert.match(err.message, /no server answered within 1 s .*granted a new session a timeout of 0 ms/)
      assert.deepEqual(states, [])
      assert.ok(fake.connections < 30, `${fake.connections} connection attempts in 1 s: the retries pause`)
    } finally {
      await c.stop()
      await fake.close()
    }
  })

  it(`a session granted 1 ms (under ${MIN_SESSION_GRANT_MS} ms) is refused: start() fails naming it, no session is opened again and again`, async () => {
    const fake = await FakeZk.start({ handshake: (c) => void c.sock.write(connectResponse(1)) })
    const c = client(fake.port)
    try {
      const err = await rejection(c.start(), 3_000)
      assert.ok(err instanceof ConnectionError)
      assert.match(err.message, new RegExp(`granted a session timeout of 1 ms; at least ${MIN_SESSION_GRANT_MS} ms is needed`))
      assert.ok(fake.connections < 40, `${fake.connections} connection attempts in 1.5 s: the retries pause`)
    } finally {
      await c.stop()
      await fake.close()
    }
  })

  it('a handshake reply truncated, then close', async () => {
    const err = await openFails((c) => void c.sock.end(connectResponse().subarray(0, 20)))
    assert.match(err.message, /closed the connection during the handshake/)
  })
})

describe('ZooKeeper client: IPv6 hosts', () => {
  it('an IPv6 host is bracketed in messages ([::1]:port, not ::1:port)', async () => {
    const port = await freePort()
    const c = client(port, '::1')
    try {
      const err = await rejection(c.start(), 3_000)
      assert.match(err.message, new RegExp(`Cannot connect to ZooKeeper at \\[::1\\]:${port}: no server answered`))
      assert.match(err.message, new RegExp(`ZooKeeper at \\[::1\\]:${port}: ECONNREFUSED`))
    } finally {
      await c.stop()
    }
  })

  it('a zone written as a URL writes it ([fe80::1%25lo]) reaches the socket as fe80::1%lo: no EINVAL', async () => {
    // No address fe80::1 exists on lo: the kernel finds no route, and nothing leaves the machine.
    const c = client(await freePort(), 'fe80::1%25lo')
    try {
      const err = await rejection(c.start(), 3_000)
      assert.match(err.message, /ZooKeeper at \[fe80::1%25lo\]:\d+: no server answered/)
      assert.doesNotMatch(err.message, /EINVAL/)
      assert.match(err.message, /\[fe80::1%25lo\]:\d+: E[A-Z]+/)
    } finally {
      await c.stop()
    }
  })
})

/** mulberry32: a small seeded PRNG, so that a failing case can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Random bytes, sometimes behind a plausible length prefix and reply header so that the decoders, not only the splitter, see them. */
function randomBytes(rand: () => number, xid: number): Buffer {
  const n = Math.floor(rand() * 120)
  const junk = Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)))
  const shape = rand()
  if (shape < 0.3) return junk
  const prefix = Buffer.alloc(4)
  const header = Buffer.alloc(16)
  header.writeInt32BE(shape < 0.6 ? xid : [XID.notification, XID.ping, XID.auth, XID.setWatches][Math.floor(rand() * 4)]!, 0)
  // A server's own error code, but not CONNECTION_LOSS (-4), which the checks below reserve for a dropped connection.
  const code = -1 - Math.floor(rand() * 130)
  header.writeInt32BE(rand() < 0.8 ? 0 : code === -4 ? -101 : code, 12)
  const payload = shape < 0.9 ? Buffer.concat([header, junk]) : junk
  prefix.writeInt32BE(rand() < 0.8 ? payload.length : Math.floor(rand() * 200) - 20)
  return Buffer.concat([prefix, payload])
}

describe('ZooKeeper client against a server without persistent watches (before 3.6)', () => {
  /** Polls `check` every 10 ms for up to 3 s. */
  const until = async (what: string, check: () => boolean): Promise<void> => {
    for (let i = 0; i < 300 && !check(); i++) await sleep(10)
    assert.ok(check(), `${what} within 3 s`)
  }
  const children = (xid: number): Buffer => reply(xid, 0, (w) => stat(w.int(0)))

  it('UNIMPLEMENTED, then the connection closed (as ZooKeeper 3.5): false, remembered for the session; one-shot watches work', async () => {
    const types: number[] = []
    const script: Script = {
      request(c, xid, type) {
        types.push(type)
        if (type === OP.addWatch) {
          c.sock.write(reply(xid, ZK_CODES.UNIMPLEMENTED))
          c.sock.end()
        } else if (type === OP.getChildren2) c.sock.write(children(xid))
      },
    }
    await withFake(script, async (c, fake) => {
      assert.equal(await c.addWatch('/g', 'PERSISTENT', () => {}), false)
      assert.equal(await c.addWatch('/g', 'PERSISTENT_RECURSIVE', () => {}), false)
      assert.deepEqual(await c.getChildren('/g', () => {}), [])
      assert.equal(types.filter((t) => t === OP.addWatch).length, 1, 'asked once per session')
      // Without persistent watches the one-shot ones are restored with setWatches, which such a server knows.
      await until('a reconnect', () => fake.connections === 2 && c.isConnected)
      for (const sock of fake.sockets) sock.destroy()
      await until('the watches restored', () => types.includes(OP.setWatches))
      assert.ok(!types.includes(OP.setWatches2))
    })
  })

  it('the connection dropped during addWatch: CONNECTION_LOSS once (retry); dropped twice in a row: false, remembered', async () => {
    let addWatches = 0
    const script: Script = {
      request(c, xid, type) {
        if (type !== OP.addWatch) return
        addWatches += 1
        if (addWatches === 2) c.sock.write(reply(xid, 0, (w) => w.int(0)))
        else c.sock.destroy()
      },
    }
    await withFake(script, async (c) => {
      const lost = await rejection(c.addWatch('/g', 'PERSISTENT', () => {}), 3_000)
      assert.equal((lost as ZkError).code, ZK_CODES.CONNECTION_LOSS)
      assert.equal(await c.addWatch('/g', 'PERSISTENT', () => {}), true, 'set on the next connection')
      // A success resets the count: two more drops in a row are needed to give up.
      await rejection(c.addWatch('/h', 'PERSISTENT', () => {}), 3_000)
      assert.equal(await c.addWatch('/h', 'PERSISTENT', () => {}), false)
      assert.equal(await c.addWatch('/i', 'PERSISTENT', () => {}), false)
      assert.equal(addWatches, 4, 'not asked again once given up')
    })
  })
})

describe('ZooKeeper client against a hostile server: seeded random bytes', () => {
  const SEED = 20240601
  const CASES = 300

  it(
    `${CASES} random replies to getData, getChildren or a multi: each ends in an answer or a typed error, in bounded time`,
    { timeout: 120_000 },
    async (t) => {
      const rand = prng(SEED)
      const outcomes = new Map<string, number>()
      let script: ((xid: number) => Buffer) | undefined
      // The first request of each case gets the random bytes; the reconnect after it a quiet server.
      const fake = await FakeZk.start({
        request(c, xid) {
          if (script) c.sock.end(script(xid))
          script = undefined
        },
      })
      try {
        for (let i = 0; i < CASES; i++) {
          const bytes = randomBytes(rand, 0)
          script = (xid) => (bytes.length >= 8 && bytes.readInt32BE(4) === 0 ? (bytes.writeInt32BE(xid, 4), bytes) : bytes)
          const c = client(fake.port)
          const kind = i % 3
          try {
            await c.start()
            const p = kind === 0 ? c.getData('/a') : kind === 1 ? c.getChildren('/a') : c.removeAll(['/a', '/b'])
            const outcome = await Promise.race([
              p.then(() => 'answered', (err: unknown) => {
                assert.ok(err instanceof ZkError || err instanceof ConnectionError, `case ${i} (seed ${SEED}): ${String(err)}`)
                if (err instanceof ZkError && err.code === ZK_CODES.CONNECTION_LOSS) assert.ok(err.cause instanceof ConnectionError, `case ${i}`)
                return err instanceof ZkError ? err.name : err.constructor.name
              }),
              sleep(2_000).then(() => 'hang'),
            ])
            assert.notEqual(outcome, 'hang', `case ${i} (seed ${SEED}, bytes ${bytes.toString('hex')}) did not settle`)
            outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
          } finally {
            await c.stop()
          }
        }
      } finally {
        await fake.close()
      }
      t.diagnostic(`outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`)
      assert.ok((outcomes.get('CONNECTION_LOSS') ?? 0) > CASES / 2, JSON.stringify([...outcomes]))
    },
  )

  it(`${CASES} random handshake replies: each open() rejects with a WireOpenError (or succeeds), in bounded time`, { timeout: 120_000 }, async (t) => {
    const rand = prng(SEED + 1)
    const outcomes = new Map<string, number>()
    let bytes: Buffer = Buffer.alloc(0)
    const fake = await FakeZk.start({ handshake: (c) => void c.sock.end(bytes) })
    try {
      for (let i = 0; i < CASES; i++) {
        bytes = rand() < 0.5
          ? randomBytes(rand, 0)
          : Buffer.concat([connectResponse(Math.floor(rand() * 10_000) - 100).subarray(0, Math.floor(rand() * 42)), randomBytes(rand, 0)])
        const outcome = await Promise.race([
          ZkWire.open({
            host: '127.0.0.1',
            port: fake.port,
            tls: undefined,
            handshake: { lastZxidSeen: 0n, timeoutMs: 4000, sessionId: 0n, password: Buffer.alloc(16), readOnly: false },
            connectTimeoutMs: 1_000,
            auth: [],
            watches: undefined,
            onNotification: () => {},
            onClose: () => {},
          }).then((w) => (w.close(new Error('done')), 'opened'), (err: unknown) => {
            assert.ok(err instanceof WireOpenError, `case ${i} (seed ${SEED + 1}): ${String(err)}`)
            return err.failure
          }),
          sleep(2_000).then(() => 'hang'),
        ])
        assert.notEqual(outcome, 'hang', `case ${i} (seed ${SEED + 1}, bytes ${bytes.toString('hex')}) did not settle`)
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      }
      t.diagnostic(`outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`)
    } finally {
      await fake.close()
    }
  })
})

describe('ZooKeeper client against a server with one valid 16 MiB children reply (1.3 M names)', () => {
  /** How many getData reads a multiRead request carries (its ops, up to the closing header). */
  const multiReadOps = (frame: Buffer): number => {
    let at = 8
    let n = 0
    for (;;) {
      const done = frame[at + 4] !== 0
      at += 9
      if (done) return n
      at += 4 + frame.readInt32BE(at) + 1
      n += 1
    }
  }
  /** A multiRead reply of `n` reads, each holding `value`. */
  const multiReadReply = (xid: number, n: number, value: Buffer): Buffer =>
    reply(xid, 0, (w) => {
      for (let i = 0; i < n; i++) stat(w.int(OP.getData).bool(false).int(-1).buffer(value), value.length)
      w.int(-1).bool(true).int(-1)
    })
  const VALUE = Buffer.from('caps')
  /**
   * CPU time one turn of the event loop may take while a read runs (a batch's encoding and decoding, the fake's too, and
   * a GC: 70-80 ms seen). A guard, generous for a loaded machine: what fails on the old code is the batches out at once
   * (29 here, the rest queued in the session; at 1.3 M names its one turn encoding every batch took 3.3 s).
   */
  const WORST_TURN_MS = 1_000
  const names = (n: number): string[] => Array.from({ length: n }, (_, i) => `m${String(i).padStart(7, '0')}`)

  /**
   * A fake that knows getChildren2 (answered with `children`), multiRead and getData (answered
   * with VALUE after `delayMs`), counting what it was asked; `onMultiRead` may drop the connection
   * instead (returns true).
   */
  class Counting implements Script {
    multiReads = 0
    singles = 0
    inFlight = 0
    maxInFlight = 0
    multiReadsByConnection: number[] = []
    readonly #children: Buffer
    readonly #delayMs: number
    readonly #drop: (c: FakeConn, multiReads: number) => boolean
    constructor(children: readonly string[], delayMs = 1, drop: (c: FakeConn, multiReads: number) => boolean = () => false) {
      this.#children = reply(0, 0, (w) => stat(w.stringVector(children)))
      this.#delayMs = delayMs
      this.#drop = drop
    }

    request(c: FakeConn, xid: number, type: number, frame: Buffer): void {
      if (type === OP.getChildren2) {
        const f = Buffer.from(this.#children)
        f.writeInt32BE(xid, 4)
        c.sock.write(f)
      } else if (type === OP.multiRead) {
        this.multiReads += 1
        this.multiReadsByConnection[c.index] = (this.multiReadsByConnection[c.index] ?? 0) + 1
        if (this.#drop(c, this.multiReads)) return void c.sock.destroy()
        const n = multiReadOps(frame)
        this.inFlight += 1
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight)
        setTimeout(() => {
          this.inFlight -= 1
          if (!c.sock.destroyed) c.sock.write(multiReadReply(xid, n, VALUE))
        }, this.#delayMs)
      } else if (type === OP.getData) {
        this.singles += 1
        c.sock.write(reply(xid, 0, (w) => stat(w.buffer(VALUE), VALUE.length)))
      } else if (type === OP.sync) {
        // The client's proof that a leader still counts its session (zookeeper-leader-proof.ts): a real server answers with the path.
        c.sock.write(reply(xid, 0, (w) => w.string('/')))
      }
    }
  }

  it('reading the data of every member a large listing names: at most 4 multiReads out at once, little work per turn, no single reads', async (t) => {
    // 300 k of the 1.3 M names a 16 MiB reply holds: enough for 100 batches, a quarter of the CPU.
    const all = names(300_000)
    const fake = new Counting(all)
    await withFake(fake, async (c) => {
      // What listMembers() reads once the listing is in (the listing itself is the frame reader's and the decoder's work).
      const paths = all.map((m) => `/g/${m}`)
      // The CPU time this process spends between two runs of a 20 ms interval: the work done in one turn of the event
      // loop, which delays every timer (a lock's deadline, an operation's timeout). CPU time, not wall time: a loaded
      // machine stretches wall time whatever the code does.
      let last = process.cpuUsage()
      let worstTurnMs = 0
      const probe = setInterval(() => {
        const used = process.cpuUsage(last)
        worstTurnMs = Math.max(worstTurnMs, (used.user + used.system) / 1000)
        last = process.cpuUsage()
      }, 20)
      const started = performance.now()
      let values: (Buffer | undefined)[]
      try {
        values = await c.getDataMany(paths)
      } finally {
        clearInterval(probe)
      }
      t.diagnostic(
        `${fake.multiReads} multiReads in ${Math.round(performance.now() - started)} ms, at most ${fake.maxInFlight} out at once; `
          + `worst CPU between two interval runs ${Math.round(worstTurnMs)} ms; rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`,
      )
      assert.equal(values.length, all.length)
      assert.ok(values.every((v) => v?.equals(VALUE)))
      assert.ok(fake.maxInFlight <= 4, `${fake.maxInFlight} multiReads out at once`)
      assert.equal(fake.singles, 0)
      assert.ok(worstTurnMs < WORST_TURN_MS, `${Math.round(worstTurnMs)} ms of CPU in one turn of the event loop`)
    })
  })

  it('a connection lost during the batches: CONNECTION_LOSS, nothing sent after it and no single reads; the next read uses multiRead', async () => {
    const all = names(60_000)
    // The first connection drops at its fifth multiRead.
    const fake = new Counting(all, 5, (c, n) => c.index === 0 && n === 5)
    await withFake(fake, async (c) => {
      const paths = all.map((m) => `/g/${m}`)
      const lost = await rejection(c.getDataMany(paths), 3_000)
      assert.equal((lost as ZkError).code, ZK_CODES.CONNECTION_LOSS, lost.message)
      await sleep(300)
      assert.equal(fake.singles, 0, 'no getData per node in place of the lost batches')
      assert.equal(fake.multiReadsByConnection[1] ?? 0, 0, 'no batch sent after the loss')
      const values = await c.getDataMany(paths)
      assert.equal(values.length, all.length)
      assert.equal(fake.singles, 0, 'one loss does not make it an old server')
      assert.ok((fake.multiReadsByConnection[1] ?? 0) > 1)
    })
  })

  it('a server that drops the connection at every multiRead (older than 3.6): lost twice, then one getData per node, a few hundred out at once', async () => {
    // Not a batch's thousands at once: the session's sync (its proof of life) waited behind 11,780 reads, and on a loaded
    // machine the session was left or presumed expired before they were all answered (zookeeper-bulk.ts, SINGLE_READS_PER_BATCH).
    const all = names(20_000)
    const fake = new Counting(all, 1, () => true)
    let inFlight = 0
    let maxInFlight = 0
    const counting: Script = {
      request(c, xid, type, frame) {
        if (type !== OP.getData) return fake.request(c, xid, type, frame)
        fake.singles += 1
        inFlight += 1
        maxInFlight = Math.max(maxInFlight, inFlight)
        setTimeout(() => {
          inFlight -= 1
          if (!c.sock.destroyed) c.sock.write(reply(xid, 0, (w) => stat(w.buffer(VALUE), VALUE.length)))
        }, 1)
      },
    }
    await withFake(counting, async (c) => {
      const paths = all.map((m) => `/g/${m}`)
      assert.equal(((await rejection(c.getDataMany(paths), 3_000)) as ZkError).code, ZK_CODES.CONNECTION_LOSS)
      const values = await c.getDataMany(paths)
      assert.ok(values.length === all.length && values.every((v) => v?.equals(VALUE)))
      assert.equal(fake.multiReads, 2, 'multiRead given up after two lost connections in a row')
      assert.equal(fake.singles, all.length)
      assert.ok(maxInFlight <= MAX_BATCHES_IN_FLIGHT * SINGLE_READS_PER_BATCH, `${maxInFlight} getData out at once`)
    })
  })

  it('an aborted signal ends a long read before its next batch', async () => {
    const all = names(200_000)
    const fake = new Counting(all, 20)
    await withFake(fake, async (c) => {
      const controller = new AbortController()
      const reason = new Error('the deadline passed')
      const reading = c.getDataMany(all.map((m) => `/g/${m}`), controller.signal)
      while (fake.multiReads < 6) await sleep(5)
      controller.abort(reason)
      assert.equal(await rejection(reading, 3_000), reason)
      const sent = fake.multiReads
      await sleep(200)
      assert.equal(fake.multiReads, sent, 'no batch sent after the abort')
      assert.ok(sent < 20, `${sent} batches sent of about 120`)
    })
  })
})

describe('ZooKeeper client against a hostile server: notification paths', () => {
  it('a notification for a path that is not absolute (a, empty) fires nothing and returns (a child process: a loop fails, not hangs)', async (t) => {
    const watches = JSON.stringify(new URL('../../src/clients/zookeeper/zookeeper-watches.ts', import.meta.url).href)
    const frames = JSON.stringify(new URL('../../src/clients/zookeeper/zookeeper-frames.ts', import.meta.url).href)
    const { proc, out } = scriptProcess(
      t,
      `const { WatchRegistry } = await import(${watches})
      const { EVENT } = await import(${frames})
      const r = new WatchRegistry()
      const fired = []
      r.add('data', '/a', (e) => fired.push(e.path))
      r.add('recursive', '/', (e) => fired.push('recursive ' + e.path))
      for (const path of ['a', '', 'a/b', '/a']) r.fire({ type: EVENT.nodeDataChanged, state: 3, path }, path)
      console.log(JSON.stringify(fired))`,
    )
    const exited = await Promise.race([new Promise((resolve) => proc.once('exit', resolve)), sleep(20_000).then(() => 'hang')])
    assert.notEqual(exited, 'hang', `fire() did not return within 20 s (stepping up from a relative path?); said: ${out()}`)
    assert.deepEqual(JSON.parse(out().trim()), ['/a', 'recursive /a'])
  })
})
