/**
 * Reading the data of many nodes at once: multiRead batches (ZooKeeper 3.6+) sized to stay within
 * the server's jute.maxbuffer, both for the request and for the reply it will send; one getData per
 * node on older servers, SINGLE_READS_PER_BATCH of a batch out at once. Also kazoo's ensure_path.
 *
 * The work is bounded whatever the node count (one valid 16 MiB children reply names 1.3 M nodes):
 * at most MAX_BATCHES_IN_FLIGHT batches are out at once, so requests are encoded and replies held a
 * few MiB at a time, each batch's operation timeout measures the server's answer and not a queue of
 * hundreds of batches sent together, and a lock's or a heartbeat's request on the same session waits
 * behind a few batches only. Between two batches the event loop runs (timers fire on time), a
 * failed batch ends the read (no batch is sent after it), and an aborted `signal` ends it too.
 */
import { mapBounded } from '../../internal/map-bounded.js'
import { ZK_CODES, zkCode, ZkError } from './zookeeper-errors.js'
import { readOpBytes, type ZkReadResult } from './zookeeper-ops.js'

/** Budget of one multiRead request (bytes), well within the server's jute.maxbuffer (1 MiB). */
const READ_BATCH_BYTES = 512 * 1024
/** Budget of one multiRead's expected reply (bytes). */
const REPLY_BATCH_BYTES = 1024 * 1024
/** Nodes read by the first batch, which measures them. */
const FIRST_BATCH = 256
/** Batches sent and not yet answered, at most: enough to keep the link busy, few enough to bound memory and queueing. */
export const MAX_BATCHES_IN_FLIGHT = 4
/**
 * getData requests one batch keeps out at once on a server without multiRead (readEach). A batch is cut for one
 * multiRead (thousands of small nodes), but each single read is a request of its own that the server answers in order:
 * with every node of MAX_BATCHES_IN_FLIGHT batches sent at once (11,780 for small nodes), the session's sync (the
 * proof that the leader renewed it) and a heartbeat's or a lock's request waited behind all of them, seconds on a
 * loaded machine, and the session was left or presumed expired while the server answered all along. So at most
 * MAX_BATCHES_IN_FLIGHT × 64 = 256, well under a server's globalOutstandingLimit (1,000 by default).
 */
export const SINGLE_READS_PER_BATCH = 64

/** Reads one batch of nodes' data, in order; undefined for a node that does not exist. */
export type BatchReader = (paths: readonly string[]) => Promise<(Buffer | undefined)[]>

/**
 * The data of `paths`, in order: a first batch measures the nodes, then the rest go out in batches
 * sized by what it found, at most MAX_BATCHES_IN_FLIGHT at once. Rejects with the first batch's
 * error (sending no more), or with `signal`'s reason once it aborts (checked before each batch).
 */
export async function readMany(paths: readonly string[], readBatch: BatchReader, signal?: AbortSignal): Promise<(Buffer | undefined)[]> {
  signal?.throwIfAborted()
  const first = Math.min(paths.length, FIRST_BATCH)
  const out = await readBatch(paths.slice(0, first))
  const largest = out.reduce((m, v) => Math.max(m, v?.length ?? 0), 0)
  const perReply = 100 + Math.max(256, largest * 2)
  out.length = paths.length
  let from = first
  // The next batch, cut when it is sent: planning them all at once is a loop over every path in one turn.
  const nextBatch = (): [number, number] | undefined => {
    if (from >= paths.length) return undefined
    const a = from
    let bytes = 0
    let i = a
    for (; i < paths.length; i++) {
      const n = readOpBytes(paths[i]!)
      if (i > a && (bytes + n > READ_BATCH_BYTES || (i - a + 1) * perReply > REPLY_BATCH_BYTES)) break
      bytes += n
    }
    from = i
    return [a, i]
  }
  let failed = false
  const worker = async (): Promise<void> => {
    for (let batch = nextBatch(); batch; batch = failed ? undefined : nextBatch()) {
      signal?.throwIfAborted()
      const [a, b] = batch
      try {
        const values = await readBatch(paths.slice(a, b))
        for (let i = 0; i < values.length; i++) out[a + i] = values[i]
      } catch (err) {
        failed = true
        throw err
      }
    }
  }
  await Promise.all(Array.from({ length: MAX_BATCHES_IN_FLIGHT }, worker))
  return out
}

/** A multiRead's getData results as data, undefined for a missing node; any other error is thrown. */
export function multiReadData(results: readonly ZkReadResult[]): (Buffer | undefined)[] {
  return results.map((r) => {
    if ('data' in r) return r.data
    if ('error' in r && zkCode(r.error) === ZK_CODES.NO_NODE) return undefined
    throw 'error' in r ? r.error : new ZkError(ZK_CODES.MARSHALLING_ERROR, 'Unexpected multiRead result')
  })
}

/**
 * One getData per node (a server without multiRead), SINGLE_READS_PER_BATCH out at once, the next sent as one is
 * answered: data in order, undefined for a missing node. Rejects with the first other error, sending no more.
 */
export function readEach(paths: readonly string[], getData: (path: string) => Promise<{ data: Buffer }>): Promise<(Buffer | undefined)[]> {
  return mapBounded(paths, SINGLE_READS_PER_BATCH, async (path) => {
    try {
      return (await getData(path)).data
    } catch (err) {
      if (zkCode(err) === ZK_CODES.NO_NODE) return undefined
      throw err
    }
  })
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
