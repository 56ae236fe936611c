/**
 * Backend URL parsing, done once for every driver.
 *
 * WHATWG `URL` cannot hold the forms tooz accepts (`zookeeper://h1:2181,h2:2181/chroot`,
 * `memcached://:11211`, `redis:///var/run/redis.sock`, schemes with a `+`), so the authority is
 * split by hand and only then validated. Query keys keep tooz's spellings; a key may repeat
 * (`hosts=`, `sentinel_fallback=`), so every value is a list.
 */
import { InvalidUrlError } from '../../errors.js'
import { displayUrl, shorten } from '../../internal/redact.js'

export { displayUrl, redactUrl } from '../../internal/redact.js'

/** Secret query values, hidden in `redacted`. */
const SECRET_QUERY_VALUE = /([?&](?:[a-z_]*password|[a-z_]*token|secret|keyfile_password)=)[^&]*/gi

/** One `host[:port]` of a URL's authority. `host` is '' when the URL leaves it out. */
export interface HostPort {
  host: string
  port: number | undefined
}

/** A parsed backend URL. `password` is kept out of `toString()` and `redacted`. */
export interface BackendUrl {
  /** Scheme as written, lower-cased, without the colon (`redis`, `etcd3+http`). */
  scheme: string
  /** The authority's hosts in order; empty for `file:///dir` and `memory://`. */
  hosts: HostPort[]
  username: string | undefined
  password: string | undefined
  /** Decoded path, '' when absent. */
  path: string
  /** Query parameters; repeated keys keep every value, in order. */
  query: Map<string, string[]>
  /** The URL with its user name and password replaced by `***` (and secret options' values): safe for logs, errors and pages. */
  redacted: string
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i

/**
 * Parses `scheme://[user[:pass]@]host[:port][,host[:port]...][/path][?query]`, given as a string or
 * as a WHATWG `URL` (read as its `href`). Throws InvalidUrlError when it does not fit that shape. No message shows what lies between
 * `scheme:` and the last `@` (the user name and password, whatever they contain), and a URL whose
 * shape cannot be made out is shown by its scheme and host only (`displayUrl()`).
 */
export function parseBackendUrl(given: string | URL): BackendUrl {
  const input = given instanceof URL ? given.href : given
  if (typeof input !== 'string') {
    throw new InvalidUrlError(
      `The backend URL must be a string or a URL object, not ${
        input === null ? 'null' : typeof input
      }; e.g. redis://127.0.0.1:6379 or file:///var/lib/rollcall`,
    )
  }
  if (input.trim() === '') {
    throw new InvalidUrlError('The backend URL is empty; expected something like redis://127.0.0.1:6379 or file:///var/lib/rollcall')
  }
  const m = SCHEME.exec(input)
  if (!m || !input.startsWith('//', m[0].length)) {
    throw new InvalidUrlError(`"${displayUrl(input)}" is not a backend URL: expected scheme://host[:port][/path][?options], e.g. redis://127.0.0.1:6379`)
  }
  const scheme = m[1]!.toLowerCase()
  let rest = input.slice(m[0].length + 2)
  const authorityEnd = rest.search(/[/?#]/)
  // An "@" after the authority: a user name or password holding a raw "/", "?" or "#", or an "@"
  // in a path or option value. Either way, where the credentials end cannot be told for sure.
  // Only a file:// path (no authority, nothing secret) may hold an "@": `redis:///u:p@host` is
  // credentials one "/" too far, and drivers show their paths in messages.
  const queryStart = rest.search(/[?#]/)
  const atInPath = authorityEnd === 0 && scheme !== 'file' && rest.slice(0, queryStart >= 0 ? queryStart : rest.length).includes('@')
  if ((authorityEnd > 0 && rest.includes('@', authorityEnd)) || (queryStart >= 0 && rest.includes('@', queryStart)) || atInPath) {
    throw new InvalidUrlError(
      `"${displayUrl(input)}" has an "@" after a "/", "?" or "#": percent-encode those characters in a user name, password, path or option value `
        + '(/ as %2F, ? as %3F, # as %23, @ as %40)',
    )
  }
  const hashAt = rest.indexOf('#')
  if (hashAt >= 0) rest = rest.slice(0, hashAt)
  let queryText = ''
  const qAt = rest.indexOf('?')
  if (qAt >= 0) {
    queryText = rest.slice(qAt + 1)
    rest = rest.slice(0, qAt)
  }
  const slashAt = rest.indexOf('/')
  const authority = slashAt >= 0 ? rest.slice(0, slashAt) : rest
  const rawPath = slashAt >= 0 ? rest.slice(slashAt) : ''
  const atAt = authority.lastIndexOf('@')
  const hostText = authority.slice(atAt + 1)
  // Rebuilt from the parts, so that nothing of the user information can reach it; a file:// path
  // with an "@" is shown from its last "@" on, in case it holds credentials one "/" too far.
  const pathAt = authority === '' ? rawPath.lastIndexOf('@') : -1
  const shownPath = pathAt >= 0 ? `***${rawPath.slice(pathAt)}` : rawPath
  const redacted = `${m[1]}://${atAt >= 0 ? '***@' : ''}${hostText}${shownPath}${queryText === '' ? '' : `?${queryText}`}`.replace(SECRET_QUERY_VALUE, '$1***')
  const shownAs = shorten(redacted)

  let username: string | undefined
  let password: string | undefined
  if (atAt >= 0) {
    const userinfo = authority.slice(0, atAt)
    const colon = userinfo.indexOf(':')
    username = decode(colon >= 0 ? userinfo.slice(0, colon) : userinfo, 'user name', shownAs)
    if (colon >= 0) password = decode(userinfo.slice(colon + 1), 'password', shownAs)
    if (username === '') username = undefined
  }
  const hosts = hostText === '' ? [] : hostText.split(',').map((h) => parseHostPort(h, shownAs))
  const path = decode(rawPath, 'path', shownAs)
  return { scheme, hosts, username, password, path, query: parseQuery(queryText, shownAs), redacted }
}

/** Parses `host`, `host:port`, `:port`, `[v6]` or `[v6]:port`. */
export function parseHostPort(text: string, shownAs = shorten(text)): HostPort {
  let host = text
  let portText: string | undefined
  if (text.startsWith('[')) {
    const close = text.indexOf(']')
    if (close < 0) throw new InvalidUrlError(`Unclosed "[" in host "${shorten(text)}" of ${shownAs}`)
    host = text.slice(1, close)
    const after = text.slice(close + 1)
    if (after !== '') {
      if (!after.startsWith(':')) throw new InvalidUrlError(`Unexpected "${shorten(after)}" after host "[${shorten(host)}]" in ${shownAs}`)
      portText = after.slice(1)
    }
  } else {
    const colon = text.lastIndexOf(':')
    if (colon >= 0) {
      host = text.slice(0, colon)
      portText = text.slice(colon + 1)
      if (host.includes(':')) throw new InvalidUrlError(`IPv6 host "${shorten(text)}" in ${shownAs} must be written in brackets, e.g. [::1]:6379`)
    }
  }
  if (/[\s/\\?#@]/.test(host)) throw new InvalidUrlError(`Host "${shorten(host)}" in ${shownAs} contains a character that is not allowed in a host name`)
  let port: number | undefined
  if (portText !== undefined) {
    if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
      throw new InvalidUrlError(`Port "${shorten(portText)}" in ${shownAs} is not a number from 1 to 65535`)
    }
    port = Number(portText)
  }
  return { host, port }
}

function parseQuery(text: string, shownAs: string): Map<string, string[]> {
  const query = new Map<string, string[]>()
  if (text === '') return query
  for (const part of text.split('&')) {
    if (part === '') continue
    const eq = part.indexOf('=')
    const key = decode((eq >= 0 ? part.slice(0, eq) : part).replace(/\+/g, ' '), 'option name', shownAs)
    const value = eq >= 0 ? decode(part.slice(eq + 1).replace(/\+/g, ' '), `value of option "${key}"`, shownAs) : ''
    const list = query.get(key)
    if (list) list.push(value)
    else query.set(key, [value])
  }
  return query
}

function decode(text: string, what: string, shownAs: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    throw new InvalidUrlError(`The ${what} in ${shownAs} has a malformed %-escape`)
  }
}

/** Formats hosts back into `host:port,host:port`, for messages. */
export function formatHosts(hosts: readonly HostPort[], defaultPort?: number): string {
  return hosts.map((h) => {
    const host = h.host.includes(':') ? `[${h.host}]` : h.host
    const port = h.port ?? defaultPort
    return port === undefined ? host : `${host}:${port}`
  }).join(',')
}
