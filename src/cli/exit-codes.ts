/**
 * Exit statuses, derived from error codes (never from messages), so that scripts can branch on
 * them. docs/cli.md lists the same table.
 */
import type { ErrorCode } from '../errors.js'

/** Exit statuses the CLI uses. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  conflict: 4,
  notAcquired: 5,
  notSupported: 6,
  unavailable: 7,
  invalidInput: 8,
  lockLost: 9,
  authFailed: 10,
  interrupted: 130,
} as const

const BY_CODE: Partial<Record<ErrorCode, number>> = {
  GROUP_NOT_FOUND: EXIT.notFound,
  MEMBER_NOT_JOINED: EXIT.notFound,
  SERVICE_NOT_FOUND: EXIT.notFound,
  WATCH_CALLBACK_NOT_FOUND: EXIT.notFound,
  GROUP_EXISTS: EXIT.conflict,
  MEMBER_EXISTS: EXIT.conflict,
  GROUP_NOT_EMPTY: EXIT.conflict,
  LOCK_ACQUIRE_FAILED: EXIT.notAcquired,
  NOT_SUPPORTED: EXIT.notSupported,
  CAPABILITY_MISMATCH: EXIT.notSupported,
  CONNECTION_FAILED: EXIT.unavailable,
  OPERATION_TIMEOUT: EXIT.unavailable,
  SERVICEGROUP_UNAVAILABLE: EXIT.unavailable,
  DRIVER_UNAVAILABLE: EXIT.unavailable,
  INVALID_URL: EXIT.invalidInput,
  INVALID_OPTION: EXIT.invalidInput,
  INVALID_ID: EXIT.invalidInput,
  INVALID_CONFIG: EXIT.invalidInput,
  UNKNOWN_DRIVER: EXIT.invalidInput,
  SERIALIZATION: EXIT.invalidInput,
  INVALID_ARGUMENT: EXIT.usage,
  LOCK_LOST: EXIT.lockLost,
  LEADERSHIP_LOST: EXIT.lockLost,
  AUTH_FAILED: EXIT.authFailed,
}

/** The exit status for an error code (1 for codes without a more specific status). */
export function exitStatusFor(code: ErrorCode | undefined): number {
  return (code && BY_CODE[code]) ?? EXIT.failure
}
