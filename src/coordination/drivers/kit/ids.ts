/**
 * Id checks that several drivers make before anything is written.
 * @internal
 */
import { hasLoneSurrogate } from '../../../internal/unicode.js'
import type { IdKind } from '../../driver.js'

/** A driver's id rule (DriverDefinition.validateId): why `id` cannot be stored, or undefined when it can. */
export type IdRule = (kind: IdKind, id: string) => string | undefined

/**
 * The id rule of a driver that stores ids as UTF-8: an id with no UTF-8 form (an unpaired UTF-16
 * surrogate) is refused first, then `rule`, the backend's own limits, is asked.
 */
export function utf8Ids(rule: IdRule): IdRule {
  return (kind, id) => hasLoneSurrogate(id) ? 'it contains an unpaired UTF-16 surrogate, which has no UTF-8 form; use well-formed text' : rule(kind, id)
}
