/**
 * The ZooKeeper client leaving a server that stops renewing its session (issue 27): two fake
 * servers on loopback (fake-zookeeper.ts) answering syncs, the first behind a TCP proxy
 * (test/support/proxy.ts) whose pause makes it silent (no RST, no FIN: packets vanish). The
 * client must resume its session on the second server before the session is presumed expired on
 * its side, and then stay there while that server answers. A client with a single silent server
 * must still be told `lost` by the session's deadline. Real ensembles: test/fault/zookeeper-server-cut.test.ts.
 */
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import { OPEN_ACL, ZkConnection, type ZkSessionState } from '../../src/clients/zookeeper/zookeeper-client.js'
import { OP } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { TcpProxy } from '../support/proxy.js'
import { FakeZk, reply, type Script } from './fake-zookeeper.js'
import { failOnUnhandled } from './hostile-support.js'

failOnUnhandled()

/** The session timeout the fake grants (connectResponse's default). */
const SESSION_MS = 4_000

/** Answers syncs, as a server in touch with its leader does (pings are the fake's own). */
const syncing: Script = {
  request(c, xid, type) {
    if (type === OP.sync) c.sock.write(reply(xid, 0, (w) => w.string('/')))
  },
}

function client(ports: readonly number[], states: { state: ZkSessionState; at: number }[]): ZkConnection {
  return new ZkConnection({
    servers: ports.map((port) => ({ host: '127.0.0.1', port })),
    randomizeHosts: false,
    sessionTimeoutMs: SESSION_MS,
    connectTimeoutMs: 2_000,
    opTimeoutMs: 3_000,
    digestAuth: undefined,
    acl: OPEN_ACL,
    shownAs: 'zookeeper://fake',
    onState: (state) => void states.push({ state, at: performance.now() }),
    onNewSession: async () => {},
  })
}

describe('ZooKeeper client: a server that stops renewing the session', () => {
  it('is left for the next server before the session is presumed expired, the session resumed there', async () => {
    const first = await FakeZk.start(syncing)
    const second = await FakeZk.start(syncing)
    const proxy = await TcpProxy.start(first.port)
    const states: { state: ZkSessionState; at: number }[] = []
    const c = client([proxy.port, second.port], states)
    try {
      await c.start()
      const id = c.sessionId
      // The steady state: syncs answered, the proof moving.
      await sleep(1_500)
      assert.equal(second.connections, 0, 'the client started on the first server')
      const deadline = c.sessionDeadline
      const cutAt = performance.now()
      proxy.pause()
      while (!states.some((s) => s.state === 'reconnected') && performance.now() - cutAt < 2 * SESSION_MS) await sleep(20)
      const back = states.find((s) => s.state === 'reconnected')
      assert.ok(back, `not reconnected: ${JSON.stringify(states)}`)
      assert.ok(back.at < deadline, `reconnected ${Math.round(back.at - deadline)} ms after the deadline it had at the cut`)
      assert.equal(second.connections, 1, 'moved to the second server')
      // The second server answers: the client stays.
      await sleep(SESSION_MS)
      assert.deepEqual(states.map((s) => s.state), ['suspended', 'reconnected'])
      assert.equal(c.generation, 1, 'the same session')
      assert.equal(c.sessionId, id)
      assert.equal(second.connections, 1)
    } finally {
      proxy.resume()
      await c.stop()
      await proxy.close()
      await Promise.all([first.close(), second.close()])
    }
  })

  it('with the only server silent, the session is still presumed lost by its deadline', async () => {
    const only = await FakeZk.start(syncing)
    const proxy = await TcpProxy.start(only.port)
    const states: { state: ZkSessionState; at: number }[] = []
    const c = client([proxy.port], states)
    try {
      await c.start()
      await sleep(1_500)
      const deadline = c.sessionDeadline
      proxy.pause()
      while (!states.some((s) => s.state === 'lost') && performance.now() < deadline + SESSION_MS) await sleep(20)
      const lost = states.find((s) => s.state === 'lost')
      assert.ok(lost, `never told lost: ${JSON.stringify(states)}`)
      // Told at the deadline the client had at the cut (timers may fire late; never early).
      assert.ok(lost.at >= deadline, `told lost ${Math.round(deadline - lost.at)} ms before the deadline`)
      assert.ok(lost.at < deadline + SESSION_MS / 2, `told lost ${Math.round(lost.at - deadline)} ms after the deadline`)
      assert.equal(states[0]?.state, 'suspended', 'the connection was left first')
    } finally {
      proxy.resume()
      await c.stop()
      await proxy.close()
      await only.close()
    }
  })
})
