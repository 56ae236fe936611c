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
 * OFD locks belong to the open file description, not to the process: two descriptors opened in one
 * process exclude each other (classic POSIX locks would not, which is why tooz adds an in-process
 * barrier). The kernel drops the lock when the description's last descriptor closes, so a process
 * that dies never leaves a lock behind. Elsewhere than Linux (macOS) the package falls back to
 * flock: rollcall processes still exclude each other, Python processes no longer.
 */
import { createRequire } from 'node:module'
import { mkdir, open, stat, unlink, type FileHandle } from 'node:fs/promises'
import { dirname } from 'node:path'
import { DriverUnavailableError, OperationTimeoutError } from '../../errors.js'

/** The subset of fs-native-extensions used here. */
interface NativeLocks {
  /** Whole-file write lock without waiting; false when another description holds a conflicting lock. */
  tryLock(fd: number): boolean
  unlock(fd: number): void
}

let native: NativeLocks | undefined

/** Loads fs-native-extensions once; DriverUnavailableError when it is missing. */
export function nativeLocks(): NativeLocks {
  if (!native) {
    try {
      native = createRequire(import.meta.url)('fs-native-extensions') as NativeLocks
    } catch (err) {
      throw new DriverUnavailableError('file', 'fs-native-extensions', { cause: err })
    }
  }
  return native
}

/** Opens `path` as fasteners does (append mode, created if missing, parent directories too). */
async function openForLock(path: string): Promise<FileHandle> {
  try {
    return await open(path, 'a')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    await mkdir(dirname(path), { recursive: true })
    return open(path, 'a')
  }
}

/** True when `handle` is still the file at `path` (not unlinked or replaced since it was opened). */
async function isFileAt(handle: FileHandle, path: string): Promise<boolean> {
  const [mine, current] = await Promise.all([handle.stat(), stat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined
    throw err
  })])
  return current !== undefined && current.ino === mine.ino && current.dev === mine.dev
}

/**
 * One holder of a record lock on one path (a named lock, a leader lock). Not re-entrant. break()
 * unlinks the file; a holder then finds that its descriptor no longer names the path and is no
 * longer the owner, and every rollcall acquirer checks the same after locking, so two rollcall
 * processes never both hold a broken lock.
 */
export class RecordLock {
  readonly path: string
  #handle: FileHandle | undefined
  #busy = false

  constructor(path: string) {
    this.path = path
  }

  /** The descriptor while held (for the owner record of leader locks). */
  protected get handle(): FileHandle | undefined {
    return this.#handle
  }

  /** Takes the lock if it is free; never waits. */
  async tryAcquire(): Promise<boolean> {
    if (this.#handle || this.#busy) return false
    this.#busy = true
    try {
      // A retry only happens when the file was broken (unlinked) between our open and our lock.
      for (let attempt = 0; attempt < 5; attempt++) {
        const handle = await openForLock(this.path)
        let locked = false
        try {
          locked = nativeLocks().tryLock(handle.fd)
          if (locked && (await isFileAt(handle, this.path))) {
            this.#handle = handle
            return true
          }
        } catch (err) {
          await handle.close().catch(() => {})
          throw err
        }
        await handle.close()
        if (!locked) return false
      }
      return false
    } finally {
      this.#busy = false
    }
  }

  /** Releases (closing the descriptor drops the lock); false when not held, or broken meanwhile. */
  async release(): Promise<boolean> {
    const handle = this.#handle
    if (!handle) return false
    this.#handle = undefined
    try {
      const owned = await isFileAt(handle, this.path)
      if (owned) await this.beforeRelease(handle)
      return owned
    } finally {
      await handle.close()
    }
  }

  /** Hook run while still holding the lock, just before it is released. */
  protected async beforeRelease(_handle: FileHandle): Promise<void> {}

  /** True while held and the file at the path is still the one locked. */
  async isStillOwner(): Promise<boolean> {
    return this.#handle !== undefined && isFileAt(this.#handle, this.path)
  }

  /** Unlinks the lock file, whoever holds it; false when there was none. */
  async break(): Promise<boolean> {
    try {
      await unlink(this.path)
      return true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false
      throw err
    }
  }

  /** Drops the lock without the ownership check (driver stop). */
  async close(): Promise<void> {
    const handle = this.#handle
    this.#handle = undefined
    await handle?.close()
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
 * before failing with OperationTimeoutError. The file is opened per use, as fasteners does.
 */
export async function withFileLock<T>(path: string, maxWaitMs: number, fn: () => Promise<T>): Promise<T> {
  const previous = queues.get(path) ?? Promise.resolve()
  let done!: () => void
  const mine = new Promise<void>((resolve) => (done = resolve))
  const tail = previous.then(() => mine)
  queues.set(path, tail)
  await previous
  try {
    const handle = await openForLock(path)
    try {
      const deadline = Date.now() + maxWaitMs
      for (let delay = POLL_FIRST_MS; !nativeLocks().tryLock(handle.fd); delay = Math.min(delay * 2, POLL_MAX_MS)) {
        if (Date.now() >= deadline) {
          throw new OperationTimeoutError(`Could not take ${path} within ${maxWaitMs} ms: another process holds it`, { driver: 'file' })
        }
        await pause(delay)
      }
      return await fn()
    } finally {
      await handle.close()
    }
  } finally {
    done()
    if (queues.get(path) === tail) queues.delete(path)
  }
}
