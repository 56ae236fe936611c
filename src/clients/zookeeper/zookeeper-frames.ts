/**
 * ZooKeeper's frames (zookeeper.jute, ClientCnxn): every frame is an int length followed by that
 * many bytes. The first frame each way is the session handshake (ConnectRequest/ConnectResponse,
 * no header); after it, requests start with a RequestHeader (xid, type) and replies with a
 * ReplyHeader (xid, zxid, err). Special xids mark notifications (-1), pings (-2), auth (-4) and
 * setWatches (-8). Per-operation bodies are in zookeeper-ops.ts.
 */
import { JuteReader, JuteWriter } from './jute.js'
import { ZkFrameError } from './zookeeper-errors.js'

/** ZooKeeper's OpCodes (ZooDefs.OpCode) used here. */
export const OP = {
  notification: 0,
  create: 1,
  delete: 2,
  exists: 3,
  getData: 4,
  setData: 5,
  getACL: 6,
  getChildren: 8,
  sync: 9,
  ping: 11,
  getChildren2: 12,
  check: 13,
  multi: 14,
  removeWatches: 18,
  create2: 15,
  multiRead: 22,
  auth: 100,
  setWatches: 101,
  setWatches2: 105,
  addWatch: 106,
  closeSession: -11,
  error: -1,
} as const

/** Reserved xids (ClientCnxn). */
export const XID = { notification: -1, ping: -2, auth: -4, setWatches: -8 } as const

/** Watch event types (Watcher.Event.EventType). */
export const EVENT = { none: -1, nodeCreated: 1, nodeDeleted: 2, nodeDataChanged: 3, nodeChildrenChanged: 4 } as const

/** Node permissions (ZooDefs.Perms). */
export const PERM = { read: 1, write: 2, create: 4, delete: 8, admin: 16, all: 31 } as const

/**
 * Largest frame accepted from a server. ZooKeeper refuses requests over jute.maxbuffer (1 MiB by
 * default) but may answer a read with more (a multiRead of many nodes); 16 MiB bounds what a
 * faulty or hostile server can make this client buffer.
 */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024

/** A znode's metadata (Stat), longs as bigint, times in epoch milliseconds. */
export interface ZkStat {
  czxid: bigint
  mzxid: bigint
  /** Creation time, epoch ms. */
  ctime: number
  /** Last modification time, epoch ms. */
  mtime: number
  version: number
  cversion: number
  aversion: number
  /** The owning session id as 16 hex digits, `0000000000000000` for a persistent node. */
  ephemeralOwner: string
  dataLength: number
  numChildren: number
  pzxid: bigint
}

/** One ACL entry: permissions for an identity (`world:anyone`, `digest:user:hash`). */
export interface ZkAcl {
  perms: number
  scheme: string
  id: string
}

/** The ACL kazoo calls OPEN_ACL_UNSAFE: everyone may do everything. */
export const OPEN_ACL: readonly ZkAcl[] = [{ perms: PERM.all, scheme: 'world', id: 'anyone' }]

/** A session id as 16 hex digits. */
export function sessionHex(id: bigint): string {
  return BigInt.asUintN(64, id).toString(16).padStart(16, '0')
}

/** The encoded size of a Stat: six longs and five ints. */
export const STAT_BYTES = 6 * 8 + 5 * 4

export function readStat(r: JuteReader): ZkStat {
  return {
    czxid: r.long('stat.czxid'),
    mzxid: r.long('stat.mzxid'),
    ctime: Number(r.long('stat.ctime')),
    mtime: Number(r.long('stat.mtime')),
    version: r.int('stat.version'),
    cversion: r.int('stat.cversion'),
    aversion: r.int('stat.aversion'),
    ephemeralOwner: sessionHex(r.long('stat.ephemeralOwner')),
    dataLength: r.int('stat.dataLength'),
    numChildren: r.int('stat.numChildren'),
    pzxid: r.long('stat.pzxid'),
  }
}

export function writeAcl(w: JuteWriter, acl: readonly ZkAcl[]): void {
  w.int(acl.length)
  for (const a of acl) w.int(a.perms).string(a.scheme).string(a.id)
}

export function readAcl(r: JuteReader): ZkAcl[] {
  const n = r.int('the ACL count')
  if (n < 0 || n * 12 > r.remaining) throw new ZkFrameError(`a ZooKeeper frame gives an ACL an impossible length (${n})`)
  const out: ZkAcl[] = []
  for (let i = 0; i < n; i++) out.push({ perms: r.int('acl.perms'), scheme: r.string('acl.scheme'), id: r.string('acl.id') })
  return out
}

/** What the client asks for when it opens or resumes a session. */
export interface ConnectRequest {
  lastZxidSeen: bigint
  timeoutMs: number
  /** 0 for a new session. */
  sessionId: bigint
  /** 16 zero bytes for a new session. */
  password: Uint8Array
  readOnly: boolean
}

/** What the server grants; a timeout of 0 or less means the session it was asked to resume has expired. */
export interface ConnectResponse {
  protocolVersion: number
  timeoutMs: number
  sessionId: bigint
  password: Buffer
  /** The server is in read-only mode (absent from very old servers: false). */
  readOnly: boolean
}

/** The handshake frame. */
export function encodeConnect(req: ConnectRequest): Buffer {
  const w = new JuteWriter(64).int(0)
  w.int(0).long(req.lastZxidSeen).int(req.timeoutMs).long(req.sessionId).buffer(req.password).bool(req.readOnly)
  return framed(w)
}

/** Parses the body of the handshake's reply. */
export function decodeConnect(body: Buffer): ConnectResponse {
  const r = new JuteReader(body)
  const res = {
    protocolVersion: r.int('connect.protocolVersion'),
    timeoutMs: r.int('connect.timeOut'),
    sessionId: r.long('connect.sessionId'),
    password: Buffer.from(r.buffer('connect.passwd')),
    readOnly: r.remaining > 0 ? r.bool('connect.readOnly') : false,
  }
  return res
}

/** A writer with room for the frame length, then the request header. */
export function requestWriter(xid: number, type: number, sizeHint = 128): JuteWriter {
  return new JuteWriter(sizeHint).int(0).int(xid).int(type)
}

/** Fills in the frame length of a writer started with a 4-byte placeholder. */
export function framed(w: JuteWriter): Buffer {
  const buf = w.finish()
  buf.writeInt32BE(buf.length - 4, 0)
  return buf
}

/** A request with no body (ping, closeSession). */
export function encodeBare(xid: number, type: number): Buffer {
  return framed(requestWriter(xid, type, 12))
}

/** AuthPacket: scheme and credentials (`user:password` for digest). */
export function encodeAuth(scheme: string, auth: Uint8Array): Buffer {
  return framed(requestWriter(XID.auth, OP.auth).int(0).string(scheme).buffer(auth))
}

/** SetWatches: re-registers watches on a new connection, firing those whose nodes changed after `relativeZxid`. */
export function encodeSetWatches(relativeZxid: bigint, data: readonly string[], exist: readonly string[], child: readonly string[]): Buffer {
  return framed(requestWriter(XID.setWatches, OP.setWatches).long(relativeZxid).stringVector(data).stringVector(exist).stringVector(child))
}

/**
 * SetWatches2 (ZooKeeper 3.6+): setWatches' three lists, then the persistent and the persistent
 * recursive watches. The server re-adds those two as they are: it reports no change they missed.
 */
export function encodeSetWatches2(
  relativeZxid: bigint,
  lists: { data: readonly string[]; exist: readonly string[]; child: readonly string[]; persistent: readonly string[]; recursive: readonly string[] },
): Buffer {
  const w = requestWriter(XID.setWatches, OP.setWatches2).long(relativeZxid)
  return framed(w.stringVector(lists.data).stringVector(lists.exist).stringVector(lists.child).stringVector(lists.persistent).stringVector(lists.recursive))
}

/** A ReplyHeader and a reader positioned at the body. */
export interface Reply {
  xid: number
  zxid: bigint
  err: number
  body: JuteReader
}

export function decodeReply(frame: Buffer): Reply {
  const r = new JuteReader(frame)
  return { xid: r.int('reply.xid'), zxid: r.long('reply.zxid'), err: r.int('reply.err'), body: r }
}

/** A watch notification (WatcherEvent). */
export interface WatchEvent {
  type: number
  state: number
  path: string
}

export function decodeWatchEvent(r: JuteReader): WatchEvent {
  return { type: r.int('event.type'), state: r.int('event.state'), path: r.string('event.path') }
}

/**
 * Splits a byte stream into frames. push() returns the complete frames; a length that is
 * negative or over MAX_FRAME_BYTES throws ZkFrameError before anything is buffered for it.
 * The chunks of an incomplete frame are only collected, and joined once when the whole frame is
 * there: a frame's bytes are copied once, however many pieces it comes in.
 */
export class FrameSplitter {
  /** Received bytes not yet split off; the first chunk holds the length prefix once 4 bytes are in. */
  #chunks: Buffer[] = []
  #bytes = 0
  /** Bytes needed before splitting again: the length prefix, or the whole frame it announces. */
  #need = 4

  push(chunk: Buffer): Buffer[] {
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    if (this.#bytes < this.#need) return []
    let buf = this.#chunks.length === 1 ? chunk : Buffer.concat(this.#chunks, this.#bytes)
    const out: Buffer[] = []
    while (buf.length >= 4) {
      const n = buf.readInt32BE(0)
      if (n < 0) throw new ZkFrameError(`a ZooKeeper server sent a negative frame length (${n})`)
      if (n > MAX_FRAME_BYTES) throw new ZkFrameError(`a ZooKeeper server sent a frame of ${n} bytes (at most ${MAX_FRAME_BYTES} are accepted)`)
      if (buf.length < 4 + n) break
      out.push(buf.subarray(4, 4 + n))
      buf = buf.subarray(4 + n)
    }
    this.#chunks = buf.length === 0 ? [] : [buf]
    this.#bytes = buf.length
    this.#need = buf.length >= 4 ? 4 + buf.readInt32BE(0) : 4
    return out
  }

  /** Bytes of a frame not complete yet. */
  get pendingBytes(): number {
    return this.#bytes
  }

  /** What a connection that ends now cuts short, for its message (` in the middle of a frame (…)`), or '' between frames. */
  cutShort(): string {
    const have = this.#bytes
    if (have === 0) return ''
    if (have < 4) return ` in the middle of a frame's length (${have} of 4 bytes received)`
    return ` in the middle of a frame (${have - 4} of ${this.#need - 4} bytes received)`
  }
}
