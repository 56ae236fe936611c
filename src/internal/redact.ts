/**
 * Redaction: what keeps credentials out of logs, errors, pages and snapshots.
 *
 * Two functions, both linear in the length of their input:
 * - {@link redactUrl} works on any text (a log line, an error message, a capability string) and
 *   hides, for every URL in it, everything between `scheme:` and the last `@` before the next URL
 *   that a host part may follow (user name and password, whatever characters they hold: a raw
 *   `/`, `?`, `#`, `@`, a newline),
 *   plus the values of password, token and secret query options. In free text the end of a URL
 *   cannot be known, so it errs on the side of hiding.
 * - {@link displayUrl} is how a URL that could not be parsed is shown: its scheme and what follows
 *   the last `@` (the host), control characters escaped, cut to {@link MAX_SHOWN_CHARS}.
 */

import { shorten } from './shown-text.js'

export { MAX_SHOWN_CHARS, shorten } from './shown-text.js'

/**
 * Starts of URLs in text: a scheme at the start of a word. The lookbehind makes every position
 * inside a word fail at once, so a long run of letters is scanned once, not once per letter.
 */
const SCHEME_AT = /(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*):/gi

/** Schemes recognised even without `//` after the colon (`redis::pw@host` is a typo for `redis://`). */
const BARE_SCHEME = /^(?:redis|rediss|memcached|zookeeper|kazoo|zake|etcd3?|etcd3\+https?|postgres(?:ql)?|mysql|mariadb|sqlite|file|memory)(?:\+[a-z0-9]+)?$/i

/** What may follow the `@` that ends a user information: a host, a port, a path, or nothing. */
const HOST_START = /[A-Za-z0-9[\]_%.:/~-]/

/** What stands before an `@` of prose: a space, a quote, an opening bracket. */
const PROSE_BEFORE = /[\s"'`(<[]/

/** Query options whose values are secrets. `[a-z_]*` is bounded by the `?`/`&` the match starts at. */
const SECRET_QUERY = /([?&](?:[a-z_]*password|[a-z_]*token|secret|keyfile_password)=)[^&#\s]*/gi

/**
 * Replaces, in any text, the user name and password of every URL with `***`, and the values of
 * secret query options (`password=`, `sentinel_password=`, `token=`, ...) with `***`. Works on
 * malformed input too, so it is safe to apply to anything before it is logged, shown or put in an
 * error message. Text with no `@` and no `=` is returned as it is, without a scan.
 */
export function redactUrl(text: string): string {
  let s = String(text)
  if (s.includes('@') && s.includes(':')) s = hideUserinfo(s)
  if (s.includes('=')) s = s.replace(SECRET_QUERY, '$1***')
  return s
}

/**
 * Whether {@link redactUrl} could change `text`: a user information needs an `@` after a
 * `scheme:`, a secret query option needs an `=`; text with neither holds no credential that
 * redactUrl would hide. A cheap scan (no regular expression), for callers that see many strings
 * (the status server redacts every capability string on every refresh) and skip the rest.
 */
export function mayHoldCredentials(text: string): boolean {
  return text.includes('=') || (text.includes('@') && text.includes(':'))
}

/** Hides, for each URL start, everything up to the last `@` before the next URL (`scheme://`). */
function hideUserinfo(s: string): string {
  // Zones: [from, to) where a user name and password may sit. A `scheme://` always starts one; a
  // bare known scheme (`redis:`) starts one only outside another URL (else `redis://redis:pw@h`).
  const zones: { from: number; schemeAt: number }[] = []
  SCHEME_AT.lastIndex = 0
  for (let m = SCHEME_AT.exec(s); m !== null; m = SCHEME_AT.exec(s)) {
    const after = m.index + m[0].length
    if (s.startsWith('//', after)) zones.push({ from: after + 2, schemeAt: m.index })
    else if (zones.length === 0 && BARE_SCHEME.test(m[1]!)) zones.push({ from: after, schemeAt: m.index })
  }
  if (zones.length === 0) return s
  let out = ''
  let copied = 0
  for (let i = 0; i < zones.length; i++) {
    const { from } = zones[i]!
    // A `scheme://` in what can still be this URL's user information (no "@" and no white space
    // since the previous one began) belongs to it: `etcd3://pw://pw@host` hides both. Each
    // stretch between two URL starts is scanned once, so this stays linear.
    while (i + 1 < zones.length && !hasAtOrSpace(s, zones[i]!.from, zones[i + 1]!.schemeAt)) i++
    const to = i + 1 < zones.length ? zones[i + 1]!.schemeAt : s.length
    // The last "@", unless it stands alone in the prose after the URL, as in `... "@" after a "/"
    // (@ as %40)`: preceded by a space, quote or bracket and followed by something no host starts with.
    let at = to - 1
    for (; at >= from; at--) {
      if (s.charCodeAt(at) !== 64 /* @ */) continue
      const hostAfter = at + 1 === s.length || HOST_START.test(s[at + 1]!)
      if (hostAfter || !PROSE_BEFORE.test(s[at - 1] ?? ' ')) break
    }
    if (at <= from) continue
    out += `${s.slice(copied, from)}***`
    copied = at
  }
  return out + s.slice(copied)
}

/** Whether s[from, to) holds an `@` or white space. */
function hasAtOrSpace(s: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) {
    const c = s.charCodeAt(k)
    if (c === 64 /* @ */ || c === 32 || (c >= 9 && c <= 13)) return true
  }
  return false
}

/**
 * Shows a URL that may not parse, safely: the scheme as written, then, when there is an `@`,
 * `***` in place of everything up to the last one, secret query values hidden, control characters
 * escaped, and at most {@link MAX_SHOWN_CHARS} characters.
 */
export function displayUrl(text: string): string {
  const s = String(text).trim()
  const m = /^([a-z][a-z0-9+.-]*):(?:\/\/)?/i.exec(s)
  const prefix = m ? m[0] : ''
  let rest = s.slice(prefix.length)
  const at = rest.lastIndexOf('@')
  if (at >= 0) rest = `***${rest.slice(at)}`
  return shorten(`${prefix}${rest}`.replace(SECRET_QUERY, '$1***'))
}
