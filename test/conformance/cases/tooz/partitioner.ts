/** tooz's TestPartitioner (tooz/tests/test_partitioner.py), ported case by case. */
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import type { Coordinator, Partitioner } from '../../../../src/index.js'
import { rid } from '../../../support/wait.js'
import type { Harness } from '../../harness.js'
import { toozCoordinator } from './support.js'

export function toozPartitionerCases(h: Harness): void {
  /** A test's coordinator plus tooz's _add_members/_remove_members. */
  const setup = async (
    t: TestContext,
  ): Promise<{ c: Coordinator; g: string; add(n: number, weight?: number): Promise<Partitioner[]>; remove(n: number): Promise<void> }> => {
    const c = await toozCoordinator(h, t)
    const g = rid('g')
    const extra: Coordinator[] = []
    return {
      c,
      g,
      async add(n, weight = 1) {
        const out: Partitioner[] = []
        for (let i = 0; i < n; i++) {
          const coord = await toozCoordinator(h, t)
          out.push(await coord.joinPartitionedGroup(g, { weight }))
          extra.push(coord)
        }
        await c.runWatchers()
        return out
      },
      async remove(n) {
        for (let i = 0; i < n; i++) await extra.pop()!.stop()
        await c.runWatchers()
      },
    }
  }

  h.gated('groups', 'TestPartitioner.test_join_partitioned_group', async (t) => {
    const c = await toozCoordinator(h, t)
    const p = await c.joinPartitionedGroup(rid('g'))
    assert.ok(p.ring.nodes.has(c.memberId))
  })

  h.gated('groups', 'TestPartitioner.test_hashring_size', async (t) => {
    const { c, g, add, remove } = await setup(t)
    const p = await c.joinPartitionedGroup(g)
    assert.equal(p.ring.nodes.size, 1)
    await add(1)
    assert.equal(p.ring.nodes.size, 2)
    await add(2)
    assert.equal(p.ring.nodes.size, 4)
    await remove(3)
    assert.equal(p.ring.nodes.size, 1)
    await p.stop()
  })

  h.gated('groups', 'TestPartitioner.test_hashring_weight', async (t) => {
    const { c, g, add } = await setup(t)
    const p = await c.joinPartitionedGroup(g, { weight: 5 })
    assert.deepEqual([...p.ring.nodes.values()], [5])
    const [p2] = await add(1, 10)
    assert.deepEqual(new Set(p.ring.nodes.values()), new Set([5, 10]))
    assert.deepEqual(new Set(p2!.ring.nodes.values()), new Set([5, 10]))
    await p.stop()
  })

  h.gated('groups', 'TestPartitioner.test_stop', async (t) => {
    // tooz counts its private hooks after stop(); here: a stopped Partitioner follows nothing.
    const { c, g, add } = await setup(t)
    const p = await c.joinPartitionedGroup(g)
    await p.stop()
    assert.deepEqual(await c.runWatchers(), [], 'no callback is left to run')
    await add(1)
    assert.equal(p.ring.nodes.size, 1)
  })

  h.gated('groups', 'TestPartitioner.test_members_of_object_and_others', async (t) => {
    const { c, g, add } = await setup(t)
    const p = await c.joinPartitionedGroup(g)
    await add(3)
    const o = 'чупакабра'
    const m = p.membersForObject(o)
    assert.equal(m.size, 1)
    const member = [...m][0]!
    assert.ok(p.belongsToMember(o, member))
    assert.ok(!p.belongsToMember(o, 'chupacabra'))
    assert.equal(p.belongsToSelf(o), member === c.memberId)
    await p.stop()
  })
}
