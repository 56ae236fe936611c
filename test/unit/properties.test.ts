/**
 * Property tests through the public API: any id is either stored and read back exactly or refused
 * with InvalidIdError before anything is written; any JSON-like capabilities round-trip exactly.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { connect, InvalidIdError, type Coordinator } from '../../src/index.js'
import { backend, type Backend } from '../support/backends.js'
import { rid } from '../support/wait.js'

const BACKENDS: [Backend, number][] = [['memory', 400], ['file', 150], ['redis', 150], ['zookeeper', 100], ['memcached', 100], ['etcd3', 100], ['mysql', 60]]

describe('unit: properties', { concurrency: 3 }, () => {
  for (const [name, runs] of BACKENDS) {
    it(`properties: ${name}: an id is stored exactly or refused before any write`, async (t) => {
      const { url } = backend(name)
      const c: Coordinator = await connect(url, { memberId: rid('m') })
      t.after(() => c.stop())
      const prefix = rid('p')
      await fc.assert(
        fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }), async (raw) => {
          const group = `${prefix}${raw}`
          try {
            await c.createGroup(group)
          } catch (err) {
            if (err instanceof InvalidIdError) {
              assert.ok(!(await c.getGroups()).includes(group), 'a refused id must not have been written')
              return
            }
            throw err
          }
          assert.ok((await c.getGroups()).includes(group), `created group ${JSON.stringify(group)} not listed`)
          await c.joinGroup(group, { id: raw })
          assert.deepEqual(await c.getMembers(group), [c.memberId])
          assert.deepEqual(await c.getMemberCapabilities(group, c.memberId), { id: raw })
          await c.leaveGroup(group)
          await c.deleteGroup(group)
        }),
        { numRuns: runs },
      )
    })

    it(`properties: ${name}: JSON-like capabilities round-trip exactly`, async (t) => {
      const { url } = backend(name)
      const a = await connect(url, { memberId: rid('m') })
      const b = await connect(url, { memberId: rid('m') })
      t.after(() => Promise.all([a.stop(), b.stop()]))
      const g = rid('g')
      await a.joinGroupCreate(g)
      await b.joinGroup(g, null)
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (v) => {
          const caps = JSON.parse(JSON.stringify(v)) as unknown
          await b.updateCapabilities(g, caps)
          assert.deepEqual(await a.getMemberCapabilities(g, b.memberId), caps)
        }),
        { numRuns: runs },
      )
    })
  }
})
