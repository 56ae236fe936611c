/** Partitioner over a live group: members agree on owners, and the ring follows joins and leaves. */
import assert from 'node:assert/strict'
import { TIMING } from '../../support/timing.js'
import { rid, waitFor } from '../../support/wait.js'
import type { Harness } from '../harness.js'

export function partitionerCases(h: Harness): void {
  h.gated('groups', 'partitioner: members agree on owners; weights and departures move objects', async (t) => {
    const a = await h.open(t)
    const b = await h.open(t)
    const g = rid('g')
    const pa = await a.joinPartitionedGroup(g)
    const pb = await b.joinPartitionedGroup(g, { weight: 3 })
    await waitFor('a to see b on its ring', () => pa.ring.nodes.size === 2, TIMING.eventMs)
    assert.equal(pa.ring.nodes.get(b.memberId), 3)
    const objects = Array.from({ length: 200 }, (_, i) => `object-${i}`)
    for (const o of objects) assert.deepEqual(pa.membersForObject(o), pb.membersForObject(o))
    const ownedByB = objects.filter((o) => pb.belongsToSelf(o)).length
    assert.ok(ownedByB > 100, `weight 3 of 4 should own most objects, owns ${ownedByB}/200`)
    await b.leavePartitionedGroup(pb)
    await waitFor('a to drop b from its ring', () => pa.ring.nodes.size === 1, TIMING.eventMs)
    assert.ok(objects.every((o) => pa.belongsToSelf(o)))
  })
}
