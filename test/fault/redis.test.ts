/**
 * Redis faults, on a private redis-server without persistence: SIGKILL it and start it again
 * empty. tooz never notices that (§4); rollcall's members must be back in their groups, with their
 * capabilities, within about one heartbeat interval of the server's return, and a held lock must
 * be reported lost.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { connect, type Coordinator } from '../../src/index.js'
import { startRedis, type PrivateServer } from '../support/servers.js'
import { TIMING } from '../support/timing.js'
import { nextEvent, rid } from '../support/wait.js'

async function server(t: TestContext): Promise<PrivateServer> {
  const srv = await startRedis()
  t.after(() => srv.stop())
  return srv
}

async function open(t: TestContext, url: string): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs })
  t.after(() => c.stop())
  return c
}

describe('redis faults', () => {
  it('redis: fault: after the server is SIGKILLed and restarts empty, every member rejoins within one heartbeat interval', async (t) => {
    const srv = await server(t)
    const url = `${srv.url}?timeout=${TIMING.expirySeconds}`
    const a = await open(t, url)
    const b = await open(t, url)
    const g = rid('g')
    await a.joinGroupCreate(g, { who: 'a' })
    await b.joinGroup(g, { who: 'b', blob: new Uint8Array([7]) })
    const held = a.getLock(rid('l'))
    assert.equal(await held.acquire(), true)
    const intervalMs = a.health.heartbeatIntervalMs
    assert.equal(intervalMs, TIMING.expirySeconds * 1000)
    const bound = intervalMs + TIMING.expirySlackMs
    const states: string[] = []
    a.on('connectionStateChanged', (e) => states.push(e.state))
    const at = (p: Promise<unknown>): Promise<number> => p.then(() => Date.now())
    const rejoinedA = at(nextEvent<{ group: string }>(a, 'rejoined', (e) => e.group === g, bound))
    const rejoinedB = at(nextEvent<{ group: string }>(b, 'rejoined', (e) => e.group === g, bound))
    const lockLost = at(nextEvent<{ name: string }>(a, 'lockLost', (e) => e.name === held.name, bound))

    await srv.restart({ wipe: true })
    const backAt = Date.now()
    const rejoinMs = Math.max(await rejoinedA, await rejoinedB) - backAt
    const lockLostMs = (await lockLost) - backAt
    t.diagnostic(
      `members rejoined ${rejoinMs} ms after the server came back empty; the lock holder learned of its loss after ${lockLostMs} ms (heartbeat interval `
        + `${intervalMs} ms)`,
    )
    assert.ok(rejoinMs <= intervalMs, `rejoined after ${rejoinMs} ms, more than one heartbeat interval (${intervalMs} ms)`)
    assert.deepEqual(states.slice(0, 2), ['suspended', 'reconnected'])
    const expected = new Map<string, unknown>([[a.memberId, { who: 'a' }], [b.memberId, { who: 'b', blob: new Uint8Array([7]) }]])
    const members = await a.getMembersWithCapabilities(g)
    assert.deepEqual([...members.keys()], [...expected.keys()].sort())
    for (const [m, caps] of expected) assert.deepEqual(members.get(m), caps)
    assert.deepEqual(await b.getGroups().then((gs) => gs.filter((x) => x === g)), [g])
    assert.equal(held.acquired, false)
    const again = b.getLock(held.name)
    assert.equal(await again.acquire({ blocking: false }), true, 'the lost lock is free for another holder')
  })

  it('redis: fault: start() against a killed server fails with ConnectionError; a member rejoins after an outage longer than its liveness', async (t) => {
    const srv = await server(t)
    const url = `${srv.url}?timeout=${TIMING.expirySeconds}`
    const a = await open(t, url)
    const g = rid('g')
    await a.joinGroupCreate(g)
    const states: string[] = []
    a.on('connectionStateChanged', (e) => states.push(e.state))
    const lost = nextEvent<{ group: string }>(a, 'membershipLost', (e) => e.group === g, 15_000)
    srv.kill()
    await assert.rejects(connect(url, { memberId: rid('m') }), (e: Error) => e.name === 'ConnectionError' && e.message.includes(`127.0.0.1:${srv.port}`))
    // Stay down for longer than membership_timeout: the member's liveness has surely lapsed.
    await new Promise((r) => setTimeout(r, TIMING.expirySeconds * 1000 + 1_000))
    await lost
    const reconnected = nextEvent<{ state: string }>(a, 'connectionStateChanged', (e) => e.state === 'reconnected', 15_000)
    const rejoined = nextEvent<{ group: string }>(a, 'rejoined', (e) => e.group === g, 15_000)
    await srv.start({ wipe: true })
    await reconnected
    await rejoined
    assert.deepEqual(states, ['suspended', 'lost', 'reconnected'])
    assert.deepEqual(await a.getMembers(g), [a.memberId])
  })
})
