/**
 * file:// — groups, members and locks in a local directory, laid out exactly as Python tooz's file
 * driver (tooz 3.1 `tooz/drivers/file.py`) lays them out, so tooz and rollcall processes on one
 * host share groups, members and locks.
 *
 * URL: `file:///DIRECTORY[?timeout=10]` (or `file://localhost/DIRECTORY`). DIRECTORY must be an
 * absolute path; it is created at start.
 *
 * Layout (names are `sha1(utf8(id))` in hex):
 * - `DIR/.driver_lock`: record-locked around every membership read and write (join, leave, member
 *   reads, capability updates, group deletion, heartbeat), as tooz holds it;
 * - `DIR/tmp/`: every record is written here first, then renamed into place;
 * - `DIR/groups/<sha1 g>/.metadata`: msgpack `{'group_id': bin, 'encoded': False}`;
 * - `DIR/groups/<sha1 g>/<sha1 m>.raw`: msgpack `{'capabilities', 'joined_on' (naive local
 *   datetime, oslo ext 1), 'member_id': bin, 'encoded': False}`; ids are written as bytes;
 * - `DIR/<lock name>`: an empty file, record-locked while the lock is held;
 * - `DIR/.leaders/<sha1 g>`: rollcall only, the leader lock of g with its holder's id inside.
 *
 * Consistency: one host, strongly consistent (every membership read and write happens under
 * `.driver_lock`). A member is alive while its `.raw` file's mtime is at most `timeout` seconds
 * old; the heartbeat touches it. Expiry is seen by polling: nothing is pushed.
 *
 * Hazards:
 * - Local only: a network file system's record locks and mtimes are only as good as its server.
 * - Locks are record locks (F_OFD_SETLK on Linux, through fs-native-extensions), which conflict
 *   with the `fcntl.lockf` locks Python tooz takes: rollcall and tooz exclude each other on
 *   `.driver_lock` and on named locks. On macOS the package uses flock, which does not exclude
 *   Python's locks (rollcall processes still exclude each other).
 * - Unlike tooz, a listing or deleteGroup() deletes other members' `.raw` files whose mtime is
 *   older than `timeout` (never this member's own), as Redis' lazy GC does, so dead members no
 *   longer block deleteGroup() forever. A tooz process paused for longer than `timeout` therefore
 *   disappears for good (tooz does not rejoin), where tooz alone would list it again after its
 *   next heartbeat. A rollcall member in that case is told (`membershipLost`) and rejoins.
 * - break() unlinks the lock file. rollcall acquirers check after locking that the file they
 *   locked is still the one at the path, so they never share a broken lock; a tooz waiter that had
 *   the old file open can still take it alongside a new holder. break() is for operators and tests.
 * - A member record whose member id cannot be read is skipped, with one `warning` per file.
 * - rollcall writes ids as bytes (`encoded: False`), the id type tooz documents; a tooz program
 *   that passes str ids gets rollcall's members and groups back as bytes.
 * - getMemberInfo(): createdAt is `joined_on`; updatedAt is the birth time of the member's current
 *   record (written at join and by each updateCapabilities; heartbeats only touch its mtime), or
 *   its mtime where the file system records no birth time.
 */
import type { Stats } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import {
  BackendError, ConnectionError, GroupExistsError, GroupNotEmptyError, GroupNotFoundError, MemberExistsError,
  MemberNotJoinedError, SerializationError,
} from '../../errors.js'
import { defineDriver, type CoordinationDriver, type DriverContext, type DriverLock, type DriverMemberInfo, type HeartbeatResult } from '../driver.js'
import { opt, type ResolvedOptions } from '../options.js'
import { CorruptRecordError, decodeGroupMetadata, decodeMemberRecord, encodeGroupMetadata, encodeMemberRecord, safeName, type MemberRecord } from './file-format.js'
import { LeaderLock, readLeader } from './file-leader.js'
import { directoryOf, normalizeLockName, validateId } from './file-paths.js'
import { nativeLocks, RecordLock, withFileLock } from './file-lock.js'

const OPTIONS = {
  timeoutMs: opt.seconds('timeout', { default: 10, doc: 'Liveness window: a member whose .raw file was not touched for this long is gone. Also the interval the heartbeat returns (the coordinator beats at half of it).' }),
  executor: opt.string('executor', { ignored: true, doc: "tooz's executor choice (threaded or sync)." }),
}

type FileOptions = ResolvedOptions<typeof OPTIONS>

/** Longest wait for `.driver_lock`, which tooz and rollcall hold only for one short operation. */
const DRIVER_LOCK_WAIT_MS = 10_000
/** A member file touched up to this far in the future still counts as alive (coarse file clocks). */
const FUTURE_SLACK_MS = 1_000

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === 'ENOENT'
}

class FileDriver implements CoordinationDriver {
  readonly #ctx: DriverContext<FileOptions>
  readonly #dir: string
  readonly #groupsDir: string
  readonly #tmpDir: string
  readonly #driverLock: string
  readonly #ownFile: string
  readonly #timeoutMs: number
  readonly #locks = new Set<RecordLock>()
  /** Corrupt files already reported (path, inode and size), so a poll does not warn every time. */
  readonly #warned = new Set<string>()

  constructor(ctx: DriverContext<FileOptions>, dir: string) {
    this.#ctx = ctx
    this.#dir = dir
    this.#groupsDir = join(dir, 'groups')
    this.#tmpDir = join(dir, 'tmp')
    this.#driverLock = join(dir, '.driver_lock')
    this.#ownFile = `${safeName(ctx.memberId)}.raw`
    this.#timeoutMs = ctx.options.timeoutMs
  }

  async start(): Promise<void> {
    nativeLocks()
    try {
      for (const d of [this.#dir, this.#groupsDir, this.#tmpDir]) await mkdir(d, { recursive: true })
      await writeFile(this.#driverLock, '', { flag: 'a' })
    } catch (err) {
      throw new ConnectionError(`Cannot use ${this.#dir} as a file:// backend: ${(err as Error).message}`, { cause: err, driver: 'file' })
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.#locks].map((l) => l.close()))
    this.#locks.clear()
  }

  /** Touches this member's `.raw` in every joined group; reports groups whose file vanished. */
  async heartbeat(joined: ReadonlyMap<string, Uint8Array>): Promise<HeartbeatResult> {
    const lostGroups: string[] = []
    if (joined.size > 0) {
      await this.#locked(async () => {
        const now = new Date()
        for (const group of joined.keys()) {
          await utimes(this.#memberPath(group), now, now).catch((err: unknown) => {
            if (!isMissing(err)) throw err
            lostGroups.push(group)
          })
        }
      })
    }
    return { nextBeatMs: this.#timeoutMs, lostGroups }
  }

  async createGroup(group: string): Promise<void> {
    const dir = this.#groupDir(group)
    await this.#locked(async () => {
      // tooz rewrites an existing .metadata here; rollcall leaves it, so a tooz writer's `encoded` flag stays.
      if (await exists(join(dir, '.metadata'))) throw new GroupExistsError(group)
      await mkdir(dir, { recursive: true })
      await this.#writeAtomically(join(dir, '.metadata'), encodeGroupMetadata(group))
    })
  }

  async deleteGroup(group: string): Promise<void> {
    const dir = this.#groupDir(group)
    await this.#locked(async () => {
      const left: string[] = []
      for (const entry of await this.#entries(group)) {
        if (entry === '.metadata') continue
        if (entry.endsWith('.raw') && (await this.#collectIfStale(join(dir, entry), entry))) continue
        left.push(entry)
      }
      if (left.some((e) => e.endsWith('.raw'))) throw new GroupNotEmptyError(group)
      if (left.length > 0) throw new BackendError(`Cannot delete group ${JSON.stringify(group)}: unexpected ${left.map((e) => JSON.stringify(e)).join(', ')} in ${dir}, which should hold only .metadata and member files`, { driver: 'file' })
      await rm(dir, { recursive: true, force: true })
    })
    // The group's leader lock file goes too, when nobody holds it.
    const leader = new RecordLock(this.#leaderPath(group))
    if ((await exists(leader.path)) && (await leader.tryAcquire().catch(() => false))) {
      await unlink(leader.path).catch(() => {})
      await leader.close()
    }
  }

  async listGroups(): Promise<string[]> {
    const groups: string[] = []
    for (const entry of await readdir(this.#groupsDir)) {
      const path = join(this.#groupsDir, entry, '.metadata')
      const bytes = await readFile(path).catch((err: unknown) => {
        if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined
        throw err
      })
      if (!bytes) continue
      try {
        groups.push(decodeGroupMetadata(bytes))
      } catch (err) {
        await this.#warnCorrupt(path, `Group metadata ${path} is unreadable (${(err as Error).message}); that group is not listed`, err)
      }
    }
    return groups
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    await this.#locked(async () => {
      if (!(await exists(join(this.#groupDir(group), '.metadata')))) throw new GroupNotFoundError(group)
      const path = this.#memberPath(group)
      const mtimeMs = (await statIfExists(path))?.mtimeMs
      // A stale file of ours is a dead earlier incarnation of this member id: replace it (tooz refuses).
      if (mtimeMs !== undefined && this.#isAlive(mtimeMs, Date.now())) throw new MemberExistsError(group, this.#ctx.memberId)
      await this.#writeAtomically(path, encodeMemberRecord(this.#ctx.memberId, capabilities, new Date()))
    })
  }

  async leaveGroup(group: string): Promise<void> {
    await this.#locked(async () => {
      if (!(await exists(join(this.#groupDir(group), '.metadata')))) throw new GroupNotFoundError(group)
      await unlink(this.#memberPath(group)).catch((err: unknown) => {
        if (isMissing(err)) throw new MemberNotJoinedError(group, this.#ctx.memberId)
        throw err
      })
    })
  }

  async listMembers(group: string): Promise<Map<string, Uint8Array | SerializationError>> {
    const dir = this.#groupDir(group)
    return this.#locked(async () => {
      const members = new Map<string, Uint8Array | SerializationError>()
      const reads = (await this.#entries(group)).filter((e) => e.endsWith('.raw')).map(async (entry) => {
        const path = join(dir, entry)
        if (await this.#collectIfStale(path, entry)) return
        const entryRead = await this.#readEntry(path)
        if (entryRead) members.set(...entryRead)
      })
      await Promise.all(reads)
      return members
    })
  }

  async getMemberCapabilities(group: string, member: string): Promise<Uint8Array> {
    return (await this.#memberEntry(group, member)).record.capabilities
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    await this.#locked(async () => {
      const path = this.#memberPath(group)
      const bytes = await readFile(path).catch(async (err: unknown) => {
        if (!isMissing(err)) throw err
        if (!(await exists(this.#groupDir(group)))) throw new GroupNotFoundError(group)
        throw new MemberNotJoinedError(group, this.#ctx.memberId)
      })
      let joinedOn: Date | Uint8Array = new Date()
      try {
        joinedOn = decodeMemberRecord(bytes).joinedOnRaw ?? joinedOn
      } catch {
        // Our own record is unreadable: rewrite it whole.
      }
      await this.#writeAtomically(path, encodeMemberRecord(this.#ctx.memberId, capabilities, joinedOn))
    })
  }

  /** createdAt is `joined_on`; updatedAt is when the current record was written (its birth time). */
  async getMemberInfo(group: string, member: string): Promise<DriverMemberInfo> {
    const { record, birthtimeMs, mtimeMs } = await this.#memberEntry(group, member)
    const createdAt = record.joinedOn ?? new Date(birthtimeMs > 0 ? birthtimeMs : mtimeMs)
    const written = birthtimeMs > 0 ? birthtimeMs : mtimeMs
    return { capabilities: record.capabilities, createdAt, updatedAt: new Date(Math.max(written, createdAt.getTime())) }
  }

  createLock(name: string): DriverLock {
    return this.#wrapLock(new RecordLock(join(this.#dir, normalizeLockName(name))))
  }

  leaderLock(group: string): DriverLock {
    return this.#wrapLock(new LeaderLock(this.#leaderPath(group), this.#ctx.memberId))
  }

  async getLeader(group: string): Promise<string | null> {
    return readLeader(this.#leaderPath(group))
  }

  /** Wraps a record lock as a DriverLock, tracked so that stop() closes it. */
  #wrapLock(lock: RecordLock): DriverLock {
    const locks = this.#locks
    return {
      fencingToken: undefined,
      async tryAcquire() {
        const got = await lock.tryAcquire()
        if (got) locks.add(lock)
        return got
      },
      async release() {
        locks.delete(lock)
        return lock.release()
      },
      refresh: () => lock.isStillOwner(),
      isStillOwner: () => lock.isStillOwner(),
      break: () => lock.break(),
    }
  }

  /** The names in a group's directory (GroupNotFoundError when there is none). */
  async #entries(group: string): Promise<string[]> {
    try {
      return await readdir(this.#groupDir(group))
    } catch (err) {
      if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') throw new GroupNotFoundError(group)
      throw err
    }
  }

  #locked<T>(fn: () => Promise<T>): Promise<T> {
    return withFileLock(this.#driverLock, DRIVER_LOCK_WAIT_MS, fn)
  }

  #groupDir(group: string): string {
    return join(this.#groupsDir, safeName(group))
  }

  #memberPath(group: string, member = this.#ctx.memberId): string {
    return join(this.#groupDir(group), member === this.#ctx.memberId ? this.#ownFile : `${safeName(member)}.raw`)
  }

  #leaderPath(group: string): string {
    return join(this.#dir, '.leaders', safeName(group))
  }

  #isAlive(mtimeMs: number, nowMs: number): boolean {
    const ageMs = nowMs - mtimeMs
    return ageMs >= -FUTURE_SLACK_MS && ageMs <= this.#timeoutMs
  }

  /** Deletes another member's `.raw` whose mtime is older than the timeout; true when it is not alive. */
  async #collectIfStale(path: string, entry: string): Promise<boolean> {
    const s = await statIfExists(path)
    if (!s) return true
    if (this.#isAlive(s.mtimeMs, Date.now())) return false
    if (entry !== this.#ownFile) {
      await unlink(path).catch((err: unknown) => {
        if (!isMissing(err)) throw err
      })
    }
    return true
  }

  /** One live member's record and file times (GroupNotFoundError, MemberNotJoinedError, SerializationError). */
  async #memberEntry(group: string, member: string): Promise<{ record: MemberRecord; birthtimeMs: number; mtimeMs: number }> {
    const path = this.#memberPath(group, member)
    return this.#locked(async () => {
      let bytes: Buffer
      let s: Stats
      try {
        ;[s, bytes] = await Promise.all([stat(path), readFile(path)])
      } catch (err) {
        if (!isMissing(err)) throw err
        if (!(await exists(this.#groupDir(group)))) throw new GroupNotFoundError(group)
        throw new MemberNotJoinedError(group, member)
      }
      if (!this.#isAlive(s.mtimeMs, Date.now())) throw new MemberNotJoinedError(group, member)
      let record: MemberRecord
      try {
        record = decodeMemberRecord(bytes)
      } catch (err) {
        throw new SerializationError(`The record of member ${JSON.stringify(member)} in group ${JSON.stringify(group)} (${path}) is unreadable: ${(err as Error).message}`, { cause: err, driver: 'file' })
      }
      return { record, birthtimeMs: s.birthtimeMs, mtimeMs: s.mtimeMs }
    })
  }

  /** A member's id and capabilities (or a SerializationError when only its id is readable); undefined when skipped. */
  async #readEntry(path: string): Promise<[string, Uint8Array | SerializationError] | undefined> {
    const bytes = await readFile(path).catch((err: unknown) => {
      if (isMissing(err)) return undefined
      throw err
    })
    if (!bytes) return undefined
    try {
      const record = decodeMemberRecord(bytes)
      return [record.memberId, record.capabilities]
    } catch (err) {
      const message = `Member record ${path} is unreadable (${(err as Error).message})`
      if (err instanceof CorruptRecordError && err.memberId !== undefined) return [err.memberId, new SerializationError(message, { cause: err, driver: 'file' })]
      await this.#warnCorrupt(path, `${message}; its member id is unknown, so it is not listed`, err)
      return undefined
    }
  }

  async #warnCorrupt(path: string, message: string, cause: unknown): Promise<void> {
    const s = await stat(path).catch(() => undefined)
    const key = `${path}:${s?.ino}:${s?.size}`
    if (this.#warned.has(key)) return
    if (this.#warned.size > 1_000) this.#warned.clear()
    this.#warned.add(key)
    this.#ctx.events.warning(new SerializationError(message, { cause, driver: 'file' }))
  }

  /** Writes `DIR/tmp/<random>` and renames it over `path`: readers see the old file or the new one. */
  async #writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
    const tmp = join(this.#tmpDir, `tmp${randomBytes(6).toString('hex')}rollcall`)
    try {
      await writeFile(tmp, bytes, { flag: 'wx' })
      await rename(tmp, path)
    } catch (err) {
      await unlink(tmp).catch(() => {})
      throw err
    }
  }
}

async function statIfExists(path: string): Promise<Stats | undefined> {
  return stat(path).catch((err: unknown) => {
    if (isMissing(err)) return undefined
    throw err
  })
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, (err: unknown) => {
    if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return false
    throw err
  })
}

export default defineDriver({
  name: 'file',
  summary: 'A local directory, laid out as Python tooz\'s file driver lays it out: groups, members with capabilities, and locks shared by the processes of one host, Python tooz ones included.',
  urlForms: ['file:///var/lib/rollcall', 'file:///var/lib/rollcall?timeout=10'],
  consistency: 'One host. Every membership read and write happens under DIR/.driver_lock, so reads are consistent. A member is alive while its .raw file was touched within `timeout` seconds; expiry is noticed by polling. Locks are kernel record locks, released when their holder exits.',
  hazards: [
    'Local directories only: on a network file system, record locks and mtimes are only as reliable as the server.',
    'Locks exclude Python tooz\'s locks on Linux only (F_OFD_SETLK record locks conflict with fcntl.lockf); on macOS fs-native-extensions falls back to flock, which Python\'s locks ignore.',
    'Stale .raw files of other members (older than timeout) are deleted by listings and deleteGroup(), unlike tooz: a tooz process paused for longer than timeout leaves its groups for good.',
    'break() unlinks the lock file; a tooz process already waiting on the old file may take it while a new holder holds the new one.',
    'Ids are written as bytes (encoded: False), as tooz documents them; a tooz program using str ids reads rollcall\'s ids back as bytes.',
  ],
  clientPackage: 'fs-native-extensions',
  capabilities: ['groups', 'updateCapabilities', 'memberInfo', 'memberExpiry', 'leaderElection', 'getLeader', 'locks', 'acrossProcesses'],
  options: OPTIONS,
  validateId,
  translateError(err) {
    const e = err as NodeJS.ErrnoException
    if (typeof e?.code !== 'string' || typeof e.syscall !== 'string') return undefined
    const retryable = ['ESTALE', 'EIO', 'EAGAIN', 'EBUSY', 'ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE'].includes(e.code)
    return new BackendError(`The file backend failed: ${e.message}`, { cause: err, driver: 'file', retryable })
  },
  create(ctx) {
    return new FileDriver(ctx, directoryOf(ctx.url))
  },
})
