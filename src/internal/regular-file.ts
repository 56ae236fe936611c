/**
 * The one reader of files a user or operator names (a configuration file, a TLS certificate, key
 * or CA bundle): a regular file of bounded size, read at once. A device (/dev/zero,
 * /dev/urandom), a FIFO, a socket or a directory is refused before a byte is read, and the open is
 * non-blocking, so a FIFO swapped in between the check and the open cannot stall it either; a
 * file over the limit is refused after reading one byte past it, so memory stays bounded even
 * when the size a file reports is wrong (/proc). Each caller wraps {@link FileRefused} in its own
 * typed error, naming the setting or option and the file.
 * @internal
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs'

/** Why a file was not read: `notRegular`, `tooLarge`, or `system` (the open or read failed: ENOENT, EACCES, ...). */
export type RefusalKind = 'notRegular' | 'tooLarge' | 'system'

/** Why a file was not read: a phrase about the file (its message), without the setting's name. */
export class FileRefused extends Error {
  override readonly name = 'FileRefused'
  constructor(readonly kind: RefusalKind, phrase: string) {
    super(phrase)
  }
}

/** The refusal of a file that is not a regular one. */
const notRegular = (): FileRefused => new FileRefused('notRegular', 'not a regular file (a device, FIFO, socket or directory)')

/**
 * The bytes of `path`, a regular file of at most `maxBytes` bytes. Throws {@link FileRefused}
 * saying why not: not a regular file, larger than `maxBytes` bytes, or the system's error code
 * (ENOENT, EACCES, ...).
 */
export function readRegularFile(path: string, maxBytes: number): Buffer {
  let fd: number
  try {
    if (!statSync(path).isFile()) throw notRegular()
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (err) {
    throw refused(err)
  }
  try {
    if (!fstatSync(fd).isFile()) throw notRegular()
    const buf = Buffer.alloc(maxBytes + 1)
    let n = 0
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null)
    if (n > maxBytes) throw new FileRefused('tooLarge', `larger than ${maxBytes} bytes (${sizeText(maxBytes)})`)
    // A copy of what was read: the bytes may be kept (TLS settings), the buffer of maxBytes need not be.
    return Buffer.from(buf.subarray(0, n))
  } catch (err) {
    throw refused(err)
  } finally {
    closeSync(fd)
  }
}

/** A refusal as it is, or a system error as its code (ENOENT, EACCES, EISDIR, ...). */
function refused(err: unknown): FileRefused {
  if (err instanceof FileRefused) return err
  return new FileRefused('system', (err as NodeJS.ErrnoException).code ?? (err as Error).message)
}

/** `1 MiB`, `64 KiB`, or `N bytes`. */
function sizeText(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}
