/**
 * The member records of file:// groups (`DIR/groups/<sha1 g>/<sha1 m>.raw`) as this process reads
 * them: which are live, what they hold, and which stale ones to delete, read through a cache.
 *
 * Liveness: a member file is live while its mtime is at most `timeout` old (or at most
 * FUTURE_SLACK_MS ahead, for coarse file clocks); the heartbeat touches it. Stale files of other
 * members are deleted on the way (never this member's own: its next heartbeat revives it).
 *
 * The cache: member ids live inside the records (file names are hashes), so a listing must know
 * every record. MemberRecords keeps, per group directory, the decoded records its last listing saw
 * (for CACHED_GROUPS groups, the least recently listed dropped first) and reads again only files
 * that are new or changed, so a listing of unchanged members is a readdir and one stat each.
 *
 * The cache key is inode number + size + birth time. Nobody rewrites a member file in place:
 * rollcall writes a new file and renames it over the old one, tooz creates the file once (its join
 * refuses an existing one), and heartbeats only utime it, which moves mtime and ctime but not the
 * birth time. So the bytes change exactly when the path names another file: another inode number,
 * or, when the number was reused (ext4 reuses a freed one at once), another birth time. Two guards
 * for the rest:
 * - coarse file clocks: a file created in the same clock tick as the cached one could share its
 *   birth time, so a record is trusted only when it was read well after that tick (RACY_MS);
 * - a writer that does rewrite in place sets mtime and ctime to one instant, which a rollcall
 *   heartbeat (utime to its own clock) does not: a ctime that moved to equal mtime is a miss.
 *   tooz's heartbeat (utime to "now") looks the same, so a tooz member is read again once per beat.
 * Where the file system keeps no birth time, ctime stands in for it, and every heartbeat is a miss.
 *
 * Hazard: a tool that rewrites a member file in place, keeping its size, and is followed by a
 * rollcall heartbeat before the next listing, goes unnoticed until the file is replaced.
 *
 * Every call is synchronous but a listing (which lets the event loop run every YIELD_EVERY files),
 * and runs under the driver's `.driver_lock`, which every writer of member files holds.
 */
import { readFileSync, statSync, unlinkSync, type Stats } from 'node:fs'
import { join } from 'node:path'
import { GroupNotFoundError, MemberNotJoinedError, SerializationError } from '../../../errors.js'
import { FirstExpiries } from '../kit/expiries.js'
import { CorruptRecordError, decodeMemberRecord, type MemberRecord } from './file-format.js'

/** A member file touched up to this far in the future still counts as alive (coarse file clocks). */
const FUTURE_SLACK_MS = 1_000
/**
 * How long after a file's newest timestamp (birth or ctime) another file may still get the same
 * one: file clocks advance by kernel ticks (at most 10 ms), or by whole seconds on file systems
 * that keep no fraction (RACY_WHOLE_SECONDS_MS). A record read sooner is not trusted (CachedRecord).
 */
const RACY_MS = 50
const RACY_WHOLE_SECONDS_MS = 2_000
/** A listing lets the event loop run after this many member files, so that a huge group does not stall it. */
const YIELD_EVERY = 1_000
/** Groups whose decoded records are kept; the least recently listed is dropped first. */
const CACHED_GROUPS = 64

/** True when `err` says that the file is not there (ENOENT). */
export function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === 'ENOENT'
}

/**
 * A decoded member file, and what proves that the file at its path still holds the bytes decoded
 * (the cache key and its guards: see this file's doc block).
 */
export interface CachedRecord {
  readonly ino: number
  readonly size: number
  /** Birth time, or ctime where there is none. */
  readonly bornMs: number
  readonly ctimeMs: number
  /** False when read too soon after bornMs or ctimeMs to tell this file from a newer one: read again. */
  readonly trusted: boolean
  readonly read: MemberRecord | CorruptRecordError
}

/** One live member file of a listing. */
export interface LiveFile {
  readonly path: string
  readonly record: CachedRecord
}

/** One live member's record and the times of its file. */
export interface MemberEntry {
  readonly record: MemberRecord
  readonly birthtimeMs: number
  readonly mtimeMs: number
}

function bornMsOf(s: Stats): number {
  return s.birthtimeMs > 0 ? s.birthtimeMs : s.ctimeMs
}

/** True when `s`, a fresh stat of the record's path, proves that the file still holds what `c` decoded. */
function holdsSame(c: CachedRecord, s: Stats): boolean {
  return c.trusted && s.ino === c.ino && s.size === c.size && bornMsOf(s) === c.bornMs && (s.ctimeMs === c.ctimeMs || s.mtimeMs !== s.ctimeMs)
}

function decodeRecord(bytes: Uint8Array): MemberRecord | CorruptRecordError {
  try {
    return decodeMemberRecord(bytes)
  } catch (err) {
    return err instanceof CorruptRecordError ? err : new CorruptRecordError((err as Error).message, undefined, err)
  }
}

function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * The record of the member file at `path`, whose fresh stat is `s` (taken at `nowMs`): `cached`
 * while the file still holds what it decoded, else read and decoded now. Undefined when the file
 * vanished before it could be read.
 */
function recordAt(path: string, s: Stats, nowMs: number, cached: CachedRecord | undefined): CachedRecord | undefined {
  if (cached && holdsSame(cached, s)) return cached
  let bytes: Buffer
  try {
    bytes = readFileSync(path)
  } catch (err) {
    if (isMissing(err)) return undefined
    throw err
  }
  const bornMs = bornMsOf(s)
  const newestMs = Math.max(bornMs, s.ctimeMs)
  const racyMs = newestMs % 1000 === 0 ? RACY_WHOLE_SECONDS_MS : RACY_MS
  // A size that differs from the stat's means the file changed in between: decode it, trust it not.
  const trusted = bytes.length === s.size && nowMs - newestMs > racyMs
  return { ino: s.ino, size: s.size, bornMs, ctimeMs: s.ctimeMs, trusted, read: decodeRecord(bytes) }
}

/** The stat of `path`; undefined when there is no such file. */
export function statIfExists(path: string): Stats | undefined {
  return statSync(path, { throwIfNoEntry: false })
}

/** True when `path` exists (false too when a component of it is not a directory). */
export function exists(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false }) !== undefined
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return false
    throw err
  }
}

/** The member files of group directories: their liveness, their records read through the cache, and collection of stale ones. */
export class MemberRecords {
  readonly #timeoutMs: number
  readonly #ownFile: string
  /** Per group directory, the decoded records of the member files its last listing saw. */
  readonly #groups = new Map<string, Map<string, CachedRecord>>()
  /** Per group directory, when the first member its last listing saw expires. */
  readonly #firstExpiry = new FirstExpiries(CACHED_GROUPS)

  /** `timeoutMs` is the liveness window; `ownFile` is this member's file name, which is never collected. */
  constructor(timeoutMs: number, ownFile: string) {
    this.#timeoutMs = timeoutMs
    this.#ownFile = ownFile
  }

  /** True when a member file whose mtime is `mtimeMs` is live at `nowMs`. */
  isAlive(mtimeMs: number, nowMs: number): boolean {
    const ageMs = nowMs - mtimeMs
    return ageMs >= -FUTURE_SLACK_MS && ageMs <= this.#timeoutMs
  }

  /** Deletes another member's `.raw` whose mtime is older than the timeout; true when it is not alive. */
  collectIfStale(path: string, entry: string): boolean {
    const s = statIfExists(path)
    if (!s) return true
    if (this.isAlive(s.mtimeMs, Date.now())) return false
    this.#collect(path, entry)
    return true
  }

  /**
   * The live member files of group directory `dir`, whose entries are `names`, and their records:
   * one stat per file (its mtime is the liveness), and a read only for a file that is new or
   * changed since the group's last listing (CachedRecord). Other members' stale files are
   * collected on the way.
   */
  async live(dir: string, names: readonly string[]): Promise<LiveFile[]> {
    const before = this.#groups.get(dir)
    const seen = new Map<string, CachedRecord>()
    const live: LiveFile[] = []
    let files = 0
    let firstMtimeMs = Infinity
    for (const name of names) {
      if (!name.endsWith('.raw')) continue
      if (++files % YIELD_EVERY === 0) await yieldToLoop()
      // The group directory is normalized and the name has no slash: no need for join().
      const path = `${dir}/${name}`
      const nowMs = Date.now()
      const s = statSync(path, { throwIfNoEntry: false })
      if (!s) continue
      if (!this.isAlive(s.mtimeMs, nowMs)) {
        this.#collect(path, name)
        continue
      }
      const record = recordAt(path, s, nowMs, before?.get(name))
      if (!record) continue
      seen.set(name, record)
      live.push({ path, record })
      if (s.mtimeMs < firstMtimeMs) firstMtimeMs = s.mtimeMs
    }
    // What this listing saw replaces what the last one saw, so files that went are forgotten.
    this.#groups.delete(dir)
    this.#groups.set(dir, seen)
    // isAlive() holds while the age is at most the timeout: dead 1 ms later, by the wall clock.
    this.#firstExpiry.note(dir, firstMtimeMs + this.#timeoutMs + 1 - Date.now())
    if (this.#groups.size > CACHED_GROUPS) this.#groups.delete(this.#groups.keys().next().value!)
    return live
  }

  /** When (performance.now() ms) the first member seen by the last listing of `dir` expires, unless it beats again. */
  firstExpiryAt(dir: string): number | undefined {
    return this.#firstExpiry.get(dir)
  }

  /**
   * The record and file times of live member `member` of group `group`, whose directory is `dir`
   * and whose file there is `name` (GroupNotFoundError, MemberNotJoinedError, SerializationError).
   */
  entry(group: string, member: string, dir: string, name: string): MemberEntry {
    const path = join(dir, name)
    const nowMs = Date.now()
    const s = statSync(path, { throwIfNoEntry: false })
    const cached = this.#groups.get(dir)
    const record = s && recordAt(path, s, nowMs, cached?.get(name))
    if (!s || !record) {
      if (!exists(dir)) throw new GroupNotFoundError(group)
      throw new MemberNotJoinedError(group, member)
    }
    if (!this.isAlive(s.mtimeMs, nowMs)) throw new MemberNotJoinedError(group, member)
    cached?.set(name, record)
    if (record.read instanceof CorruptRecordError) {
      throw new SerializationError(
        `The record of member ${JSON.stringify(member)} in group ${JSON.stringify(group)} (${path}) is unreadable: ${record.read.message}`,
        { cause: record.read },
      )
    }
    return { record: record.read, birthtimeMs: s.birthtimeMs, mtimeMs: s.mtimeMs }
  }

  /** Forgets the records of group directory `dir`. */
  forget(dir: string): void {
    this.#groups.delete(dir)
  }

  /** Forgets every record. */
  clear(): void {
    this.#groups.clear()
  }

  /** Deletes a stale member file, unless it is this member's own (its next heartbeat revives it). */
  #collect(path: string, entry: string): void {
    if (entry === this.#ownFile) return
    try {
      unlinkSync(path)
    } catch (err) {
      if (!isMissing(err)) throw err
    }
  }
}
