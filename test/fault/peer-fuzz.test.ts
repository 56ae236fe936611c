/**
 * rollcall's own protocol clients against fuzzed server replies (fast-check): valid replies of
 * each kind, mutated (numbers swapped for negative, signed, exponent, hex and out-of-range ones;
 * bytes flipped, cut, deleted, duplicated or inserted; stray replies and line ends spliced in;
 * frame lengths and xids overwritten) or replaced by random bytes, split at random points.
 * - parsers (memcached's ReplyReader and reply parsers; ZooKeeper's FrameSplitter and reply
 *   decoders), fed piece by piece: each piece is taken in bounded work, the reply parses or
 *   throws a typed error (nothing else escapes), and what is buffered stays within the client's
 *   limits (a value of MAX_VALUE_BYTES, a frame of MAX_FRAME_BYTES).
 * - clients, against a fake peer on loopback that answers one request with the pieces and then
 *   closes, stays silent, or floods: the request settles (a value or a typed error) within its
 *   timeout and a margin, and nothing is left unhandled.
 * Cases: FAULT_PEER_FUZZ_RUNS per parser property (default 500; 5,000 with FAULT_FULL=1), a
 * tenth of that per client property. Each scenario's notes count what its cases ended in, by
 * class of error (the problem its message names).
 */
import assert from 'node:assert/strict'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { RollcallError } from '../../src/errors.js'
import {
  MemcachedClient,
  MemcachedConnectionError,
  MemcachedServerError,
  MemcachedTimeoutError,
} from '../../src/clients/memcached/memcached-client.js'
import { MemcachedProtocolError } from '../../src/clients/memcached/memcached-errors.js'
import {
  MAX_LINE_BYTES,
  MAX_VALUE_BYTES,
  parseKeys,
  parseMeta,
  parseStats,
  parseTtls,
  parseValues,
  parseVersion,
  ReplyReader,
  type Parser,
} from '../../src/clients/memcached/memcached-protocol.js'
import type { JuteWriter } from '../../src/clients/zookeeper/jute.js'
import { OPEN_ACL, ZK_CODES, ZkConnection, ZkError } from '../../src/clients/zookeeper/zookeeper-client.js'
import { ZkFrameError } from '../../src/clients/zookeeper/zookeeper-errors.js'
import { decodeReply, FrameSplitter, MAX_FRAME_BYTES, XID } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { decodeResponse, type ZkRequest } from '../../src/clients/zookeeper/zookeeper-ops.js'
import { FakeMemcached } from '../clients/fake-memcached.js'
import { FakeZk, reply, stat } from '../clients/fake-zookeeper.js'
import { failOnUnhandled } from '../clients/hostile-support.js'
import { Outcomes, property } from './support/fuzz.js'
import { FAULT_FULL, positiveInt, ResultsWriter } from './support/results.js'

failOnUnhandled()

const writer = new ResultsWriter(import.meta.url)
/** Cases per parser property; a fifth of that per client property (each a connection to a fake peer). */
const RUNS = positiveInt(process.env.FAULT_PEER_FUZZ_RUNS, FAULT_FULL ? 5_000 : 500)
const PEER_RUNS = Math.ceil(RUNS / 10)

// ---------------------------------------------------------------------------------------------
// Byte streams

/** Numbers a lying server might put where a length, flags, a CAS value or a TTL belongs. */
const WEIRD_NUMBERS = ['-17', '-1', '0', '1e3', '0x10', '+5', ' 3', '3 ', '99999999999', '18446744073709551616', '4294967296', '16777217', 'NaN', '']

/** One change to a reply's bytes. */
type Mutation =
  | { type: 'number'; at: number; to: string }
  | { type: 'flip'; at: number; byte: number }
  | { type: 'cut'; at: number }
  | { type: 'delete'; at: number; n: number }
  | { type: 'insert'; at: number; bytes: Uint8Array }
  | { type: 'duplicate'; at: number; n: number }

const mutationArb = (inserts: readonly string[]): fc.Arbitrary<Mutation> =>
  fc.oneof(
    fc.record({ type: fc.constant('number' as const), at: fc.nat(), to: fc.constantFrom(...WEIRD_NUMBERS) }),
    fc.record({ type: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ type: fc.constant('cut' as const), at: fc.nat() }),
    fc.record({ type: fc.constant('delete' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 8 }) }),
    fc.record({ type: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ maxLength: 12 }) }),
    fc.record({ type: fc.constant('insert' as const), at: fc.nat(), bytes: fc.constantFrom(...inserts).map((s) => Buffer.from(s)) }),
    fc.record({ type: fc.constant('duplicate' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 40 }) }),
  )

/** `bytes` with `m` applied; `numbers` finds where the numbers are (decimal tokens, or 4-byte ints). */
function mutate(bytes: Buffer, m: Mutation, numbers: (b: Buffer) => [start: number, end: number][]): Buffer {
  const at = m.at % (bytes.length + 1)
  switch (m.type) {
    case 'number': {
      const spots = numbers(bytes)
      if (spots.length === 0) return bytes
      const [start, end] = spots[m.at % spots.length]!
      return Buffer.concat([bytes.subarray(0, start), encodeNumber(m.to, end - start), bytes.subarray(end)])
    }
    case 'flip':
      return at === bytes.length ? bytes : Buffer.concat([bytes.subarray(0, at), Buffer.from([m.byte]), bytes.subarray(at + 1)])
    case 'cut':
      return bytes.subarray(0, at)
    case 'delete':
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + m.n)])
    case 'insert':
      return Buffer.concat([bytes.subarray(0, at), m.bytes, bytes.subarray(at)])
    case 'duplicate':
      return Buffer.concat([bytes.subarray(0, at + m.n), bytes.subarray(at)])
  }
}

/** A weird number as text, or (for a 4-byte binary slot) as a big-endian int32 where it fits. */
function encodeNumber(text: string, width: number): Buffer {
  if (width !== 4) return Buffer.from(text)
  const n = Number(text)
  const out = Buffer.alloc(4)
  out.writeInt32BE(Number.isInteger(n) && n >= -0x8000_0000 && n <= 0x7fff_ffff ? n : -1)
  return out
}

/** `bytes` cut at `cuts` (positions modulo its length), in order. */
function split(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)
  const pieces: Buffer[] = []
  let from = 0
  for (const to of [...at, bytes.length]) {
    if (to > from) pieces.push(bytes.subarray(from, to))
    from = Math.max(from, to)
  }
  return pieces
}

/** How a fake peer ends its answer: closes, stays silent (the request times out), or floods 2 MiB of bytes nobody asked for. */
type Ending = 'close' | 'silent' | 'flood'
const endingArb = fc.constantFrom<Ending>('close', 'close', 'silent', 'flood')

/** Writes `pieces` a turn apart, then ends as `ending` says. */
async function answer(sock: Socket, pieces: readonly Buffer[], ending: Ending): Promise<void> {
  for (const piece of pieces) {
    if (sock.destroyed) return
    sock.write(piece)
    await new Promise((resolve) => setImmediate(resolve))
  }
  if (ending === 'flood') {
    const filler = Buffer.alloc(64 * 1024, 0x61)
    for (let i = 0; i < 32 && !sock.destroyed; i++) {
      sock.write(filler)
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  if (ending !== 'silent' && !sock.destroyed) sock.end()
}

/** Problems an error message may name, as short labels for the outcome counts. */
const PROBLEMS: [RegExp, string][] = [
  [/a value size/, 'value size'],
  [/flags "/, 'flags'],
  [/a CAS value/, 'CAS value'],
  [/a TTL/, 'TTL'],
  [/returned flag/, 'meta flag'],
  [/VALUE line of/, 'VALUE line shape'],
  [/which was not asked for/, 'key not asked for'],
  [/more values than/, 'more values than keys'],
  [/no request asked for/, 'bytes no request asked for'],
  [/a line of over/, 'line too long'],
  [/not followed by/, 'data block not ended by CRLF'],
  [/unexpected reply/, 'unexpected line'],
  [/negative frame length/, 'negative frame length'],
  [/a frame of \d+ bytes/, 'frame over the limit'],
  [/ended inside/, 'frame cut short inside a field'],
  [/impossible length|negative length/, 'impossible length'],
  [/not in flight/, 'reply to no request'],
  [/never sent/, 'answer to no ping or auth'],
  [/left over/, 'bytes left over'],
  [/unknown type|more results/, 'multi of the wrong shape'],
  [/in the middle of a frame/, 'connection closed mid-frame'],
  [/closed/, 'connection closed'],
]

/** An error as an outcome label: its class, and the problem its message (or its cause's) names. */
function classify(err: unknown): string {
  const e = err as Error
  if (e instanceof ZkError && e.code !== ZK_CODES.CONNECTION_LOSS) return "ZkError (the server's code in the reply header)"
  const text = `${e.message} ${(e.cause as Error | undefined)?.message ?? ''}`
  const problem = PROBLEMS.find(([re]) => re.test(text))?.[1]
  return problem ? `${e.name} (${problem})` : e.name
}

/** The settled outcome of `p` within `boundMs`: 'answered', or the error classified; fails on 'hang' or an untyped error. */
async function outcomeOf(p: Promise<unknown>, boundMs: number, typed: (err: unknown) => boolean): Promise<string> {
  const outcome = await Promise.race([
    p.then(() => 'answered', (err: unknown) => {
      assert.ok(typed(err), `an untyped error: ${String(err)}`)
      return classify(err)
    }),
    sleep(boundMs).then(() => 'hang'),
  ])
  assert.notEqual(outcome, 'hang', `did not settle within ${boundMs} ms`)
  return outcome
}

// ---------------------------------------------------------------------------------------------
// memcached

const MC_KEYS = ['k1', 'k2']
type McKind = 'get' | 'gets' | 'present' | 'ttls' | 'mg' | 'version' | 'stats'
const SERVER_ERRORS = ['SERVER_ERROR out of memory storing object', 'CLIENT_ERROR bad data chunk', 'ERROR']

/** A valid reply to `kind` (or a server error line). */
function mcReplyArb(kind: McKind): fc.Arbitrary<string> {
  const data = fc.string({ maxLength: 24, unit: fc.constantFrom('a', 'b', '\r', '\n', ' ', 'é') })
  const value = (withCas: boolean) =>
    fc.tuple(fc.constantFrom(...MC_KEYS), fc.integer({ min: 0, max: 0xffff_ffff }), data, fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })).map(([k, f, d, cas]) =>
      `VALUE ${k} ${f} ${Buffer.byteLength(d)}${withCas ? ` ${cas}` : ''}\r\n${d}\r\n`
    )
  const valid: Record<McKind, fc.Arbitrary<string>> = {
    get: fc.array(value(false), { maxLength: 2 }).map((vs) => `${vs.join('')}END\r\n`),
    present: fc.array(value(false), { maxLength: 2 }).map((vs) => `${vs.join('')}END\r\n`),
    gets: fc.array(value(true), { maxLength: 2 }).map((vs) => `${vs.join('')}END\r\n`),
    ttls: fc.tuple(fc.constantFrom('HD t5', 'EN', 'HD t-1'), fc.constantFrom('HD t600', 'EN')).map(([a, b]) => `${a}\r\n${b}\r\nMN\r\n`),
    mg: fc.oneof(
      data.map((d) => `VA ${Buffer.byteLength(d)} c12 f1 t-1\r\n${d}\r\n`),
      fc.constantFrom('HD c5 t30\r\n', 'EN\r\n', 'HD\r\n'),
    ),
    version: fc.constant('VERSION 1.6.21\r\n'),
    stats: fc.constant('STAT pid 4242\r\nSTAT uptime 10\r\nSTAT time 1700000010\r\nSTAT version 1.6.21\r\nEND\r\n'),
  }
  return fc.oneof({ weight: 5, arbitrary: valid[kind] }, { weight: 1, arbitrary: fc.constantFrom(...SERVER_ERRORS).map((l) => `${l}\r\n`) })
}

/** Where the decimal numbers of a text reply are. */
function decimalTokens(b: Buffer): [number, number][] {
  return [...b.toString('latin1').matchAll(/-?\d+/g)].map((m) => [m.index, m.index + m[0].length])
}

const MC_INSERTS = ['\r\n', '\r', '\n', ' ', 'END\r\n', 'STORED\r\n', 'VALUE k1 0 3\r\n', 'VALUE k1 0 -17\r\n', 'VALUE zz 0 1\r\n', 'MN\r\n']

/** A memcached case: the request, the reply's bytes (mutated or random), the cuts and the ending. */
const mcCaseArb = fc.constantFrom<McKind>('get', 'gets', 'present', 'ttls', 'mg', 'version', 'stats').chain((kind) =>
  fc.record({
    kind: fc.constant(kind),
    bytes: fc.oneof(
      { weight: 4, arbitrary: fc.tuple(mcReplyArb(kind), fc.array(mutationArb(MC_INSERTS), { maxLength: 3 })) },
      { weight: 1, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 200 }).map((u) => Buffer.from(u).toString('latin1')), fc.constant([])) },
    ).map(([text, ms]) => ms.reduce<Buffer>((b, m) => mutate(b, m, decimalTokens), Buffer.from(text, 'latin1'))),
    cuts: fc.array(fc.nat(), { maxLength: 8 }),
    ending: endingArb,
  })
)

function mcParser(kind: McKind): Parser<unknown> {
  switch (kind) {
    case 'get':
    case 'gets':
      return parseValues(kind, MC_KEYS)
    case 'present':
      return parseKeys(MC_KEYS)
    case 'ttls':
      return parseTtls(MC_KEYS)
    case 'mg':
      return parseMeta('mg')
    case 'version':
      return parseVersion
    case 'stats':
      return parseStats()
  }
}

const mcTyped = (err: unknown): boolean =>
  err instanceof MemcachedProtocolError || err instanceof MemcachedServerError || err instanceof MemcachedConnectionError
  || err instanceof MemcachedTimeoutError

describe('fault: fuzzed replies from a hostile peer', { concurrency: 2 }, () => {
  it(
    'fuzz: memcached reply parsers, fed mutated and random replies in random pieces: a reply or a typed error, bounded buffering',
    { timeout: 600_000 },
    async (t) => {
      const outcomes = new Outcomes()
      await property(
        writer,
        t,
        'fuzz.memcached-parser',
        "Fuzzed memcached replies (valid ones mutated: lying, negative, signed, hex and out-of-range numbers, cut, spliced and stray lines; or random bytes) fed in random pieces to the client's reply parsers: a reply or MemcachedProtocolError / MemcachedServerError, never another exception; buffered bytes within the value and line limits.",
        'memcached',
        RUNS,
        fc.asyncProperty(mcCaseArb, async ({ kind, bytes, cuts }) => {
          const reader = new ReplyReader()
          const parse = mcParser(kind)
          for (const piece of split(bytes, cuts)) {
            const more = reader.push(piece)
            assert.ok(reader.buf.length <= MAX_VALUE_BYTES + 2 + 2 * (MAX_LINE_BYTES + bytes.length), `${reader.buf.length} bytes buffered`)
            if (!more) continue
            try {
              if (parse(reader) !== undefined) return void outcomes.add('answered')
            } catch (err) {
              assert.ok(err instanceof MemcachedProtocolError || err instanceof MemcachedServerError, `an untyped error: ${String(err)}`)
              return void outcomes.add(classify(err))
            }
          }
          outcomes.add('incomplete')
        }),
        () => [`outcomes: ${outcomes}`],
      )
    },
  )

  it(
    'fuzz: the memcached client against a peer answering with fuzzed replies: every request settles in bounded time, typed',
    { timeout: 600_000 },
    async (t) => {
      const requestTimeoutMs = 300
      let current: { bytes: Buffer; cuts: number[]; ending: Ending } | undefined
      const fake = await FakeMemcached.start((sock, line) => {
        if (line === 'version' && current === undefined) return void sock.write('VERSION 1.6.21\r\n')
        const c = current
        current = undefined
        if (c) void answer(sock, split(c.bytes, c.cuts), c.ending)
      })
      const outcomes = new Outcomes()
      try {
        await property(
          writer,
          t,
          'fuzz.memcached-peer',
          `The memcached client against a fake peer answering one request with a fuzzed reply in random pieces, then closing, going silent or flooding 2 MiB: the request settles within its timeout (${requestTimeoutMs} ms) and 3 s, with a reply or a typed memcached error; no unhandled rejection.`,
          'memcached',
          PEER_RUNS,
          fc.asyncProperty(mcCaseArb.filter((c) => c.kind !== 'stats'), async ({ kind, bytes, cuts, ending }) => {
            const c = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port: fake.port }], connectTimeoutMs: 3_000, requestTimeoutMs })
            try {
              await c.connect()
              current = { bytes, cuts, ending }
              const ask = kind === 'get' || kind === 'gets'
                ? c.get(MC_KEYS, kind === 'gets')
                : kind === 'present'
                ? c.present(MC_KEYS)
                : kind === 'ttls'
                ? c.ttls(MC_KEYS)
                : kind === 'mg'
                ? c.meta('mg', 'k1', ['v', 'c', 'f', 't'])
                : c.version()
              const outcome = await outcomeOf(ask, requestTimeoutMs + 3_000, mcTyped)
              outcomes.add(outcome)
            } finally {
              current = undefined
              await c.close()
            }
          }),
          () => [`outcomes: ${outcomes}`],
        )
      } finally {
        await fake.close()
      }
    },
  )

  // -------------------------------------------------------------------------------------------
  // ZooKeeper

  type ZkKind = 'getData' | 'getChildren' | 'exists' | 'create' | 'delete' | 'setData'
  const ZK_KINDS: readonly ZkKind[] = ['getData', 'getChildren', 'exists', 'create', 'delete', 'setData']
  const ZK_REQUESTS: Record<ZkKind, ZkRequest> = {
    getData: { op: 'getData', path: '/a', watch: false },
    getChildren: { op: 'getChildren', path: '/a', watch: false },
    exists: { op: 'exists', path: '/a', watch: false },
    create: { op: 'create', path: '/a', data: new Uint8Array(), acl: OPEN_ACL, mode: 'PERSISTENT', withStat: false },
    delete: { op: 'delete', path: '/a', version: -1 },
    setData: { op: 'setData', path: '/a', data: new Uint8Array(), version: -1 },
  }

  /** A valid reply body to `kind`, as a writer step. */
  function zkBodyArb(kind: ZkKind): fc.Arbitrary<(w: JuteWriter) => void> {
    const data = fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u))
    switch (kind) {
      case 'getData':
        return data.map((d) => (w: JuteWriter) => (w.buffer(d), stat(w, d.length)))
      case 'getChildren':
        return fc.array(fc.string({ maxLength: 8 }), { maxLength: 4 }).map((names) => (w: JuteWriter) => (w.stringVector(names), stat(w)))
      case 'exists':
      case 'setData':
        return fc.constant((w: JuteWriter) => stat(w))
      case 'create':
        return fc.constant((w: JuteWriter) => void w.string('/a'))
      case 'delete':
        return fc.constant(() => {})
    }
  }

  /** Where the 4-byte ints of a frame may be (every aligned offset, the length prefix included). */
  const int32Slots = (b: Buffer): [number, number][] => Array.from({ length: Math.floor(b.length / 4) }, (_, i) => [i * 4, i * 4 + 4])

  /** Frames nobody asked for, spliced in before or after the reply. */
  const strayArb = fc.constantFrom<(xid: number) => Buffer>(
    () => reply(XID.ping, 0),
    () => reply(XID.auth, 0),
    (xid) => reply(xid + 7, 0),
    () => reply(XID.notification, 0, (w) => w.int(3).int(3).string('/a')),
    () => reply(XID.notification, 0, (w) => w.int(1)),
  )

  /** A ZooKeeper case: the request, how to build the reply (mutated or random) for its xid, the cuts and the ending. */
  const zkCaseArb = fc.constantFrom(...ZK_KINDS).chain((kind) =>
    fc.record({
      kind: fc.constant(kind),
      build: fc.oneof(
        {
          weight: 4,
          arbitrary: fc.tuple(
            zkBodyArb(kind),
            fc.constantFrom(0, 0, 0, -101, -110, -4),
            fc.array(mutationArb(['\0\0\0\0', '\0\0\0\x10', '\x7f\xff']), { maxLength: 3 }),
            fc.option(strayArb),
            fc.boolean(),
          ).map(([body, err, ms, stray, strayFirst]) => (xid: number) => {
            const frame = ms.reduce<Buffer>((b, m) => mutate(b, m, int32Slots), reply(xid, err, err === 0 ? body : () => {}))
            return stray ? Buffer.concat(strayFirst ? [stray(xid), frame] : [frame, stray(xid)]) : frame
          }),
        },
        { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((u) => () => Buffer.from(u)) },
      ),
      cuts: fc.array(fc.nat(), { maxLength: 8 }),
      ending: endingArb,
    })
  )

  it('fuzz: ZooKeeper frame splitting and reply decoding, fed mutated and random frames in random pieces: a reply or a typed error, bounded buffering', {
    timeout: 600_000,
  }, async (t) => {
    const outcomes = new Outcomes()
    await property(
      writer,
      t,
      'fuzz.zookeeper-parser',
      "Fuzzed ZooKeeper replies (valid frames mutated: lengths and ints overwritten with negative and huge values, cut, spliced, stray pings, auths, notifications and misaddressed replies; or random bytes) fed in random pieces to the client's frame splitter and decoders: frames, or ZkFrameError / ZkError, never another exception; buffered bytes within the frame limit.",
      'zookeeper',
      RUNS,
      fc.asyncProperty(zkCaseArb, async ({ kind, build, cuts }) => {
        const splitter = new FrameSplitter()
        const xid = 1
        try {
          for (const piece of split(build(xid), cuts)) {
            for (const frame of splitter.push(piece)) {
              const r = decodeReply(frame)
              if (r.xid !== xid) continue
              if (r.err !== 0) return void outcomes.add('server error code')
              decodeResponse(ZK_REQUESTS[kind], r.body)
              // The wire refuses bytes left over (ZkFrameError).
              return void outcomes.add(r.body.remaining > 0 ? 'ZkFrameError (bytes left over)' : 'answered')
            }
            assert.ok(splitter.pendingBytes <= 4 + MAX_FRAME_BYTES, `${splitter.pendingBytes} bytes pending`)
          }
          outcomes.add('incomplete')
        } catch (err) {
          assert.ok(err instanceof ZkFrameError || err instanceof ZkError, `an untyped error: ${String(err)}`)
          outcomes.add(classify(err))
        }
      }),
      () => [`outcomes: ${outcomes}`],
    )
  })

  it(
    'fuzz: the ZooKeeper client against a peer answering with fuzzed frames: every request settles in bounded time, typed',
    { timeout: 600_000 },
    async (t) => {
      const opTimeoutMs = 400
      let current: { build: (xid: number) => Buffer; cuts: number[]; ending: Ending } | undefined
      // The first request of each case gets the fuzzed frames; any later one (after a reconnect) a silent server.
      const fake = await FakeZk.start({
        request(c, xid) {
          const now = current
          current = undefined
          if (now) void answer(c.sock, split(now.build(xid), now.cuts), now.ending)
        },
      })
      const outcomes = new Outcomes()
      try {
        await property(
          writer,
          t,
          'fuzz.zookeeper-peer',
          `The ZooKeeper client against a fake peer answering one request with fuzzed frames in random pieces, then closing, going silent or flooding 2 MiB: the request settles within its timeout (${opTimeoutMs} ms) and 3 s, with a reply, a ZkError or a ConnectionError / OperationTimeoutError; no unhandled rejection.`,
          'zookeeper',
          PEER_RUNS,
          fc.asyncProperty(zkCaseArb, async ({ kind, build, cuts, ending }) => {
            const c = new ZkConnection({
              servers: [{ host: '127.0.0.1', port: fake.port }],
              randomizeHosts: false,
              sessionTimeoutMs: 4_000,
              connectTimeoutMs: 2_000,
              opTimeoutMs,
              digestAuth: undefined,
              acl: OPEN_ACL,
              shownAs: 'zookeeper://fake',
              onState: () => {},
              onNewSession: async () => {},
            })
            try {
              await c.start()
              current = { build, cuts, ending }
              const ask = kind === 'getData'
                ? c.getData('/a')
                : kind === 'getChildren'
                ? c.getChildren('/a')
                : kind === 'exists'
                ? c.exists('/a')
                : kind === 'create'
                ? c.create('/a', undefined, 'PERSISTENT')
                : kind === 'delete'
                ? c.remove('/a')
                : c.setData('/a', new Uint8Array())
              const outcome = await outcomeOf(ask, opTimeoutMs + 3_000, (err) => err instanceof ZkError || err instanceof RollcallError)
              outcomes.add(outcome)
            } finally {
              current = undefined
              await c.stop()
            }
          }),
          () => [`outcomes: ${outcomes}`],
        )
      } finally {
        await fake.close()
      }
    },
  )
})
