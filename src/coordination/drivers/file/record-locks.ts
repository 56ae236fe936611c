/**
 * The file driver's record locks: fs-native-extensions on Node, and on Bun the same `fcntl(F_OFD_SETLK)` calls that
 * fs-native-extensions makes on Linux, made through `bun:ffi`.
 *
 * Why: fs-native-extensions reports a failed lock through libuv's `uv_translate_sys_error`, which
 * Bun does not implement; Bun aborts the process (SIGABRT) the first time a lock is contended, so
 * every file:// member on Bun died at its first busy lock. Node keeps using the package.
 *
 * Hazards: Linux on x86-64 and arm64 only (the `struct flock` layout and F_OFD_SETLK = 37 are those
 * of 64-bit Linux; elsewhere the driver is unavailable on Bun). errno is read right after the call
 * through glibc's `__errno_location`, so libc must be glibc, as the `@oven/bun-linux-*` builds
 * this targets are.
 */
import { createRequire } from 'node:module'
import { constants } from 'node:os'
import { DriverUnavailableError } from '../../../errors.js'

/** The part of `bun:ffi` used here (its types are not Node's). */
interface BunFfi {
  dlopen(path: string, symbols: Record<string, { args: string[]; returns: string }>): {
    symbols: { fcntl(fd: number, cmd: number, lock: Uint8Array): number; __errno_location(): number }
  }
  read: { i32(pointer: number, byteOffset: number): number }
}

/** fcntl(2) on 64-bit Linux: open-file-description record locks, and the lock types. */
const F_OFD_SETLK = 37
const F_RDLCK = 0
const F_WRLCK = 1
const F_UNLCK = 2
const SEEK_SET = 0

/** errno numbers by name, for the error codes Node's fs functions would use. */
const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]))

/** Record locks through bun:ffi; throws DriverUnavailableError where this Bun cannot make them. */
export function bunRecordLocks(): NativeLocks {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    throw new DriverUnavailableError('file', 'fs-native-extensions', {
      cause: new Error(`record locks on Bun are made through bun:ffi on 64-bit Linux only, not on ${process.platform}-${process.arch}`),
    })
  }
  let libc: ReturnType<BunFfi['dlopen']>
  let ffi: BunFfi
  try {
    // A variable specifier: Node's type declarations have no bun:ffi.
    const specifier = 'bun:ffi'
    ffi = createRequire(import.meta.url)(specifier) as BunFfi
    libc = ffi.dlopen('libc.so.6', { fcntl: { args: ['i32', 'i32', 'ptr'], returns: 'i32' }, __errno_location: { args: [], returns: 'ptr' } })
  } catch (err) {
    throw new DriverUnavailableError('file', 'fs-native-extensions', { cause: err })
  }
  // struct flock: short l_type, short l_whence, (pad), off_t l_start, off_t l_len, pid_t l_pid (0 for OFD locks), (pad).
  const flock = new Uint8Array(32)
  const view = new DataView(flock.buffer)
  /** One F_OFD_SETLK; true when done, false when another description holds a conflicting lock. */
  const setLock = (fd: number, type: number, offset: number, length: number): boolean => {
    flock.fill(0)
    view.setInt16(0, type, true)
    view.setInt16(2, SEEK_SET, true)
    view.setBigInt64(8, BigInt(offset), true)
    view.setBigInt64(16, BigInt(length), true)
    if (libc.symbols.fcntl(fd, F_OFD_SETLK, flock) === 0) return true
    const errno = ffi.read.i32(libc.symbols.__errno_location(), 0)
    if (errno === constants.errno.EAGAIN || errno === constants.errno.EACCES) return false
    const code = ERRNO_NAMES.get(errno) ?? `errno ${errno}`
    throw Object.assign(new Error(`${code}: fcntl(${fd}, F_OFD_SETLK) failed`), { code, errno: -errno, syscall: 'fcntl' })
  }
  return {
    tryLock(fd: number, a?: number | { shared?: boolean }, b?: number, c?: { shared?: boolean }): boolean {
      const [offset, length, options] = typeof a === 'object' || a === undefined ? [0, 0, a] : [a, b ?? 0, c]
      return setLock(fd, options?.shared ? F_RDLCK : F_WRLCK, offset, length)
    },
    unlock(fd: number, offset = 0, length = 0): void {
      setLock(fd, F_UNLCK, offset, length)
    },
  } as NativeLocks
}

/** The subset of fs-native-extensions used here. */
export interface NativeLocks {
  /** Whole-file write lock (read lock with `shared`) without waiting; false when another description holds a conflicting lock. */
  tryLock(fd: number, options?: { shared?: boolean }): boolean
  /** The same on `length` bytes from `offset` (a conversion when this description already locks them). */
  tryLock(fd: number, offset: number, length: number, options?: { shared?: boolean }): boolean
  unlock(fd: number, offset?: number, length?: number): void
}

let native: NativeLocks | undefined

/** Loads fs-native-extensions once (on Bun, the same calls through bun:ffi); DriverUnavailableError when it is missing. */
export function nativeLocks(): NativeLocks {
  if (!native && process.versions.bun !== undefined) native = bunRecordLocks()
  if (!native) {
    try {
      native = createRequire(import.meta.url)('fs-native-extensions') as NativeLocks
    } catch (err) {
      throw new DriverUnavailableError('file', 'fs-native-extensions', { cause: err })
    }
  }
  return native
}
