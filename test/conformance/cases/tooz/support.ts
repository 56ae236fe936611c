/**
 * What the ports of tooz's own tests share. A tooz coordinator maps onto
 * `connect(url, { heartbeat: false, autoWatch: false })` (tooz's start(): no heart, and
 * run_watchers() as the only pump), `.get()` onto await, and tooz's exceptions onto the error
 * classes named by their `toozName`; nothing else is adapted (docs/api.md lists the rest).
 */
import { execFile } from 'node:child_process'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import type { ConnectOptions, Coordinator, MemberEvent } from '../../../../src/index.js'
import type { Harness } from '../../harness.js'

/** A started coordinator as tooz's tests make one (get_coordinator + start()). */
export function toozCoordinator(h: Harness, t: TestContext, options: ConnectOptions & { fast?: boolean } = {}): Promise<Coordinator> {
  return h.open(t, { heartbeat: false, autoWatch: false, ...options })
}

/** tooz's TestAPI._set_event: records the event, returns 42. */
export function eventRecorder(): { events: MemberEvent[]; cb: (e: MemberEvent) => number } {
  const events: MemberEvent[] = []
  return { events, cb: (e) => (events.push(e), 42) }
}

/** tooz's `while True: if run_watchers(): break`, bounded. */
export async function runWatchersUntilSomething(c: Coordinator, ms: number): Promise<unknown[]> {
  const deadline = Date.now() + ms
  for (;;) {
    const results = await c.runWatchers()
    if (results.length > 0) return results
    if (Date.now() > deadline) throw new Error(`runWatchers() returned nothing for ${ms} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** tooz's try_to_lock_job in another process: true when it got the lock without waiting. */
export async function tryLockInProcess(url: string, name: string, shared = false): Promise<boolean> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'test/support/lock-process.ts', url, name, ...(shared ? ['shared'] : [])],
    { timeout: 30_000 },
  )
  return stdout.trim() === 'true'
}
