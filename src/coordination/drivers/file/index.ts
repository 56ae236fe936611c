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
 * - `DIR/.leaders/<sha1 g>`: rollcall only, the leader lock of g with its holder's id inside;
 * - `DIR/.leaders/lock-waits/<sha1 lock name>` and `….wake`: rollcall only, the waiter registry
 *   and wake file of a contended lock (file-fair-lock.ts).
 *
 * Costs: inside `.driver_lock` the file calls are synchronous (a few microseconds each, where a
 * hop through libuv's thread pool costs more than the call; only the wait for the lock is
 * asynchronous), so a join is about ten system calls. Member ids live inside the records (file
 * names are hashes), so a listing must know every record: it keeps the decoded records of each
 * group it listed and, next time, reads only files that are new or changed (file-records.ts says how
 * a stat proves a file unchanged), so a listing of unchanged members is a readdir and one stat each.
 * getMemberInfo(): createdAt is `joined_on`; updatedAt is the birth time of the member's current
 * record (written at join and by each updateCapabilities; heartbeats only touch its mtime), or its
 * mtime where the file system records no birth time.
 *
 * Consistency and hazards (stale-file collection, Python lock compatibility, break(), ids as
 * bytes, the record cache) are declared in defineDriver below, from which docs/drivers.md is made.
 */
import { readdirSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  BackendError,
  ConnectionError,
  GroupExistsError,
  GroupNotEmptyError,
  GroupNotFoundError,
  MemberExistsError,
  MemberNotJoinedError,
  SerializationError,
} from '../../../errors.js'
import { defineDriver, type CoordinationDriver, type DriverContext, type DriverLock, type DriverMemberInfo, type HeartbeatResult } from '../../driver.js'
import { opt, type ResolvedOptions } from '../../config/options.js'
import { CorruptRecordError, decodeGroupMetadata, decodeMemberRecord, encodeGroupMetadata, encodeMemberRecord, safeName } from './file-format.js'
import { FileLeaderLock, leaderRetryInMs, readLeader, removeFreeLeaderFile } from './file-leader.js'
import { directoryOf, fileIdProblem, makeDirectory, normalizeLockName, writeAtomically } from './file-paths.js'
import { utf8Ids } from '../kit/ids.js'
import { FairFileLock } from './file-fair-lock.js'
import { asDriverLock, RecordLock, withFileLock } from './file-lock.js'
import { nativeLocks } from './record-locks.js'
import { closeIdleWakeWatches } from './file-wake.js'
import { exists, isMissing, MemberRecords, statIfExists, type CachedRecord, type LiveFile, type MemberEntry } from './file-records.js'

const OPTIONS = {
  timeoutMs: opt.seconds('timeout', {
    default: 10,
    doc: 'Liveness window: a member whose .raw file was not touched for this long is gone. Also the interval the heartbeat returns (the coordinator beats '
      + 'at half of it).',
  }),
  executor: opt.string('executor', { ignored: true, doc: "tooz's executor choice (threaded or sync)." }),
}

type ResolvedFileOptions = ResolvedOptions<typeof OPTIONS>

/** Longest wait for `.driver_lock`, which tooz and rollcall hold only for one short operation. */
const DRIVER_LOCK_WAIT_MS = 10_000

class FileDriver implements CoordinationDriver {
  readonly #ctx: DriverContext<ResolvedFileOptions>
  readonly #dir: string
  readonly #groupsDir: string
  readonly #tmpDir: string
  readonly #driverLock: string
  readonly #ownFile: string
  readonly #timeoutMs: number
  readonly #locks = new Set<RecordLock>()
  /** What named locks share: held record locks, locks with a wait registration or a sidecar descriptor open, and whether the driver stopped. */
  readonly #fairHost = { held: this.#locks, active: new Set<FairFileLock>(), stopped: false }
  /** Corrupt files already reported (path, inode and size), so a poll does not warn every time. */
  readonly #warned = new Set<string>()
  /** Member files: liveness, and their records read through a cache. */
  readonly #records: MemberRecords

  constructor(ctx: DriverContext<ResolvedFileOptions>, dir: string) {
    this.#ctx = ctx
    this.#dir = dir
    this.#groupsDir = join(dir, 'groups')
    this.#tmpDir = join(dir, 'tmp')
    this.#driverLock = join(dir, '.driver_lock')
    this.#ownFile = `${safeName(ctx.memberId)}.raw`
    this.#timeoutMs = ctx.options.timeoutMs
    this.#records = new MemberRecords(this.#timeoutMs, this.#ownFile)
  }

  async start(): Promise<void> {
    nativeLocks()
    try {
      for (const d of [this.#dir, this.#groupsDir, this.#tmpDir]) makeDirectory(d)
      await writeFile(this.#driverLock, '', { flag: 'a' })
    } catch (err) {
      throw new ConnectionError(`Cannot use ${this.#dir} as a file:// backend: ${(err as Error).message}`, { cause: err })
    }
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.#locks].map((l) => l.close()))
    this.#locks.clear()
    this.#fairHost.stopped = true
    for (const lock of [...this.#fairHost.active]) lock.dispose()
    closeIdleWakeWatches()
    this.#records.clear()
  }

  /** Touches this member's `.raw` in every joined group; reports groups whose file vanished. */
  async heartbeat(joined: ReadonlyMap<string, Uint8Array>): Promise<HeartbeatResult> {
    const lostGroups: string[] = []
    if (joined.size > 0) {
      await this.#locked(() => {
        const now = new Date()
        for (const group of joined.keys()) {
          try {
            utimesSync(this.#memberPath(group), now, now)
          } catch (err) {
            if (!isMissing(err)) throw err
            lostGroups.push(group)
          }
        }
      })
    }
    return { nextBeatMs: this.#timeoutMs, lostGroups, locks: { refreshed: false } }
  }

  async createGroup(group: string): Promise<void> {
    const dir = this.#groupDir(group)
    await this.#locked(() => {
      // tooz rewrites an existing .metadata here; rollcall leaves it, so a tooz writer's `encoded` flag stays.
      if (exists(join(dir, '.metadata'))) throw new GroupExistsError(group)
      makeDirectory(dir)
      writeAtomically(this.#tmpDir, join(dir, '.metadata'), encodeGroupMetadata(group))
    })
  }

  async deleteGroup(group: string): Promise<void> {
    const dir = this.#groupDir(group)
    await this.#locked(() => {
      const left: string[] = []
      for (const entry of this.#entries(group)) {
        if (entry === '.metadata') continue
        if (entry.endsWith('.raw') && this.#records.collectIfStale(join(dir, entry), entry)) continue
        left.push(entry)
      }
      if (left.some((e) => e.endsWith('.raw'))) throw new GroupNotEmptyError(group)
      if (left.length > 0) {
        throw new BackendError(
          `Cannot delete group ${JSON.stringify(group)}: unexpected ${
            left.map((e) => JSON.stringify(e)).join(', ')
          } in ${dir}, which should hold only .metadata and member files`,
        )
      }
      rmSync(dir, { recursive: true, force: true })
      this.#records.forget(dir)
    })
    // The group's leader lock file goes too, when nobody holds it.
    await removeFreeLeaderFile(this.#leaderPath(group))
  }

  async listGroups(): Promise<string[]> {
    // Not under .driver_lock (tooz takes none here either); synchronous all the same, being local.
    const groups: string[] = []
    for (const entry of readdirSync(this.#groupsDir)) {
      const path = join(this.#groupsDir, entry, '.metadata')
      let bytes: Buffer
      try {
        bytes = readFileSync(path)
      } catch (err) {
        if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') continue
        throw err
      }
      try {
        groups.push(decodeGroupMetadata(bytes))
      } catch (err) {
        const s = statSync(path, { throwIfNoEntry: false })
        this.#warnCorrupt(`${path}:${s?.ino}:${s?.size}`, `Group metadata ${path} is unreadable (${(err as Error).message}); that group is not listed`, err)
      }
    }
    return groups
  }

  async joinGroup(group: string, capabilities: Uint8Array): Promise<void> {
    await this.#locked(() => {
      if (!exists(join(this.#groupDir(group), '.metadata'))) throw new GroupNotFoundError(group)
      const path = this.#memberPath(group)
      const mtimeMs = statIfExists(path)?.mtimeMs
      // A stale file of ours is a dead earlier incarnation of this member id: replace it (tooz refuses).
      if (mtimeMs !== undefined && this.#records.isAlive(mtimeMs, Date.now())) throw new MemberExistsError(group, this.#ctx.memberId)
      writeAtomically(this.#tmpDir, path, encodeMemberRecord(this.#ctx.memberId, capabilities, new Date()))
    })
  }

  async leaveGroup(group: string): Promise<void> {
    await this.#locked(() => {
      if (!exists(join(this.#groupDir(group), '.metadata'))) throw new GroupNotFoundError(group)
      try {
        unlinkSync(this.#memberPath(group))
      } catch (err) {
        if (isMissing(err)) throw new MemberNotJoinedError(group, this.#ctx.memberId)
        throw err
      }
    })
  }

  async listMembers(group: string): Promise<Map<string, Uint8Array | SerializationError>> {
    const members = new Map<string, Uint8Array | SerializationError>()
    for (const { path, record } of await this.#liveFiles(group)) {
      const read = record.read
      if (!(read instanceof CorruptRecordError)) members.set(read.memberId, read.capabilities)
      else if (read.memberId !== undefined) {
        members.set(read.memberId, new SerializationError(`Member record ${path} is unreadable (${read.message})`, { cause: read }))
      } else this.#warnUnnamed(path, record, read)
    }
    return members
  }

  /** The same files as listMembers(), and the same cost: the ids are inside the records (file names are hashes). */
  async listMemberIds(group: string): Promise<string[]> {
    const ids = new Set<string>()
    for (const { path, record } of await this.#liveFiles(group)) {
      const read = record.read
      if (read.memberId !== undefined) ids.add(read.memberId)
      else if (read instanceof CorruptRecordError) this.#warnUnnamed(path, record, read)
    }
    return [...ids]
  }

  nextExpiryAt(group: string): number | undefined {
    return this.#records.firstExpiryAt(this.#groupDir(group))
  }

  async getMemberCapabilities(group: string, member: string): Promise<Uint8Array> {
    return (await this.#memberEntry(group, member)).record.capabilities
  }

  async updateCapabilities(group: string, capabilities: Uint8Array): Promise<void> {
    await this.#locked(() => {
      const path = this.#memberPath(group)
      let bytes: Buffer
      try {
        bytes = readFileSync(path)
      } catch (err) {
        if (!isMissing(err)) throw err
        if (!exists(this.#groupDir(group))) throw new GroupNotFoundError(group)
        throw new MemberNotJoinedError(group, this.#ctx.memberId)
      }
      let joinedOn: Date | Uint8Array = new Date()
      try {
        joinedOn = decodeMemberRecord(bytes).joinedOnRaw ?? joinedOn
      } catch {
        // Our own record is unreadable: rewrite it whole.
      }
      writeAtomically(this.#tmpDir, path, encodeMemberRecord(this.#ctx.memberId, capabilities, joinedOn))
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
    const path = normalizeLockName(name)
    return new FairFileLock(new RecordLock(join(this.#dir, path)), join(this.#dir, '.leaders', 'lock-waits', safeName(path)), this.#fairHost)
  }

  leaderLock(group: string): DriverLock {
    return { ...asDriverLock(new FileLeaderLock(this.#leaderPath(group), this.#ctx.memberId), this.#locks), nextChanceInMs: leaderRetryInMs }
  }

  async getLeader(group: string): Promise<string | null> {
    return readLeader(this.#leaderPath(group))
  }

  /** The names in a group's directory (GroupNotFoundError when there is none). */
  #entries(group: string): string[] {
    try {
      return readdirSync(this.#groupDir(group))
    } catch (err) {
      if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') throw new GroupNotFoundError(group)
      throw err
    }
  }

  /**
   * Runs `fn` under `.driver_lock`. The file calls inside are synchronous: each is a local metadata
   * operation of a few microseconds, cheaper than a hop through libuv's thread pool, and the member
   * files they read cannot change meanwhile, since every writer of them (tooz's too) holds the same
   * lock. Only the wait for the lock is asynchronous.
   */
  #locked<T>(fn: () => T | Promise<T>): Promise<T> {
    return withFileLock(this.#driverLock, DRIVER_LOCK_WAIT_MS, fn)
  }

  #groupDir(group: string): string {
    return join(this.#groupsDir, safeName(group))
  }

  #memberFile(member: string): string {
    return member === this.#ctx.memberId ? this.#ownFile : `${safeName(member)}.raw`
  }

  #memberPath(group: string, member = this.#ctx.memberId): string {
    return join(this.#groupDir(group), this.#memberFile(member))
  }

  #leaderPath(group: string): string {
    return join(this.#dir, '.leaders', safeName(group))
  }

  /** A group's live member files and their records, under the driver lock (MemberRecords.live()). */
  #liveFiles(group: string): Promise<LiveFile[]> {
    const dir = this.#groupDir(group)
    return this.#locked(async () => this.#records.live(dir, this.#entries(group)))
  }

  /** One live member's record and file times, under the driver lock (MemberRecords.entry()). */
  async #memberEntry(group: string, member: string): Promise<MemberEntry> {
    const dir = this.#groupDir(group)
    const name = this.#memberFile(member)
    return this.#locked(() => this.#records.entry(group, member, dir, name))
  }

  /** Warns (once per file version) about a listed record whose member id cannot be read. */
  #warnUnnamed(path: string, record: CachedRecord, err: CorruptRecordError): void {
    const message = `Member record ${path} is unreadable (${err.message}); its member id is unknown, so it is not listed`
    this.#warnCorrupt(`${path}:${record.ino}:${record.size}`, message, err)
  }

  #warnCorrupt(key: string, message: string, cause: unknown): void {
    if (this.#warned.has(key)) return
    if (this.#warned.size > 1_000) this.#warned.clear()
    this.#warned.add(key)
    this.#ctx.events.warning(new SerializationError(message, { cause }))
  }
}

export default defineDriver({
  name: 'file',
  summary: "A local directory, laid out as Python tooz's file driver lays it out: groups, members with capabilities, and locks shared by the processes of one "
    + 'host, Python tooz ones included.',
  urlForms: ['file:///var/lib/rollcall', 'file:///var/lib/rollcall?timeout=10'],
  consistency: 'One host. Every membership read and write happens under DIR/.driver_lock, so reads are consistent. A member is alive while its .raw file was '
    + 'touched within `timeout` seconds; expiry is noticed by polling. Locks are kernel record locks, released when their holder exits. Rollcall waiters '
    + 'register beside the lock (DIR/.leaders/lock-waits/) and are woken by a rollcall release through a watched wake file, polling as a fallback; a '
    + 'holder gets turns of up to 32 acquisitions in 100 ms, then hands over to the waiter next in line.',
  hazards: [
    'Local directories only: on a network file system, record locks and mtimes are only as reliable as the server.',
    "Locks exclude Python tooz's locks on Linux only (F_OFD_SETLK record locks conflict with fcntl.lockf); on macOS fs-native-extensions falls back to "
    + "flock, which Python's locks ignore.",
    'Stale .raw files of other members (older than timeout) are deleted by listings and deleteGroup(), unlike tooz: a tooz process paused for longer '
    + 'than timeout leaves its groups for good.',
    'break() unlinks the lock file; a tooz process already waiting on the old file may take it while a new holder holds the new one.',
    'Wake-ups and turns are among rollcall processes only: a Python process ignores them and may take a free lock ahead of rollcall waiters, and a '
    + 'rollcall waiter behind a Python holder gets the lock at its next poll (at most about 375 ms). A registered rollcall waiter that is stopped or hung '
    + 'makes a releaser whose turn ended decline the free lock for at most 50 ms (then no more for a second).',
    "Ids are written as bytes (encoded: False), as tooz documents them; a tooz program using str ids reads rollcall's ids back as bytes.",
    'Listings cache decoded member records (keyed by inode, size and birth time): a tool that rewrites a member file in place, followed by a rollcall '
    + 'heartbeat before the next listing, goes unseen until the file is replaced (tooz and rollcall always replace files, never rewrite them).',
    'Calls inside the driver lock use synchronous file-system calls (they are short and the lock is held anyway): on a hung network mount they would '
    + 'block the event loop.',
  ],
  clientPackage: 'fs-native-extensions',
  capabilities: [
    'groups',
    'updateCapabilities',
    'memberInfo',
    'memberExpiry',
    'expiryWake',
    'leaderElection',
    'electionWake',
    'getLeader',
    'locks',
    'sharedLocks',
    'acrossProcesses',
  ],
  options: OPTIONS,
  validateId: utf8Ids(fileIdProblem),
  translateError(err) {
    const e = err as NodeJS.ErrnoException
    if (typeof e?.code !== 'string' || typeof e.syscall !== 'string') return undefined
    const retryable = ['ESTALE', 'EIO', 'EAGAIN', 'EBUSY', 'ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE'].includes(e.code)
    return new BackendError(`The file backend failed: ${e.message}`, { cause: err, retryable })
  },
  create(ctx) {
    return new FileDriver(ctx, directoryOf(ctx.url))
  },
})
