/**
 * ZooKeeper driver specifics: the exact znodes tooz's kazoo driver writes (read back with a plain
 * client), ids ZooKeeper or tooz cannot take, the chroot, digest ACLs, options and connect
 * failures. Session loss and recovery are in zookeeper-session.test.ts.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it, type TestContext } from 'node:test'
import {
  BackendError,
  ConnectionError,
  connect,
  dumps,
  GroupNotEmptyError,
  InvalidIdError,
  InvalidOptionError,
  InvalidUrlError,
  loads,
  type ConnectOptions,
  type Coordinator,
} from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { rid, waitFor } from '../support/wait.js'
import { TcpProxy } from '../support/proxy.js'
import { freePort, startZookeeper } from '../support/servers.js'
import { assertGroupAndLockShared, codeOf, rawZk, sharedHostPort } from './zookeeper-support.js'
import { relayLagMs } from '../../src/clients/zookeeper/zookeeper-leader-proof.js'

const base = serverUrl('zookeeper')
const NO_AUTH = -102

function withQuery(url: string, query: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}${query}`
}

async function open(t: TestContext, url = base, options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

const hex = (b: Uint8Array | string): string => (typeof b === 'string' ? b : Buffer.from(b).toString('hex'))

describe('zookeeper driver', { concurrency: 4 }, () => {
  it('zookeeper: layout: group, ephemeral member with msgpack capabilities, as tooz writes them', async (t) => {
    const raw = await rawZk(t)
    const c = await open(t)
    const g = rid('g')
    const caps = { binary: 'compute', host: 'h1', enabled: true }
    await c.joinGroupCreate(g, caps)
    const ns = await raw.get('/tooz')
    assert.equal(ns.data.length, 0)
    const group = await raw.get(`/tooz/${g}`)
    assert.equal(group.data.length, 0)
    assert.equal(hex(group.stat.ephemeralOwner), '0000000000000000', 'the group node is persistent')
    const member = await raw.get(`/tooz/${g}/${c.memberId}`)
    // The exact bytes tooz writes for these capabilities (shared/reference/layouts/zookeeper.txt).
    assert.equal(member.data.toString('hex'), '83a662696e617279a7636f6d70757465a4686f7374a26831a7656e61626c6564c3')
    assert.deepEqual(loads(member.data), caps)
    assert.notEqual(hex(member.stat.ephemeralOwner), '0000000000000000', 'the member node is ephemeral')
    await c.updateCapabilities(g, { v: 2 })
    assert.equal(hex((await raw.get(`/tooz/${g}/${c.memberId}`)).data), hex(dumps({ v: 2 })))
    const info = await c.getMemberInfo(g, c.memberId)
    assert.equal(info.createdAt.getTime(), member.stat.ctime)
    assert.ok(info.updatedAt.getTime() >= info.createdAt.getTime())
    await c.stop()
    assert.equal(await raw.exists(`/tooz/${g}/${c.memberId}`), null, 'stop() ends the session, and the member node with it')
    assert.ok(await raw.exists(`/tooz/${g}`))
  })

  it("zookeeper: layout: locks and leaders are kazoo lock contenders holding the member id; the token is the contender's czxid", async (t) => {
    const raw = await rawZk(t)
    const c = await open(t)
    const name = rid('l')
    const lock = c.getLock(name)
    assert.equal(await lock.acquire(), true)
    const [node, ...others] = await raw.children(`/tooz/locks/${name}`)
    assert.deepEqual(others, [])
    const m = /^[0-9a-f]{32}__lock__(\d{10})$/.exec(node!)
    assert.ok(m, `contender node ${node}`)
    const contender = await raw.get(`/tooz/locks/${name}/${node}`)
    assert.equal(lock.fencingToken, contender.stat.czxid)
    assert.equal(contender.data.toString(), c.memberId)
    assert.notEqual(hex(contender.stat.ephemeralOwner), '0000000000000000')
    assert.equal(hex((await raw.get(`/tooz/locks/${name}`)).stat.ephemeralOwner), '0000000000000000')
    await lock.release()
    assert.deepEqual(await raw.children(`/tooz/locks/${name}`), [])

    const g = rid('g')
    await c.joinGroupCreate(g)
    c.watchElectedAsLeader(g, () => {})
    await waitFor('the election', () => c.isLeader(g), TIMING.eventMs)
    const [leader] = await raw.children(`/tooz/${g}/leader`)
    assert.match(leader!, /^[0-9a-f]{32}__lock__\d{10}$/)
    assert.equal((await raw.get(`/tooz/${g}/leader/${leader}`)).data.toString(), c.memberId)
    assert.deepEqual((await raw.children(`/tooz/${g}`)).sort(), [c.memberId, 'leader'].sort())
    assert.deepEqual(await c.getMembers(g), [c.memberId], 'leader is hidden from members')
  })

  it('zookeeper: locks: fencing tokens keep growing when an operator deletes the empty lock node between holders', async (t) => {
    const raw = await rawZk(t)
    const a = await open(t)
    const b = await open(t)
    const name = rid('l')
    const tokens: bigint[] = []
    // Four holders in turn, so that the sequence numbers of the node's children are past 0 before the cleanup.
    for (const c of [a, b, a, b]) {
      const lock = c.getLock(name)
      assert.equal(await lock.acquire({ timeoutMs: TIMING.eventMs }), true)
      tokens.push(lock.fencingToken!)
      await lock.release()
    }
    // The routine cleanup: the lock's node is empty between holders, and an operator deletes it.
    assert.deepEqual(await raw.children(`/tooz/locks/${name}`), [])
    await raw.remove(`/tooz/locks/${name}`)
    for (const c of [b, a]) {
      const lock = c.getLock(name)
      assert.equal(await lock.acquire({ timeoutMs: TIMING.eventMs }), true)
      tokens.push(lock.fencingToken!)
      // The node was made again with tooz's layout: the sequence starts over (kazoo still orders by it), the token does not.
      const [node] = await raw.children(`/tooz/locks/${name}`)
      assert.match(node!, /^[0-9a-f]{32}__lock__\d{10}$/)
      await lock.release()
    }
    for (let i = 1; i < tokens.length; i++) {
      assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i} (${tokens[i]}) is larger than token ${i - 1} (${tokens[i - 1]}): ${tokens.join(', ')}`)
    }
  })

  it('zookeeper: locks: a waiter queues one node, watches its predecessor, and withdraws it when the wait ends', async (t) => {
    const raw = await rawZk(t)
    const a = await open(t)
    const b = await open(t)
    const name = rid('l')
    const held = a.getLock(name)
    await held.acquire()
    const waiter = b.getLock(name)
    const controller = new AbortController()
    const waiting = waiter.acquire({ signal: controller.signal }).catch((err: unknown) => err)
    await waitFor("the waiter's node", async () => (await raw.children(`/tooz/locks/${name}`)).length === 2, TIMING.eventMs)
    await new Promise((r) => setTimeout(r, 300))
    assert.equal((await raw.children(`/tooz/locks/${name}`)).length, 2, 'one node per waiter, however long it waits')
    controller.abort(new Error('enough'))
    assert.match(String(await waiting), /enough/)
    await waitFor('the withdrawal', async () => (await raw.children(`/tooz/locks/${name}`)).length === 1, TIMING.eventMs)
    assert.equal(await b.getLock(name).acquire({ timeoutMs: TIMING.shortWaitMs }), false)
    // The wait returns at its deadline; its node is withdrawn right after, in the background.
    await waitFor('a timed-out wait to withdraw its node too', async () => (await raw.children(`/tooz/locks/${name}`)).length === 1, TIMING.eventMs)
  })

  it('zookeeper: layout: getLeader reads only, never creating the group or its leader node', async (t) => {
    const raw = await rawZk(t)
    const c = await open(t)
    const g = rid('g')
    assert.equal(await c.getLeader(g), null)
    assert.equal(await raw.exists(`/tooz/${g}`), null)
    await c.createGroup(g)
    assert.equal(await c.getLeader(g), null)
    assert.equal(await raw.exists(`/tooz/${g}/leader`), null)
  })

  it('zookeeper: groups: an empty leader node left by an election does not pin the group; a live contender does', async (t) => {
    const c = await open(t)
    const d = await open(t)
    const g = rid('g')
    await c.createGroup(g)
    const cb = (): void => {}
    c.watchElectedAsLeader(g, cb)
    await waitFor('the election', () => c.isLeader(g), TIMING.eventMs)
    await assert.rejects(d.deleteGroup(g), GroupNotEmptyError)
    await c.unwatchElectedAsLeader(g, cb)
    await d.deleteGroup(g)
    assert.ok(!(await d.getGroups()).includes(g))
  })

  it('zookeeper: ids: refused before anything is written', async (t) => {
    const raw = await rawZk(t)
    const c = await open(t)
    for (const bad of ['a/b', '/abs', '.', '..', 'grüße', 'nul\u0000', 'tab\t', 'del\u007f', 'locks']) {
      await assert.rejects(c.createGroup(bad), InvalidIdError, `group ${JSON.stringify(bad)}`)
      await assert.rejects(c.joinGroupCreate(bad), InvalidIdError)
    }
    assert.equal(await raw.exists('/tooz/a'), null)
    assert.equal(await raw.exists('/abs'), null)
    assert.throws(() => c.getLock('x/y'), InvalidIdError)
    assert.throws(() => c.getLock('ünï'), InvalidIdError)
    await assert.rejects(c.getMemberCapabilities(rid('g'), 'leader'), /tooz keeps a group's election/)
    await assert.rejects(connect(base, { memberId: 'leader' }), InvalidIdError)
    await assert.rejects(connect(base, { memberId: 'me/you' }), (err: Error) => err instanceof InvalidIdError && err.message.includes('separator'))
    await assert.rejects(c.createGroup('locks'), /tooz keeps its locks/)
    // Printable ASCII is fine, dots and colons included.
    const ok = `${rid('g')}.x:y-z_~`
    await c.joinGroupCreate(ok)
    assert.ok(await raw.exists(`/tooz/${ok}/${c.memberId}`))
  })

  it('zookeeper: namespace and chroot: the URL path is a chroot, the namespace lives under it', async (t) => {
    const raw = await rawZk(t)
    const root = rid('chroot')
    const c = await open(t, withQuery(`${base}/${root}/deeper`, 'namespace=ns1'))
    const g = rid('g')
    await c.joinGroupCreate(g, { x: 1 })
    assert.deepEqual(loads((await raw.get(`/${root}/deeper/ns1/${g}/${c.memberId}`)).data), { x: 1 })
    await c.getLock('l1').acquire()
    assert.equal((await raw.children(`/${root}/deeper/ns1/locks/l1`)).length, 1)
    assert.equal(await raw.exists(`/tooz/${g}`), null)
    // A tooz peer reaches the same nodes with namespace=<chroot>/<namespace> and no path.
    const d = await open(t, withQuery(base, `namespace=${root}/deeper/ns1`))
    assert.deepEqual(await d.getMembers(g), [c.memberId])
    await assert.rejects(connect(`${base}/a/../b`), InvalidUrlError)
    await assert.rejects(connect(withQuery(base, 'namespace=a/./b')), InvalidOptionError)
  })

  it("zookeeper: auth: user:password puts tooz's digest ACL on every node; others cannot write or read them", async (t) => {
    const ns = rid('ns')
    const url = withQuery(base.replace('zookeeper://', 'zookeeper://rollcall:s3cret@'), `namespace=${ns}`)
    const c = await open(t, url)
    const g = rid('g')
    await c.joinGroupCreate(g, { a: 1 })
    const lock = c.getLock('l')
    await lock.acquire()
    // kazoo make_digest_acl('rollcall', 's3cret', all=True), computed by Python: rollcall:DgZXK+/EizBHl0SrA/5/F2dIHDk=
    const expected = [{ scheme: 'digest', id: 'rollcall:DgZXK+/EizBHl0SrA/5/F2dIHDk=', perms: 31 }]
    assert.equal(`rollcall:${createHash('sha1').update('rollcall:s3cret').digest('base64')}`, expected[0]!.id)
    const authed = await rawZk(t, { auth: 'rollcall:s3cret' })
    const [contender] = await authed.children(`/${ns}/locks/l`)
    for (const path of [`/${ns}`, `/${ns}/${g}`, `/${ns}/${g}/${c.memberId}`, `/${ns}/locks`, `/${ns}/locks/l`, `/${ns}/locks/l/${contender}`]) {
      assert.deepEqual(await authed.acl(path), expected, path)
    }
    const anon = await rawZk(t)
    await assert.rejects(anon.set(`/${ns}/${g}`, Buffer.from('x')), (e) => codeOf(e) === NO_AUTH)
    await assert.rejects(anon.create(`/${ns}/${g}/intruder`), (e) => codeOf(e) === NO_AUTH)
    await assert.rejects(anon.get(`/${ns}/${g}/${c.memberId}`), (e) => codeOf(e) === NO_AUTH)
    await assert.rejects(anon.remove(`/${ns}/locks/l/${contender}`), (e) => codeOf(e) === NO_AUTH)
    // A rollcall member without the credentials is refused with a message that says why.
    const stranger = await open(t, withQuery(base, `namespace=${ns}`))
    await assert.rejects(stranger.joinGroup(g), (e: Error) => e instanceof BackendError && /ACL/.test(e.message))
    // With them, it works, and the password never shows in what is printed.
    const friend = await open(t, url)
    await friend.joinGroup(g)
    assert.deepEqual(await friend.getMembers(g), [c.memberId, friend.memberId].sort())
    assert.ok(!friend.url.includes('s3cret'))
  })

  it('zookeeper: connect: an IPv6 literal ([::1]) reaches a server that listens on ::1 only; groups, capabilities and locks work over it', async (t) => {
    const srv = await startZookeeper('::1')
    t.after(() => srv.kill())
    assert.match(srv.url, /^zookeeper:\/\/\[::1\]:\d+$/)
    // Nothing listens on the IPv4 loopback at that port: the members below can only talk over IPv6.
    await assert.rejects(connect(`zookeeper://127.0.0.1:${srv.port}?timeout=1`, { memberId: rid('v4') }), ConnectionError)
    const url = `${srv.url}?timeout=5`
    await assertGroupAndLockShared(await open(t, url), await open(t, url))
  })

  it('zookeeper: connect: an unreachable host fails within the timeout, naming the host but not the password', async (t) => {
    const port = await freePort()
    const started = Date.now()
    await assert.rejects(connect(`zookeeper://u:hunter2@127.0.0.1:${port}?timeout=1`), (err: Error) => {
      assert.ok(err instanceof ConnectionError, String(err))
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`))
      assert.ok(!err.message.includes('hunter2') && !String(err.stack).includes('hunter2'))
      return true
    })
    const took = Date.now() - started
    assert.ok(took >= 900 && took < 4_000, `took ${took} ms`)
    t.diagnostic(`refused port: ConnectionError after ${took} ms (timeout 1 s)`)
  })

  it('zookeeper: connect: a server that accepts but never answers fails within the timeout', async (t) => {
    const proxy = await TcpProxy.start(sharedHostPort().port)
    t.after(() => proxy.close())
    proxy.pause()
    const started = Date.now()
    await assert.rejects(connect(`zookeeper://127.0.0.1:${proxy.port}?timeout=1.5`), ConnectionError)
    const took = Date.now() - started
    assert.ok(took >= 1_400 && took < 5_000, `took ${took} ms`)
    t.diagnostic(`silent server: ConnectionError after ${took} ms (timeout 1.5 s)`)
  })

  it('zookeeper: connect: several hosts, from the authority and hosts=; the dead one is skipped', async (t) => {
    const dead = await freePort()
    const { host, port } = sharedHostPort()
    const c = await open(t, `zookeeper://127.0.0.1:${dead},${host}:${port}?timeout=5`)
    await c.createGroup(rid('g'))
    const d = await open(t, `zookeeper://127.0.0.1:${dead}?hosts=${host}:${port}&randomize_hosts=false&timeout=5`)
    assert.ok((await d.getGroups()).length > 0)
  })

  it('zookeeper: options: tooz options are accepted, bad TLS settings and unknown ones are refused plainly', async (t) => {
    const c = await open(t, withQuery(base, 'timeout=3&handler=threading&connection_retry=x&command_retry=y&verify_certs=false&randomize_hosts=true'))
    // The session's wire deadline (the negotiated 3 s less the 300 ms expiry margin, from the send
    // time of the last request the leader is proven to have counted: at most the relay lag of
    // 875 ms and two 250 ms sync periods before now) plus a third of the timeout: the
    // Coordinator's backstop deadline.
    const lapsesInMs = await c.heartbeat()
    assert.ok(lapsesInMs >= 3_700 - relayLagMs(3_000) - 500 && lapsesInMs <= 4_000, `heartbeat() returned ${lapsesInMs} ms for a 3 s session`)
    await assert.rejects(connect(withQuery(base, 'use_ssl=true&ca=/etc/ca.pem')), (e: Error) => e instanceof InvalidOptionError && /TLS/.test(e.message))
    await assert.rejects(connect(withQuery(base, 'handler=gevent')), InvalidOptionError)
    await assert.rejects(connect(withQuery(base, 'bogus=1')), (e: Error) => e instanceof InvalidOptionError && /namespace/.test(e.message))
    await assert.rejects(connect(withQuery(base, 'certfile=/etc/client.pem')), (e: Error) => e instanceof InvalidOptionError && /use_ssl=true/.test(e.message))
  })
})
