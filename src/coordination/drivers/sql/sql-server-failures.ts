/**
 * What a SQL server's connection failures mean, read the same way by the MySQL and PostgreSQL
 * drivers: at start-up (preparing the tables) and on later calls. A network failure is
 * retryable; an access failure (credentials, database, TLS refused) is not: the same settings
 * will be refused again.
 */
import { BackendError, ConnectionError, InvalidOptionError, type RollcallError } from '../../../errors.js'
import { DeadlineError, withDeadline } from '../../../internal/deadline.js'

/** How one server product's client errors read. */
export interface SqlServerFailures {
  /** The product, as messages name it: MySQL, PostgreSQL. */
  readonly product: string
  /** A network-level failure: the connection broke or never came up. */
  isConnectionFailure(err: unknown): boolean
  /** The server refused the credentials, the database or TLS. */
  isAccessError(err: unknown): boolean
}

/** A failed call's client error as a ConnectionError when the connection failed; otherwise undefined (the Coordinator maps it). */
export function sqlConnectionError(err: unknown, f: SqlServerFailures): ConnectionError | undefined {
  if (!f.isConnectionFailure(err) && !f.isAccessError(err)) return undefined
  return new ConnectionError(`${f.product} connection failed: ${(err as Error).message}`, { cause: err, retryable: !f.isAccessError(err) })
}

/**
 * Runs open()'s table set-up within `timeoutMs`. A failure becomes the start error, naming
 * `where` (never credentials): ConnectionError when the server was not reached or refused the
 * access, BackendError when it answered but the tables could not be made.
 */
export async function prepareTables(create: () => Promise<void>, f: SqlServerFailures, where: string, timeoutMs: number): Promise<void> {
  try {
    await withDeadline(create(), timeoutMs)
  } catch (err) {
    throw startError(err, f, where, timeoutMs)
  }
}

function startError(err: unknown, f: SqlServerFailures, where: string, timeoutMs: number): RollcallError {
  if (err instanceof InvalidOptionError) return err
  const reason = err instanceof DeadlineError ? `it did not answer within ${timeoutMs / 1000} s (timeout)` : (err as Error)?.message ?? String(err)
  if (err instanceof DeadlineError || f.isConnectionFailure(err) || f.isAccessError(err)) {
    return new ConnectionError(`Cannot connect to ${f.product} at ${where}: ${reason}`, { cause: err, retryable: !f.isAccessError(err) })
  }
  return new BackendError(`Cannot prepare rollcall's tables on ${f.product} at ${where}: ${reason}`, { cause: err })
}
