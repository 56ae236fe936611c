/** HashRing and the Partitioner's object identity, bit for bit against tooz. */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { HashRing, hashObject, UnknownNodeError } from '../../src/index.js'

describe('unit: hashring', () => {
  it('hashring: the vectors of tooz.md §1.10', () => {
    const ring = new HashRing(['node-a', 'node-b', 'node-c'])
    const cases: [string, string[], string[]][] = [
      ['foo', ['node-b'], ['node-a', 'node-b']],
      ['bar', ['node-c'], ['node-b', 'node-c']],
      ['chupacabra', ['node-c'], ['node-b', 'node-c']],
      ['чупакабра', ['node-b'], ['node-a', 'node-b']],
    ]
    for (const [data, one, two] of cases) {
      assert.deepEqual([...ring.getNodes(data)].sort(), one, data)
      assert.deepEqual([...ring.getNodes(data, { replicas: 2 })].sort(), two, data)
    }
    const weighted = new HashRing([])
    weighted.addNode('node-a')
    weighted.addNode('node-b', 3)
    assert.equal(weighted.size, 128)
    assert.deepEqual([...weighted.getNodes('foo')], ['node-b'])
  })

  it('hashring: 500 keys, weights, ignore lists and removal agree with tooz (live oracle)', () => {
    const py = `
import json
from tooz import hashring
r = hashring.HashRing(['n1', 'n2', 'compute-1'], partitions=16)
r.add_node('heavy', weight=4)
out = {'len': len(r), 'one': [], 'two': [], 'ign': []}
for i in range(500):
    k = ('key-%d' % i).encode()
    out['one'].append(sorted(r.get_nodes(k)))
    out['two'].append(sorted(r.get_nodes(k, replicas=2)))
    out['ign'].append(sorted(r.get_nodes(k, ignore_nodes=['heavy'], replicas=2)))
r.remove_node('n2')
out['after'] = [sorted(r.get_nodes(('key-%d' % i).encode())) for i in range(500)]
print(json.dumps(out))
`
    const expected = JSON.parse(execFileSync('/usr/bin/python3', ['-c', py], { encoding: 'utf8' }))
    const ring = new HashRing(['n1', 'n2', 'compute-1'], { partitions: 16 })
    ring.addNode('heavy', 4)
    assert.equal(ring.size, expected.len)
    const keys = Array.from({ length: 500 }, (_, i) => `key-${i}`)
    assert.deepEqual(keys.map((k) => [...ring.getNodes(k)].sort()), expected.one)
    assert.deepEqual(keys.map((k) => [...ring.getNodes(k, { replicas: 2 })].sort()), expected.two)
    assert.deepEqual(keys.map((k) => [...ring.getNodes(k, { ignoreNodes: ['heavy'], replicas: 2 })].sort()), expected.ign)
    ring.removeNode('n2')
    assert.deepEqual(keys.map((k) => [...ring.getNodes(k)].sort()), expected.after)
  })

  it('hashring: removing an unknown node fails with UnknownNodeError; bad arguments are refused', () => {
    const ring = new HashRing(['a'])
    assert.throws(() => ring.removeNode('b'), UnknownNodeError)
    assert.throws(() => ring.addNode('c', 0), /weight/)
    assert.throws(() => new HashRing([], { hashFunction: 'nope' }), /not available/)
    assert.deepEqual(new HashRing([]).getNodes('x'), new Set())
  })

  it('partitioner: object identity follows tooz (toozHash(), else the string form)', () => {
    assert.equal(hashObject('abc'), 'abc')
    assert.equal(hashObject(42), '42')
    assert.equal(hashObject({ toozHash: () => 'custom' }), 'custom')
  })
})
