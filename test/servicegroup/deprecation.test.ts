/** The deprecated drivers warn once per process, with stable codes, saying what to use instead. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEPRECATION_CODES } from '../../src/servicegroup/index.js'
import { McDriver } from '../../src/servicegroup/drivers/mc.js'
import { ZkDriver } from '../../src/servicegroup/drivers/zk.js'
import { silentLogger } from '../../src/index.js'

describe('servicegroup: deprecation warnings', () => {
  it('deprecation: mc and zk each emit one DeprecationWarning per process, with ROLLCALL_DEP_MC / ROLLCALL_DEP_ZK', async () => {
    const seen: Error[] = []
    const listener = (w: Error): void => void seen.push(w)
    process.on('warning', listener)
    try {
      for (let i = 0; i < 3; i++) {
        await new McDriver({ servers: ['127.0.0.1:1'], serviceDownTimeSeconds: 60 }).close()
        new ZkDriver({ address: '127.0.0.1:1', recvTimeoutMs: 4000, sgPrefix: '/servicegroups', logger: silentLogger })
      }
      await new Promise((r) => setImmediate(r))
    } finally {
      process.off('warning', listener)
    }
    const ours = seen.filter((w) => w.name === 'DeprecationWarning')
    assert.deepEqual(ours.map((w) => (w as Error & { code?: string }).code).sort(), [DEPRECATION_CODES.mc, DEPRECATION_CODES.zk])
    for (const w of ours) assert.match(w.message, /servicegroup_driver = tooz .*servicegroup_tooz_url = .*docs\/migration\.md/)
  })
})
