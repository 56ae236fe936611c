/**
 * Which directory a `file://` URL names, which ids the file driver can store, and how a file is
 * put in place whole.
 *
 * Group and member ids are hashed (sha1 of their UTF-8), so any well-formed string will do. A
 * lock name is a path inside the directory (tooz: `safe_abs_path(DIR, name)`), so it must stay
 * inside it and keep clear of the driver's own files. tooz refuses exactly DIR, DIR/groups,
 * DIR/tmp and DIR/.driver_lock and paths escaping DIR; rollcall also refuses anything *under*
 * groups/ and tmp/ (a lock there could overwrite a member record) and its own `.leaders/`.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, posix, resolve } from 'node:path'
import { InvalidUrlError } from '../../../errors.js'
import type { IdKind } from '../../driver.js'
import type { BackendUrl } from '../../config/url.js'

/** First path segments a lock name may not have: tooz's reserved paths and rollcall's leader locks. */
export const RESERVED_LOCK_SEGMENTS: ReadonlySet<string> = new Set(['groups', 'tmp', '.driver_lock', '.leaders'])

const MAX_SEGMENT_BYTES = 255

/** A lock name as a path relative to DIR, without `.` or `..` segments or a trailing slash. */
export function normalizeLockName(name: string): string {
  return posix.normalize(name).replace(/\/+$/, '')
}

/** Why `id`, once known to have a UTF-8 form, cannot be stored, or undefined when it can. */
export function fileIdProblem(kind: IdKind, id: string): string | undefined {
  if (kind !== 'lock') return undefined
  if (id.includes('\0')) return 'a lock name is a file name, which cannot contain NUL characters'
  if (id.startsWith('/')) return 'a lock name is a path relative to the directory of the URL, not an absolute path; drop the leading "/"'
  const path = normalizeLockName(id)
  if (path === '.' || path === '') return 'it names the directory itself; a lock needs a file name'
  if (path === '..' || path.startsWith('../')) {
    return 'it leads outside the directory of the URL (tooz refuses such paths too); use a name without ".." segments'
  }
  const first = path.split('/')[0]!
  if (RESERVED_LOCK_SEGMENTS.has(first)) {
    return `"${first}" is reserved for the driver's own files (${[...RESERVED_LOCK_SEGMENTS].join(', ')}); choose another name`
  }
  if (path.split('/').some((part) => Buffer.byteLength(part) > MAX_SEGMENT_BYTES)) {
    return `each path segment of a lock name must be at most ${MAX_SEGMENT_BYTES} bytes of UTF-8 (a file-name limit)`
  }
  return undefined
}

/**
 * The directory a `file://` URL names, normalized. InvalidUrlError for a URL with a host (other
 * than `localhost`, which RFC 8089 allows), a port, or no absolute path: `file://relative/dir`
 * parses as host "relative", which is never what was meant.
 */
export function directoryOf(url: BackendUrl): string {
  const { hosts, path, redacted } = url
  const host = hosts.map((h) => h.host).join(',')
  if (hosts.length > 1 || (host !== '' && host !== 'localhost') || hosts.some((h) => h.port !== undefined)) {
    throw new InvalidUrlError(
      `${redacted} names a host ("${host}"), but the file driver works on a local directory: write file:///absolute/path (three slashes); relative paths `
        + `are not allowed`,
    )
  }
  if (!path.startsWith('/')) {
    throw new InvalidUrlError(`${redacted} has no directory: write file:///absolute/path, e.g. file:///var/lib/rollcall`)
  }
  return posix.normalize(path).replace(/(.)\/+$/, '$1')
}

/**
 * `mkdir -p` in at most one mkdir per missing component. Node's recursive mkdir retries forever
 * when a parent exists but takes no new entries (`/proc/self`: ENOENT, then EEXIST, again).
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = []
  for (let d = resolve(dir); statSync(d, { throwIfNoEntry: false })?.isDirectory() !== true; d = dirname(d)) {
    missing.push(d)
    if (dirname(d) === d) break
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || statSync(d).isDirectory() !== true) throw err
    }
  }
}

/** Writes `tmpDir/<random>` and renames it over `path`: readers see the old file or the new one. */
export function writeAtomically(tmpDir: string, path: string, bytes: Uint8Array): void {
  const tmp = join(tmpDir, `tmp${randomBytes(6).toString('hex')}rollcall`)
  try {
    writeFileSync(tmp, bytes, { flag: 'wx' })
    renameSync(tmp, path)
  } catch (err) {
    try {
      unlinkSync(tmp)
    } catch {
      // Never created, or already renamed.
    }
    throw err
  }
}
