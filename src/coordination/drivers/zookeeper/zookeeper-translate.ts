/**
 * How ZooKeeper's errors reach the caller: a broken connection or session is a ConnectionError, an
 * ACL refusal names the credentials to use, anything else is a BackendError with ZooKeeper's name
 * and code. Also the size check made before a node is written.
 */
import { BackendError, ConnectionError, InvalidArgumentError, type RollcallError } from '../../../errors.js'
import { ZK_CODES, zkCode } from '../../../clients/zookeeper/zookeeper-client.js'
import { MAX_NODE_BYTES } from './zookeeper-options.js'

/** ZooKeeper refuses packets over jute.maxbuffer (1 MiB by default); say so before anything is sent. */
export function checkSize(capabilities: Uint8Array): void {
  if (capabilities.byteLength > MAX_NODE_BYTES) {
    throw new InvalidArgumentError(
      `Capabilities take ${capabilities.byteLength} bytes encoded; a ZooKeeper node holds at most ${MAX_NODE_BYTES} (jute.maxbuffer)`,
    )
  }
}

/** A failure of background work (not a caller's request) as a BackendError saying what failed; events.warning() names the driver on it. */
export function asBackendError(err: unknown, what: string): RollcallError {
  return new BackendError(`${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err })
}

/** The driver's translateError (the runtime stamps the driver's name on what it returns): ZooKeeper's error codes as rollcall's errors; undefined for anything else. */
export function translateZkError(err: unknown): RollcallError | undefined {
  const code = zkCode(err)
  if (code === undefined) return undefined
  const name = (err as Error).name
  if (code === ZK_CODES.CONNECTION_LOSS || code === ZK_CODES.SESSION_EXPIRED || code === ZK_CODES.OPERATION_TIMEOUT) {
    return new ConnectionError(`ZooKeeper ${name}: the connection or session broke during the operation`, { cause: err })
  }
  if (code === ZK_CODES.NO_AUTH || code === ZK_CODES.AUTH_FAILED || code === ZK_CODES.INVALID_ACL) {
    return new BackendError(
      `ZooKeeper refused the operation (${name}): the nodes are protected by an ACL; `
        + 'use the credentials they were created with (zookeeper://user:password@host)',
      { cause: err },
    )
  }
  return new BackendError(`ZooKeeper error ${name} (${code})`, { cause: err })
}
