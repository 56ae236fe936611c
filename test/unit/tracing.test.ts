/**
 * The diagnostics_channel tracing hooks (src/coordination/tracing.ts), subscribed to as an
 * OpenTelemetry-style tracer would: spans made from the TracingChannels' start events, parented
 * through an AsyncLocalStorage bound with `start.bindStore()`, with no tracing library at all.
 * On the memory backend and on the Redis server.
 */
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import diagnostics_channel from 'node:diagnostics_channel'
import { after, before, describe, it } from 'node:test'
import { connect, TRACING_CHANNELS, type TraceBase } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'

/** A span as a tracer keeps it. */
interface Span {
  name: string
  parent: Span | undefined
  payload: TraceBase & Record<string, unknown>
  ended: boolean
  error: unknown
}

const als = new AsyncLocalStorage<Span>()
const spans: Span[] = []
const moments: { name: string; payload: Record<string, unknown>; parent: Span | undefined }[] = []
const undo: (() => void)[] = []

/** A user-level span around `fn`, as an application's own tracing would make. */
function userSpan<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const span: Span = { name, parent: als.getStore(), payload: {} as Span['payload'], ended: false, error: undefined }
  spans.push(span)
  return als.run(span, fn).finally(() => void (span.ended = true))
}

before(() => {
  const traced = [
    TRACING_CHANNELS.connect,
    TRACING_CHANNELS.groupJoin,
    TRACING_CHANNELS.groupLeave,
    TRACING_CHANNELS.heartbeat,
    TRACING_CHANNELS.lockAcquire,
    TRACING_CHANNELS.lockRelease,
    TRACING_CHANNELS.watchDispatch,
  ]
  for (const name of traced) {
    const channel = diagnostics_channel.tracingChannel<unknown, TraceBase & Record<string, unknown>>(name)
    const byPayload = new WeakMap<object, Span>()
    channel.start.bindStore(als, (payload) => {
      const span: Span = { name, parent: als.getStore(), payload, ended: false, error: undefined }
      spans.push(span)
      byPayload.set(payload, span)
      return span
    })
    const handlers = {
      start: () => {},
      end: () => {},
      asyncStart: () => {},
      asyncEnd: (payload: TraceBase & Record<string, unknown>) => void (byPayload.get(payload)!.ended = true),
      error: (payload: TraceBase & Record<string, unknown>) => void (byPayload.get(payload)!.error = payload.error),
    }
    channel.subscribe(handlers)
    undo.push(() => {
      channel.start.unbindStore(als)
      channel.unsubscribe(handlers)
    })
  }
  for (const name of [TRACING_CHANNELS.electionWon, TRACING_CHANNELS.electionLost]) {
    const onMessage = (payload: unknown): void => void moments.push({ name, payload: payload as Record<string, unknown>, parent: als.getStore() })
    diagnostics_channel.subscribe(name, onMessage)
    undo.push(() => diagnostics_channel.unsubscribe(name, onMessage))
  }
})

after(() => {
  for (const u of undo) u()
})

const BACKENDS = [
  { name: 'memory', url: () => `memory://${rid('trace')}` },
  { name: 'redis', url: () => serverUrl('redis') },
]

describe('unit: tracing channels', () => {
  for (const b of BACKENDS) {
    it(`tracing (${b.name}): connect, heartbeat, join/leave, lock acquire/release, watch dispatch and election outcomes nest as spans`, async () => {
      const url = b.url()
      const memberId = rid('traced')
      const group = rid('group')
      const lockName = rid('lock')
      const first = spans.length
      const ours = (name: string): Span[] => spans.slice(first).filter((s) => s.name === name && s.payload.memberId === memberId)
      const c = await userSpan('app.start', () => connect(url, { memberId, watchIntervalMs: 50 }))
      const other = await connect(url, { memberId: rid('other'), heartbeat: false })
      try {
        // connect nests in the application's span; the first heartbeat, made inside start(), in connect.
        const [connectSpan] = ours(TRACING_CHANNELS.connect)
        assert.ok(connectSpan, 'a connect span')
        assert.equal(connectSpan.parent?.name, 'app.start')
        assert.equal(connectSpan.ended, true)
        const { memberId: m, backend, url: shown } = connectSpan.payload
        assert.deepEqual({ memberId: m, backend, url: shown }, { memberId, backend: b.name, url: c.url })
        const firstBeat = ours(TRACING_CHANNELS.heartbeat)[0]
        assert.ok(firstBeat, 'a heartbeat span')
        assert.equal(firstBeat.parent, connectSpan, 'the first heartbeat is a child of connect')
        assert.equal(typeof firstBeat.payload.result, 'number', 'the heartbeat span carries the ms until the next beat')

        // Joining and a lock cycle inside one user-level span: each is a child of it, and ends.
        let seenInside: Span | undefined
        await userSpan('app.job', async () => {
          await c.joinGroupCreate(group, { role: 'traced' })
          const lock = c.getLock(lockName)
          assert.equal(await lock.acquire({ timeoutMs: 5_000 }), true)
          seenInside = als.getStore()
          await lock.release()
        })
        assert.equal(seenInside?.name, 'app.job', "rollcall's spans end: the application's context is its own again")
        const [join] = ours(TRACING_CHANNELS.groupJoin).filter((s) => s.payload.group === group)
        assert.equal(join?.parent?.name, 'app.job')
        assert.equal(join?.payload.rejoin, false)
        assert.equal(join?.ended, true)
        const [acquire] = ours(TRACING_CHANNELS.lockAcquire)
        assert.equal(acquire?.parent?.name, 'app.job')
        assert.deepEqual(
          { lock: acquire?.payload.lock, shared: acquire?.payload.shared, blocking: acquire?.payload.blocking, timeoutMs: acquire?.payload.timeoutMs },
          { lock: lockName, shared: false, blocking: true, timeoutMs: 5_000 },
        )
        assert.equal(acquire?.payload.result, true)
        const [release] = ours(TRACING_CHANNELS.lockRelease)
        assert.equal(release?.parent?.name, 'app.job')
        assert.equal(release?.payload.result, true)

        // A member joining a watched group: one dispatch span, and the callback runs inside it.
        let callbackIn: Span | undefined
        await c.watchJoinGroup(group, () => void (callbackIn = als.getStore()))
        await other.joinGroup(group, null)
        await waitFor('the join callback', () => callbackIn !== undefined, 10_000)
        const dispatch = ours(TRACING_CHANNELS.watchDispatch).find((s) => s.payload.member === other.memberId)
        assert.ok(dispatch, 'a watch.dispatch span for the join')
        assert.equal(dispatch.payload.event, 'join')
        assert.equal(dispatch.payload.group, group)
        assert.equal(callbackIn, dispatch, 'the watch callback runs in the dispatch span')
        await waitFor('the dispatch span to end', () => dispatch.ended, 5_000)

        // An election won, then lost by standing down: one moment each, with the group.
        const elected = new Promise<void>((done) => c.watchElectedAsLeader(group, () => done()))
        await elected
        assert.equal(await c.standDownGroupLeader(group, { holdOffMs: 60_000 }), true)
        const ourMoments = moments.filter((m) => m.payload.memberId === memberId && m.payload.group === group)
        assert.deepEqual(ourMoments.map((m) => m.name), [TRACING_CHANNELS.electionWon, TRACING_CHANNELS.electionLost])
        assert.equal(ourMoments[1]!.payload.reason, 'stood down')

        await c.leaveGroup(group)
        const [leave] = ours(TRACING_CHANNELS.groupLeave)
        assert.equal(leave?.payload.group, group)
        assert.equal(leave?.ended, true)

        // A failed operation's span carries the error.
        await assert.rejects(c.leaveGroup(group))
        assert.ok(ours(TRACING_CHANNELS.groupLeave)[1]?.error instanceof Error, 'the failed leave span has its error')
      } finally {
        await other.stop()
        await c.stop()
      }
      // Nothing any span carried names a credential, and every span ended.
      for (const s of spans.slice(first).filter((x) => x.payload.memberId === memberId)) {
        assert.equal(s.payload.url, c.url)
        assert.equal(s.ended, true, `${s.name} ended`)
      }
    })
  }

  it('tracing: a URL with a password reaches the payloads redacted', async () => {
    const first = spans.length
    const memberId = rid('redacted')
    const url = serverUrl('redis').replace('redis://', 'redis://:sekret-pw@')
    const c = await connect(url, { memberId }).catch(() => undefined)
    await c?.stop()
    const connectSpan = spans.slice(first).find((s) => s.name === TRACING_CHANNELS.connect && s.payload.memberId === memberId)
    assert.ok(connectSpan, 'a connect span')
    assert.equal(connectSpan.ended, true)
    assert.match(connectSpan.payload.url, /^redis:\/\/\*\*\*@127\.0\.0\.1:/)
    assert.doesNotMatch(JSON.stringify(connectSpan.payload), /sekret/)
  })
})
