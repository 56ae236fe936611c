/**
 * The scripted in-process drivers of the runtime's unit tests: the memory driver, wrapped so that a
 * test injects faults (failing calls, lost groups, a beat's answer about the held locks) and
 * reports driver events itself (Faults.events), and `waits`, whose locks declare the wait model a
 * test picks and log the runtime's calls (ScriptedLock). It stands in for no backend; it tests the
 * runtime's rules (the conformance and fault suites run the real backends).
 */
import type { TestContext } from 'node:test'
import { connect, defineDriver, registerDriver, ConnectionError, type BeatLocks, type Coordinator, type CoordinationDriver, type DriverEvents, type DriverLock,
  type HeartbeatResult, type LockWaiting, type NotifyWaiting, type QueueWaiting } from '../../src/index.js'
import memory from '../../src/coordination/drivers/memory.js'
import { rid } from '../support/wait.js'

/** What a test scripts, and what the driver counts, per member id. */
export interface Faults {
  failBeats: boolean
  lostGroups: string[]
  nextBeatMs: number
  events?: DriverEvents
  /**
   * Leader locks as the SQL drivers have them: acquireWaiting() refuses at once while the lock is
   * still held, and release() takes a round trip (here a timer). Counts acquireWaiting() calls.
   */
  sqlLikeLeader?: { waits: number }
  /** With sqlLikeLeader: the release's answer arrives this long after the lock is let go (default 0). */
  lateReleaseAnswerMs?: number
  /** With sqlLikeLeader: the state of the last leader lock made. */
  leader?: { held: boolean; claiming: boolean }
  /** What a beat says it did with the held locks (default `{ refreshed: false }`). */
  beatLocks?: (held: ReadonlySet<DriverLock>) => BeatLocks
  /** Heartbeats fail (every other call still works). */
  failHeartbeat?: boolean
  /** While set, joinGroup() waits for it before joining (a join sent to a server that is cut off). */
  holdJoins?: Promise<void>
  /**
   * While set, a beat waits for it, then answers if it resolves true and fails if false (a beat
   * sent on a connection that is replaced while it is in flight); `heldBeats` counts the beats held.
   */
  holdBeats?: Promise<boolean>
  heldBeats?: number
  /** While set, a lock's release() waits for it before it gets to the backend (a release whose connection is slow to come back). */
  holdReleases?: Promise<void>
  /** While set, a lock's tryAcquire() answers only once it resolves, after the backend granted it (a grant whose answer is slow). */
  holdAcquired?: Promise<void>
  /** updateCapabilities() calls that reached the backend. */
  capabilityUpdates?: number
  /** Beats answered, and refresh() calls on this member's locks. */
  beats?: number
  refreshes?: number
  /** Each beat and each refresh() answers this long after it was called (default: at once). */
  answerMs?: number
  /** refresh() calls not yet answered. */
  refreshesInFlight?: number
  /** Beats called while a refresh() was in flight, and beats called while none was. */
  beatsBesideRefresh?: number
  beatsAlone?: number
}
/** The scripts, by member id. */
export const faults = new Map<string, Faults>()

/** Resolves after `ms` (at once when 0 or undefined: no timer). */
function pause(ms: number | undefined): Promise<void> {
  return ms ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve()
}

/** A leader lock that refuses to wait while it holds and releases a round trip later (see Faults.sqlLikeLeader). */
function sqlLikeLeader(inner: DriverLock, counts: { waits: number }, f: Faults): DriverLock {
  const state: { held: boolean; claiming: boolean } = { held: false, claiming: false }
  f.leader = state
  let held = false
  const innerWaiting = inner.waiting
  return {
    get fencingToken() {
      return inner.fencingToken
    },
    tryAcquire: async () => !held && (held = await inner.tryAcquire()),
    waiting: {
      kind: 'queue',
      acquireWaiting: async (signal, mode) => {
        counts.waits += 1
        // A spinning caller is stopped here, so that the test fails instead of hanging.
        if (counts.waits > 10_000) throw new ConnectionError('acquireWaiting() called 10,000 times')
        if (held) return false
        if (innerWaiting.kind !== 'queue' || !(await innerWaiting.acquireWaiting(signal, mode))) return false
        held = state.held = state.claiming = true
        // Held before acquisition is reported: the SQL leader lock writes its leaders row meanwhile.
        await pause(30)
        state.claiming = false
        return true
      },
    },
    // Whatever is held when the release gets to it is let go (the SQL leader lock clears its
    // leaders row first); the answer may come later.
    release: async () => {
      await pause(20)
      held = state.held = false
      const released = await inner.release()
      await pause(f.lateReleaseAnswerMs ?? 0)
      return released
    },
    isStillOwner: () => inner.isStillOwner(),
    break: () => inner.break(),
  }
}

registerDriver('faulty', async () => ({
  default: defineDriver({
    ...memory,
    name: 'faulty',
    create(ctx) {
      const inner = memory.create(ctx)
      const f = faults.get(ctx.memberId)!
      f.events = ctx.events
      // While "down", every backend call fails, as it would during a real outage.
      const down = <T extends object>(obj: T, extra: Record<string, unknown> = {}): T =>
        new Proxy(obj, {
          get(target, prop, receiver) {
            if (prop in extra) return extra[prop as string]
            const value = Reflect.get(target, prop, receiver) as unknown
            // A lock's wait model: its calls fail during an outage too.
            if (prop === 'waiting' && typeof value === 'object' && value !== null) return down(value)
            if (typeof value !== 'function') return value
            if (prop === 'stop') return value.bind(target)
            if (prop === 'leaderLock' && f.sqlLikeLeader) {
              return (name: string) => sqlLikeLeader(down((value as (n: string) => DriverLock).call(target, name)), f.sqlLikeLeader!, f)
            }
            if (prop === 'createLock' || prop === 'leaderLock') return (name: string) => down((value as (n: string) => object).call(target, name))
            return (...args: unknown[]) => {
              if (f.failBeats) return Promise.reject(new ConnectionError('injected outage'))
              const call = (): unknown => (value as (...a: unknown[]) => unknown).apply(target, args)
              if (prop === 'release' && f.holdReleases) return f.holdReleases.then(call)
              if (prop === 'tryAcquire') return Promise.resolve(call()).then(async (got) => (await f.holdAcquired, got))
              if (prop === 'updateCapabilities') f.capabilityUpdates = (f.capabilityUpdates ?? 0) + 1
              if (prop !== 'refresh') return call()
              f.refreshes = (f.refreshes ?? 0) + 1
              f.refreshesInFlight = (f.refreshesInFlight ?? 0) + 1
              return pause(f.answerMs).then(call).finally(() => f.refreshesInFlight!--)
            }
          },
        })
      return down(inner, {
        // The beat refreshes the locks itself exactly while a test scripts what it says of them.
        get beatRefreshesLocks() {
          return f.beatLocks !== undefined
        },
        joinGroup: async (group: string, capabilities: Uint8Array): Promise<void> => {
          await f.holdJoins
          if (f.failBeats) throw new ConnectionError('injected outage')
          return inner.joinGroup(group, capabilities)
        },
        heartbeat: async (_joined: unknown, held: ReadonlySet<DriverLock>): Promise<HeartbeatResult> => {
          if (f.failBeats || f.failHeartbeat) throw new ConnectionError('injected outage')
          if (f.holdBeats) {
            f.heldBeats = (f.heldBeats ?? 0) + 1
            if (!(await f.holdBeats)) throw new ConnectionError('the connection this beat went out on broke')
          }
          f.beats = (f.beats ?? 0) + 1
          if (f.refreshesInFlight) f.beatsBesideRefresh = (f.beatsBesideRefresh ?? 0) + 1
          else f.beatsAlone = (f.beatsAlone ?? 0) + 1
          await pause(f.answerMs)
          return { nextBeatMs: f.nextBeatMs, lostGroups: f.lostGroups.splice(0), locks: f.beatLocks?.(held) ?? { refreshed: false } }
        },
      }) as CoordinationDriver
    },
  }),
}))

/** Connects a coordinator on the scripted driver (`rejoin` as given, default on); stopped after the test. */
export async function open(
  t: TestContext,
  store: string,
  nextBeatMs = 400,
  { rejoin = true }: { rejoin?: boolean } = {},
): Promise<{ c: Coordinator; f: Faults }> {
  const memberId = rid('m')
  const f: Faults = { failBeats: false, lostGroups: [], nextBeatMs }
  faults.set(memberId, f)
  const c = await connect(`faulty://${store}`, { memberId, watchIntervalMs: 50, rejoin })
  t.after(() => c.stop())
  return { c, f }
}

/** The wait models a scripted lock can declare (driver.ts, LockWaiting). */
export type WaitKind = LockWaiting['kind']

/**
 * A lock of the `waits` driver, declaring one wait model: the test takes and frees it as the other
 * holder would (`busy`, free()), and every call the runtime makes is logged in order (`calls`).
 * The other holder's release is announced to a notify waiter and grants a queued one.
 */
export class ScriptedLock implements DriverLock {
  readonly fencingToken = undefined
  /** The runtime's calls, in order (`tryAcquire`, `waitForRelease`, `tryAcquireAsWaiter:exclusive`, ...). */
  readonly calls: string[] = []
  /** Another holder has the lock. */
  busy = false
  readonly waiting: LockWaiting
  #held = false
  /** Ends the notify pause or grants the queued wait under way, if any. */
  #onFree: (() => void) | undefined

  constructor(kind: WaitKind) {
    this.waiting = kind === 'poll' ? { kind } : kind === 'notify' ? this.#notify() : this.#queue()
  }

  /** A notify pause or a queued wait is under way (free() ends it). */
  get pausing(): boolean {
    return this.#onFree !== undefined
  }

  /** The other holder lets go. */
  free(): void {
    this.busy = false
    this.#onFree?.()
  }

  async tryAcquire(): Promise<boolean> {
    this.calls.push('tryAcquire')
    return this.#take()
  }

  async tryAcquireShared(): Promise<boolean> {
    this.calls.push('tryAcquireShared')
    return this.#take()
  }

  async release(): Promise<boolean> {
    this.calls.push('release')
    const held = this.#held
    this.#held = false
    return held
  }

  async isStillOwner(): Promise<boolean> {
    return this.#held
  }

  async break(): Promise<boolean> {
    return false
  }

  #take(): boolean {
    if (this.busy || this.#held) return false
    this.#held = true
    return true
  }

  /** Until free() or `until` (a timeout), or `signal` aborts; says which. */
  #pause(signal: AbortSignal, timeoutMs: number | undefined): Promise<'freed' | 'timeout' | 'aborted'> {
    return new Promise((resolve) => {
      const done = (how: 'freed' | 'timeout' | 'aborted'): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        if (this.#onFree === onFree) this.#onFree = undefined
        resolve(how)
      }
      const onFree = (): void => done('freed')
      const onAbort = (): void => done('aborted')
      const timer = timeoutMs === undefined ? undefined : setTimeout(done, timeoutMs, 'timeout')
      if (signal.aborted) return done('aborted')
      signal.addEventListener('abort', onAbort, { once: true })
      this.#onFree = onFree
    })
  }

  #notify(): NotifyWaiting {
    return {
      kind: 'notify',
      waitForRelease: async (signal, timeoutMs) => {
        this.calls.push('waitForRelease')
        if ((await this.#pause(signal, timeoutMs)) === 'freed') this.calls.push('woken')
      },
      tryAcquireAsWaiter: async (mode) => {
        this.calls.push(`tryAcquireAsWaiter:${mode}`)
        return this.#take()
      },
      endWait: async () => {
        this.calls.push('endWait')
      },
    }
  }

  #queue(): QueueWaiting {
    return {
      kind: 'queue',
      acquireWaiting: async (signal, mode) => {
        this.calls.push(`acquireWaiting:${mode}`)
        while (!this.#take()) {
          if ((await this.#pause(signal, undefined)) === 'aborted') {
            this.calls.push('withdrawn')
            return false
          }
        }
        return true
      },
    }
  }
}

/** The locks the `waits` driver hands out, by lock name: a test puts one here before getLock(name). */
export const scriptedLocks = new Map<string, ScriptedLock>()

registerDriver('waits', async () => ({
  default: defineDriver({
    ...memory,
    name: 'waits',
    capabilities: [...memory.capabilities, 'sharedLocks'],
    create(ctx) {
      const inner = memory.create(ctx)
      return new Proxy(inner, {
        get(target, prop, receiver) {
          if (prop === 'createLock') return (name: string) => scriptedLocks.get(name) ?? target.createLock(name)
          const value = Reflect.get(target, prop, receiver) as unknown
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
        },
      })
    },
  }),
}))

/** Connects a coordinator on the `waits` driver, with a lock `name` declaring `kind`; stopped after the test. */
export async function openWaits(t: TestContext, kind: WaitKind): Promise<{ c: Coordinator; lock: ScriptedLock; name: string }> {
  const name = rid('l')
  const lock = new ScriptedLock(kind)
  scriptedLocks.set(name, lock)
  const c = await connect(`waits://${rid('s')}`, { memberId: rid('m') })
  t.after(async () => {
    scriptedLocks.delete(name)
    await c.stop()
  })
  return { c, lock, name }
}
