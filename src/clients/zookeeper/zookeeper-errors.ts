/**
 * The errors of the ZooKeeper client: a server's error code on a reply (ZkError, which the
 * driver's translateError maps to rollcall's errors), and a frame the client cannot parse
 * (ZkFrameError, a ConnectionError: the connection is dropped and opened again).
 */
import { ConnectionError, OperationTimeoutError } from '../../errors.js'

/** ZooKeeper's error codes (KeeperException.Code) that this client and its callers branch on. */
export const ZK_CODES = {
  OK: 0,
  SYSTEM_ERROR: -1,
  RUNTIME_INCONSISTENCY: -2,
  CONNECTION_LOSS: -4,
  MARSHALLING_ERROR: -5,
  UNIMPLEMENTED: -6,
  OPERATION_TIMEOUT: -7,
  BAD_ARGUMENTS: -8,
  UNKNOWN_SESSION: -15,
  API_ERROR: -100,
  NO_NODE: -101,
  NO_AUTH: -102,
  BAD_VERSION: -103,
  NO_CHILDREN_FOR_EPHEMERALS: -108,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  INVALID_CALLBACK: -113,
  INVALID_ACL: -114,
  AUTH_FAILED: -115,
  SESSION_MOVED: -118,
  NOT_READ_ONLY: -119,
  NO_WATCHER: -121,
  REQUEST_TIMEOUT: -122,
  QUOTA_EXCEEDED: -123,
  THROTTLED_OP: -124,
} as const

const NAMES = new Map<number, string>(Object.entries(ZK_CODES).map(([name, code]) => [code, name]))

/** The name of a ZooKeeper error code (`NO_NODE`), or `ERROR_<code>` for one this client does not know. */
export function zkCodeName(code: number): string {
  return NAMES.get(code) ?? `ERROR_${code}`
}

/** A ZooKeeper error: a server's reply code, or a client-side CONNECTION_LOSS / OPERATION_TIMEOUT. */
export class ZkError extends Error {
  /** The ZooKeeper error code (negative). */
  readonly code: number

  constructor(code: number, what: string, options: { cause?: unknown } = {}) {
    super(`${what}: ${zkCodeName(code)} (${code})`, options)
    this.code = code
    this.name = zkCodeName(code)
  }
}

/** A frame from the server that does not parse: the connection is closed and opened again. */
export class ZkFrameError extends ConnectionError {
  constructor(message: string) {
    super(`${message}; the connection is dropped`, { driver: 'zookeeper' })
    this.name = 'ZkFrameError'
  }
}

/** The ZooKeeper error code of `err`, or undefined when it is not a ZkError. */
export function zkCode(err: unknown): number | undefined {
  return err instanceof ZkError ? err.code : undefined
}

/** True for failures after which the same call may work once the connection is back. */
export function isConnectionProblem(err: unknown): boolean {
  const code = zkCode(err)
  return err instanceof ConnectionError || err instanceof OperationTimeoutError
    || code === ZK_CODES.CONNECTION_LOSS || code === ZK_CODES.SESSION_EXPIRED || code === ZK_CODES.OPERATION_TIMEOUT
}
