/** The memcached driver: exact layout, round trips, garbage collection, recovery and refusals. */
import assert from 'node:assert/strict'
import { chmodSync } from 'node:fs'
import { dirname } from 'node:path'
import { once } from 'node:events'
import { createServer, connect as netConnect, type Socket } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import {
  ConnectionError,
  GroupNotEmptyError,
  InvalidIdError,
  InvalidOptionError,
  SerializationError,
  connect,
  type ConnectOptions,
  type Coordinator,
} from '../../src/index.js'
import { MemcachedClient } from '../../src/clients/memcached/memcached-client.js'
import { recheckInMs } from '../../src/coordination/drivers/memcached/memcached-expiries.js'
import { KEYS, encodeGroup, memberEntry } from '../../src/coordination/drivers/memcached/memcached-layout.js'
import { selfSignedCertificate } from '../support/certificate.js'
import { TIMING } from '../support/timing.js'
import { TcpProxy } from '../support/proxy.js'
import { freePort, startMemcached } from '../support/servers.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'
import { PrivateMemcached, RecordingProxy, sharedMemcached } from './memcached-support.js'

async function open(t: TestContext, url: string, options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

function raw(t: TestContext, port = sharedMemcached().port): MemcachedClient {
  const c = new MemcachedClient({ hosts: [{ host: '127.0.0.1', port }], connectTimeoutMs: 2_000, requestTimeoutMs: 2_000 })
  t.after(() => c.close())
  return c
}

const hex = (b: Uint8Array | undefined): string => Buffer.from(b ?? []).toString('hex')
const verb = (line: string): string => line.split(' ')[0]!

const COMMAND = /^(get|gets|set|add|cas|delete|touch|mg|ms|md|stats|version)( |$)/

/**
 * A proxy in front of the shared memcached that can hold every reply back: what a client sends
 * while no reply has reached it is one round trip, and each release of the held replies lets the
 * next round leave. Listens on 127.0.0.1 only; closed by the test that made it.
 */
class GatedProxy {
  readonly #pairs = new Set<[Socket, Socket]>()
  #gated = false
  #held: (() => void)[] = []
  #lines: string[] = []
  #lastSentAt = 0
  #replyBytes = 0
  private constructor(readonly port: number) {}

  static async start(t: TestContext, target: { host: string; port: number }): Promise<GatedProxy> {
    let proxy: GatedProxy | undefined
    const server = createServer((client) => {
      const upstream = netConnect(target.port, target.host)
      const pair: [Socket, Socket] = [client, upstream]
      proxy!.#pairs.add(pair)
      client.on('data', (d: Buffer) => {
        if (proxy!.#gated) {
          proxy!.#lines.push(...d.toString('latin1').split('\r\n').filter((l) => COMMAND.test(l)))
          proxy!.#lastSentAt = Date.now()
        }
        upstream.write(d)
      })
      upstream.on('data', (d: Buffer) => {
        if (!proxy!.#gated) return void client.write(d)
        proxy!.#replyBytes += d.length
        proxy!.#held.push(() => client.write(d))
      })
      const end = (): void => {
        proxy!.#pairs.delete(pair)
        client.destroy()
        upstream.destroy()
      }
      client.on('close', end).on('error', end)
      upstream.on('close', end).on('error', end)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    proxy = new GatedProxy((server.address() as { port: number }).port)
    t.after(async () => {
      for (const [a, b] of proxy!.#pairs) {
        a.destroy()
        b.destroy()
      }
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })
    return proxy
  }

  get url(): string {
    return `memcached://127.0.0.1:${this.port}`
  }

  /** Runs `fn` with replies held back: the command lines of each round trip, and the reply bytes. */
  async rounds<T>(fn: () => Promise<T>): Promise<{ result: T; rounds: string[][]; replyBytes: number }> {
    this.#lines = []
    this.#replyBytes = 0
    this.#gated = true
    let settled = false
    const run = fn().finally(() => {
      settled = true
    })
    run.catch(() => {})
    const rounds: string[][] = []
    try {
      const deadline = Date.now() + TIMING.eventMs
      this.#lastSentAt = Date.now()
      while (Date.now() < deadline) {
        // A round is over once the client has sent nothing for a while (it is waiting for replies).
        await waitFor('the client to stop sending', () => Date.now() - this.#lastSentAt > 150, TIMING.eventMs, 10)
        if (this.#lines.length > 0) rounds.push(this.#lines.splice(0))
        if (this.#held.length === 0 && settled) break
        for (const flush of this.#held.splice(0)) flush()
        this.#lastSentAt = Date.now()
      }
    } finally {
      this.#gated = false
      for (const flush of this.#held.splice(0)) flush()
    }
    return { result: await run, rounds, replyBytes: this.#replyBytes }
  }
}

describe('memcached driver', { concurrency: 4 }, () => {
  it('memcached: layout: keys, flags, bytes and expiries are those Python tooz 3.1 writes (layouts/memcached.txt)', async (t) => {
    const mc = await startMemcached()
    t.after(() => mc.stop())
    const c = await open(t, `${mc.url}?timeout=30`, { memberId: 'dump-member' })
    const m = raw(t, mc.port)
    await c.createGroup('dump-group')
    await c.joinGroup('dump-group', { binary: 'compute', host: 'h1', enabled: true })
    const lock = c.getLock('dump-lock')
    assert.equal(await lock.acquire(), true)
    c.watchElectedAsLeader('dump-group', () => {})
    await waitFor('election', () => c.isLeader('dump-group'), TIMING.eventMs)
    const items = await m.get([
      '_TOOZ_GROUP_LIST',
      '_TOOZ_GROUP_dump-group',
      '_TOOZ_MEMBER_dump-member',
      '__TOOZ_LOCK__TOOZ_GROUP_LEADER_dump-group',
      '__TOOZ_LOCK_dump-lock',
    ])
    const expect: [string, number, string][] = [
      ['_TOOZ_GROUP_LIST', 2, '91c40a64756d702d67726f7570'],
      [
        '_TOOZ_GROUP_dump-group',
        2,
        '81c40b64756d702d6d656d62657281c40c6361706162696c697469657383a662696e617279a7636f6d70757465a4686f7374a26831a7656e61626c6564c3',
      ],
      ['_TOOZ_MEMBER_dump-member', 1, '4974277320616c69766521'],
      ['__TOOZ_LOCK__TOOZ_GROUP_LEADER_dump-group', 1, '64756d702d6d656d626572'],
      ['__TOOZ_LOCK_dump-lock', 1, '64756d702d6d656d626572'],
    ]
    for (const [key, flags, bytes] of expect) {
      assert.equal(items.get(key)?.flags, flags, `flags of ${key}`)
      assert.equal(hex(items.get(key)?.value), bytes, `bytes of ${key}`)
      const ttl = Number((await m.meta('mg', key, ['t'])).flags.get('t'))
      if (key.startsWith('_TOOZ_GROUP')) assert.equal(ttl, -1, `${key} never expires`)
      else assert.ok(ttl >= 28 && ttl <= 30, `${key} expires in ${ttl} s`)
    }
    assert.equal(await c.getLeader('dump-group'), 'dump-member')
    await lock.release()
    await c.stop()
    // After stop, as after tooz's: only the group list and the (now empty) group remain.
    const after = await m.get(expect.map(([k]) => k))
    assert.deepEqual([...after.keys()].sort(), ['_TOOZ_GROUP_LIST', '_TOOZ_GROUP_dump-group'])
    assert.equal(hex(after.get('_TOOZ_GROUP_dump-group')!.value), '80')
  })

  it('memcached: members: a group is read with one gets and ONE multi-get of every member key', async (t) => {
    const proxy = await RecordingProxy.start(t, sharedMemcached())
    const c = await open(t, proxy.url)
    const m = raw(t)
    const g = rid('g')
    await c.joinGroupCreate(g, { me: true })
    const others = Array.from({ length: 50 }, (_, i) => `${g}-peer-${i}`)
    const item = (await m.gets(KEYS.group(g)))!
    const entries = [memberEntry(c.memberId, new Uint8Array([0x80])), ...others.map((o) => memberEntry(o, new Uint8Array([0xc0])))]
    assert.equal(await m.store('cas', KEYS.group(g), encodeGroup(entries), 2, 0, item.cas), 'stored')
    await Promise.all(others.map((o) => m.store('set', KEYS.member(o), Buffer.from("It's alive!"), 1, 60)))
    const { result, commands } = await proxy.record(() => c.getMembersWithCapabilities(g))
    assert.equal(result.size, 51)
    assert.deepEqual(commands.map((l) => l.split(' ')[0]), ['gets', 'get'])
    assert.equal(commands[1]!.split(' ').length - 1, 50, 'one get naming all 50 other member keys')
  })

  it('memcached: members: 5,000 members are listed in two round trips', async (t) => {
    const proxy = await RecordingProxy.start(t, sharedMemcached())
    const c = await open(t, proxy.url)
    const m = raw(t)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const others = Array.from({ length: 4_999 }, (_, i) => `${g}-peer-${i}`)
    const item = (await m.gets(KEYS.group(g)))!
    const caps = new Uint8Array([0x81, 0xa4, 0x68, 0x6f, 0x73, 0x74, 0xa2, 0x68, 0x31]) // {'host': 'h1'}
    await m.store('cas', KEYS.group(g), encodeGroup([memberEntry(c.memberId, caps), ...others.map((o) => memberEntry(o, caps))]), 2, 0, item.cas)
    await Promise.all(others.map((o) => m.store('set', KEYS.member(o), Buffer.from("It's alive!"), 1, 120)))
    const started = performance.now()
    const { result, commands } = await proxy.record(() => c.getMembersWithCapabilities(g))
    t.diagnostic(`getMembersWithCapabilities of 5,000 members: ${(performance.now() - started).toFixed(1)} ms, ${commands.length} commands`)
    assert.equal(result.size, 5_000)
    assert.deepEqual(result.get(others[4_998]!), { host: 'h1' })
    assert.deepEqual(commands.map((l) => l.split(' ')[0]), ['gets', 'get'])
  })

  it("memcached: expiry: a key with n whole seconds left may lapse from n − 2 s on (a late tick moves memcached's clock by 2), so re-reads start then", () => {
    assert.equal(recheckInMs(Infinity), Infinity)
    assert.equal(recheckInMs(1), 100)
    assert.equal(recheckInMs(2), 100, 'with 2 s left the key may lapse at once: re-read every 100 ms')
    assert.equal(recheckInMs(3), 1_000)
    assert.equal(recheckInMs(30), 28_000)
  })

  it(
    "memcached: expiry: a watched group is re-read through the last two seconds of its first member key's TTL, so a member that stops beating is seen "
      + 'leaving right after memcached drops its key',
    async (t) => {
      const url = `${sharedMemcached().url}?timeout=${TIMING.expirySeconds + 1}`
      // Polls a minute apart: only the re-reads at the member's expiry can deliver memberLeft in time.
      const a = await open(t, url, { watchIntervalMs: 60_000 })
      const b = await open(t, url, { heartbeat: false })
      const m = raw(t)
      const g = rid('g')
      await a.joinGroupCreate(g)
      await b.joinGroup(g)
      await a.watchGroup(g)
      const left = nextEvent<{ member: string }>(a, 'memberLeft', (e) => e.member === b.memberId, (TIMING.expirySeconds + 1) * 1000 + TIMING.expirySlackMs)
        .then(() => performance.now())
      // memcached's own verdict: a raw client asking every 20 ms whether b's key is still there.
      let goneAt: number | undefined
      while (goneAt === undefined) {
        if ((await m.get([KEYS.member(b.memberId)])).size === 0) goneAt = performance.now()
        else await new Promise((r) => setTimeout(r, 20))
      }
      const lagMs = (await left) - goneAt
      t.diagnostic(`memberLeft ${lagMs.toFixed(0)} ms after memcached dropped the member key (re-reads every 100 ms in its last two seconds; polls 60 s apart)`)
      assert.ok(lagMs < 1_000, `memberLeft came ${lagMs.toFixed(0)} ms after the key lapsed; the re-reads are 100 ms apart`)
    },
  )

  it('memcached: members: dead members are pruned by the reader (never itself) and do not block deleteGroup', async (t) => {
    const c = await open(t, sharedMemcached().url)
    const m = raw(t)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const item = (await m.gets(KEYS.group(g)))!
    const ghost = rid('ghost')
    const entries = [memberEntry(c.memberId, new Uint8Array([0xc0])), memberEntry(ghost, new Uint8Array([0xc0]))]
    await m.store('cas', KEYS.group(g), encodeGroup(entries), 2, 0, item.cas)
    // Even with its own member key gone, the reader keeps itself (tooz: "we know we're alive").
    await m.delete(KEYS.member(c.memberId))
    assert.deepEqual(await c.getMembers(g), [c.memberId])
    assert.equal(hex((await m.gets(KEYS.group(g)))!.value), hex(encodeGroup([entries[0]!])))
    // A dead member alone does not make the group non-empty (tooz would say GroupNotEmpty).
    await c.leaveGroup(g)
    const again = (await m.gets(KEYS.group(g)))!
    await m.store('cas', KEYS.group(g), encodeGroup([memberEntry(ghost, new Uint8Array([0xc0]))]), 2, 0, again.cas)
    await c.deleteGroup(g)
    assert.equal(await m.gets(KEYS.group(g)), undefined)
    assert.ok(!(await c.getGroups()).includes(g))
  })

  it('memcached: members: a join that finds itself still listed writes the group back, so a prune read before its key was set again fails', async (t) => {
    const c = await open(t, sharedMemcached().url)
    const m = raw(t)
    const g = rid('g')
    await c.joinGroupCreate(g)
    // Another member's prune: it reads the group, finds our key gone (lapsed in a cut), and will write the group without us.
    await m.delete(KEYS.member(c.memberId))
    const read = (await m.gets(KEYS.group(g)))!
    // Our rejoin meanwhile: still listed.
    await assert.rejects(c.joinGroup(g), { code: 'MEMBER_EXISTS' })
    const pruned = await m.store('cas', KEYS.group(g), encodeGroup([]), 2, 0, read.cas)
    assert.equal(pruned, 'exists', 'the prune read before the rejoin must fail its compare-and-swap')
    assert.deepEqual(await c.getMembers(g), [c.memberId])
  })

  it('memcached: members: a live member keeps deleteGroup from running', async (t) => {
    const a = await open(t, sharedMemcached().url)
    const b = await open(t, sharedMemcached().url)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    await a.leaveGroup(g)
    await assert.rejects(a.deleteGroup(g), GroupNotEmptyError)
  })

  it('memcached: heartbeat: one write and one round trip (member key, held locks, a CAS probe per group); a group is read only after it changed', async (t) => {
    const proxy = await GatedProxy.start(t, sharedMemcached())
    const c = await open(t, proxy.url, { heartbeat: false })
    const m = raw(t)
    const groups = [rid('g'), rid('g'), rid('g')]
    for (const g of groups) await c.joinGroupCreate(g)
    // The first group holds 1,000 members: its value (~40 KB) must not travel with every beat.
    const big = (await m.gets(KEYS.group(groups[0]!)))!
    const peers = Array.from({ length: 999 }, (_, i) => memberEntry(`${groups[0]}-peer-${i}`, new Uint8Array([0x81, 0xa1, 0x6e, i % 100])))
    assert.equal(
      await m.store('cas', KEYS.group(groups[0]!), encodeGroup([memberEntry(c.memberId, new Uint8Array([0xc0])), ...peers]), 2, 0, big.cas),
      'stored',
    )
    const lock = c.getLock(rid('l'))
    assert.equal(await lock.acquire({ blocking: false }), true)
    // The first beat reads each group once, to see this member's entry in it.
    const first = await proxy.rounds(() => c.heartbeat())
    assert.deepEqual(first.rounds.map((r) => r.map(verb)), [['set', 'ms', 'mg', 'mg', 'mg'], ['gets']])
    assert.ok(first.replyBytes > 30_000, `the first beat reads the groups (${first.replyBytes} bytes)`)
    for (let i = 0; i < 2; i++) {
      const steady = await proxy.rounds(() => c.heartbeat())
      assert.deepEqual(steady.rounds.map((r) => r.map(verb)), [['set', 'ms', 'mg', 'mg', 'mg']], 'one round trip, and the lock refresh is not sent twice')
      assert.ok(steady.replyBytes < 200, `a steady beat reads ${steady.replyBytes} bytes whatever the group sizes`)
      assert.equal(steady.result, 28_000, 'a 30 s key may lapse 2 s early')
    }
    assert.equal(lock.acquired, true)
    // Another member joins one group: that one alone is read again, in a second round trip.
    const other = await open(t, sharedMemcached().url)
    await other.joinGroup(groups[1]!)
    const changed = await proxy.rounds(() => c.heartbeat())
    assert.deepEqual(changed.rounds, [changed.rounds[0], [`gets ${KEYS.group(groups[1]!)}`]])
    assert.equal((await proxy.rounds(() => c.heartbeat())).rounds.length, 1)
    // A refresh asked for later is sent then, not answered from an earlier beat.
    assert.deepEqual((await proxy.rounds(() => lock.heartbeat())).rounds.map((r) => r.map(verb)), [['ms']])
    // This member's entry removed behind its back, the group left in place: noticed and rejoined.
    const item = (await m.gets(KEYS.group(groups[2]!)))!
    assert.equal(await m.store('cas', KEYS.group(groups[2]!), encodeGroup([]), 2, 0, item.cas), 'stored')
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === groups[2], TIMING.eventMs)
    await c.heartbeat()
    await rejoined
    assert.deepEqual(await c.getMembers(groups[2]!), [c.memberId])
    await lock.release()
  })

  it("memcached: recovery: a group value deleted behind the member's back is reported and rejoined", async (t) => {
    const c = await open(t, sharedMemcached().url)
    const m = raw(t)
    const g = rid('g')
    await c.joinGroupCreate(g, { v: 1 })
    const events: string[] = []
    c.on('membershipLost', (e) => e.group === g && events.push('membershipLost'))
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, TIMING.eventMs)
    c.on('rejoined', (e) => e.group === g && events.push('rejoined'))
    assert.equal(await m.delete(KEYS.group(g)), true)
    await c.heartbeat()
    await rejoined
    assert.deepEqual(events, ['membershipLost', 'rejoined'])
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { v: 1 })
    assert.ok((await c.getGroups()).includes(g))
  })

  it('memcached: recovery: a restarted memcached is reported lost; locks are lost and groups rejoined', async (t) => {
    const mc = await startMemcached()
    t.after(() => mc.stop())
    const c = await open(t, `${mc.url}?timeout=3`)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const lock = c.getLock(rid('l'))
    await lock.acquire()
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    const lockLost = nextEvent(c, 'lockLost', () => true, 10_000)
    const rejoined = nextEvent<{ group: string }>(c, 'rejoined', (e) => e.group === g, 10_000)
    await mc.restart()
    await lockLost
    await rejoined
    assert.ok(states.includes('lost'), `states ${states.join(' → ')}`)
    assert.equal(lock.acquired, false)
    assert.deepEqual(await c.getMembers(g), [c.memberId])
  })

  it('memcached: errors: a corrupt group value, unknown flags and a corrupt entry give SerializationError', async (t) => {
    const c = await open(t, sharedMemcached().url)
    const m = raw(t)
    const garbage = rid('g')
    await c.createGroup(garbage)
    await m.store('set', KEYS.group(garbage), Buffer.from([0xc1, 0x00]), 2, 0)
    await assert.rejects(c.getMembers(garbage), SerializationError)
    await assert.rejects(c.joinGroup(garbage), SerializationError)
    assert.equal(hex((await m.gets(KEYS.group(garbage)))!.value), 'c100', 'nothing was overwritten')
    const flagged = rid('g')
    await c.createGroup(flagged)
    await m.store('set', KEYS.group(flagged), Buffer.from([0x80]), 7, 0)
    await assert.rejects(c.getMembers(flagged), (err: Error) => err instanceof SerializationError && /Unknown serialization format '7'/.test(err.message))
    // One bad entry hides nobody else.
    const mixed = rid('g')
    await c.joinGroupCreate(mixed, { ok: 1 })
    const bad = rid('bad')
    await m.store('set', KEYS.member(bad), Buffer.from("It's alive!"), 1, 60)
    const item = (await m.gets(KEYS.group(mixed)))!
    const good = memberEntry(c.memberId, new Uint8Array([0x81, 0xa2, 0x6f, 0x6b, 0x01]))
    const corrupt = { id: bad, key: memberEntry(bad, new Uint8Array()).key, value: new Uint8Array([0xa3, 0x61, 0x62, 0x63]) }
    await m.store('cas', KEYS.group(mixed), encodeGroup([good, corrupt]), 2, 0, item.cas)
    const warning = nextEvent(c, 'warning', () => true, TIMING.eventMs)
    const all = await c.getMembersWithCapabilities(mixed)
    assert.deepEqual(all.get(c.memberId), { ok: 1 })
    assert.ok(all.get(bad) instanceof SerializationError)
    await warning
  })

  it("memcached: layout: rewriting a group keeps other members' entries byte for byte", async (t) => {
    const c = await open(t, sharedMemcached().url)
    const m = raw(t)
    const g = rid('g')
    await c.createGroup(g)
    // A Python member whose capabilities hold {'joined_on': datetime(2024,1,2,3,4,5,6789)} (oslo ext 1,
    // tooz.md §3.0): decoding and re-encoding would lose the microseconds.
    const py = rid('py')
    const pyCaps = Buffer.from(
      '81a96a6f696e65645f6f6ec73a0187a364617902a56d6f6e746801a479656172cd07e8a4686f757203a66d696e75746504a67365636f6e6405ab6d6963726f7365636f6e64cd1a85',
      'hex',
    )
    const pyEntry = memberEntry(py, pyCaps)
    const item = (await m.gets(KEYS.group(g)))!
    await m.store('cas', KEYS.group(g), encodeGroup([pyEntry]), 2, 0, item.cas)
    await m.store('set', KEYS.member(py), Buffer.from("It's alive!"), 1, 60)
    await c.joinGroup(g, { n: 1 })
    await c.updateCapabilities(g, { n: 2 })
    const value = (await m.gets(KEYS.group(g)))!.value
    assert.ok(value.includes(Buffer.concat([pyEntry.key, pyEntry.value])), 'the Python entry is intact')
  })

  it('memcached: ids: ids memcached cannot hold are refused before anything is sent', async (t) => {
    const proxy = await RecordingProxy.start(t, sharedMemcached())
    const c = await open(t, proxy.url)
    const { commands } = await proxy.record(async () => {
      await assert.rejects(c.createGroup('x'.repeat(220)), (err: Error) => err instanceof InvalidIdError && /219 bytes/.test(err.message))
      await assert.rejects(c.joinGroup('has space'), InvalidIdError)
      assert.throws(() => c.getLock('tab\there'), InvalidIdError)
      assert.throws(() => c.getLock('l'.repeat(239)), InvalidIdError)
    })
    assert.deepEqual(commands, [])
    const longest = rid('g').padEnd(219, 'x')
    await c.createGroup(longest)
    c.watchElectedAsLeader(longest, () => {})
    await waitFor('the 250-byte leader key', () => c.isLeader(longest), TIMING.eventMs)
    await assert.rejects(connect(proxy.url, { memberId: 'm'.repeat(238) }), InvalidIdError)
    await assert.rejects(connect(proxy.url, { memberId: 'a b' }), InvalidIdError)
  })

  it('memcached: connect: an unreachable server fails within the timeout with ConnectionError naming it', async (t) => {
    const proxy = await TcpProxy.start(sharedMemcached().port)
    t.after(() => proxy.close())
    proxy.pause()
    const started = Date.now()
    await assert.rejects(
      connect(`memcached://127.0.0.1:${proxy.port}?timeout=1`),
      (err: Error) => err instanceof ConnectionError && err.message.includes(`127.0.0.1:${proxy.port}`),
    )
    assert.ok(Date.now() - started < 4_000, `took ${Date.now() - started} ms`)
    const port = await freePort()
    await assert.rejects(connect(`memcached://127.0.0.1:${port}?timeout=5`), (err: Error) => err instanceof ConnectionError && /ECONNREFUSED/.test(err.message))
  })

  it('memcached: connect: extra hosts are a fail-over list; tooz-only options are accepted', async (t) => {
    const port = await freePort()
    const c = await open(t, `memcached://127.0.0.1:${port},127.0.0.1:${sharedMemcached().port}?max_pool_size=4&executor=threaded&timeout=5`)
    const g = rid('g')
    await c.joinGroupCreate(g)
    assert.deepEqual(await c.getMembers(g), [c.memberId])
    assert.equal(await c.heartbeat(), 3_000)
    await assert.rejects(connect(`${sharedMemcached().url}?no_such_option=1`), InvalidOptionError)
  })

  it('memcached: connect: a tooz URL with a path works unchanged, with one warning naming the path', async (t) => {
    const logged: string[] = []
    const c = await open(t, `${sharedMemcached().url}/f00?timeout=5`, {
      logger: { debug() {}, info() {}, warn: (m: string) => void logged.push(m), error() {} },
    })
    assert.deepEqual(logged.filter((m) => m.includes('/f00')), [
      `The path "/f00" of memcached://127.0.0.1:${sharedMemcached().port}/f00?timeout=5 is ignored, as tooz ignores it`,
    ])
    const g = rid('g')
    await c.joinGroupCreate(g)
    // The same keys as a URL without the path: the path chose nothing.
    const plain = await open(t, sharedMemcached().url)
    assert.deepEqual(await plain.getMembers(g), [c.memberId])
  })

  it('memcached: locks: two Lock objects of one member exclude each other, and a stale one cannot free the other', async (t) => {
    const c = await open(t, sharedMemcached().url)
    const m = raw(t)
    const name = rid('l')
    const first = c.getLock(name)
    const second = c.getLock(name)
    assert.equal(await first.acquire({ blocking: false }), true)
    assert.equal(await second.acquire({ blocking: false }), false)
    // Someone breaks the lock; the second object takes it, writing the same member id.
    assert.equal(await c.getLock(name).break(), true)
    assert.equal(await second.acquire({ blocking: false }), true)
    assert.equal(hex((await m.gets(KEYS.lock(name)))!.value), hex(Buffer.from(c.memberId)))
    // tooz would delete it here (same member id); the CAS of the hold tells them apart.
    assert.equal(await first.release(), false)
    assert.ok(await m.gets(KEYS.lock(name)))
    assert.equal(await second.isStillOwner(), true)
    assert.equal(await second.heartbeat(), true)
    assert.equal(await second.release(), true)
    assert.equal(await m.gets(KEYS.lock(name)), undefined)
  })

  it("memcached: locks: with timeout=2, lock and leader keys are stored with 3 s, so they outlive the holder's 500 ms heartbeat deadline", async (t) => {
    // memcached may drop a key up to 2 s early: a 2 s key could lapse at once, while its holder still believes it holds it.
    const proxy = await RecordingProxy.start(t, sharedMemcached())
    const c = await open(t, `${proxy.url}?timeout=2`)
    const [name, group] = [rid('l'), rid('g')]
    const lock = c.getLock(name)
    await c.createGroup(group)
    await c.joinGroup(group)
    const { commands } = await proxy.record(async () => {
      assert.equal(await lock.acquire({ blocking: false }), true)
      c.watchElectedAsLeader(group, () => {})
      await waitFor('election', () => c.isLeader(group), TIMING.eventMs)
    })
    for (const key of [KEYS.lock(name), KEYS.leader(group)]) {
      const writes = commands.filter((l) => l.startsWith(`ms ${key} `))
      assert.ok(writes.length > 0, `${key} was written: ${commands.join(' | ')}`)
      for (const w of writes) assert.ok(w.split(' ').includes('T3'), `${key} is stored with 3 s: ${w}`)
    }
    await lock.release()
  })

  it('memcached: locks: a lock whose key lapsed is reported lost at the next refresh and never freed for its new holder', async (t) => {
    const a = await open(t, `${sharedMemcached().url}?timeout=2`, { heartbeat: false })
    const b = await open(t, sharedMemcached().url)
    const name = rid('l')
    const held = a.getLock(name)
    assert.equal(await held.acquire({ blocking: false }), true)
    const taken = b.getLock(name)
    await waitFor('the lock key (stored with 3 s) to lapse and b to take it', () => taken.acquire({ blocking: false }), 6_000, 100)
    const lost = nextEvent<{ name: string }>(a, 'lockLost', (e) => e.name === name, TIMING.eventMs)
    await a.heartbeat()
    await lost
    assert.equal(held.acquired, false)
    assert.equal(await held.release(), false)
    assert.equal(await taken.isStillOwner(), true)
  })

  it('memcached: connection: a dropped connection is reported suspended, then reconnected to the same server', async (t) => {
    const proxy = await TcpProxy.start(sharedMemcached().port)
    t.after(() => proxy.close())
    const c = await open(t, `memcached://127.0.0.1:${proxy.port}?timeout=5`)
    const g = rid('g')
    await c.joinGroupCreate(g)
    const states: string[] = []
    c.on('connectionStateChanged', (e) => states.push(e.state))
    proxy.cut()
    await waitFor('suspended', () => states.includes('suspended'), TIMING.eventMs)
    proxy.restore()
    assert.deepEqual(await c.getMembers(g), [c.memberId])
    await waitFor('reconnected', () => states.includes('reconnected'), TIMING.eventMs)
    assert.deepEqual(states, ['suspended', 'reconnected'])
  })

  it('memcached: tls: use_ssl connects over TLS, verifying the server certificate', async (t) => {
    const { keyPath, certPath } = selfSignedCertificate(t, 'DNS:mc.test')
    // memcached runs as its own user: it must be able to read the key.
    chmodSync(dirname(certPath), 0o755)
    chmodSync(keyPath, 0o644)
    const mc = await PrivateMemcached.start(t, ['-Z', '-o', `ssl_chain_cert=${certPath},ssl_key=${keyPath}`])
    const c = await open(t, `${mc.url}?use_ssl=true&ca_cert=${encodeURIComponent(certPath)}&timeout=5`)
    const g = rid('g')
    await c.joinGroupCreate(g, { tls: true })
    assert.deepEqual(await c.getMemberCapabilities(g, c.memberId), { tls: true })
    // Without the CA the self-signed certificate is refused; with ssl_check_hostname, 127.0.0.1 is not mc.test.
    await assert.rejects(connect(`${mc.url}?use_ssl=true&timeout=5`), ConnectionError)
    await assert.rejects(
      connect(`${mc.url}?use_ssl=true&ssl_check_hostname=true&ca_cert=${encodeURIComponent(certPath)}&timeout=5`),
      ConnectionError,
    )
    await assert.rejects(connect(`${mc.url}?use_ssl=true&ca_cert=/nonexistent.pem`), InvalidOptionError)
  })
})
