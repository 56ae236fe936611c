/**
 * A host as a URL gives it, made ready for node:net / node:tls.
 * @internal
 */

/**
 * `host` as a socket connects to it: an IPv6 zone written as a URL writes it (`fe80::1%25eth0`,
 * RFC 6874) becomes the `%` form the socket API reads (`fe80::1%eth0`); `%25` there is refused
 * with EINVAL. Any other host is returned as it is.
 */
export function socketHost(host: string): string {
  return host.includes(':') ? host.replace('%25', '%') : host
}
