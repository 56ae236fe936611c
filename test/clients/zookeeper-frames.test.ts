/**
 * The ZooKeeper client's frames against byte vectors captured from ZooKeeper 3.8 talking to kazoo
 * 2.8 and to this client (zookeeper-vectors.ts). Pure: no server.
 *
 * A request this client sends is encoded again with the xid the vector carries and compared byte
 * for byte with kazoo's frame for the same logical operation; where a field legitimately varies
 * (session id and password, zxid) it is masked explicitly. Each captured reply is decoded and its
 * fields asserted.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ZK_CODES, ZkError } from '../../src/clients/zookeeper/zookeeper-errors.js'
import {
  decodeConnect,
  decodeReply,
  decodeWatchEvent,
  encodeAuth,
  encodeBare,
  encodeConnect,
  encodeSetWatches,
  encodeSetWatches2,
  EVENT,
  FrameSplitter,
  MAX_FRAME_BYTES,
  OP,
  OPEN_ACL,
  readStat,
  XID,
} from '../../src/clients/zookeeper/zookeeper-frames.js'
import { decodeResponse, encodeRequest, WATCHER_TYPE_ANY, type ZkCreateMode, type ZkRequest } from '../../src/clients/zookeeper/zookeeper-ops.js'
import { type Dir, KAZOO, OURS } from './zookeeper-vectors.js'

const K_BASE = '/rollcall-zkvectors-kazoo'
const O_BASE = '/rollcall-zkvectors-ours'

/** The `i`th frame sent by `dir` in `step` of `table`, length prefix included. */
function frame(table: typeof KAZOO, step: string, dir: Dir, i = 0): Buffer {
  const hex = table[step]?.filter(([d]) => d === dir)[i]?.[1]
  assert.ok(hex !== undefined, `no ${dir} #${i} in step ${step}`)
  return Buffer.from(hex, 'hex')
}

/** The frame without its length prefix (what the splitter hands on), after checking the prefix. */
function body(f: Buffer): Buffer {
  assert.equal(f.readInt32BE(0), f.length - 4, 'the length prefix counts the rest of the frame')
  return f.subarray(4)
}

const xidOf = (request: Buffer): number => request.readInt32BE(4)

/** `buf` with the byte ranges [from, to) zeroed: the fields that legitimately differ. */
function mask(buf: Buffer, ranges: readonly [number, number][]): string {
  const b = Buffer.from(buf)
  for (const [from, to] of ranges) b.fill(0, from, to)
  return b.toString('hex')
}

/** Encodes `req` with the xid of kazoo's request in `step` and asserts the bytes are the same. */
function sameAsKazoo(step: string, req: ZkRequest, i = 0): Buffer {
  const theirs = frame(KAZOO, step, 'request', i)
  assert.equal(encodeRequest(xidOf(theirs), req).toString('hex'), theirs.toString('hex'), `${step}: our encoding differs from kazoo's`)
  return theirs
}

/** Decodes the reply to `req` in `step` of `table`, checking its header. */
function replyOf(table: typeof KAZOO, step: string, req: ZkRequest, i = 0): { value: unknown; zxid: bigint; err: number } {
  const sent = frame(table, step, 'request', i)
  const r = decodeReply(body(frame(table, step, 'reply', i)))
  assert.equal(r.xid, xidOf(sent), 'the reply carries the xid of its request')
  assert.ok(r.zxid > 0n)
  const value = r.err === 0 ? decodeResponse(req, r.body) : undefined
  if (r.err === 0) assert.equal(r.body.remaining, 0, `${step}: the reply body is read to its end`)
  return { value, zxid: r.zxid, err: r.err }
}

const data = (s: string): Buffer => Buffer.from(s)
const create = (path: string, d: string, mode: ZkCreateMode, withStat = false): ZkRequest => ({
  op: 'create',
  path,
  data: data(d),
  acl: OPEN_ACL,
  mode,
  withStat,
})

describe('ZooKeeper frames: the session handshake', () => {
  it('a new session asks exactly what kazoo asks; the reply grants the timeout, an id and a 16-byte password', () => {
    const req = frame(KAZOO, 'connect', 'request')
    const ours = encodeConnect({ lastZxidSeen: 0n, timeoutMs: 4000, sessionId: 0n, password: Buffer.alloc(16), readOnly: false })
    assert.equal(ours.toString('hex'), req.toString('hex'))
    assert.equal(frame(OURS, 'connect', 'request').toString('hex'), req.toString('hex'), 'captured from this client too')
    const res = decodeConnect(body(frame(KAZOO, 'connect', 'reply')))
    assert.equal(res.protocolVersion, 0)
    assert.equal(res.timeoutMs, 4000)
    assert.notEqual(res.sessionId, 0n)
    assert.equal(res.password.length, 16)
    assert.equal(res.readOnly, false)
  })

  it('a resumed session sends the id, password and last zxid it holds (masked), and gets the same session back', () => {
    const first = decodeConnect(body(frame(KAZOO, 'connect', 'reply')))
    const req = frame(KAZOO, 'drop', 'request')
    // Layout: len 4, protocolVersion 4, lastZxidSeen 8 @8, timeOut 4 @16, sessionId 8 @20, passwd len 4 + 16 @28, readOnly @48.
    assert.equal(req.readBigInt64BE(20), first.sessionId)
    assert.ok(req.readBigInt64BE(8) > 0n)
    assert.deepEqual(req.subarray(32, 48), first.password)
    const ours = encodeConnect({ lastZxidSeen: 7n, timeoutMs: 4000, sessionId: 9n, password: Buffer.alloc(16, 1), readOnly: false })
    const varying: [number, number][] = [[8, 16], [20, 28], [32, 48]]
    assert.equal(mask(ours, varying), mask(req, varying))
    const again = decodeConnect(body(frame(KAZOO, 'drop', 'reply')))
    assert.equal(again.sessionId, first.sessionId)
    assert.deepEqual(again.password, first.password)
  })
})

describe('ZooKeeper frames: special xids', () => {
  it('auth (digest) is byte-identical to kazoo, xid -4; the server answers OK', () => {
    const req = frame(KAZOO, 'auth', 'request')
    assert.equal(encodeAuth('digest', data('user:secret')).toString('hex'), req.toString('hex'))
    const r = decodeReply(body(frame(KAZOO, 'auth', 'reply')))
    assert.deepEqual([r.xid, r.err, r.body.remaining], [XID.auth, 0, 0])
  })

  it('a ping is byte-identical to kazoo, xid -2; its reply has no body', () => {
    assert.equal(encodeBare(XID.ping, OP.ping).toString('hex'), frame(KAZOO, 'ping', 'request').toString('hex'))
    assert.equal(frame(OURS, 'ping', 'request').toString('hex'), frame(KAZOO, 'ping', 'request').toString('hex'))
    const r = decodeReply(body(frame(KAZOO, 'ping', 'reply')))
    assert.deepEqual([r.xid, r.err, r.body.remaining], [XID.ping, 0, 0])
  })

  it('a watch notification (xid -1, zxid -1) decodes to its type, state and path', () => {
    const r = decodeReply(body(frame(KAZOO, 'notification', 'reply')))
    assert.deepEqual([r.xid, r.zxid, r.err], [XID.notification, -1n, 0])
    assert.deepEqual(decodeWatchEvent(r.body), { type: EVENT.nodeDataChanged, state: 3, path: K_BASE })
    assert.equal(r.body.remaining, 0)
  })

  it('setWatches (ours; kazoo 2.8 restores no watches) re-registers each kind of watch, xid -8', () => {
    const sw = OURS.drop!.map(([, h]) => Buffer.from(h, 'hex')).filter((f) => f.readInt32BE(4) === XID.setWatches)
    assert.equal(sw.length, 2, 'one request, one reply')
    const [req, rep] = sw as [Buffer, Buffer]
    const zxid = req.readBigInt64BE(12)
    assert.ok(zxid > 0n)
    const ours = encodeSetWatches(zxid, [O_BASE], [`${O_BASE}/later`], [O_BASE])
    assert.equal(ours.toString('hex'), req.toString('hex'))
    const r = decodeReply(body(rep))
    assert.deepEqual([r.err, r.body.remaining], [0, 0])
  })

  it('closeSession is byte-identical to kazoo, with an ordinary xid; the reply is empty', () => {
    sameAsKazoo('closeSession', { op: 'closeSession' })
    assert.deepEqual(replyOf(KAZOO, 'closeSession', { op: 'closeSession' }).value, undefined)
  })
})

describe('ZooKeeper frames: operations, byte-identical to kazoo', () => {
  for (
    const [step, mode, path, pattern] of [
      ['create', 'PERSISTENT', K_BASE, /^\/rollcall-zkvectors-kazoo$/],
      ['createEphemeral', 'EPHEMERAL', `${K_BASE}/eph`, /\/eph$/],
      ['createSequential', 'PERSISTENT_SEQUENTIAL', `${K_BASE}/seq-`, /\/seq-\d{10}$/],
    ] as const
  ) {
    it(`${step}: the reply names the node created`, () => {
      const d = step === 'create' ? 'data' : step === 'createEphemeral' ? 'e' : 's'
      const req = create(path, d, mode)
      sameAsKazoo(step, req)
      assert.match(replyOf(KAZOO, step, req).value as string, pattern)
    })
  }

  it('create2 (OpCode 15): the reply has the path and a stat, read to its end', () => {
    const req = create(`${K_BASE}/c2`, 'c2', 'PERSISTENT', true)
    assert.equal(sameAsKazoo('create2', req).readInt32BE(8), OP.create2)
    const created = replyOf(KAZOO, 'create2', req).value as { path: string; stat: { czxid: bigint } }
    assert.equal(created.path, `${K_BASE}/c2`)
    const r = decodeReply(body(frame(KAZOO, 'create2', 'reply')))
    r.body.string()
    const stat = readStat(r.body)
    assert.deepEqual([stat.version, stat.dataLength, stat.numChildren, stat.ephemeralOwner], [0, 2, 0, '0000000000000000'])
    assert.equal(stat.czxid, r.zxid)
    assert.equal(created.stat.czxid, r.zxid)
  })

  it('exists: a stat; NoNode (-101) when the node is missing', () => {
    const req: ZkRequest = { op: 'exists', path: K_BASE, watch: false }
    sameAsKazoo('exists', req)
    const stat = replyOf(KAZOO, 'exists', req).value as ReturnType<typeof readStat>
    assert.deepEqual([stat.version, stat.dataLength, stat.numChildren], [0, 4, 3])
    assert.ok(stat.ctime > Date.UTC(2024, 0) && stat.mtime >= stat.ctime, 'times are epoch ms')
    const missing: ZkRequest = { op: 'exists', path: `${K_BASE}/missing`, watch: false }
    sameAsKazoo('existsNoNode', missing)
    assert.equal(replyOf(KAZOO, 'existsNoNode', missing).err, ZK_CODES.NO_NODE)
  })

  it('getData: the data and its stat; with watch=true only the flag differs', () => {
    const req: ZkRequest = { op: 'getData', path: K_BASE, watch: false }
    sameAsKazoo('getData', req)
    const v = replyOf(KAZOO, 'getData', req).value as { data: Buffer; stat: ReturnType<typeof readStat> }
    assert.equal(v.data.toString(), 'data')
    assert.equal(v.stat.dataLength, 4)
    const watched: ZkRequest = { op: 'getData', path: K_BASE, watch: true }
    sameAsKazoo('getDataWatch', watched)
    assert.equal((replyOf(KAZOO, 'getDataWatch', watched).value as { data: Buffer }).data.toString(), 'new')
  })

  it('setData: the new stat (version 1)', () => {
    const req: ZkRequest = { op: 'setData', path: K_BASE, data: data('new'), version: 0 }
    sameAsKazoo('setData', req)
    const stat = replyOf(KAZOO, 'setData', req).value as ReturnType<typeof readStat>
    assert.deepEqual([stat.version, stat.dataLength], [1, 3])
  })

  it('getChildren2 (OpCode 12): the children and a stat; getChildren (8, kazoo only) differs in the OpCode alone', () => {
    const req: ZkRequest = { op: 'getChildren', path: K_BASE, watch: false }
    sameAsKazoo('getChildren2', req)
    const v = replyOf(KAZOO, 'getChildren2', req).value as { children: string[]; stat: ReturnType<typeof readStat> }
    assert.deepEqual(v.children.sort(), ['c2', 'eph', 'seq-0000000001'])
    assert.equal(v.stat.numChildren, 3)
    const op8 = frame(KAZOO, 'getChildren', 'request')
    assert.equal(mask(encodeRequest(xidOf(op8), req), [[8, 12]]), mask(op8, [[8, 12]]))
    assert.equal(op8.readInt32BE(8), OP.getChildren)
    const r = decodeReply(body(frame(KAZOO, 'getChildren', 'reply')))
    assert.deepEqual(r.body.stringVector().sort(), ['c2', 'eph', 'seq-0000000001'])
    assert.equal(r.body.remaining, 0, 'no stat in a getChildren (8) reply')
    // The watch flag, as left by the watches restored later.
    sameAsKazoo('watchesToRestore', { op: 'exists', path: `${K_BASE}/later`, watch: true }, 1)
  })

  it('delete: an empty reply', () => {
    const req: ZkRequest = { op: 'delete', path: `${K_BASE}/c2`, version: 0 }
    sameAsKazoo('delete', req)
    assert.deepEqual(replyOf(KAZOO, 'delete', req), { value: undefined, zxid: replyOf(KAZOO, 'delete', req).zxid, err: 0 })
  })

  it('error replies carry the code in the header and no body: NoNode, NodeExists, BadVersion, NotEmpty', () => {
    const cases: [string, ZkRequest, number][] = [
      ['getDataNoNode', { op: 'getData', path: `${K_BASE}/missing`, watch: false }, ZK_CODES.NO_NODE],
      ['createNodeExists', create(K_BASE, 'again', 'PERSISTENT'), ZK_CODES.NODE_EXISTS],
      ['setDataBadVersion', { op: 'setData', path: K_BASE, data: data('x'), version: 42 }, ZK_CODES.BAD_VERSION],
      ['deleteNotEmpty', { op: 'delete', path: K_BASE, version: -1 }, ZK_CODES.NOT_EMPTY],
    ]
    for (const [step, req, code] of cases) {
      sameAsKazoo(step, req)
      assert.equal(replyOf(KAZOO, step, req).err, code, step)
      assert.equal(decodeReply(body(frame(KAZOO, step, 'reply'))).body.remaining, 0, step)
    }
  })
})

describe('ZooKeeper frames: transactions and multiRead', () => {
  const tx: ZkRequest = {
    op: 'multi',
    ops: [
      { op: 'create', path: `${K_BASE}/tx`, data: data('tx'), acl: OPEN_ACL, mode: 'PERSISTENT' },
      { op: 'check', path: K_BASE, version: 1 },
      { op: 'setData', path: `${K_BASE}/tx`, data: data('tx2'), version: 0 },
      { op: 'delete', path: `${K_BASE}/tx`, version: 1 },
    ],
  }

  it('multi (OpCode 14): byte-identical to kazoo; the reply has one result per operation', () => {
    sameAsKazoo('multi', tx)
    const results = replyOf(KAZOO, 'multi', tx).value as { op: string }[]
    assert.deepEqual(results.map((r) => r.op), ['create', 'check', 'setData', 'delete'])
    assert.deepEqual(results[0], { op: 'create', path: `${K_BASE}/tx` })
    assert.equal((results[2] as unknown as { stat: { version: number } }).stat.version, 1)
  })

  it("a failing multi: header OK, per-op errors in the body; decoding throws the failing op's code", () => {
    const failing: ZkRequest = {
      op: 'multi',
      ops: [
        { op: 'create', path: `${K_BASE}/tx2`, data: data('tx'), acl: OPEN_ACL, mode: 'PERSISTENT' },
        { op: 'create', path: `${K_BASE}/eph`, data: data('dup'), acl: OPEN_ACL, mode: 'PERSISTENT' },
      ],
    }
    sameAsKazoo('multiFailing', failing)
    const r = decodeReply(body(frame(KAZOO, 'multiFailing', 'reply')))
    assert.equal(r.err, 0)
    assert.throws(() => decodeResponse(failing, r.body), (err: unknown) => {
      assert.ok(err instanceof ZkError)
      assert.equal(err.code, ZK_CODES.NODE_EXISTS)
      assert.match(err.message, /create of \/rollcall-zkvectors-kazoo\/eph failed/)
      return true
    })
  })

  it('multiRead (OpCode 22, ours; kazoo 2.8 has none): data, a per-read NoNode, children', () => {
    const req: ZkRequest = {
      op: 'multiRead',
      ops: [{ op: 'getData', path: O_BASE }, { op: 'getData', path: `${O_BASE}/missing` }, { op: 'getChildren', path: O_BASE }],
    }
    const sent = frame(OURS, 'multiRead', 'request')
    assert.equal(sent.readInt32BE(8), OP.multiRead)
    assert.equal(encodeRequest(xidOf(sent), req).toString('hex'), sent.toString('hex'))
    const [a, b, c] = replyOf(OURS, 'multiRead', req).value as [{ data: Buffer }, { error: ZkError }, { children: string[] }]
    assert.equal(a.data.toString(), 'new')
    assert.equal(b.error.code, ZK_CODES.NO_NODE)
    assert.deepEqual(c.children.sort(), ['c2', 'eph', 'seq-0000000001'])
  })

  it('addWatch (OpCode 106, ours; kazoo 2.8 has none): path and mode (PERSISTENT 0, PERSISTENT_RECURSIVE 1); an ErrorResponse of 0', () => {
    const reqs: ZkRequest[] = [{ op: 'addWatch', path: O_BASE, mode: 'PERSISTENT' }, { op: 'addWatch', path: `${O_BASE}/tree`, mode: 'PERSISTENT_RECURSIVE' }]
    reqs.forEach((req, i) => {
      const sent = frame(OURS, 'addWatch', 'request', i)
      assert.equal(sent.readInt32BE(8), OP.addWatch)
      assert.equal(sent.readInt32BE(sent.length - 4), i, 'the mode is the last int')
      assert.equal(encodeRequest(xidOf(sent), req).toString('hex'), sent.toString('hex'))
      const r = replyOf(OURS, 'addWatch', req, i)
      assert.deepEqual([r.err, r.value], [0, undefined])
    })
  })

  it('setWatches2 (OpCode 105, xid -8, ours) restores the one-shot watches and then the persistent and recursive ones', () => {
    const sw = OURS.dropPersistent!.map(([, h]) => Buffer.from(h, 'hex')).filter((f) => f.readInt32BE(4) === XID.setWatches)
    assert.equal(sw.length, 2, 'one request, one reply')
    const [req, rep] = sw as [Buffer, Buffer]
    assert.equal(req.readInt32BE(8), OP.setWatches2)
    const zxid = req.readBigInt64BE(12)
    assert.ok(zxid > 0n)
    const lists = { data: [O_BASE], exist: [`${O_BASE}/later`], child: [O_BASE], persistent: [O_BASE], recursive: [`${O_BASE}/tree`] }
    assert.equal(encodeSetWatches2(zxid, lists).toString('hex'), req.toString('hex'))
    const r = decodeReply(body(rep))
    assert.deepEqual([r.err, r.body.remaining], [0, 0])
  })

  it('removeWatches (OpCode 18, ours): path and WatcherType Any (3), the one that removes a persistent watch on 3.6 to 3.8; an empty reply', () => {
    const req: ZkRequest = { op: 'removeWatches', path: O_BASE, type: WATCHER_TYPE_ANY }
    const sent = frame(OURS, 'removeWatches', 'request')
    assert.equal(sent.readInt32BE(8), OP.removeWatches)
    assert.equal(encodeRequest(xidOf(sent), req).toString('hex'), sent.toString('hex'))
    assert.equal(replyOf(OURS, 'removeWatches', req).err, 0)
  })
})

describe('ZooKeeper frames: splitting', () => {
  it('our captured replies, fed as one stream byte by byte, split back into the same frames, each with a header that parses', () => {
    const replies: Buffer[] = []
    for (const [step, list] of Object.entries(OURS)) {
      for (const [dir, hex] of list) if (dir === 'reply' && step !== 'connect' && !step.startsWith('drop')) replies.push(Buffer.from(hex, 'hex'))
    }
    const splitter = new FrameSplitter()
    const out: Buffer[] = []
    for (const byte of Buffer.concat(replies)) out.push(...splitter.push(Buffer.from([byte])))
    assert.deepEqual(out.map((f) => f.toString('hex')), replies.map((f) => f.subarray(4).toString('hex')))
    assert.equal(splitter.pendingBytes, 0)
    for (const f of out) assert.ok(decodeReply(f).err <= 0)
  })

  it('a largest frame (16 MiB) in 1 KiB pieces is joined once: linear, under 3 s of CPU (quadratic joining took 69 s)', () => {
    const wire = Buffer.alloc(4 + MAX_FRAME_BYTES, 0x5a)
    wire.writeInt32BE(MAX_FRAME_BYTES, 0)
    wire.writeInt32BE(0x0102_0304, 4 + MAX_FRAME_BYTES - 4)
    const splitter = new FrameSplitter()
    const started = process.cpuUsage()
    const cpuMs = (): number => {
      const u = process.cpuUsage(started)
      return (u.user + u.system) / 1000
    }
    const frames: Buffer[] = []
    for (let at = 0; at < wire.length; at += 1024) {
      frames.push(...splitter.push(wire.subarray(at, at + 1024)))
      // Checked as it goes, so that a quadratic splitter fails in seconds, not after a minute.
      if (at % (1024 * 1024) === 0) assert.ok(cpuMs() < 3_000, `${cpuMs()} ms of CPU after ${at} bytes`)
      if (at === 4096) assert.equal(splitter.pendingBytes, 5120, 'an incomplete frame is held, not split')
    }
    assert.ok(cpuMs() < 3_000, `${cpuMs()} ms of CPU`)
    assert.equal(frames.length, 1)
    assert.equal(frames[0]!.length, MAX_FRAME_BYTES)
    assert.equal(frames[0]!.readInt32BE(MAX_FRAME_BYTES - 4), 0x0102_0304)
    assert.equal(splitter.pendingBytes, 0)
    assert.equal(splitter.cutShort(), '')
  })

  it('a cut-short frame is described by what arrived, in any pieces', () => {
    const frame = Buffer.alloc(4 + 100, 1)
    frame.writeInt32BE(100, 0)
    for (const cuts of [[1, 2, 3], [4], [2, 30, 50], [60]]) {
      const splitter = new FrameSplitter()
      let from = 0
      for (const to of cuts) splitter.push(frame.subarray(from, from = to))
      const have = cuts.at(-1)!
      assert.equal(splitter.pendingBytes, have)
      assert.equal(
        splitter.cutShort(),
        have < 4 ? ` in the middle of a frame's length (${have} of 4 bytes received)` : ` in the middle of a frame (${have - 4} of 100 bytes received)`,
      )
    }
  })
})
