/**
 * Certificate and key files named by a driver's TLS options (ZooKeeper's `ca`, memcached's
 * `ca_cert`, Redis's `ssl_ca_certs`, ...), read at start so that a missing or unreadable file fails
 * connect() with the option's name, not a TLS handshake later. Each is read as a configuration
 * file is (internal/regular-file.ts): a regular file of at most {@link MAX_TLS_FILE_BYTES}, so
 * `ca=/dev/zero` or a FIFO is refused at once instead of filling memory or blocking for good.
 * @internal
 */
import { InvalidOptionError } from '../../../errors.js'
import { FileRefused, readRegularFile } from '../../../internal/regular-file.js'
import { shorten } from '../../../internal/shown-text.js'

/**
 * Largest TLS file read: 1 MiB. A PEM certificate or key is a few kilobytes; the system's whole CA
 * bundle (Debian's /etc/ssl/certs/ca-certificates.crt) is about 220 KB.
 */
export const MAX_TLS_FILE_BYTES = 1024 * 1024

/**
 * The bytes of the file that option `option` of driver `driver` names; undefined when the option
 * is unset or empty. A file that is not a regular one, is over {@link MAX_TLS_FILE_BYTES} or
 * cannot be read is an InvalidOptionError naming the option and the file.
 */
export function readTlsFile(driver: string, option: string, path: string | undefined): Buffer | undefined {
  if (path === undefined || path === '') return undefined
  try {
    return readRegularFile(path, MAX_TLS_FILE_BYTES)
  } catch (err) {
    if (!(err instanceof FileRefused)) throw err
    throw new InvalidOptionError(
      `Option ${option} of the ${driver} driver names "${shorten(path)}", which cannot be read as a TLS file: ${err.message}; give the path of a PEM file`,
    )
  }
}

/** The CA, certificate and key files a driver's TLS options name, read; a field is left out when its option is unset. */
export interface TlsFiles {
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
}

/** For each of a CA, a certificate and a key: the option's URL spelling and the path it gives (if any). */
export type TlsFileOptions = { readonly [F in keyof TlsFiles]-?: readonly [option: string, path: string | undefined] }

/** Reads the files that `options` name with {@link readTlsFile}, the CA first, then the certificate and the key. */
export function readTlsFiles(driver: string, options: TlsFileOptions): TlsFiles {
  const out: TlsFiles = {}
  for (const field of ['ca', 'cert', 'key'] as const) {
    const bytes = readTlsFile(driver, ...options[field])
    if (bytes) out[field] = bytes
  }
  return out
}
