/**
 * Throwaway self-signed certificates for the tests' TLS servers and clients, made by openssl.
 * A self-signed certificate is its own CA: the other side trusts it by naming its file (or its
 * bytes) as the CA.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'

/** A certificate and its key, as bytes and as files (in a directory removed when the test ends). */
export interface SelfSignedCertificate {
  readonly key: Buffer
  readonly cert: Buffer
  readonly keyPath: string
  readonly certPath: string
}

/**
 * A self-signed certificate valid for one day for `subjectAltName` (openssl's form: `IP:127.0.0.1`,
 * `DNS:mc.test`), which is also its common name.
 */
export function selfSignedCertificate(t: TestContext, subjectAltName = 'IP:127.0.0.1'): SelfSignedCertificate {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-tls-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const keyPath = join(dir, 'key.pem')
  const certPath = join(dir, 'cert.pem')
  const name = subjectAltName.slice(subjectAltName.indexOf(':') + 1)
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=${name}`,
    '-addext',
    `subjectAltName=${subjectAltName}`,
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ], { stdio: ['ignore', 'ignore', 'pipe'] })
  return { key: readFileSync(keyPath), cert: readFileSync(certPath), keyPath, certPath }
}
