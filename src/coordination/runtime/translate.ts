/**
 * Error translation, applied once, at the boundary between the Coordinator and its driver.
 *
 * A client library's error never reaches the application: the driver's translateError() maps the
 * ones it knows, and the rest become ConnectionError (network-level failures, retryable) or
 * BackendError, with the original as `cause`. Every message, the cause's included, is scrubbed of
 * the URL's password first.
 */
import { AuthenticationError, BackendError, ConnectionError, RollcallError } from '../../errors.js'
import { isAuthFailure, isProtocolMismatch } from '../../internal/client-errors.js'
import type { DriverDefinition } from '../driver.js'
import { redactUrl } from '../config/url.js'
import { isNetworkError } from '../../internal/network-errors.js'

/** Maps anything a driver threw to a RollcallError. @internal */
export function translateError(err: unknown, operation: string, def: DriverDefinition<any>, redactedUrl: string, secrets: readonly string[]): RollcallError {
  scrub(err, secrets)
  // Before the driver's own mapping: it may have wrapped these in a ConnectionError already.
  if (!(err instanceof AuthenticationError) && isAuthFailure(err)) {
    return new AuthenticationError(`Cannot ${operation}: ${redactedUrl} refused the credentials (wrong user name or password, or an unknown user)`, {
      cause: err,
      driver: def.name,
    })
  }
  if (isProtocolMismatch(err)) {
    return new ConnectionError(`Cannot ${operation}: ${redactedUrl} answered, but not as a ${def.name} server (is the port right?)`, {
      cause: err,
      driver: def.name,
    })
  }
  if (err instanceof RollcallError) return stampDriver(err, def.name)
  const mapped = def.translateError?.(err, { operation, redactedUrl })
  if (mapped) return stampDriver(scrub(mapped, secrets), def.name)
  const message = (err as Error)?.message ?? String(err)
  if (isNetworkError(err)) {
    return new ConnectionError(`Cannot ${operation}: ${redactedUrl} is unreachable (${message})`, { cause: err, driver: def.name })
  }
  return new BackendError(`Cannot ${operation} on ${redactedUrl}: ${message}`, { cause: err, driver: def.name })
}

/**
 * Names `driver` on an error that names none yet: drivers leave it out, and every error crossing
 * the boundary gets it here, the one place that sets the field after construction. It stays an
 * own, enumerable field (as the constructor made it), and readonly to applications. @internal
 */
export function stampDriver<E extends RollcallError>(err: E, driver: string): E {
  if (err.driver === undefined) Object.defineProperty(err, 'driver', { value: driver })
  return err
}

/** Removes secrets from an error's message and stack, and from its causes, in place. */
export function scrub<E>(err: E, secrets: readonly string[]): E {
  const seen = new Set<unknown>()
  let e: unknown = err
  while (e instanceof Error && !seen.has(e)) {
    seen.add(e)
    const err = e
    // Some errors (DOMException, an AbortSignal.timeout reason) have read-only fields.
    try {
      err.message = scrubText(err.message, secrets)
      if (err.stack) err.stack = scrubText(err.stack, secrets)
    } catch {
      // Nothing of ours can be in a message we could not write: those come from the runtime.
    }
    e = err.cause
  }
  return err
}

/** Removes secrets (and any URL password) from a string. */
export function scrubText(text: string, secrets: readonly string[]): string {
  let out = redactUrl(text)
  for (const s of secrets) if (s.length >= 3) out = out.split(s).join('***')
  return out
}
