/**
 * Leader locks for the file driver (rollcall only: tooz's file driver has no election).
 *
 * The leader of group G is whoever holds the record lock on `DIR/.leaders/<sha1 G>`. The holder
 * writes its member id into that same file (msgpack `{'member_id': bin, 'encoded': false}`) right
 * after taking the lock, and empties it just before releasing; nobody else ever writes it.
 * getLeader() tries the lock itself: if it can take it, nobody leads (a crashed leader's stale
 * record is ignored because the kernel released its lock); if it cannot, the file names the
 * leader. A holder between locking and writing is waited for briefly. The file calls are synchronous,
 * as in file-lock.ts: short, local, and never waiting for another process.
 *
 * A leader that dies has its lock dropped by the kernel at once, with nothing to wait for: no lease
 * to count down, no event (the kernel's close raises no inotify event Node subscribes to), and a
 * blocking F_OFD_SETLKW would hold a libuv pool thread per candidate for as long as the leader
 * lives. A candidate therefore tries again every {@link LEADER_RETRY_MS} (`electionWake`): each try
 * is an open, a non-blocking lock and a close of a local file, a few microseconds.
 */
import { closeSync, constants, ftruncateSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { dumps, loads } from '../../codec/index.js'
import { pause, RecordLock } from './file-lock.js'
import { nativeLocks } from './record-locks.js'
import { exists } from './file-records.js'
import { strictUtf8 } from '../../../internal/unicode.js'

const utf8 = new TextEncoder()

/** How often a candidate tries a leader lock that another process holds. */
export const LEADER_RETRY_MS = 25

/** The leader lock's nextChanceInMs(): the holder may die at any moment, so soon. */
export async function leaderRetryInMs(): Promise<number> {
  return LEADER_RETRY_MS
}

/** How long getLeader waits for a new holder to write its record. */
const RECORD_WAIT_MS = 1_000

/** The leader lock of one group, held by this member. */
export class FileLeaderLock extends RecordLock {
  readonly #record: Uint8Array

  constructor(path: string, memberId: string) {
    super(path)
    this.#record = dumps({ member_id: utf8.encode(memberId), encoded: false })
  }

  protected override afterAcquire(fd: number): void {
    ftruncateSync(fd, 0)
    writeSync(fd, this.#record, 0, this.#record.length, 0)
  }

  protected override beforeRelease(fd: number): void {
    ftruncateSync(fd, 0)
  }
}

/** Read-write, without blocking on a FIFO (see file-lock.ts). */
const READ_FLAGS = constants.O_RDWR | constants.O_NONBLOCK

/** The member that holds the leader lock at `path`, or null when nobody does. */
export async function readLeader(path: string): Promise<string | null> {
  const deadline = Date.now() + RECORD_WAIT_MS
  for (;;) {
    let fd: number
    try {
      fd = openSync(path, READ_FLAGS)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
    try {
      // Taking it means nobody holds it; closing the descriptor below gives it straight back.
      if (nativeLocks().tryLock(fd)) return null
      const leader = parseRecord(readFileSync(fd))
      if (leader !== undefined || Date.now() >= deadline) return leader ?? null
    } finally {
      closeSync(fd)
    }
    await pause(5)
  }
}

function parseRecord(bytes: Uint8Array): string | undefined {
  try {
    const v = loads(bytes) as { member_id?: unknown } | null
    if (v?.member_id instanceof Uint8Array) return strictUtf8.decode(v.member_id)
    if (typeof v?.member_id === 'string') return v.member_id
  } catch {
    // Empty or half-written: the holder is between locking and writing.
  }
  return undefined
}

/** Deletes the leader lock file at `path` when it exists and nobody holds it. */
export async function removeFreeLeaderFile(path: string): Promise<void> {
  const leader = new RecordLock(path)
  if (exists(leader.path) && (await leader.tryAcquire().catch(() => false))) {
    try {
      unlinkSync(leader.path)
    } catch {
      // Gone already, or not ours to remove: either way nobody leads.
    }
    await leader.close()
  }
}
