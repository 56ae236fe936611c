/**
 * Record locks on files that exclude Python tooz's file locks.
 *
 * tooz's file driver locks with fasteners' InterProcessLock, that is `fcntl.lockf(fd,
 * LOCK_EX | LOCK_NB)`: a classic POSIX record lock (F_SETLK, write, whole file) on a file opened
 * in append mode. Node has no fcntl, and `flock`-based packages would not do: on Linux flock
 * locks and record locks ignore each other. `fs-native-extensions`' tryLock(fd) takes an
 * F_OFD_SETLK write lock on the whole file. On Linux, open-file-description (OFD) locks and classic
 * POSIX locks are the same record locks and conflict with each other, so a lock held here excludes
 * Python's, and the reverse.
 *
 * Shared (reader) locks are F_OFD_SETLK read locks on the same file: readers in any process hold
 * together and exclude writers. tooz's own file driver shares only within one process (fasteners'
 * ReaderWriterLock); across processes its "shared" lock is the same exclusive lockf as above, so
 * a Python holder of either kind excludes rollcall readers and writers, and rollcall readers
 * exclude a Python taker of either kind.
 *
 * OFD locks belong to the open file description, not to the process: two descriptors opened in one
 * process exclude each other (classic POSIX locks would not, which is why tooz adds an in-process
 * barrier). The kernel drops the lock when the description's last descriptor closes, so a process
 * that dies never leaves a lock behind. Elsewhere than Linux (macOS) the package falls back to
 * flock: rollcall processes still exclude each other, Python processes no longer. On Bun, which
 * aborts when fs-native-extensions reports a busy lock, record-locks.ts makes the same fcntl
 * calls through bun:ffi.
 *
 * The file calls here are synchronous: open, fstat, stat, ftruncate and close of a local file take
 * a few microseconds, less than a hop through libuv's thread pool, and none of them waits for
 * another process (the lock itself is only ever tried, never waited for in the kernel). Lock files
 * are opened with O_NONBLOCK, so that a FIFO planted at a lock path fails instead of blocking the
 * event loop; on regular files the flag does nothing.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs'
import { dirname } from 'node:path'
import { OperationTimeoutError } from '../../../errors.js'
import type { DriverLock } from '../../driver.js'
import { nativeLocks } from './record-locks.js'

/** fasteners' append mode (created if missing), without blocking on a FIFO. */
const LOCK_FILE_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK

/** A read lock needs a descriptor open for reading. */
const SHARED_LOCK_FILE_FLAGS = constants.O_RDONLY | constants.O_CREAT | constants.O_NONBLOCK

/** Opens `path` as fasteners does (append mode, created if missing, parent directories too); for reading when `shared`. */
function openForLock(path: string, shared = false): number {
  return openMakingDirs(path, shared ? SHARED_LOCK_FILE_FLAGS : LOCK_FILE_FLAGS)
}

/** openSync(path, flags, 0o666); with O_CREAT, a missing parent directory is made first. */
export function openMakingDirs(path: string, flags: number): number {
  try {
    return openSync(path, flags, 0o666)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || (flags & constants.O_CREAT) === 0) throw err
    mkdirSync(dirname(path), { recursive: true })
    return openSync(path, flags, 0o666)
  }
}

/** Closes a descriptor after a failure, keeping the first error. */
function closeQuietly(fd: number): void {
  try {
    closeSync(fd)
  } catch {
    // The original error matters more.
  }
}

/** Which file a descriptor names; fixed for the descriptor's life, so taken once. */
interface FileId {
  readonly ino: number
  readonly dev: number
}

/** True when the file at `path` is still `file` (not unlinked or replaced since it was opened). */
function isFileAt(file: FileId, path: string): boolean {
  const current = statSync(path, { throwIfNoEntry: false })
  return current !== undefined && current.ino === file.ino && current.dev === file.dev
}

/**
 * One holder of a record lock on one path (a named lock, a leader lock). Not re-entrant. break()
 * unlinks the file; a holder then finds that its descriptor no longer names the path and is no
 * longer the owner, and every rollcall acquirer checks the same after locking, so two rollcall
 * processes never both hold a broken lock. Each method runs to its end without yielding, so calls
 * on one object cannot interleave.
 */
export class RecordLock {
  readonly path: string
  /** The descriptor holding the lock and the file it names, while held. */
  #held: (FileId & { readonly fd: number }) | undefined

  constructor(path: string) {
    this.path = path
  }

  /** Takes the lock if it is free (in shared mode: if no writer holds it); never waits. */
  async tryAcquire(shared = false): Promise<boolean> {
    if (this.#held) return false
    // A retry only happens when the file was broken (unlinked) between our open and our lock.
    for (let attempt = 0; attempt < 5; attempt++) {
      const fd = openForLock(this.path, shared)
      let locked = false
      try {
        locked = nativeLocks().tryLock(fd, { shared })
        if (locked) {
          const { ino, dev } = fstatSync(fd)
          if (isFileAt({ ino, dev }, this.path)) {
            this.afterAcquire(fd)
            this.#held = { fd, ino, dev }
            return true
          }
        }
      } catch (err) {
        closeQuietly(fd)
        throw err
      }
      closeSync(fd)
      if (!locked) return false
    }
    return false
  }

  /** Releases (closing the descriptor drops the lock); false when not held, or broken meanwhile. */
  async release(): Promise<boolean> {
    const held = this.#held
    if (!held) return false
    this.#held = undefined
    try {
      const owned = isFileAt(held, this.path)
      if (owned) this.beforeRelease(held.fd)
      return owned
    } finally {
      closeSync(held.fd)
    }
  }

  /** Hook run as soon as the lock is taken; if it throws, the lock is dropped and the error raised. */
  protected afterAcquire(_fd: number): void {}

  /** Hook run while still holding the lock, just before it is released. */
  protected beforeRelease(_fd: number): void {}

  /** True while held and the file at the path is still the one locked. */
  async isStillOwner(): Promise<boolean> {
    return this.#held !== undefined && isFileAt(this.#held, this.path)
  }

  /** Unlinks the lock file, whoever holds it; false when there was none. */
  async break(): Promise<boolean> {
    try {
      unlinkSync(this.path)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
      throw err
    }
  }

  /** Drops the lock without the ownership check (driver stop). */
  async close(): Promise<void> {
    const held = this.#held
    this.#held = undefined
    if (held) closeSync(held.fd)
  }
}

/**
 * A delay whose timer is *not* unref'd: while a file operation waits, nothing else may keep the
 * process alive (the file backend has no socket), and an unref'd wait would let Node exit with an
 * unsettled await.
 */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** In-process queues per path, so that coordinators of one process wait their turn without polling. */
const queues = new Map<string, Promise<void>>()

const POLL_FIRST_MS = 1
const POLL_MAX_MS = 50

/**
 * Runs `fn` holding the record lock on `path` (tooz's `.driver_lock`), as tooz's `_lock_me` does.
 * Waits in an in-process queue, then polls the lock (1 ms doubling to 50 ms) for at most `maxWaitMs`
 * before failing with OperationTimeoutError. The file is opened per use, as fasteners does. Only
 * the wait is asynchronous; `fn` may be synchronous, and the driver's are (its file calls are short
 * and local, and no other process can change the files it reads while the lock is held).
 */
export async function withFileLock<T>(path: string, maxWaitMs: number, fn: () => T | Promise<T>): Promise<T> {
  const previous = queues.get(path) ?? Promise.resolve()
  let done!: () => void
  const mine = new Promise<void>((resolve) => (done = resolve))
  const tail = previous.then(() => mine)
  queues.set(path, tail)
  await previous
  try {
    const fd = openForLock(path)
    try {
      const deadline = Date.now() + maxWaitMs
      for (let delay = POLL_FIRST_MS; !nativeLocks().tryLock(fd); delay = Math.min(delay * 2, POLL_MAX_MS)) {
        if (Date.now() >= deadline) {
          throw new OperationTimeoutError(`Could not take ${path} within ${maxWaitMs} ms: another process holds it`)
        }
        await pause(delay)
      }
      return await fn()
    } finally {
      closeSync(fd)
    }
  } finally {
    done()
    if (queues.get(path) === tail) queues.delete(path)
  }
}

/** Wraps a record lock as a DriverLock (leader locks; named locks are FairFileLocks), kept in `held` while held so that stop() closes it. */
export function asDriverLock(lock: RecordLock, held: Set<RecordLock>): DriverLock {
  return {
    fencingToken: undefined,
    // A candidate polls (runtime/election.ts); a leader lock is never a Lock's, whose waits would poll too.
    waiting: { kind: 'poll' },
    async tryAcquire() {
      const got = await lock.tryAcquire()
      if (got) held.add(lock)
      return got
    },
    async release() {
      held.delete(lock)
      return lock.release()
    },
    refresh: () => lock.isStillOwner(),
    isStillOwner: () => lock.isStillOwner(),
    break: () => lock.break(),
  }
}
