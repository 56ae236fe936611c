/**
 * Wake files for file lock waiters (rollcall only): one `fs.watch` (inotify on Linux) per wake
 * file per process, shared by every waiting lock object of the process, and the write that fires
 * it. file-fair-lock.ts says who writes and when.
 *
 * A watch opens when the first waiter of the process listens and lingers {@link WAKE_LINGER_MS}
 * after the last one leaves, so that a lock contended in a loop does not open and close a watch
 * per wait; the linger timer is unref'd, and watches are not persistent, so neither keeps a process
 * alive. Nothing depends on an event arriving: a watch that fails to open (inotify limits), errors
 * or misses an event (the file replaced under it) costs the waiter one poll interval of lock.ts.
 */
import { closeSync, constants, type FSWatcher, openSync, watch, writeSync } from 'node:fs'

/** How long an unused watch stays open. */
const WAKE_LINGER_MS = 1_000

/** Opened for the wake write only: write-only, never created (no waiter made it: nobody to wake), never blocking on a FIFO. */
const WAKE_WRITE_FLAGS = constants.O_WRONLY | constants.O_NONBLOCK

const ONE_BYTE = new Uint8Array([0x31])

interface Watch {
  readonly watcher: FSWatcher
  /** Called on every event. */
  readonly listeners: Set<() => void>
  /** How many events the watch has seen: a waiter compares it before and after an attempt. */
  events: number
  linger: NodeJS.Timeout | undefined
}

const watches = new Map<string, Watch>()

/** A subscription to one wake file. */
export interface WakeSubscription {
  /** Events seen so far on the file (grows by one per event). */
  readonly events: () => number
  /** False once the watch closed (an error, or idle watches closed at a driver's stop): subscribe again. */
  readonly isOpen: () => boolean
  /** Ends the subscription; the watch closes after the linger when nobody else listens. */
  readonly close: () => void
}

/**
 * Calls `onWake` on every change of the wake file at `path` until the subscription is closed.
 * `create` makes the file if it is missing; it is called only when no watch of it is open yet.
 * Undefined when no watch can be opened (the waiter then only polls).
 */
export function subscribeWake(path: string, onWake: () => void, create: () => void): WakeSubscription | undefined {
  let w = watches.get(path)
  if (!w) {
    let watcher: FSWatcher
    try {
      create()
      watcher = watch(path, { persistent: false })
    } catch {
      return undefined
    }
    const entry: Watch = { watcher, listeners: new Set(), events: 0, linger: undefined }
    watcher.on('change', () => {
      entry.events += 1
      for (const listener of [...entry.listeners]) listener()
    })
    // An error (the file removed, the watch dropped) closes it; listeners fall back to polling, and the next waiter opens a new one.
    watcher.on('error', () => closeWatch(path, entry))
    watches.set(path, entry)
    w = entry
  }
  const entry = w
  clearTimeout(entry.linger)
  entry.linger = undefined
  entry.listeners.add(onWake)
  let open = true
  return {
    events: () => entry.events,
    isOpen: () => open && watches.get(path) === entry,
    close: () => {
      if (!open) return
      open = false
      entry.listeners.delete(onWake)
      if (entry.listeners.size > 0 || watches.get(path) !== entry) return
      entry.linger = setTimeout(() => {
        if (entry.listeners.size === 0) closeWatch(path, entry)
      }, WAKE_LINGER_MS)
      entry.linger.unref()
    },
  }
}

/** Closes every watch nobody listens to (a driver stopping), without waiting for the linger. */
export function closeIdleWakeWatches(): void {
  for (const [path, entry] of watches) if (entry.listeners.size === 0) closeWatch(path, entry)
}

/**
 * The wake files this process watches, lingering ones included: for tests, which check that the
 * count returns to zero. @internal
 */
export function watchedWakeFiles(): string[] {
  return [...watches.keys()]
}

/**
 * Fires every watch on the wake file at `path` (in every process): one byte written in place, an
 * inotify IN_MODIFY. Needs only write permission, unlike setting times. A missing file means no
 * waiter ever watched it; any other failure is ignored, as a lost wake-up only costs a poll.
 */
export function fireWake(path: string): void {
  let fd: number
  try {
    fd = openSync(path, WAKE_WRITE_FLAGS)
  } catch {
    return
  }
  try {
    writeSync(fd, ONE_BYTE, 0, 1, 0)
  } catch {
    // Nothing to do: the waiters poll.
  } finally {
    closeSync(fd)
  }
}

function closeWatch(path: string, entry: Watch): void {
  clearTimeout(entry.linger)
  entry.linger = undefined
  if (watches.get(path) === entry) watches.delete(path)
  entry.watcher.close()
  for (const listener of [...entry.listeners]) listener()
  entry.listeners.clear()
}
