/**
 * What answered syncs prove the ZooKeeper leader counted (zookeeper-leader-proof.ts), on made-up
 * times. Pure: no server, no clock.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LeaderProof, relayLagMs } from '../../src/clients/zookeeper/zookeeper-leader-proof.js'

describe('ZooKeeper leader proof', () => {
  it('steady traffic (an answer every 5 ms for 6 s, a sync every 335 ms) keeps proving: the coalescing window does not slide', () => {
    const timeoutMs = 4_000
    const proof = new LeaderProof(0, timeoutMs)
    for (let t = 5; t <= 6_000; t += 5) {
      proof.answered(t - 2, t)
      if (t % 335 === 0) {
        proof.answered(t - 5, t)
        proof.synced(t - 5)
      }
    }
    // The last sync (sent at 5690) proves what was answered a relay lag before it, up to one sync period and the 10 ms window.
    const lastSyncSentAt = 5_690
    assert.ok(
      proof.provenSentAt >= lastSyncSentAt - relayLagMs(timeoutMs) - 20,
      `proven up to ${proof.provenSentAt} ms (sync sent at ${lastSyncSentAt} ms, lag ${relayLagMs(timeoutMs)} ms)`,
    )
  })

  it('an answer later than a relay lag before the sync proves nothing', () => {
    const proof = new LeaderProof(0, 4_000)
    proof.answered(100, 200)
    proof.synced(200 + relayLagMs(4_000) - 1)
    assert.equal(proof.provenSentAt, 0)
    proof.synced(200 + relayLagMs(4_000))
    assert.equal(proof.provenSentAt, 100)
  })
})
