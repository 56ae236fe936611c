/**
 * The operations' request and response bodies (zookeeper.jute), including multi (an atomic
 * transaction, OpCode 14) and multiRead (independent reads in one round trip, OpCode 22,
 * ZooKeeper 3.6+), and addWatch/removeWatches (persistent watches, OpCodes 106 and 18). A request is a plain object; encodeRequest() frames it with its xid and
 * decodeResponse() reads the reply body that answers it.
 */
import type { JuteReader, JuteWriter } from './jute.js'
import { ZkError, ZkFrameError, ZK_CODES } from './zookeeper-errors.js'
import { framed, OP, readAcl, readStat, requestWriter, STAT_BYTES, writeAcl, type ZkAcl, type ZkStat } from './zookeeper-frames.js'

/** How a node is created (CreateMode flags). */
export const CREATE_FLAGS = { PERSISTENT: 0, EPHEMERAL: 1, PERSISTENT_SEQUENTIAL: 2, EPHEMERAL_SEQUENTIAL: 3 } as const

/** A creation mode. */
export type ZkCreateMode = keyof typeof CREATE_FLAGS

/** An operation of a transaction (multi). */
export type ZkTxOp =
  | { op: 'create'; path: string; data: Uint8Array; acl: readonly ZkAcl[]; mode: ZkCreateMode }
  | { op: 'delete'; path: string; version: number }
  | { op: 'setData'; path: string; data: Uint8Array; version: number }
  | { op: 'check'; path: string; version: number }

/** AddWatchMode: a persistent watch on one node, or on it and every node below it. */
export const WATCH_MODES = { PERSISTENT: 0, PERSISTENT_RECURSIVE: 1 } as const

/** A persistent watch's mode. */
export type ZkWatchMode = keyof typeof WATCH_MODES

/**
 * Watcher.WatcherType of removeWatches. ZooKeeper 3.6 to 3.8 know Children (1), Data (2) and Any
 * (3), and only Any removes a persistent watch (3.9 adds Persistent (4) and PersistentRecursive (5)).
 */
export const WATCHER_TYPE_ANY = 3

/** A read of a multiRead. */
export type ZkReadOp = { op: 'getData'; path: string } | { op: 'getChildren'; path: string }

/** Every request this client sends (besides the handshake, pings, auth and setWatches). */
export type ZkRequest =
  | { op: 'create'; path: string; data: Uint8Array; acl: readonly ZkAcl[]; mode: ZkCreateMode; withStat: boolean }
  | { op: 'delete'; path: string; version: number }
  | { op: 'exists'; path: string; watch: boolean }
  | { op: 'getData'; path: string; watch: boolean }
  | { op: 'setData'; path: string; data: Uint8Array; version: number }
  | { op: 'getChildren'; path: string; watch: boolean }
  | { op: 'getACL'; path: string }
  | { op: 'sync'; path: string }
  | { op: 'multi'; ops: readonly ZkTxOp[] }
  | { op: 'multiRead'; ops: readonly ZkReadOp[] }
  | { op: 'addWatch'; path: string; mode: ZkWatchMode }
  | { op: 'removeWatches'; path: string; type: number }
  | { op: 'closeSession' }

/**
 * One answer of a multiRead: the value, or the error of that read alone. A getData's stat is
 * stepped over, not decoded: its longs (BigInts) and session hex cost more than the data itself.
 */
export type ZkReadResult = { data: Buffer } | { children: string[] } | { error: ZkError }

/** A transaction's result per operation. */
export type ZkTxResult = { op: 'create'; path: string } | { op: 'delete' } | { op: 'setData'; stat: ZkStat } | { op: 'check' }

/** The request's OpCode. */
export function opCode(req: ZkRequest): number {
  switch (req.op) {
    case 'create':
      return req.withStat ? OP.create2 : OP.create
    case 'getChildren':
      return OP.getChildren2
    default:
      return OP[req.op]
  }
}

function writeCreate(w: JuteWriter, path: string, data: Uint8Array, acl: readonly ZkAcl[], mode: ZkCreateMode): void {
  w.string(path).buffer(data)
  writeAcl(w, acl)
  w.int(CREATE_FLAGS[mode])
}

function writeMultiHeader(w: JuteWriter, type: number, done: boolean, err: number): void {
  w.int(type).bool(done).int(err)
}

/** The whole frame of `req` with `xid`. */
export function encodeRequest(xid: number, req: ZkRequest): Buffer {
  const w = requestWriter(xid, opCode(req), req.op === 'create' || req.op === 'setData' ? 64 + req.data.byteLength : 128)
  switch (req.op) {
    case 'create':
      writeCreate(w, req.path, req.data, req.acl, req.mode)
      break
    case 'delete':
      w.string(req.path).int(req.version)
      break
    case 'exists':
    case 'getData':
    case 'getChildren':
      w.string(req.path).bool(req.watch)
      break
    case 'setData':
      w.string(req.path).buffer(req.data).int(req.version)
      break
    case 'getACL':
    case 'sync':
      w.string(req.path)
      break
    case 'multi':
      for (const o of req.ops) {
        if (o.op === 'create') {
          writeMultiHeader(w, OP.create, false, -1)
          writeCreate(w, o.path, o.data, o.acl, o.mode)
        } else if (o.op === 'delete') {
          writeMultiHeader(w, OP.delete, false, -1)
          w.string(o.path).int(o.version)
        } else if (o.op === 'setData') {
          writeMultiHeader(w, OP.setData, false, -1)
          w.string(o.path).buffer(o.data).int(o.version)
        } else {
          writeMultiHeader(w, OP.check, false, -1)
          w.string(o.path).int(o.version)
        }
      }
      writeMultiHeader(w, -1, true, -1)
      break
    case 'multiRead':
      for (const o of req.ops) {
        writeMultiHeader(w, o.op === 'getData' ? OP.getData : OP.getChildren, false, -1)
        w.string(o.path).bool(false)
      }
      writeMultiHeader(w, -1, true, -1)
      break
    case 'addWatch':
      w.string(req.path).int(WATCH_MODES[req.mode])
      break
    case 'removeWatches':
      w.string(req.path).int(req.type)
      break
    case 'closeSession':
      break
  }
  return framed(w)
}

/** The encoded size of a multiRead getData entry for `path`: header 9 + string 4 + n + watch 1. */
export function readOpBytes(path: string): number {
  return 14 + Buffer.byteLength(path, 'utf8')
}

/** What a create2 (a create `withStat`) resolves to: the node's path and its Stat (czxid: the zxid of the create). */
export interface ZkCreated {
  path: string
  stat: ZkStat
}

/** What each request resolves to. */
export interface ZkResponses {
  /** The path; a ZkCreated for a create `withStat`. */
  create: string | ZkCreated
  delete: void
  exists: ZkStat
  getData: { data: Buffer; stat: ZkStat }
  setData: ZkStat
  getChildren: { children: string[]; stat: ZkStat }
  getACL: { acl: ZkAcl[]; stat: ZkStat }
  sync: string
  multi: ZkTxResult[]
  multiRead: ZkReadResult[]
  addWatch: void
  removeWatches: void
  closeSession: void
}

/** Reads the body answering `req` (its reply header said OK). */
export function decodeResponse(req: ZkRequest, r: JuteReader): unknown {
  switch (req.op) {
    case 'create': {
      const path = r.string('create.path')
      return req.withStat ? { path, stat: readStat(r) } : path
    }
    case 'delete':
    case 'removeWatches':
    case 'closeSession':
      return undefined
    case 'addWatch':
      // An ErrorResponse repeating the header's code (0).
      r.int('addWatch.err')
      return undefined
    case 'exists':
    case 'setData':
      return readStat(r)
    case 'getData':
      return { data: Buffer.from(r.buffer('getData.data')), stat: readStat(r) }
    case 'getChildren':
      return { children: r.stringVector('getChildren.children'), stat: readStat(r) }
    case 'getACL':
      return { acl: readAcl(r), stat: readStat(r) }
    case 'sync':
      return r.string('sync.path')
    case 'multi':
      return decodeMulti(req.ops, r)
    case 'multiRead':
      return decodeMultiRead(req.ops, r)
  }
}

function readMultiHeader(r: JuteReader): { type: number; done: boolean; err: number } {
  return { type: r.int('multi.type'), done: r.bool('multi.done'), err: r.int('multi.err') }
}

/** A transaction's results; throws the failing operation's ZkError when it was rolled back. */
function decodeMulti(ops: readonly ZkTxOp[], r: JuteReader): ZkTxResult[] {
  const out: ZkTxResult[] = []
  let failure: { index: number; code: number } | undefined
  for (let i = 0;; i++) {
    const h = readMultiHeader(r)
    if (h.done) break
    if (i >= ops.length) throw new ZkFrameError(`a ZooKeeper multi reply has more results than the ${ops.length} operations sent`)
    if (h.type === OP.error) {
      const code = r.int('multi.error')
      if (code !== ZK_CODES.OK && code !== ZK_CODES.RUNTIME_INCONSISTENCY && !failure) failure = { index: i, code }
      continue
    }
    if (h.type === OP.create) out.push({ op: 'create', path: r.string('multi.create.path') })
    else if (h.type === OP.create2) {
      out.push({ op: 'create', path: r.string('multi.create.path') })
      readStat(r)
    } else if (h.type === OP.delete) out.push({ op: 'delete' })
    else if (h.type === OP.setData) out.push({ op: 'setData', stat: readStat(r) })
    else if (h.type === OP.check) out.push({ op: 'check' })
    else throw new ZkFrameError(`a ZooKeeper multi reply has a result of unknown type ${h.type}`)
  }
  if (failure) {
    const o = ops[failure.index]!
    throw new ZkError(failure.code, `The transaction's ${o.op} of ${o.path} failed, and the transaction with it`)
  }
  if (out.length !== ops.length) throw new ZkFrameError(`a ZooKeeper multi reply has ${out.length} results for ${ops.length} operations`)
  return out
}

function decodeMultiRead(ops: readonly ZkReadOp[], r: JuteReader): ZkReadResult[] {
  const out: ZkReadResult[] = []
  for (;;) {
    const h = readMultiHeader(r)
    if (h.done) break
    const o = ops[out.length]
    if (!o) throw new ZkFrameError(`a ZooKeeper multiRead reply has more results than the ${ops.length} reads sent`)
    if (h.type === OP.error) out.push({ error: new ZkError(r.int('multiRead.error'), `Cannot read ${o.path}`) })
    else if (h.type === OP.getData) {
      out.push({ data: Buffer.from(r.buffer('multiRead.data')) })
      r.skip(STAT_BYTES, 'multiRead.stat')
    } else if (h.type === OP.getChildren) out.push({ children: r.stringVector('multiRead.children') })
    else throw new ZkFrameError(`a ZooKeeper multiRead reply has a result of unknown type ${h.type}`)
  }
  if (out.length !== ops.length) throw new ZkFrameError(`a ZooKeeper multiRead reply has ${out.length} results for ${ops.length} reads`)
  return out
}
