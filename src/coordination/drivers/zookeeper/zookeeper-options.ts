/**
 * The zookeeper driver's options (tooz's kazoo driver spellings and units), the id rules, and how
 * its URL becomes servers, a base path and credentials.
 */
import { createHash } from 'node:crypto'
import type { ConnectionOptions as TlsOptions } from 'node:tls'
import { InvalidOptionError, InvalidUrlError } from '../../../errors.js'
import type { IdKind } from '../../driver.js'
import { opt, type ResolvedOptions } from '../../config/options.js'
import { shorten } from '../../../internal/redact.js'
import { readTlsFiles } from '../kit/tls-files.js'
import { parseHostPort, type BackendUrl } from '../../config/url.js'

/** ZooKeeper's client port. */
export const DEFAULT_PORT = 2181
/** Largest capabilities accepted: ZooKeeper's default jute.maxbuffer (1 MiB) less room for the request's other fields. */
export const MAX_NODE_BYTES = 1_048_576 - 4_096
/** The child of the namespace that holds locks (tooz's layout); never a group. */
export const LOCKS_NODE = 'locks'
/** The child of a group that holds its election (tooz's layout); never a member. */
export const LEADER_NODE = 'leader'

/** tooz's kazoo options, declared once. */
export const ZOOKEEPER_OPTIONS = {
  sessionTimeoutMs: opt.seconds('timeout', {
    default: 10,
    doc: 'ZooKeeper session timeout: how long after a crash or partition a member disappears. Also the connect timeout of start(), the timeout of each '
      + 'operation, and what heartbeat() returns (tooz: the kazoo `timeout`). The server clamps it to 2–20 tickTime.',
  }),
  namespace: opt.string('namespace', { default: 'tooz', nonEmpty: true, doc: 'Node under which everything is stored (`/<namespace>`); may contain `/`.' }),
  hosts: opt.list('hosts', { default: [], doc: "More servers, `host[:port]`, repeatable (`hosts=h2:2181&hosts=h3:2181`); added to the URL's hosts." }),
  randomizeHosts: opt.boolean('randomize_hosts', {
    default: true,
    doc: 'Try the servers in random order (tooz and kazoo default); false tries them in the order given.',
  }),
  handler: opt.enum('handler', ['threading', 'eventlet'], { ignored: true, doc: "kazoo's thread handler." }),
  connectionRetry: opt.string('connection_retry', {
    ignored: true,
    doc: "kazoo's connection retry policy; here the client reconnects by itself, trying every server.",
  }),
  commandRetry: opt.string('command_retry', {
    ignored: true,
    doc: "kazoo's command retry policy; here an operation fails after `timeout` and the Coordinator retries what needs retrying.",
  }),
  useSsl: opt.boolean('use_ssl', {
    default: false,
    doc: "TLS to the servers (their secureClientPort; tested with ZooKeeper 3.8's Netty TLS and client certificates), as kazoo's `use_ssl`. "
      + 'Python tooz 3.1 passes no TLS option to kazoo: see docs/interop.md for a Python peer over TLS.',
  }),
  verifyCerts: opt.boolean('verify_certs', {
    default: true,
    doc: "With TLS: check the server's certificate against `ca` (or the system's CAs) and its name. false accepts any certificate.",
  }),
  ca: opt.string('ca', { doc: "With TLS: a PEM file of the CA certificates that sign the servers' certificates (default: the system's)." }),
  certfile: opt.string('certfile', { doc: "With TLS: a PEM file with this client's certificate, for servers that require one (ssl.clientAuth)." }),
  keyfile: opt.string('keyfile', { doc: 'With TLS: a PEM file with the private key of `certfile`.' }),
  keyfilePassword: opt.string('keyfile_password', { doc: 'With TLS: the password of an encrypted `keyfile`.' }),
}

/** The resolved option values. */
export type ResolvedZookeeperOptions = ResolvedOptions<typeof ZOOKEEPER_OPTIONS>

/** Why `id` cannot be a ZooKeeper node name as tooz writes it, or undefined. */
export function idProblem(kind: IdKind, id: string): string | undefined {
  if (/[^\x20-\x7e]/.test(id)) {
    return /[^\x00-\x7f]/.test(id)
      ? 'tooz encodes ZooKeeper ids as ASCII, so Python peers could not use it; use ASCII characters only'
      : 'ZooKeeper refuses control characters (including NUL) in node names; use printable characters'
  }
  if (id.includes('/')) return 'a "/" would nest nodes in ZooKeeper; use another separator such as ":" or "."'
  if (id === '.' || id === '..') return 'ZooKeeper refuses "." and ".." as node names'
  if (kind === 'group' && id === LOCKS_NODE) return 'tooz keeps its locks under a node of that name; choose another group id'
  if (kind === 'member' && id === LEADER_NODE) return "tooz keeps a group's election under a node of that name; choose another member id"
  return undefined
}

/**
 * Normalises a `/`-separated ZooKeeper path ('' for none). A bad component throws
 * InvalidUrlError (the URL's chroot) or InvalidOptionError (the namespace), naming `what`.
 */
export function checkPath(path: string, what: 'chroot' | 'namespace'): string {
  const parts = path.split('/').filter((p) => p !== '')
  for (const p of parts) {
    const problem = idProblem('lock', p)
    if (!problem) continue
    const message = what === 'chroot'
      ? `The URL path "${shorten(path)}" (the chroot) is not a valid ZooKeeper path: component "${shorten(p)}": ${problem}`
      : `The namespace "${shorten(path)}" is not a valid ZooKeeper path: component "${shorten(p)}": ${problem}`
    throw what === 'chroot' ? new InvalidUrlError(message) : new InvalidOptionError(message)
  }
  return parts.length ? `/${parts.join('/')}` : ''
}

/** tooz's digest ACL credential: `user:base64(sha1("user:password"))` (kazoo make_digest_acl_credential). */
export function digestCredential(user: string, password: string): string {
  return `${user}:${createHash('sha1').update(`${user}:${password}`, 'utf8').digest('base64')}`
}

/** The servers of a URL plus its `hosts=` values. */
export function serversOf(url: BackendUrl, extra: readonly string[]): { host: string; port: number }[] {
  const all = [...url.hosts, ...extra.flatMap((h) => h.split(',')).filter((h) => h.trim() !== '').map((h) => parseHostPort(h.trim(), url.redacted))]
  if (all.length === 0) return [{ host: 'localhost', port: DEFAULT_PORT }]
  return all.map((h) => ({ host: h.host || 'localhost', port: h.port ?? DEFAULT_PORT }))
}

/**
 * kazoo's TLS options as Node's TLS settings (undefined without use_ssl); a file that cannot be
 * read, is not a regular file or is over 1 MiB is an InvalidOptionError naming the option and the
 * file (kit/tls-files.ts).
 */
export function tlsOptionsOf(options: ResolvedZookeeperOptions, shownAs: string): TlsOptions | undefined {
  if (!options.useSsl) {
    const stray = (['ca', 'certfile', 'keyfile'] as const).filter((k) => options[k] !== undefined)
    if (stray.length) throw new InvalidOptionError(`${stray.join(', ')} in ${shownAs} only apply with use_ssl=true; add use_ssl=true to connect with TLS`)
    return undefined
  }
  if ((options.certfile === undefined) !== (options.keyfile === undefined)) {
    throw new InvalidOptionError(
      `${options.certfile === undefined ? 'keyfile' : 'certfile'} without ${
        options.certfile === undefined ? 'certfile' : 'keyfile'
      } in ${shownAs}: a client certificate needs both`,
    )
  }
  return {
    ...readTlsFiles('zookeeper', { ca: ['ca', options.ca], cert: ['certfile', options.certfile], key: ['keyfile', options.keyfile] }),
    passphrase: options.keyfilePassword,
    rejectUnauthorized: options.verifyCerts,
    ...(options.verifyCerts ? {} : { checkServerIdentity: () => undefined }),
  }
}
