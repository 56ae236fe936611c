/**
 * The combined signal lock waits use (src/internal/linked-signal.ts): it aborts with the first
 * source's reason or a TimeoutError at its deadline, and dispose() leaves no listener on the
 * sources (a coordinator's stop signal lives as long as the coordinator). A wait on one signal
 * alone gets that signal, and a long-lived signal keeps one listener for good.
 */
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { describe, it } from 'node:test'
import { keepListenedTo, linkedSignal } from '../../src/internal/linked-signal.js'

describe('unit: linked signal', () => {
  it('linked signal: aborts with the reason of the first source that aborts, and then listens to none', () => {
    const a = new AbortController()
    const b = new AbortController()
    const { signal } = linkedSignal([a.signal, undefined, b.signal])
    assert.equal(signal.aborted, false)
    b.abort(new Error('b went'))
    assert.equal(signal.aborted, true)
    assert.equal((signal.reason as Error).message, 'b went')
    assert.equal(getEventListeners(a.signal, 'abort').length, 0)
    a.abort(new Error('a went'))
    assert.equal((signal.reason as Error).message, 'b went')
  })

  it('linked signal: a source already aborted aborts it at once', () => {
    const a = new AbortController()
    a.abort(new Error('early'))
    const other = new AbortController()
    const { signal } = linkedSignal([other.signal, a.signal])
    assert.equal(signal.aborted, true)
    assert.equal((signal.reason as Error).message, 'early')
    assert.equal(getEventListeners(other.signal, 'abort').length, 0)
  })

  it('linked signal: aborts with a TimeoutError at its deadline', async () => {
    const a = new AbortController()
    const { signal } = linkedSignal([a.signal], 20)
    await new Promise((r) => setTimeout(r, 60))
    assert.equal(signal.aborted, true)
    assert.equal((signal.reason as DOMException).name, 'TimeoutError')
    assert.equal(getEventListeners(a.signal, 'abort').length, 0)
  })

  it('linked signal: dispose() removes its listeners and its timer, and it never aborts after', async () => {
    const a = new AbortController()
    const linked = linkedSignal([a.signal], 20)
    assert.equal(getEventListeners(a.signal, 'abort').length, 1)
    linked.dispose()
    assert.equal(getEventListeners(a.signal, 'abort').length, 0)
    a.abort()
    await new Promise((r) => setTimeout(r, 60))
    assert.equal(linked.signal.aborted, false)
  })

  it('linked signal: a wait on one signal alone, without a deadline, gets that signal itself (no controller, no listener)', () => {
    const a = new AbortController()
    const linked = linkedSignal([undefined, a.signal])
    assert.equal(linked.signal, a.signal)
    assert.equal(getEventListeners(a.signal, 'abort').length, 0)
    linked.dispose()
    a.abort(new Error('gone'))
    assert.equal((linked.signal.reason as Error).message, 'gone')
    assert.notEqual(linkedSignal([a.signal], 10).signal, a.signal, 'a deadline needs a signal of its own')
  })

  it('linked signal: keepListenedTo() leaves one listener for good, beside the waits that come and go', () => {
    const a = new AbortController()
    assert.equal(keepListenedTo(a.signal), a.signal)
    const linked = linkedSignal([a.signal, new AbortController().signal])
    assert.equal(getEventListeners(a.signal, 'abort').length, 2)
    linked.dispose()
    assert.equal(getEventListeners(a.signal, 'abort').length, 1)
    a.abort()
    assert.equal(linked.signal.aborted, false)
  })
})
