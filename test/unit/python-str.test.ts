/**
 * The Partitioner places an object as tooz does, by Python's str() of it, and the HashRing places
 * bytes nodes where tooz places the same bytes: checked against Python tooz itself
 * (/usr/bin/python3, Debian's tooz) on thousands of generated values of every type.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { HashRing, type HashRingNode } from '../../src/index.js'
import { hashObject } from '../../src/coordination/partitioner.js'
import { pythonStr } from '../../src/coordination/codec/python-str.js'

/** Code points every Python 3 since Unicode 14 classes as this runtime does (long-assigned blocks, controls, format, private use). */
const SAFE_RANGES: [number, number][] = [[0x00, 0x2ff], [0x370, 0x52f], [0x2000, 0x206f], [0x4e00, 0x9fa5], [0xe000, 0xe0ff], [0xfeff, 0xfeff], [
  0x1f600,
  0x1f64f,
]]
const safeChar = fc.oneof(...SAFE_RANGES.map(([a, b]) => fc.integer({ min: a, max: b }).map((cp) => String.fromCodePoint(cp))))
const reprString = fc.string({ unit: safeChar, maxLength: 12 })

const number = fc.oneof(
  fc.integer(),
  fc.maxSafeInteger(),
  fc.double(),
  fc.double({ min: -1e30, max: 1e30 }),
  fc.double({ min: -1e-3, max: 1e-3 }),
  fc.constantFrom(1e16, 1e15, 1e-4, 1e-5, 0.1, 1e21, 1e22, 5e-324, -0, 2 ** 53, 2 ** 53 + 2, 123456789012345680000, 1.5e300, NaN, Infinity, -Infinity),
)
const leaf = fc.oneof(reprString, fc.boolean(), fc.constant(null), number, fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }), fc.uint8Array({ maxLength: 12 }))
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(reprString, tie('value'), { maxKeys: 3 }),
  ),
}))
const topLevel = fc.oneof(value, fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 6 }))

/** The value in a form the Python side rebuilds exactly (int and float told apart as pythonStr tells them). */
function tag(v: unknown): unknown {
  if (typeof v === 'string') return ['s', v]
  if (typeof v === 'boolean') return ['bool', v]
  if (v === null || v === undefined) return ['none']
  if (typeof v === 'bigint') return ['i', v.toString()]
  if (typeof v === 'number') return Number.isSafeInteger(v) ? ['i', String(v)] : ['f', String(v)]
  if (v instanceof Uint8Array) return ['b', Buffer.from(v).toString('hex')]
  if (Array.isArray(v)) return ['list', v.map(tag)]
  return ['dict', Object.entries(v as Record<string, unknown>).map(([k, x]) => [tag(k), tag(x)])]
}

const ORACLE = `
import json, sys
from tooz import hashring
def untag(t):
    k = t[0]
    if k == 's': return t[1]
    if k == 'bool': return t[1]
    if k == 'none': return None
    if k == 'i': return int(t[1])
    if k == 'f': return float(t[1])
    if k == 'b': return bytes.fromhex(t[1])
    if k == 'list': return [untag(x) for x in t[1]]
    return {untag(a): untag(b) for a, b in t[1]}
req = json.load(sys.stdin)
nodes = [bytes.fromhex(n[1]) if n[0] == 'b' else n[1] for n in req['nodes']]
ring = hashring.HashRing(nodes)
out = []
for t in req['values']:
    s = str(untag(t))
    try:
        owner = ring.get_nodes(s.encode('utf8'), replicas=2)
        owner = sorted(('b', o.hex()) if isinstance(o, bytes) else ('s', o) for o in owner)
    except UnicodeEncodeError:
        owner = None
    out.append([s, owner])
json.dump(out, sys.stdout)
`

function oracle(values: unknown[], nodes: HashRingNode[]): [string, [string, string][] | null][] {
  const input = JSON.stringify({ values: values.map(tag), nodes: nodes.map((n) => (typeof n === 'string' ? ['s', n] : ['b', Buffer.from(n).toString('hex')])) })
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', ORACLE], { input, maxBuffer: 64 << 20 }).toString()) as [string, [string, string][] | null][]
}

const ownerKey = (n: HashRingNode): [string, string] => (typeof n === 'string' ? ['s', n] : ['b', Buffer.from(n).toString('hex')])

describe('unit: Python str() placement', () => {
  it('python-str: the documented examples', () => {
    assert.equal(pythonStr(true), 'True')
    assert.equal(pythonStr(false), 'False')
    assert.equal(pythonStr(null), 'None')
    assert.equal(pythonStr(1e16), '1e+16')
    assert.equal(pythonStr(new TextEncoder().encode('abc')), "b'abc'")
    assert.equal(pythonStr(0.1), '0.1')
    assert.equal(pythonStr([1, 'a', null]), "[1, 'a', None]")
  })

  it('python-str: str() and ring placement agree with Python tooz on thousands of generated values', () => {
    const seed = Date.now()
    const values = fc.sample(topLevel, { numRuns: 4_000, seed })
    const nodes: HashRingNode[] = ['node-a', 'ノード', Uint8Array.from([0x5a, 0xe2, 0xfa, 0x90, 0x17, 0x45]), Uint8Array.from([0xff, 0x00, 0x80])]
    const ring = new HashRing<HashRingNode>(nodes)
    const expected = oracle(values, nodes)
    let compared = 0
    values.forEach((v, i) => {
      const [str, owners] = expected[i]!
      assert.equal(pythonStr(v), str, `seed ${seed}: str(${JSON.stringify(tag(v))})`)
      if (owners === null) return // Python cannot encode a lone surrogate; there is nothing to place
      const ours = [...ring.getNodes(hashObject(v), { replicas: 2 })].map(ownerKey).sort((a, b) => (a.join() < b.join() ? -1 : 1))
      assert.deepEqual(ours, [...owners].sort((a, b) => (a.join() < b.join() ? -1 : 1)), `seed ${seed}: owners of ${JSON.stringify(str)}`)
      compared += 1
    })
    assert.ok(compared > 3_000, `only ${compared} values placed`)
  })
})
