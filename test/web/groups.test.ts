/** The groups view: a group that cannot be read is shown as such and hides no other group. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { connect } from '../../src/index.js'
import { startStatusServer } from '../../src/web/index.js'
import { serverUrl } from '../support/backends.js'
import { rid, waitFor } from '../support/wait.js'

describe('web: groups', () => {
  it('web: groups: a group whose stored value has the wrong type is reported alone; the others still show', async (t) => {
    const namespace = rid('ns')
    const url = `${serverUrl('redis')}?namespace=${namespace}`
    const member = await connect(url, { memberId: 'm1' })
    t.after(() => member.stop())
    const good = rid('good')
    const bad = rid('bad')
    await member.joinGroupCreate(good, { ok: true })
    await member.createGroup(bad)
    const raw = new Redis(serverUrl('redis'))
    t.after(async () => {
      await raw.del(`${namespace}_group:${bad}`, `${namespace}_group:${good}`, `${namespace}_groups`)
      raw.disconnect()
    })
    // Someone else turns the group's hash into a list.
    await raw.del(`${namespace}_group:${bad}`)
    await raw.rpush(`${namespace}_group:${bad}`, 'not', 'a', 'hash')
    const observer = await connect(url, { memberId: 'observer' })
    t.after(() => observer.stop())
    const server = await startStatusServer({ coordinator: observer, port: 0, refreshMs: 200 })
    t.after(() => server.close())
    const body = await waitFor(
      'both groups listed',
      async () => {
        const res = await fetch(`${server.url}v1/groups`)
        const json = (await res.json()) as { groups?: { group: string; members: unknown[]; error?: { code: string } }[] }
        return json.groups?.length === 2 ? json.groups : undefined
      },
      10_000,
      100,
    )
    const byName = new Map(body.map((g) => [g.group, g]))
    assert.equal(byName.get(good)!.members.length, 1)
    assert.equal(byName.get(good)!.error, undefined)
    assert.equal(byName.get(bad)!.error!.code, 'BACKEND_ERROR')
    const page = await (await fetch(server.url)).text()
    assert.match(page, /Cannot be read: /)
  })
})
