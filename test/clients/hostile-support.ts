/**
 * What the hostile-server tests share: a guard that fails any test during which an unhandled
 * rejection or exception happened, and the rejection of a promise within a bound.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, afterEach } from 'node:test'

/** Fails every test of the file after which an unhandled rejection or exception was reported. */
export function failOnUnhandled(): void {
  const unhandled: unknown[] = []
  const onUnhandled = (err: unknown): void => void unhandled.push(err)
  process.on('unhandledRejection', onUnhandled)
  process.on('uncaughtException', onUnhandled)
  after(() => {
    process.off('unhandledRejection', onUnhandled)
    process.off('uncaughtException', onUnhandled)
  })
  afterEach(async () => {
    await sleep(5) // a rejection left unhandled is reported after the turn that made it
    assert.deepEqual(unhandled.splice(0), [], 'no unhandled rejection or exception')
  })
}

/** The rejection of `p` within `boundMs`, failing if it resolves or takes longer. */
export async function rejection(p: Promise<unknown>, boundMs: number): Promise<Error> {
  const t0 = performance.now()
  const outcome = await Promise.race([
    p.then((v) => ({ ok: true as const, v }), (err: unknown) => ({ ok: false as const, err })),
    sleep(boundMs).then(() => undefined),
  ])
  assert.ok(outcome, `no answer within ${boundMs} ms`)
  assert.ok(!outcome.ok, `resolved with ${String(outcome.ok && outcome.v)}`)
  assert.ok(performance.now() - t0 < boundMs)
  return outcome.err as Error
}
