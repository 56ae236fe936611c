/**
 * Certificate and key files named by a driver's ssl options, read at start so that a missing
 * or unreadable file fails connect() with the option's name, not a TLS handshake later.
 * @internal
 */
import { readFile } from 'node:fs/promises'
import { InvalidOptionError } from '../../../errors.js'

/** The bytes of the file that option `option` of driver `driver` names; undefined when the option is unset or empty. */
export async function readTlsFile(driver: string, option: string, path: string | undefined): Promise<Buffer | undefined> {
  if (path === undefined || path === '') return undefined
  try {
    return await readFile(path)
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message
    throw new InvalidOptionError(`Option ${option} of the ${driver} driver names ${JSON.stringify(path)}, which cannot be read (${reason})`)
  }
}
