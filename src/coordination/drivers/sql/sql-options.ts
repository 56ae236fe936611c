/** The options both SQL drivers take, in tooz's units; each driver adds its own. */
import { opt } from '../../config/options.js'
import { membershipTimeoutOption, timeoutOption } from '../kit/timeout-options.js'

/** `timeout`, `membership_timeout` and `namespace`; `server` names the dialect in the docs, `namedObjects` what the prefix names. */
export function sqlCommonOptions(server: string, namedObjects: string) {
  return {
    timeoutMs: timeoutOption(`Connect timeout, and the default of membership_timeout. (tooz's ${server} driver has no timeout option.)`),
    membershipTimeoutMs: membershipTimeoutOption('A member whose last heartbeat is older than this (by the server clock) is no longer listed.'),
    namespace: opt.string('namespace', {
      default: 'rollcall_',
      nonEmpty: true,
      doc: `Prefix of the ${namedObjects} names (letters, digits, "_"; lower-cased).`,
    }),
  }
}
