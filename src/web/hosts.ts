/**
 * Host header checks, against DNS rebinding: a page on evil.example whose name is re-pointed at
 * 127.0.0.1 reaches the status server from the victim's browser, with `Host: evil.example`. The
 * server answers only the names it listens as: IP literals (a rebinding page cannot use one: its
 * origin would be that address, not its own name), `localhost` when it listens on loopback or
 * everywhere, this machine's host name when it listens on other addresses, and the names given in
 * `allowedHosts` (`[api] allowed_hosts`). Anything else gets 421 Misdirected Request.
 */
import { isIP } from 'node:net'
import { hostname } from 'node:os'

/** Decides which Host headers a server listening on `listenHost` answers. */
export class HostCheck {
  readonly #names: Set<string>

  constructor(listenHost: string, allowedHosts: readonly string[] = []) {
    const names = new Set(allowedHosts.map(normalize))
    const listen = normalize(listenHost)
    if (listen !== '' && isIP(listen) === 0) names.add(listen)
    const loopback = listen === 'localhost' || /^127\./.test(listen) || listen === '::1'
    const everywhere = listen === '' || listen === '0.0.0.0' || listen === '::'
    if (loopback || everywhere) names.add('localhost')
    if (!loopback) names.add(normalize(hostname()))
    this.#names = names
  }

  /** The names answered besides IP literals, for the 421 message. */
  get names(): string[] {
    return [...this.#names].sort()
  }

  /** True when a request with this Host header (undefined: HTTP/1.0, no header) is answered. */
  allows(hostHeader: string | undefined): boolean {
    if (hostHeader === undefined) return true
    const name = normalize(stripPort(hostHeader.trim()))
    if (name === '') return false
    return isIP(name) !== 0 || this.#names.has(name)
  }
}

/** Lower-cased, without brackets or a trailing dot. */
function normalize(host: string): string {
  return host.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '')
}

/** `name:port` → `name`; `[v6]:port` → `[v6]`; a bare IPv6 literal is left whole. */
function stripPort(host: string): string {
  if (host.startsWith('[')) {
    const close = host.indexOf(']')
    return close < 0 ? host : host.slice(0, close + 1)
  }
  const colon = host.indexOf(':')
  if (colon < 0 || host.indexOf(':', colon + 1) >= 0) return host
  return host.slice(0, colon)
}
