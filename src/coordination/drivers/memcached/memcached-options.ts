/** The memcached driver's URL options (tooz's names and units) and the TLS connection they describe. */
import type { ConnectionOptions } from 'node:tls'
import { opt, type ResolvedOptions } from '../../config/options.js'
import { readTlsFiles } from '../kit/tls-files.js'
import { followsTimeout, lockTimeoutOption, membershipTimeoutOption, timeoutOption } from '../kit/timeout-options.js'

/** Every option of tooz's memcached driver, with tooz's spelling and units. */
export const MEMCACHED_OPTIONS = {
  timeoutMs: timeoutOption('Connect and reply timeout, and the default of membership_timeout, lock_timeout and leader_timeout (tooz: 30).'),
  membershipTimeoutMs: membershipTimeoutOption('Expiry of the member key `_TOOZ_MEMBER_<id>`: a member that stops heartbeating is gone after this long.'),
  lockTimeoutMs: lockTimeoutOption('Expiry of a lock key; the heartbeat extends held locks, so a crashed holder frees its locks after this long.'),
  leaderTimeoutMs: followsTimeout('leader_timeout', "Expiry of a group's leader key; a crashed leader is replaced after this long."),
  maxPoolSize: opt.integer('max_pool_size', {
    min: 1,
    ignored: true,
    doc: "tooz's connection pool size; rollcall pipelines every request over one connection.",
  }),
  useSsl: opt.boolean('use_ssl', { default: false, doc: 'Connect over TLS.' }),
  caCert: opt.string('ca_cert', {
    doc: 'PEM file of the CA that signed the server certificate (default: the system CAs). The certificate is always verified.',
  }),
  sslCert: opt.string('ssl_cert', { doc: 'PEM file of a client certificate.' }),
  sslKey: opt.string('ssl_key', { doc: "PEM file of the client certificate's key." }),
  sslKeyPassword: opt.string('ssl_key_password', { doc: 'Passphrase of ssl_key.' }),
  sslCiphers: opt.string('ssl_ciphers', { doc: 'OpenSSL cipher list.' }),
  sslCheckHostname: opt.boolean('ssl_check_hostname', { default: false, doc: 'Also check that the certificate names the host (tooz default: false).' }),
  executor: opt.string('executor', { ignored: true, doc: "tooz's executor choice (threaded or sync); rollcall has no executor threads." }),
}

/** Resolved options of the memcached driver. */
export type ResolvedMemcachedOptions = ResolvedOptions<typeof MEMCACHED_OPTIONS>

export /** node:tls options from use_ssl and friends; the files are read here, at start. */
function tlsOptions(o: ResolvedMemcachedOptions): ConnectionOptions {
  return {
    ...readTlsFiles('memcached', { ca: ['ca_cert', o.caCert], cert: ['ssl_cert', o.sslCert], key: ['ssl_key', o.sslKey] }),
    passphrase: o.sslKeyPassword || undefined,
    ciphers: o.sslCiphers || undefined,
    rejectUnauthorized: true,
    ...(o.sslCheckHostname ? {} : { checkServerIdentity: () => undefined }),
  }
}
