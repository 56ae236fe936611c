/** The oslo/tooz msgpack codec: golden byte vectors, the Python oracle, and hostile input. */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { dumps, ExtData, loads, SerializationError } from '../../src/index.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, 'hex'))
const enc = (s: string): Uint8Array => new TextEncoder().encode(s)

// shared/reference/tooz.md §3.0, computed with Debian's tooz 3.1 / oslo.serialization 5.0.
const GOLDEN: [string, unknown, string][] = [
  ['capabilities', { data: 'test_capabilities' }, '81a464617461b1746573745f6361706162696c6974696573'],
  ['weight', { weight: 5 }, '81a677656967687405'],
  ['host and port', { host: '10.0.0.1', port: 8080 }, '82a4686f7374a831302e302e302e31a4706f7274cd1f90'],
  ['None', null, 'c0'],
  ['empty dict', {}, '80'],
  ['float', 1.5, 'cb3ff8000000000000'],
  ['bin vs str', [enc('g1'), 'g2'], '92c4026731a26732'],
  [
    'memcached group value',
    new Map([[enc('m1'), new Map([[enc('capabilities'), { weight: 1 }]])]]),
    '81c4026d3181c40c6361706162696c697469657381a677656967687401',
  ],
  ['set', new Set([1, 2]), 'c70304920102'],
  ['file group metadata', { group_id: enc('g1'), encoded: false }, '82a867726f75705f6964c4026731a7656e636f646564c2'],
]

describe('unit: codec', () => {
  for (const [name, value, expected] of GOLDEN) {
    it(`codec: golden vector: ${name} encodes byte for byte`, () => {
      assert.equal(hex(dumps(value)), expected)
      assert.deepEqual(loads(bytes(expected)), value)
    })
  }

  it('codec: a datetime from Python decodes to the same instant (naive = UTC, microseconds truncated to ms)', () => {
    const v = loads(
      bytes('81a96a6f696e65645f6f6ec73a0187a364617902a56d6f6e746801a479656172cd07e8a4686f757203a66d696e75746504a67365636f6e6405ab6d6963726f7365636f6e64cd1a85'),
    )
    assert.deepEqual(v, { joined_on: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)) })
  })

  it("codec: matches Python's bytes for ints, strings, map16, array16, nesting, datetime, sets and bin16 (live oracle)", () => {
    const cases: Record<string, unknown> = {
      ints: [-1, -33, 128, 255, 256, 65535, 65536, 2 ** 32, -(2 ** 31) - 1, 2 ** 53 - 1, 2n ** 64n - 1n, -(2n ** 63n)],
      strs: ['x'.repeat(31), 'x'.repeat(32), 'y'.repeat(255), 'z'.repeat(256), 'чупакабра ✓', ''],
      map17: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${String(i).padStart(2, '0')}`, i])),
      arr16: Array.from({ length: 16 }, (_, i) => i),
      nested: { a: [1, { b: null, c: true, d: false }], e: 0.1, f: new Uint8Array([0, 255]) },
      dt_ms: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 6)),
      set: new Set([1, 2]),
      big_bin: new Uint8Array(300).fill(1),
    }
    const py = `
import datetime, json
from tooz import utils
cases = {
 'ints': [-1, -33, 128, 255, 256, 65535, 65536, 2**32, -2**31-1, 2**53-1, 2**64-1, -2**63],
 'strs': ['x'*31, 'x'*32, 'y'*255, 'z'*256, 'чупакабра ✓', ''],
 'map17': {('k%02d' % i): i for i in range(17)},
 'arr16': list(range(16)),
 'nested': {'a': [1, {'b': None, 'c': True, 'd': False}], 'e': 0.1, 'f': b'\\x00\\xff'},
 'dt_ms': datetime.datetime(2024, 1, 2, 3, 4, 5, 6000),
 'set': {1, 2},
 'big_bin': b'\\x01' * 300,
}
print(json.dumps({k: utils.dumps(v).hex() for k, v in cases.items()}))
`
    const expected = JSON.parse(execFileSync('/usr/bin/python3', ['-c', py], { encoding: 'utf8' })) as Record<string, string>
    for (const [name, value] of Object.entries(cases)) {
      assert.equal(hex(dumps(value)), expected[name], name)
      const back = loads(bytes(expected[name]!))
      if (name !== 'ints') assert.deepEqual(back, value, name)
    }
    assert.deepEqual(loads(bytes(expected.ints!)), [-1, -33, 128, 255, 256, 65535, 65536, 2 ** 32, -(2 ** 31) - 1, 2 ** 53 - 1, 2n ** 64n - 1n, -(2n ** 63n)])
  })

  it('codec: Python decodes what we encode to the same values (live oracle)', () => {
    const value = { s: 'ü', b: new Uint8Array([1, 2]), n: [-5, 70000, 1.25], t: true, none: null, nested: { x: { y: [] } } }
    const py =
      'import sys, json; from tooz import utils; v = utils.loads(bytes.fromhex(sys.argv[1])); v["b"] = v["b"].hex(); print(json.dumps(v, sort_keys=True))'
    const out = JSON.parse(execFileSync('/usr/bin/python3', ['-c', py, hex(dumps(value))], { encoding: 'utf8' }))
    assert.deepEqual(out, { s: 'ü', b: '0102', n: [-5, 70000, 1.25], t: true, none: null, nested: { x: { y: [] } } })
  })

  it('codec: maps with non-str keys decode to Map; UUID ext to a string; unknown ext round-trips', () => {
    assert.deepEqual(loads(bytes('81c4026b3101')), new Map([[enc('k1'), 1]]))
    assert.equal(loads(bytes('c72000' + Buffer.from('12345678123456781234567812345678').toString('hex'))), '12345678-1234-5678-1234-567812345678')
    const ext = loads(bytes('d52a0102'))
    assert.ok(ext instanceof ExtData)
    assert.equal(hex(dumps(ext)), 'd52a0102')
  })

  it('codec: values msgpack cannot hold are refused with the path named', () => {
    assert.throws(() => dumps({ a: { b: () => 1 } }), (e: Error) => e instanceof SerializationError && /\$\.a\.b/.test(e.message))
    assert.throws(() => dumps(Symbol('x')), SerializationError)
    assert.throws(() => dumps(new (class Foo {})()), /Foo/)
    assert.throws(() => dumps(2n ** 70n), /64 bits/)
    assert.throws(() => dumps(new Date(Number.NaN)), SerializationError)
    assert.deepEqual(loads(dumps({ a: undefined, b: 1 })), { b: 1 })
  })

  it('codec: bytes decoded from a Buffer are plain Uint8Array copies, not views of the input', () => {
    const input = Buffer.from('c4020102', 'hex')
    const out = loads(input) as Uint8Array
    assert.equal(Object.getPrototypeOf(out), Uint8Array.prototype)
    input[2] = 9
    assert.deepEqual(out, new Uint8Array([1, 2]))
  })

  it('codec: a "__proto__" key stays data', () => {
    const v = loads(bytes('81a95f5f70726f746f5f5f01')) as Record<string, unknown>
    assert.equal(Object.getPrototypeOf(v), Object.prototype)
    assert.equal(Object.keys(v)[0], '__proto__')
  })

  it('codec: truncated, over-long, bad UTF-8 and hostile inputs fail with SerializationError only', () => {
    for (const h of ['', '92c0', 'a3616263ff', 'c1', 'a2c3a9ff', 'dd7fffffff', 'df7fffffff', 'c6ffffffff00']) {
      assert.throws(() => loads(bytes(h)), SerializationError, h)
    }
    assert.throws(() => loads(bytes('91'.repeat(200) + 'c0')), /nested deeper/)
  })

  it('codec: property: any JSON-like value round-trips', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const normal = JSON.parse(JSON.stringify(v)) as unknown
        assert.deepEqual(loads(dumps(normal)), normal)
      }),
      { numRuns: 500 },
    )
  })

  it('codec: property: random bytes never crash the decoder with anything but SerializationError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (b) => {
        try {
          loads(b)
        } catch (err) {
          assert.ok(err instanceof SerializationError, String(err))
        }
      }),
      { numRuns: 3000 },
    )
  })
})
