/** The etcd3 driver's URL options (tooz's names and units), its TTL rounding and the TLS files they name. */
import { opt, type ResolvedOptions } from '../../config/options.js'
import { readTlsFiles, type TlsFiles } from '../kit/tls-files.js'
import { lockTimeoutOption, membershipTimeoutOption, timeoutOption } from '../kit/timeout-options.js'

/** The etcd3 driver's options, as tooz's etcd3gw driver spells them. */
export const OPTIONS = {
  timeoutMs: timeoutOption('Bound on every HTTP request (and on start()); the default of membership_timeout and lock_timeout.'),
  membershipTimeoutMs: membershipTimeoutOption(
    'TTL of the membership lease: a member that stops heartbeating is removed by etcd after this long (whole seconds, rounded up).',
  ),
  lockTimeoutMs: lockTimeoutOption("TTL of each lock's lease: a lock whose holder stops heartbeating is freed after this long (whole seconds, rounded up)."),
  apiVersion: opt.enum('api_version', ['v3alpha', 'v3beta', 'v3'], {
    doc: 'Gateway API prefix. Default: discovered from GET /version (etcd ≥3.4 → v3, 3.3 → v3beta, older → v3alpha).',
  }),
  caCert: opt.string('ca_cert', { doc: 'PEM file of the CA that signed the etcd server certificate (etcd3+https).' }),
  certKey: opt.string('cert_key', { doc: 'PEM file of the client key, for client-certificate authentication (with cert_cert).' }),
  certCert: opt.string('cert_cert', { doc: 'PEM file of the client certificate (with cert_key).' }),
  executor: opt.string('executor', { ignored: true, doc: "tooz's choice of thread pool for its blocking client; this driver has none." }),
}

/** Resolved etcd3 options. */
export type ResolvedEtcd3Options = ResolvedOptions<typeof OPTIONS>

/** An etcd lease TTL for a duration: whole seconds, rounded up, at least 1. */
export const ttlSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000))

/** The PEM files named by ca_cert, cert_cert and cert_key, read (etcd3+https). */
export function readTls(options: ResolvedEtcd3Options): TlsFiles {
  return readTlsFiles('etcd3', { ca: ['ca_cert', options.caCert], cert: ['cert_cert', options.certCert], key: ['cert_key', options.certKey] })
}
