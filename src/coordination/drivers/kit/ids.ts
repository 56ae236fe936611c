/**
 * Id checks that several drivers make before anything is written.
 * @internal
 */
import { hasLoneSurrogate } from '../../../internal/unicode.js'

/** Why an id with no UTF-8 form cannot be stored, or undefined when it has one. */
export function utf8IdProblem(id: string): string | undefined {
  return hasLoneSurrogate(id) ? 'it contains an unpaired UTF-16 surrogate, which has no UTF-8 form; use well-formed text' : undefined
}
