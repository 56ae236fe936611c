/** How a services database's failures reach the caller, the same for the PostgreSQL and MySQL catalogs. */
import { AuthenticationError, BackendError, ConnectionError, type RollcallError } from '../../errors.js'
import { isAuthFailure } from '../../internal/client-errors.js'

/**
 * A client library's error from the services database `shownAs` as a rollcall error: refused
 * credentials, a broken connection (as `isConnectionFailure` tells it for that library), or else a
 * BackendError with the library's message.
 */
export function catalogError(err: unknown, shownAs: string, isConnectionFailure: (err: unknown) => boolean): RollcallError {
  if (isAuthFailure(err)) {
    return new AuthenticationError(`The services database ${shownAs} refused the credentials (wrong user name or password, or an unknown user)`, {
      cause: err,
    })
  }
  const e = err as { message?: unknown }
  const message = `The services database ${shownAs} failed: ${typeof e?.message === 'string' ? e.message : String(err)}`
  return isConnectionFailure(err) ? new ConnectionError(message, { cause: err }) : new BackendError(message, { cause: err })
}
