/**
 * The waiter registry of one contended file lock, as one lock object uses it (file-fair-lock.ts
 * says what for): the sidecar `DIR/.leaders/lock-waits/<sha1 name>`, rollcall only.
 *
 * - Byte 0 is the registration: each waiting lock object holds an OFD read lock on it, through
 *   its own descriptor, so the kernel drops it with the descriptor or the process. A write lock
 *   on it fails while anyone else holds a registration; through a registered descriptor the write
 *   lock is a conversion, which ignores that descriptor's own read lock.
 * - Bytes 8–19 are three little-endian uint32 fields: turns started and the highest ticket served
 *   (written only by a holder of the lock, so a read then a write races only between readers
 *   holding together, where a lost increment still changes the counter), and
 *   the last ticket drawn (read then written unlocked: two waiters may draw the same ticket, which
 *   costs order, nothing else).
 *
 * The descriptor is opened when first needed (created only by a waiter: no file means no waiter
 * ever, so a lock never contended gets no sidecar) and kept for {@link LINGER_MS} after its last
 * use. Every call is best effort: a failure reads as "nobody waits" or a lost write, which costs
 * fairness or a poll, never exclusion.
 */
import { closeSync, constants, readSync, writeSync } from 'node:fs'
import { openMakingDirs } from './file-lock.js'
import { nativeLocks } from './record-locks.js'

/** How long an idle registry descriptor stays open. */
const LINGER_MS = 1_000

const REGISTRATION_BYTE = 0
const TURNS_FIELD = 8
const TICKETS_FIELD = 12
const SERVED_FIELD = 16

/** Read-write (read locks need read access, write locks write access), never blocking on a FIFO. */
const FLAGS = constants.O_RDWR | constants.O_NONBLOCK

/** What a registry reports to its lock object, and asks of it. */
export interface RegistryOwner {
  /** The driver stopped: open nothing more. */
  readonly stopped: () => boolean
  /** The descriptor opened (true) or closed (false). */
  readonly opened: (isOpen: boolean) => void
  /** True while the lock object holds the lock or waits: the descriptor then stays open. */
  readonly busy: () => boolean
}

/** One lock object's view of the registry of one lock. */
export class WaitRegistry {
  readonly #path: string
  readonly #owner: RegistryOwner
  #fd: number | undefined
  #registered = false
  /** This registration's place in line. */
  #ticket: number | undefined
  #lastUsedAt = 0
  #linger: NodeJS.Timeout | undefined
  readonly #field = Buffer.alloc(4)

  constructor(path: string, owner: RegistryOwner) {
    this.#path = path
    this.#owner = owner
  }

  /** This object holds a registration. */
  get registered(): boolean {
    return this.#registered
  }

  /** Registers (creating the file if need be) and draws a ticket; true when newly registered. Fails while a releaser's check holds the byte. */
  register(): boolean {
    if (this.#registered) return false
    const fd = this.#open(true)
    try {
      this.#registered = fd !== undefined && nativeLocks().tryLock(fd, REGISTRATION_BYTE, 1, { shared: true })
    } catch {
      this.#registered = false
    }
    if (this.#registered) {
      this.#ticket = (this.#read(TICKETS_FIELD) + 1) >>> 0
      this.#write(TICKETS_FIELD, this.#ticket)
    }
    return this.#registered
  }

  /** Ends the registration, if any. */
  unregister(): void {
    if (this.#registered && this.#fd !== undefined) {
      try {
        nativeLocks().unlock(this.#fd, REGISTRATION_BYTE, 1)
      } catch {
        this.close()
      }
    }
    this.#registered = false
    this.#ticket = undefined
  }

  /** Whether a waiter other than this object is registered. */
  othersWaiting(): boolean {
    const fd = this.#open(false)
    if (fd === undefined) return false
    const locks = nativeLocks()
    try {
      if (!locks.tryLock(fd, REGISTRATION_BYTE, 1)) return true
      // Ours now: back to this object's read lock (a conversion, which cannot fail), or to nothing.
      if (this.#registered) locks.tryLock(fd, REGISTRATION_BYTE, 1, { shared: true })
      else locks.unlock(fd, REGISTRATION_BYTE, 1)
      return false
    } catch {
      return false
    }
  }

  /** How many turns have started (0 without a registry). */
  turns(): number {
    return this.#read(TURNS_FIELD)
  }

  /** Counts a turn start, and this registration's ticket as served. Only by a holder of the lock. */
  startTurn(): void {
    if (this.#open(false) === undefined) return
    this.#write(TURNS_FIELD, (this.#read(TURNS_FIELD) + 1) >>> 0)
    this.#markServed()
  }

  /** How many tickets lie between the last one served and this registration's; 0 or less (or no ticket): next in line. */
  rank(): number {
    return this.#ticket === undefined ? 0 : (this.#ticket - this.#read(SERVED_FIELD) - 1) | 0
  }

  /** A waiter next in line that gives up counts its ticket as served, so that the one behind it is next. */
  passOn(): void {
    if (this.#ticket !== undefined && this.rank() <= 0) this.#markServed()
  }

  /** Closes the descriptor once the owner has been idle for the linger. */
  idle(): void {
    if (this.#fd === undefined || this.#linger !== undefined) return
    const check = (): void => {
      this.#linger = undefined
      if (this.#fd === undefined) return
      const idleMs = performance.now() - this.#lastUsedAt
      if (this.#registered || this.#owner.busy() || idleMs < LINGER_MS) {
        this.#linger = setTimeout(check, Math.max(1, LINGER_MS - idleMs))
        this.#linger.unref()
      } else this.close()
    }
    this.#linger = setTimeout(check, LINGER_MS)
    this.#linger.unref()
  }

  /** Closes the descriptor now (which ends any registration). */
  close(): void {
    clearTimeout(this.#linger)
    this.#linger = undefined
    const fd = this.#fd
    this.#fd = undefined
    this.#registered = false
    this.#ticket = undefined
    if (fd === undefined) return
    this.#owner.opened(false)
    closeSync(fd)
  }

  #markServed(): void {
    if (this.#ticket !== undefined && ((this.#ticket - this.#read(SERVED_FIELD)) | 0) > 0) this.#write(SERVED_FIELD, this.#ticket)
  }

  #read(offset: number): number {
    const fd = this.#open(false)
    if (fd === undefined) return 0
    try {
      return readSync(fd, this.#field, 0, 4, offset) === 4 ? this.#field.readUInt32LE() : 0
    } catch {
      return 0
    }
  }

  #write(offset: number, value: number): void {
    const fd = this.#open(false)
    if (fd === undefined) return
    try {
      this.#field.writeUInt32LE(value >>> 0)
      writeSync(fd, this.#field, 0, 4, offset)
    } catch {
      // A lost write costs order or a yield's bound, nothing else.
    }
  }

  #open(create: boolean): number | undefined {
    this.#lastUsedAt = performance.now()
    if (this.#fd !== undefined) return this.#fd
    if (this.#owner.stopped()) return undefined
    try {
      this.#fd = openMakingDirs(this.#path, create ? FLAGS | constants.O_CREAT : FLAGS)
    } catch {
      return undefined
    }
    this.#owner.opened(true)
    return this.#fd
  }
}
