/** Decoding a ZooKeeper multiRead reply: each getData's value, its stat stepped over, errors per read. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { JuteReader, JuteWriter } from '../../src/clients/zookeeper/jute.js'
import { multiReadData } from '../../src/clients/zookeeper/zookeeper-bulk.js'
import { ZK_CODES, zkCode } from '../../src/clients/zookeeper/zookeeper-errors.js'
import { OP } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { decodeResponse, type ZkReadResult } from '../../src/clients/zookeeper/zookeeper-ops.js'

/** A Stat with every field set, so that a misread length would shift the next result. */
function stat(w: JuteWriter, n: number): void {
  for (let i = 0; i < 4; i++) w.long(BigInt(n * 100 + i))
  for (let i = 0; i < 3; i++) w.int(n * 10 + i)
  w.long(0x1234567890n).int(3).int(0).long(BigInt(n))
}

describe('unit: zookeeper multiRead', () => {
  it('zookeeper multiRead: values in order, stats stepped over, a missing node as its own error', () => {
    const w = new JuteWriter()
    w.int(OP.getData).bool(false).int(-1).buffer(Buffer.from('abc'))
    stat(w, 1)
    w.int(OP.error).bool(false).int(ZK_CODES.NO_NODE).int(ZK_CODES.NO_NODE)
    w.int(OP.getData).bool(false).int(-1).buffer(Buffer.from([0x81, 0xa1, 0x78, 0x01]))
    stat(w, 2)
    w.int(OP.getData).bool(false).int(-1).buffer(undefined)
    stat(w, 3)
    w.int(-1).bool(true).int(-1)
    const paths = ['/g/a', '/g/b', '/g/c', '/g/d']
    const frame = w.finish()
    const r = new JuteReader(frame)
    const results = decodeResponse({ op: 'multiRead', ops: paths.map((path) => ({ op: 'getData' as const, path })) }, r) as ZkReadResult[]
    assert.equal(r.remaining, 0)
    assert.equal(zkCode((results[1] as { error: Error }).error), ZK_CODES.NO_NODE)
    const data = multiReadData(results)
    assert.deepEqual(data.map((d) => d && [...d]), [[0x61, 0x62, 0x63], undefined, [0x81, 0xa1, 0x78, 0x01], []])
    // Each value is a copy: the frame's buffer can be reused.
    frame.fill(0)
    assert.equal(data[0]!.toString(), 'abc')
  })

  it('zookeeper multiRead: a reply cut inside a stat is refused', () => {
    const w = new JuteWriter()
    w.int(OP.getData).bool(false).int(-1).buffer(Buffer.from('abc')).long(1n)
    assert.throws(() => decodeResponse({ op: 'multiRead', ops: [{ op: 'getData', path: '/g/a' }] }, new JuteReader(w.finish())), /multiRead\.stat/)
  })
})
