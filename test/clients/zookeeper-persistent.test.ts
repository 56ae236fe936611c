/**
 * Persistent watches (addWatch, ZooKeeper 3.6+) against the shared server: a watch fires for
 * every change without being set again, outlives a connection cut within the session (restored
 * with setWatches2) and fires for every change after the owner's re-read, and is gone once
 * removed. Each case uses its own random node and its own clients.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { OPEN_ACL, ZkConnection, type ZkSessionState, type ZkWatchEvent } from '../../src/clients/zookeeper/zookeeper-client.js'
import { OP } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { TcpProxy } from '../support/proxy.js'
import { ZkFrameCounter } from '../support/zk-frame-counter.js'
import { rid, waitFor } from '../support/wait.js'
import { rawZk, sharedHostPort } from '../drivers/zookeeper-support.js'

/** A started client on `port` (the shared server's by default) recording its state changes; stopped after the test. */
async function client(t: TestContext, port = sharedHostPort().port, chroot?: string): Promise<{ conn: ZkConnection; states: ZkSessionState[] }> {
  const states: ZkSessionState[] = []
  const conn = new ZkConnection({
    servers: [{ host: '127.0.0.1', port }],
    randomizeHosts: false,
    sessionTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
    opTimeoutMs: 10_000,
    digestAuth: undefined,
    acl: OPEN_ACL,
    shownAs: `test 127.0.0.1:${port}`,
    onState: (s) => void states.push(s),
    onNewSession: async () => {},
    chroot,
  })
  t.after(() => conn.stop())
  await conn.start()
  return { conn, states }
}

/** A watcher that records `NAME path` per event. */
function recorder(): { seen: string[]; watcher: (e: ZkWatchEvent) => void } {
  const seen: string[] = []
  return { seen, watcher: (e) => void seen.push(`${e.name} ${e.path}`) }
}

/**
 * Resolves once `conn` has received every notification due before now: a one-shot exists watch on
 * a fresh node, which is then created; the server sends a connection's notifications in order.
 */
async function drained(conn: ZkConnection, parent: string): Promise<void> {
  const marker = `${parent}-${rid('mark')}`
  let fired = false
  assert.equal(await conn.exists(marker, () => void (fired = true)), null)
  await conn.create(marker, undefined, 'EPHEMERAL')
  await waitFor('the marker event', () => fired, 5_000)
  await conn.remove(marker)
}

describe('ZooKeeper client: persistent watches (addWatch)', () => {
  it('fires for every event of the node, children included, without being set again', async (t) => {
    const { conn } = await client(t)
    const p = `/${rid('pw')}`
    const r = recorder()
    // Set before the node exists: its creation is reported too.
    assert.equal(await conn.addWatch(p, 'PERSISTENT', r.watcher), true)
    await conn.create(p, undefined, 'PERSISTENT')
    t.after(() => conn.removeAll([p]).catch(() => {}))
    for (let i = 0; i < 5; i++) await conn.create(`${p}/c${i}`, undefined, 'EPHEMERAL')
    await conn.setData(p, Buffer.from('x'))
    for (let i = 0; i < 5; i++) await conn.remove(`${p}/c${i}`)
    await drained(conn, p)
    const expected = [
      `NODE_CREATED ${p}`,
      ...Array(5).fill(`NODE_CHILDREN_CHANGED ${p}`),
      `NODE_DATA_CHANGED ${p}`,
      ...Array(5).fill(`NODE_CHILDREN_CHANGED ${p}`),
    ]
    assert.deepEqual(r.seen, expected)
    await conn.removeWatch(p, 'PERSISTENT', r.watcher)
  })

  it('PERSISTENT_RECURSIVE: created, deleted and data changes of the node and every node below it', async (t) => {
    const { conn } = await client(t)
    const p = `/${rid('pwr')}`
    const r = recorder()
    assert.equal(await conn.addWatch(p, 'PERSISTENT_RECURSIVE', r.watcher), true)
    await conn.create(p, undefined, 'PERSISTENT')
    await conn.create(`${p}/a`, undefined, 'PERSISTENT')
    await conn.create(`${p}/a/b`, undefined, 'EPHEMERAL')
    await conn.setData(`${p}/a/b`, Buffer.from('x'))
    await conn.removeAll([`${p}/a/b`, `${p}/a`, p])
    await drained(conn, p)
    assert.deepEqual(r.seen, [
      `NODE_CREATED ${p}`,
      `NODE_CREATED ${p}/a`,
      `NODE_CREATED ${p}/a/b`,
      `NODE_DATA_CHANGED ${p}/a/b`,
      `NODE_DELETED ${p}/a/b`,
      `NODE_DELETED ${p}/a`,
      `NODE_DELETED ${p}`,
    ])
    await conn.removeWatch(p, 'PERSISTENT_RECURSIVE', r.watcher)
  })

  for (const rooted of [false, true]) {
    it(`outlives a connection cut within the session (setWatches2) and fires after it${rooted ? ', under a chroot' : ''}`, async (t) => {
      const proxy = await TcpProxy.start(sharedHostPort().port)
      t.after(() => proxy.close())
      // Under a chroot the watches set again on the new connection must carry it, as every request does.
      const chroot = rooted ? `/${rid('chroot')}` : ''
      const { conn, states } = await client(t, proxy.port, chroot || undefined)
      const other = await rawZk(t)
      const p = `/${rid('pwc')}`
      if (chroot) await other.create(chroot)
      await other.create(`${chroot}${p}`)
      t.after(() => other.conn.removeAll([`${chroot}${p}`, ...(chroot ? [chroot] : [])]).catch(() => {}))
      const r = recorder()
      assert.equal(await conn.addWatch(p, 'PERSISTENT', r.watcher), true)
      await other.conn.create(`${chroot}${p}/before`, undefined, 'EPHEMERAL')
      await waitFor('the change before the cut', () => r.seen.length === 1, 5_000)
      const session = conn.sessionId
      proxy.cut()
      await waitFor('the cut seen', () => states.includes('suspended'), 10_000)
      proxy.restore()
      await waitFor('the reconnect', () => states.includes('reconnected'), 10_000)
      assert.equal(conn.sessionId, session, 'the same session')
      assert.ok(!states.includes('lost'))
      // `reconnected` comes before the server has handled the setWatches2 that restores the watch, and
      // ZooKeeper reports no change a persistent watch missed (DataTree.setWatches re-adds it as it is):
      // a change made now by another client may precede the watch and go unreported. The owner re-reads
      // instead; the server handles a session's requests in order, so once the re-read (sent after the
      // setWatches2) is answered, the watch is in place and every later change is reported.
      assert.deepEqual(await conn.getChildren(p), ['before'])
      for (let i = 0; i < 3; i++) await other.conn.create(`${chroot}${p}/after${i}`, undefined, 'EPHEMERAL')
      await waitFor('each change after the reconnect', () => r.seen.length === 4, 5_000)
      assert.deepEqual(r.seen, Array(4).fill(`NODE_CHILDREN_CHANGED ${p}`))
      await conn.removeWatch(p, 'PERSISTENT', r.watcher)
    })
  }

  it('is gone once removed, on the server too; removing one of two watchers of a path keeps the other', async (t) => {
    const counter = await ZkFrameCounter.start(sharedHostPort().port)
    t.after(() => counter.close())
    const { conn } = await client(t, counter.port)
    const other = await rawZk(t)
    const p = `/${rid('pwd')}`
    await conn.create(p, undefined, 'PERSISTENT')
    t.after(() => other.conn.removeAll([p]).catch(() => {}))
    const a = recorder()
    const b = recorder()
    assert.equal(await conn.addWatch(p, 'PERSISTENT', a.watcher), true)
    assert.equal(await conn.addWatch(p, 'PERSISTENT', b.watcher), true)
    await conn.removeWatch(p, 'PERSISTENT', a.watcher)
    assert.equal(counter.count(OP.removeWatches), 0, 'the server keeps the watch while a watcher is left')
    await other.conn.create(`${p}/x`, undefined, 'EPHEMERAL')
    await drained(conn, p)
    assert.deepEqual([a.seen.length, b.seen.length], [0, 1])
    await conn.removeWatch(p, 'PERSISTENT', b.watcher)
    assert.equal(counter.count(OP.removeWatches), 1)
    // The server sends nothing more for the path: the only notification now is the marker's.
    const before = counter.notifications
    await other.remove(`${p}/x`)
    await drained(conn, p)
    assert.equal(counter.notifications - before, 1, 'no notification for the removed watch')
    assert.deepEqual([a.seen.length, b.seen.length], [0, 1])
    // Removing again, or a watcher never set, sends nothing and is harmless.
    await conn.removeWatch(p, 'PERSISTENT', b.watcher)
    await conn.removeWatch(p, 'PERSISTENT_RECURSIVE', () => {})
    assert.equal(counter.count(OP.removeWatches), 1)
  })
})
