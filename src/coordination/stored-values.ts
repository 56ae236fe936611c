/**
 * Checks on what crosses into and out of the backend, the same for every driver: an id the
 * backend could not store is refused before any I/O, and stored capabilities that do not decode
 * become a SerializationError naming the member, stamped with the driver.
 * @internal
 */
import { InvalidIdError, SerializationError } from '../errors.js'
import { loads } from './codec/index.js'
import type { DriverDefinition, IdKind } from './driver.js'
import { shorten } from '../internal/redact.js'
import { stampDriver } from './runtime/translate.js'

/** Throws InvalidIdError for an id that is not a non-empty string, or that the driver cannot store. */
export function checkId(definition: DriverDefinition<any>, kind: IdKind, id: unknown): void {
  if (typeof id !== 'string' || id === '') {
    throw new InvalidIdError(`A ${kind} id must be a non-empty string, not ${id === '' ? 'an empty string' : typeof id}`)
  }
  const problem = definition.validateId?.(kind, id)
  if (problem) throw new InvalidIdError(`The ${kind} id ${JSON.stringify(shorten(id))} cannot be stored by the ${definition.name} driver: ${problem}`)
}

/** A member's decoded capabilities, or the SerializationError that says why they cannot be decoded. */
export function decodeCapabilities(driverName: string, group: string, member: string, value: Uint8Array | SerializationError): unknown {
  if (value instanceof SerializationError) return stampDriver(value, driverName)
  try {
    return loads(value)
  } catch (err) {
    return new SerializationError(
      `The capabilities of member ${JSON.stringify(member)} in group ${JSON.stringify(group)} cannot be decoded: ${(err as Error).message}`,
      { cause: err, driver: driverName },
    )
  }
}
