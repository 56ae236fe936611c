/**
 * Reading the data of many nodes at once: multiRead batches (ZooKeeper 3.6+) sized to stay within
 * the server's jute.maxbuffer, both for the request and for the reply it will send; one pipelined
 * getData per node on older servers. Also kazoo's ensure_path.
 */
import { ZK_CODES, zkCode, ZkError } from './zookeeper-errors.js'
import { readOpBytes, type ZkReadResult } from './zookeeper-ops.js'

/** Budget of one multiRead request (bytes), well within the server's jute.maxbuffer (1 MiB). */
const READ_BATCH_BYTES = 512 * 1024
/** Budget of one multiRead's expected reply (bytes). */
const REPLY_BATCH_BYTES = 1024 * 1024
/** Nodes read by the first batch, which measures them. */
const FIRST_BATCH = 256

/** Reads one batch of nodes' data, in order; undefined for a node that does not exist. */
export type BatchReader = (paths: readonly string[]) => Promise<(Buffer | undefined)[]>

/**
 * The data of `paths`, in order: a first batch measures the nodes, then the rest go out together
 * in batches sized by what it found.
 */
export async function readMany(paths: readonly string[], readBatch: BatchReader): Promise<(Buffer | undefined)[]> {
  const first = Math.min(paths.length, FIRST_BATCH)
  const head = await readBatch(paths.slice(0, first))
  const largest = head.reduce((m, v) => Math.max(m, v?.length ?? 0), 0)
  const perReply = 100 + Math.max(256, largest * 2)
  const batches: [number, number][] = []
  let from = first
  let bytes = 0
  for (let i = first; i < paths.length; i++) {
    const n = readOpBytes(paths[i]!)
    if (i > from && (bytes + n > READ_BATCH_BYTES || (i - from + 1) * perReply > REPLY_BATCH_BYTES)) {
      batches.push([from, i])
      from = i
      bytes = 0
    }
    bytes += n
  }
  if (from < paths.length) batches.push([from, paths.length])
  const rest = await Promise.all(batches.map(([a, b]) => readBatch(paths.slice(a, b))))
  return head.concat(...rest)
}

/** A multiRead's getData results as data, undefined for a missing node; any other error is thrown. */
export function multiReadData(results: readonly ZkReadResult[]): (Buffer | undefined)[] {
  return results.map((r) => {
    if ('data' in r) return r.data
    if ('error' in r && zkCode(r.error) === ZK_CODES.NO_NODE) return undefined
    throw 'error' in r ? r.error : new ZkError(ZK_CODES.MARSHALLING_ERROR, 'Unexpected multiRead result')
  })
}

/** One getData per node, pipelined (a server without multiRead): data in order, undefined for a missing node. */
export function readEach(paths: readonly string[], getData: (path: string) => Promise<{ data: Buffer }>): Promise<(Buffer | undefined)[]> {
  return Promise.all(paths.map((p) =>
    getData(p).then((r) => r.data, (err: unknown) => {
      if (zkCode(err) === ZK_CODES.NO_NODE) return undefined
      throw err
    })
  ))
}

/** What ensurePath needs of a connection. */
export interface PathMaker {
  exists(path: string): Promise<unknown>
  create(path: string, data: undefined, mode: 'PERSISTENT'): Promise<string>
}

/** Creates `path` and its missing ancestors (persistent), as kazoo's ensure_path. */
export async function ensurePath(conn: PathMaker, path: string): Promise<void> {
  const parts = path.split('/').filter((p) => p !== '')
  for (let i = 1; i <= parts.length; i++) {
    const p = `/${parts.slice(0, i).join('/')}`
    // Check first: creating under a parent we may not write answers NO_AUTH even when p exists.
    if (await conn.exists(p)) continue
    await conn.create(p, undefined, 'PERSISTENT').catch((err: unknown) => {
      if (zkCode(err) !== ZK_CODES.NODE_EXISTS) throw err
    })
  }
}
