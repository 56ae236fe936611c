/** tooz's HashRingTestCase (tooz/tests/test_hashring.py), ported case by case. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { HashRing, InvalidArgumentError, UnknownNodeError, type HashRingNode } from '../../src/index.js'

const enc = (s: string): Uint8Array => new TextEncoder().encode(s)
/** tooz's non-UTF-8 bytes node b'Z\xe2\xfa\x90\x17EC\xac\xae\x88\xa7[\xa1}:E'. */
const BYTES_NODE = Uint8Array.from([0x5a, 0xe2, 0xfa, 0x90, 0x17, 0x45, 0x43, 0xac, 0xae, 0x88, 0xa7, 0x5b, 0xa1, 0x7d, 0x3a, 0x45])
const keys = (ring: HashRing<HashRingNode>): Set<string> =>
  new Set([...ring.nodes.keys()].map((n) => (typeof n === 'string' ? n : `b:${Buffer.from(n).toString('hex')}`)))
const key = (n: HashRingNode): string => (typeof n === 'string' ? n : `b:${Buffer.from(n).toString('hex')}`)

describe('unit: tooz HashRingTestCase', () => {
  it('HashRingTestCase.test_hash2int_returns_int', { skip: 'mocks hashlib.md5; test/unit/hashring.test.ts checks the points against tooz itself' }, () => {})

  it('HashRingTestCase.test_create_ring', () => {
    const nodes = new Set(['foo', 'bar'])
    const ring = new HashRing(nodes)
    assert.deepEqual(new Set(ring.nodes.keys()), nodes)
    assert.equal(ring.size, 2 ** 5 * 2)
  })

  it('HashRingTestCase.test_wrong_hash_function', () => {
    assert.throws(() => new HashRing(['foo', 'bar'], { hashFunction: 'fold twice and leave to dry' }), InvalidArgumentError)
  })

  it('HashRingTestCase.test_add_node', () => {
    const nodes = new Set(['foo', 'bar'])
    const ring = new HashRing(nodes)
    assert.equal(ring.size, 2 ** 5 * nodes.size)
    nodes.add('baz')
    ring.addNode('baz')
    assert.deepEqual(new Set(ring.nodes.keys()), nodes)
    assert.equal(ring.size, 2 ** 5 * nodes.size)
  })

  it('HashRingTestCase.test_add_node_bytes', () => {
    const nodes = new Set<HashRingNode>(['foo', 'bar'])
    const ring = new HashRing<HashRingNode>(nodes)
    assert.equal(ring.size, 2 ** 5 * nodes.size)
    nodes.add(BYTES_NODE)
    ring.addNode(Uint8Array.from(BYTES_NODE))
    assert.deepEqual(keys(ring), new Set([...nodes].map(key)))
    assert.equal(ring.size, 2 ** 5 * nodes.size)
    assert.ok(ring.has(BYTES_NODE), 'equal bytes are the same node')
  })

  it('HashRingTestCase.test_add_node_unicode', () => {
    const nodes = new Set(['foo', 'bar'])
    const ring = new HashRing(nodes)
    nodes.add('\u0634\u0628\u06a9\u0647')
    ring.addNode('\u0634\u0628\u06a9\u0647')
    assert.deepEqual(new Set(ring.nodes.keys()), nodes)
    assert.equal(ring.size, 2 ** 5 * nodes.size)
  })

  it('HashRingTestCase.test_add_node_weight', () => {
    const ring = new HashRing(['foo', 'bar'])
    ring.addNode('baz', 10)
    assert.deepEqual(new Set(ring.nodes.keys()), new Set(['foo', 'bar', 'baz']))
    assert.equal(ring.size, 2 ** 5 * 12)
  })

  it('HashRingTestCase.test_add_nodes_weight', () => {
    const ring = new HashRing(['foo', 'bar'])
    ring.addNodes(new Set(['baz', 'baz2']), 10)
    assert.deepEqual(new Set(ring.nodes.keys()), new Set(['foo', 'bar', 'baz', 'baz2']))
    assert.equal(ring.size, 2 ** 5 * 22)
  })

  it('HashRingTestCase.test_remove_node', () => {
    const ring = new HashRing(['foo', 'bar'])
    ring.removeNode('bar')
    assert.deepEqual(new Set(ring.nodes.keys()), new Set(['foo']))
    assert.equal(ring.size, 2 ** 5)
  })

  it('HashRingTestCase.test_remove_node_bytes', () => {
    const ring = new HashRing<HashRingNode>(['foo', BYTES_NODE])
    assert.equal(ring.size, 2 ** 5 * 2)
    ring.removeNode(Uint8Array.from(BYTES_NODE))
    assert.deepEqual(keys(ring), new Set(['foo']))
    assert.equal(ring.size, 2 ** 5)
  })

  it('HashRingTestCase.test_remove_node_unknown', () => {
    const ring = new HashRing(['foo', 'bar'])
    assert.throws(() => ring.removeNode('biz'), UnknownNodeError)
  })

  it('HashRingTestCase.test_add_then_removenode', () => {
    const ring = new HashRing(['foo', 'bar'])
    ring.addNode('baz')
    assert.equal(ring.size, 2 ** 5 * 3)
    ring.removeNode('bar')
    assert.deepEqual(new Set(ring.nodes.keys()), new Set(['foo', 'baz']))
    assert.equal(ring.size, 2 ** 5 * 2)
  })

  it('HashRingTestCase.test_distribution_one_replica', () => {
    const ring = new HashRing(['foo', 'bar', 'baz'])
    const fake1 = ring.getNodes(enc('fake'))
    const fake2 = ring.getNodes(enc('fake-again'))
    assert.equal(fake1.size, 1)
    assert.equal(fake2.size, 1)
    assert.notDeepEqual(fake1, fake2)
  })

  it('HashRingTestCase.test_distribution_more_replica', () => {
    const ring = new HashRing(['foo', 'bar', 'baz'])
    assert.equal(ring.getNodes(enc('fake'), { replicas: 2 }).size, 2)
    assert.equal(ring.getNodes(enc('fake-again'), { replicas: 2 }).size, 2)
    const fake1 = ring.getNodes(enc('fake'), { replicas: 3 })
    const fake2 = ring.getNodes(enc('fake-again'), { replicas: 3 })
    assert.equal(fake1.size, 3)
    assert.equal(fake2.size, 3)
    assert.deepEqual(new Set(fake1), new Set(fake2))
  })

  it('HashRingTestCase.test_ignore_nodes', () => {
    const nodes = ['foo', 'bar', 'baz']
    const ring = new HashRing(nodes)
    const barOrBaz = (s: Set<string>): boolean => s.size === 1 && (s.has('bar') || s.has('baz'))
    assert.ok(barOrBaz(ring.getNodes(enc('fake'), { ignoreNodes: ['foo'] })))
    assert.ok(barOrBaz(ring.getNodes(enc('fake'), { ignoreNodes: ['foo', 'bar'] })))
    assert.deepEqual(ring.getNodes(enc('fake'), { ignoreNodes: nodes }), new Set())
  })

  /** tooz's _compare_rings (which, as written there, compares one key: 'node'). */
  const compareRings = (nodes: string[], ring: HashRing, newRing: HashRing): Map<string, [string, string]> => {
    const delta = new Map<string, [string, string]>()
    const mapping = new Map<string, string>()
    const newMapping = new Map<string, string>()
    for (const node of nodes) mapping.set('node', [...ring.getNodes(enc(node))][0]!)
    for (const node of nodes) newMapping.set('node', [...newRing.getNodes(enc(node))][0]!)
    for (const [k, old] of mapping) if (newMapping.get(k) !== old) delta.set(k, [old, newMapping.get(k)!])
    return delta
  }

  it('HashRingTestCase.test_rebalance_stability_join', () => {
    const numServices = 10
    const numNodes = 10_000
    const nodes = Array.from({ length: numNodes }, (_, i) => String(i))
    const services = Array.from({ length: numServices }, (_, i) => String(i))
    const delta = compareRings(nodes, new HashRing(services), new HashRing([...services, 'new']))
    assert.ok(delta.size < numNodes * (1 / numServices))
  })

  it('HashRingTestCase.test_rebalance_stability_leave', () => {
    const numServices = 10
    const numNodes = 10_000
    const nodes = Array.from({ length: numNodes }, (_, i) => String(i))
    const services = Array.from({ length: numServices }, (_, i) => String(i))
    const delta = compareRings(nodes, new HashRing(services), new HashRing(services.slice(0, -1)))
    assert.ok(delta.size < numNodes * (1 / (numServices - 1)))
  })

  it('HashRingTestCase.test_ignore_non_existent_node', () => {
    const ring = new HashRing(['foo', 'bar'])
    assert.deepEqual(ring.getNodes(enc('fake'), { ignoreNodes: ['baz'] }), new Set(['foo']))
  })
})
