/**
 * The file driver's own behaviour: tooz's exact on-disk layout and bytes, expiry by mtime, garbage
 * collection of dead members, corrupt records, lock names and URLs it refuses, and its costs (no
 * thread-pool hop per call, member files read again only when they changed).
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createHash } from 'node:crypto'
import fs, { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import {
  connect,
  dumps,
  GroupNotEmptyError,
  InvalidIdError,
  InvalidOptionError,
  InvalidUrlError,
  parseBackendUrl,
  SerializationError,
  type ConnectOptions,
  type Coordinator,
} from '../../src/index.js'
import type { CoordinationDriver } from '../../src/coordination/driver.js'
import fileDriver from '../../src/coordination/drivers/file/index.js'
import { decodeMemberRecord, encodeMemberRecord } from '../../src/coordination/drivers/file/file-format.js'
import { withFileLock } from '../../src/coordination/drivers/file/file-lock.js'
import { silentLogger } from '../../src/coordination/logger.js'
import { scriptProcess } from '../support/script-process.js'
import { TIMING } from '../support/timing.js'
import { nextEvent, rid, waitFor } from '../support/wait.js'

const sha1 = (id: string): string => createHash('sha1').update(id, 'utf8').digest('hex')
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const utf8 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'utf8'))

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-file-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function open(t: TestContext, url: string, options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

function memberFile(dir: string, group: string, member: string): string {
  return join(dir, 'groups', sha1(group), `${sha1(member)}.raw`)
}

function age(path: string, seconds: number): void {
  const then = new Date(Date.now() - seconds * 1000)
  utimesSync(path, then, then)
}

/** The driver itself, without a Coordinator around it: for tests of what one primitive costs. */
async function bareDriver(t: TestContext, dir: string, memberId: string): Promise<CoordinationDriver> {
  const events = { connectionState() {}, sessionReplaced() {}, membershipLost() {}, lockLost() {}, warning() {} }
  const options = { timeoutMs: 10_000, executor: '' }
  const d = fileDriver.create({ url: parseBackendUrl(`file://${dir}`), options, memberId, events, signal: new AbortController().signal, log: silentLogger })
  await d.start()
  t.after(() => d.stop())
  return d
}

/** Runs `op` and fails if the event loop turned before it settled (a hop through libuv's thread pool does that). */
async function withinOneTurn<T>(what: string, op: () => Promise<T>): Promise<T> {
  let turned = false
  const check = setImmediate(() => (turned = true))
  const out = await op()
  clearImmediate(check)
  assert.equal(turned, false, `${what} waited for the event loop: an asynchronous file call crept back in`)
  return out
}

/** Read counters in use: a directory and how many files under it readFileSync read. */
const readCounters = new Set<{ dir: string; reads: number }>()
let unspiedReadFileSync: typeof fs.readFileSync | undefined

/**
 * Counts readFileSync calls on paths under `dir` while `fn` runs. One spy serves every counter, so
 * that tests running at once do not undo each other's; the driver's named import sees it through
 * syncBuiltinESMExports().
 */
async function countReads(dir: string, fn: () => Promise<unknown>): Promise<number> {
  const counter = { dir, reads: 0 }
  if (readCounters.size === 0) {
    const original = (unspiedReadFileSync = fs.readFileSync)
    fs.readFileSync = ((path: unknown, ...rest: unknown[]) => {
      for (const c of readCounters) if (typeof path === 'string' && path.startsWith(c.dir)) c.reads++
      return (original as (...a: unknown[]) => unknown)(path, ...rest)
    }) as typeof fs.readFileSync
    syncBuiltinESMExports()
  }
  readCounters.add(counter)
  try {
    await fn()
  } finally {
    readCounters.delete(counter)
    if (readCounters.size === 0) {
      fs.readFileSync = unspiedReadFileSync!
      syncBuiltinESMExports()
    }
  }
  return counter.reads
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** A record as tooz 3.1 writes it, with `capabilities` given as raw msgpack. */
function rawRecord(capabilities: Uint8Array, memberId: Uint8Array): Uint8Array {
  return Buffer.concat([
    Uint8Array.of(0x84),
    dumps('capabilities'),
    capabilities,
    dumps('joined_on'),
    dumps(new Date()),
    dumps('member_id'),
    dumps(memberId),
    dumps('encoded'),
    dumps(false),
  ])
}

describe('file driver', { concurrency: 4 }, () => {
  it('file: layout: directories, sha1 names and .metadata bytes are those of tooz', async (t) => {
    const dir = tempDir(t)
    const c = await open(t, `file://${dir}`, { memberId: 'm1' })
    await c.createGroup('g1')
    await c.joinGroup('g1', { a: utf8('x'), u: 'ж' })
    // The names below were produced by Python tooz 3.1 for group b'g1' and member b'm1'.
    const groupDir = join(dir, 'groups', 'a46e558d11cb2400bab09c1ca969e615142ef3d6')
    assert.deepEqual(readdirSync(groupDir).sort(), ['.metadata', 'ae23b94ccaf714337e4ce5ba99ef3dc257e300df.raw'])
    assert.equal(readFileSync(join(groupDir, '.metadata')).toString('hex'), '82a867726f75705f6964c4026731a7656e636f646564c2')
    assert.ok(existsSync(join(dir, '.driver_lock')))
    assert.ok(statSync(join(dir, 'tmp')).isDirectory())
    assert.deepEqual(readdirSync(join(dir, 'tmp')), [], 'writes go through tmp/ and are renamed away')
    const raw = readFileSync(join(groupDir, 'ae23b94ccaf714337e4ce5ba99ef3dc257e300df.raw')).toString('hex')
    // Python: {'capabilities': {'a': b'x', 'u': 'ж'}, 'joined_on': <ext 1>, 'member_id': b'm1', 'encoded': False}
    assert.ok(raw.startsWith('84ac6361706162696c697469657382a161c40178a175a2d0b6a96a6f696e65645f6f6ec7'), raw)
    assert.ok(raw.endsWith('a96d656d6265725f6964c4026d31a7656e636f646564c2'), raw)
    const info = await c.getMemberInfo('g1', 'm1')
    assert.ok(Math.abs(info.createdAt.getTime() - Date.now()) < 10_000, `joined_on ${info.createdAt.toISOString()}`)
  })

  it('file: format: member records encode byte for byte as Python tooz 3.1 writes them', () => {
    // Python: utils.dumps({'capabilities': ..., 'joined_on': datetime(2024,1,2,3,4,5,6000), 'member_id': ..., 'encoded': False})
    const joinedOn = new Date(2024, 0, 2, 3, 4, 5, 6) // naive local time, as datetime.now() is
    const a = encodeMemberRecord('m1', dumps({ a: utf8('x'), u: 'ж' }), joinedOn)
    assert.equal(
      hex(a),
      '84ac6361706162696c697469657382a161c40178a175a2d0b6a96a6f696e65645f6f6ec73a0187a364617902a56d6f6e746801a479656172cd07e8a4686f7572'
        + '03a66d696e75746504a67365636f6e6405ab6d6963726f7365636f6e64cd1770a96d656d6265725f6964c4026d31a7656e636f646564c2',
    )
    const b = encodeMemberRecord('ж', dumps(null), joinedOn)
    assert.equal(
      hex(b),
      '84ac6361706162696c6974696573c0a96a6f696e65645f6f6ec73a0187a364617902a56d6f6e746801a479656172cd07e8a4686f757203a66d696e75746504a6'
        + '7365636f6e6405ab6d6963726f7365636f6e64cd1770a96d656d6265725f6964c402d0b6a7656e636f646564c2',
    )
    const back = decodeMemberRecord(a)
    assert.equal(back.memberId, 'm1')
    assert.equal(back.joinedOn?.getTime(), joinedOn.getTime())
    assert.equal(hex(back.capabilities), hex(dumps({ a: utf8('x'), u: 'ж' })))
  })

  it('file: format: pre-1.36 records (bytes keys, str ids, no encoded flag) are still read', async (t) => {
    const dir = tempDir(t)
    const c = await open(t, `file://${dir}`)
    const g = rid('old')
    const groupDir = join(dir, 'groups', sha1(g))
    await c.createGroup(g)
    writeFileSync(join(groupDir, '.metadata'), dumps(new Map([[utf8('group_id'), g]])))
    writeFileSync(
      join(groupDir, `${sha1('old-m')}.raw`),
      dumps(new Map<unknown, unknown>([[utf8('member_id'), utf8('old-m')], [utf8('joined_on'), new Date()], [utf8('capabilities'), { x: 1 }]])),
    )
    writeFileSync(join(groupDir, `${sha1('str-m')}.raw`), dumps({ capabilities: 'caps', joined_on: new Date(), member_id: 'str-m' }))
    assert.ok((await c.getGroups()).includes(g))
    const members = await c.getMembersWithCapabilities(g)
    assert.deepEqual([...members.entries()], [['old-m', { x: 1 }], ['str-m', 'caps']])
  })

  it('file: expiry: a member whose .raw is older than timeout is hidden and its file collected; its next beat rejoins it', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`)
    const b = await open(t, `file://${dir}`, { heartbeat: false })
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g, { v: 1 })
    const bFile = memberFile(dir, g, b.memberId)
    age(bFile, 11)
    assert.deepEqual(await a.getMembers(g), [a.memberId])
    assert.equal(existsSync(bFile), false, 'the stale file of another member is collected')
    const lost = nextEvent<{ group: string }>(b, 'membershipLost', (e) => e.group === g, TIMING.eventMs)
    const rejoined = nextEvent<{ group: string }>(b, 'rejoined', (e) => e.group === g, TIMING.eventMs)
    assert.equal(await b.heartbeat(), 10_000)
    await lost
    await rejoined
    assert.deepEqual(await a.getMembers(g), [a.memberId, b.memberId].sort())
    assert.deepEqual(await a.getMemberCapabilities(g, b.memberId), { v: 1 })
  })

  it("file: expiry: this member's own stale file is hidden but never collected; a heartbeat revives it", async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`, { heartbeat: false, autoWatch: false })
    const g = rid('g')
    await a.joinGroupCreate(g)
    const own = memberFile(dir, g, a.memberId)
    age(own, 30)
    assert.deepEqual(await a.getMembers(g), [])
    await assert.rejects(a.getMemberCapabilities(g, a.memberId), /has not joined/)
    assert.ok(existsSync(own))
    await a.heartbeat()
    assert.ok(Date.now() - statSync(own).mtimeMs < 5_000)
    assert.deepEqual(await a.getMembers(g), [a.memberId])
  })

  it('file: deleteGroup: dead members no longer block it, live ones do', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`)
    const b = await open(t, `file://${dir}`, { heartbeat: false })
    const g = rid('g')
    await a.createGroup(g)
    await b.joinGroup(g)
    await assert.rejects(a.deleteGroup(g), GroupNotEmptyError)
    age(memberFile(dir, g, b.memberId), 60)
    await a.deleteGroup(g)
    assert.equal(existsSync(join(dir, 'groups', sha1(g))), false)
    assert.ok(!(await a.getGroups()).includes(g))
  })

  it('file: members: joining over a stale file of this member id (a dead earlier process) replaces it', async (t) => {
    const dir = tempDir(t)
    const first = await open(t, `file://${dir}`, { memberId: 'same', heartbeat: false })
    const g = rid('g')
    await first.joinGroupCreate(g, { v: 'old' })
    await first.stop().catch(() => {})
    writeFileSync(memberFile(dir, g, 'same'), encodeMemberRecord('same', dumps({ v: 'old' }), new Date()))
    age(memberFile(dir, g, 'same'), 30)
    const second = await open(t, `file://${dir}`, { memberId: 'same' })
    await second.joinGroup(g, { v: 'new' })
    assert.deepEqual(await second.getMemberCapabilities(g, 'same'), { v: 'new' })
  })

  it('file: corrupt records: a .raw without a readable member id is skipped, with one warning', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`)
    const b = await open(t, `file://${dir}`)
    const g = rid('g')
    await a.joinGroupCreate(g)
    await b.joinGroup(g)
    writeFileSync(join(dir, 'groups', sha1(g), `${sha1('ghost')}.raw`), 'this is not msgpack')
    const warnings: Error[] = []
    a.on('warning', (e) => warnings.push(e))
    assert.deepEqual(await a.getMembers(g), [a.memberId, b.memberId].sort())
    assert.deepEqual([...(await a.getMembersWithCapabilities(g)).keys()], [a.memberId, b.memberId].sort())
    assert.equal(warnings.length, 1, warnings.map((w) => w.message).join('; '))
    assert.ok(warnings[0] instanceof SerializationError)
    assert.match(warnings[0]!.message, /member id is unknown/)
  })

  it('file: corrupt records: a readable member id with broken capabilities gives a SerializationError entry', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`)
    const g = rid('g')
    await a.joinGroupCreate(g, { ok: true })
    const groupDir = join(dir, 'groups', sha1(g))
    // capabilities: a msgpack str that is not UTF-8
    writeFileSync(join(groupDir, `${sha1('broken')}.raw`), rawRecord(Uint8Array.of(0xa2, 0xff, 0xfe), utf8('broken')))
    // member_id first, then a truncated capabilities array
    writeFileSync(
      join(groupDir, `${sha1('cut')}.raw`),
      Buffer.concat([Uint8Array.of(0x82), dumps('member_id'), dumps(utf8('cut')), dumps('capabilities'), Uint8Array.of(0x92, 0x01)]),
    )
    const all = await a.getMembersWithCapabilities(g)
    assert.deepEqual([...all.keys()], [a.memberId, 'broken', 'cut'].sort())
    assert.deepEqual(all.get(a.memberId), { ok: true })
    assert.ok(all.get('broken') instanceof SerializationError)
    assert.ok(all.get('cut') instanceof SerializationError)
    await assert.rejects(a.getMemberCapabilities(g, 'broken'), SerializationError)
    await assert.rejects(a.getMemberCapabilities(g, 'cut'), SerializationError)
  })

  it('file: members: getMemberInfo createdAt is joined_on; updatedAt follows capability updates, not heartbeats', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`, { heartbeat: false })
    const g = rid('g')
    await a.joinGroupCreate(g, { v: 1 })
    const first = await a.getMemberInfo(g, a.memberId)
    await new Promise((r) => setTimeout(r, 50))
    await a.heartbeat()
    const beaten = await a.getMemberInfo(g, a.memberId)
    assert.equal(beaten.updatedAt.getTime(), first.updatedAt.getTime())
    await new Promise((r) => setTimeout(r, 50))
    await a.updateCapabilities(g, { v: 2 })
    const updated = await a.getMemberInfo(g, a.memberId)
    assert.deepEqual(updated.capabilities, { v: 2 })
    assert.equal(updated.createdAt.getTime(), first.createdAt.getTime(), 'joined_on is kept')
    assert.ok(updated.updatedAt.getTime() > first.updatedAt.getTime())
  })

  it('file: costs: membership calls, heartbeats, listings and lock cycles settle without a thread-pool hop', async (t) => {
    const dir = tempDir(t)
    const a = await bareDriver(t, dir, 'a')
    const caps = dumps({ v: 1 })
    await withinOneTurn('createGroup', () => a.createGroup('g'))
    await withinOneTurn('joinGroup', () => a.joinGroup('g', caps))
    await withinOneTurn('heartbeat', () => a.heartbeat!(new Map([['g', caps]]), new Set()))
    assert.deepEqual([...(await withinOneTurn('listMembers', () => a.listMembers('g'))).keys()], ['a'])
    assert.deepEqual(await withinOneTurn('listMemberIds', () => a.listMemberIds!('g')), ['a'])
    await withinOneTurn('getMemberInfo', () => a.getMemberInfo!('g', 'a'))
    await withinOneTurn('updateCapabilities', () => a.updateCapabilities!('g', dumps({ v: 2 })))
    assert.deepEqual(await withinOneTurn('listGroups', () => a.listGroups()), ['g'])
    const lock = a.createLock('l')
    assert.equal(await withinOneTurn('lock tryAcquire', () => lock.tryAcquire()), true)
    assert.equal(await withinOneTurn('lock isStillOwner', () => lock.isStillOwner()), true)
    assert.equal(await withinOneTurn('lock release', () => lock.release()), true)
    const leader = a.leaderLock!('g')
    assert.equal(await withinOneTurn('leader tryAcquire', () => leader.tryAcquire()), true)
    assert.equal(await withinOneTurn('getLeader', () => a.getLeader!('g')), 'a')
    assert.equal(await withinOneTurn('leader release', () => leader.release()), true)
    await withinOneTurn('leaveGroup', () => a.leaveGroup('g'))
    await withinOneTurn('deleteGroup', () => a.deleteGroup('g'))
  })

  it('file: costs: a listing reads only member files that are new or replaced since the last one; heartbeats read nothing', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`, { heartbeat: false, autoWatch: false })
    const g = rid('g')
    await a.createGroup(g)
    const groupDir = join(dir, 'groups', sha1(g))
    for (let i = 0; i < 20; i++) writeFileSync(join(groupDir, `${sha1(`m${i}`)}.raw`), encodeMemberRecord(`m${i}`, dumps({ i }), new Date()))
    await sleep(100) // past the window in which a newer file could share these files' timestamps
    assert.equal(await countReads(groupDir, () => a.getMembersWithCapabilities(g)), 20)
    assert.equal(await countReads(groupDir, () => a.getMembers(g)), 0)
    assert.equal(await countReads(groupDir, () => a.getMembersWithCapabilities(g)), 0)
    // A heartbeat moves mtime and ctime, not the content: nothing to read again.
    const beaten = join(groupDir, `${sha1('m3')}.raw`)
    utimesSync(beaten, new Date(), new Date())
    assert.equal(await countReads(groupDir, () => a.getMembers(g)), 0)
    // A replaced file (as rollcall writes: a new file renamed over it) is read again, and only it.
    writeFileSync(join(dir, 'tmp', 'next'), encodeMemberRecord('m5', dumps({ i: 'five' }), new Date()))
    renameSync(join(dir, 'tmp', 'next'), join(groupDir, `${sha1('m5')}.raw`))
    let all = new Map<string, unknown>()
    assert.equal(await countReads(groupDir, async () => (all = await a.getMembersWithCapabilities(g))), 1)
    assert.deepEqual(all.get('m5'), { i: 'five' })
    assert.deepEqual(all.get('m3'), { i: 3 })
    // getMemberCapabilities of an unchanged member is answered from the same records.
    assert.equal(await countReads(groupDir, () => a.getMemberCapabilities(g, 'm7')), 0)
  })

  it('file: costs: a member file read within moments of its birth is read again next time (a newer file could share its timestamps)', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`, { heartbeat: false, autoWatch: false })
    const g = rid('g')
    await a.createGroup(g)
    const groupDir = join(dir, 'groups', sha1(g))
    const path = join(groupDir, `${sha1('m')}.raw`)
    // Only meaningful when both listings land within the driver's 50 ms window: retried on a busy machine.
    let checked = false
    for (let attempt = 0; attempt < 10 && !checked; attempt++) {
      writeFileSync(join(dir, 'tmp', 'next'), encodeMemberRecord('m', dumps({ attempt }), new Date()))
      renameSync(join(dir, 'tmp', 'next'), path)
      const born = statSync(path).birthtimeMs || statSync(path).ctimeMs
      const first = await countReads(groupDir, () => a.getMembers(g))
      const second = await countReads(groupDir, () => a.getMembers(g))
      if (Date.now() - born >= 40) continue
      assert.deepEqual([first, second], [1, 1])
      checked = true
    }
    assert.ok(checked, 'the machine was too busy to list twice within 40 ms of writing a file')
    await sleep(100)
    assert.equal(await countReads(groupDir, () => a.getMembers(g)), 1, 'read once more, now long after its birth')
    assert.equal(await countReads(groupDir, () => a.getMembers(g)), 0, 'and trusted from then on')
  })

  it('file: members: a record rewritten in place with the same size (mtime = ctime, as a write sets them) is read again', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`, { heartbeat: false, autoWatch: false })
    const b = await open(t, `file://${dir}`, { memberId: 'b', heartbeat: false, autoWatch: false })
    const g = rid('g')
    await a.createGroup(g)
    await b.joinGroup(g, { v: 'x' })
    await sleep(100)
    assert.deepEqual((await a.getMembersWithCapabilities(g)).get('b'), { v: 'x' })
    const path = memberFile(dir, g, 'b')
    const before = statSync(path)
    writeFileSync(path, encodeMemberRecord('b', dumps({ v: 'y' }), decodeMemberRecord(readFileSync(path)).joinedOnRaw!))
    assert.equal(statSync(path).ino, before.ino)
    assert.equal(statSync(path).size, before.size)
    assert.deepEqual((await a.getMembersWithCapabilities(g)).get('b'), { v: 'y' })
    assert.deepEqual(await a.getMemberCapabilities(g, 'b'), { v: 'y' })
  })

  it('file: members: capabilities replaced many times in quick succession are always read back fresh (reused inodes, coarse clocks)', async (t) => {
    const dir = tempDir(t)
    const a = await open(t, `file://${dir}`, { heartbeat: false, autoWatch: false })
    const b = await open(t, `file://${dir}`, { memberId: 'b', heartbeat: false, autoWatch: false })
    const g = rid('g')
    await a.createGroup(g)
    await b.joinGroup(g, { v: 0 })
    await sleep(100)
    // Each update renames a new file over the old one, and ext4 hands a freed inode number to the
    // next file at once: two updates later the path names a file with the number a listing has
    // just seen, born within the same tick of the file clock, with a value of the same size.
    for (let i = 1; i <= 150; i += 3) {
      await b.updateCapabilities(g, { v: i % 10 })
      assert.deepEqual((await a.getMembersWithCapabilities(g)).get('b'), { v: i % 10 }, `update ${i}`)
      await b.updateCapabilities(g, { v: (i + 1) % 10 })
      await b.updateCapabilities(g, { v: (i + 2) % 10 })
      assert.deepEqual((await a.getMembersWithCapabilities(g)).get('b'), { v: (i + 2) % 10 }, `update ${i + 2}`)
      assert.deepEqual(await a.getMemberCapabilities(g, 'b'), { v: (i + 2) % 10 }, `update ${i + 2}`)
    }
  })

  it('file: locks: reserved and escaping names are refused before anything is written', async (t) => {
    const dir = tempDir(t)
    const c = await open(t, `file://${dir}`)
    const before = readdirSync(dir).sort()
    for (
      const name of [
        '../escape',
        'a/../../escape',
        '/etc/passwd',
        '.',
        './',
        'groups',
        'groups/x',
        'tmp',
        'tmp/x',
        '.driver_lock',
        '.leaders/x',
        'nul\0byte',
        'x'.repeat(256),
        'bad\ud800',
      ]
    ) {
      assert.throws(() => c.getLock(name), InvalidIdError, JSON.stringify(name))
    }
    assert.deepEqual(readdirSync(dir).sort(), before)
    const nested = c.getLock('sub/dir/name')
    assert.equal(await nested.acquire({ blocking: false }), true)
    assert.ok(existsSync(join(dir, 'sub', 'dir', 'name')))
    await nested.release()
  })

  it('file: locks: a holder in another process excludes this one until it is killed', async (t) => {
    const dir = tempDir(t)
    const url = `file://${dir}`
    const c = await open(t, url)
    const name = rid('l')
    const script = `const c = await connect(${JSON.stringify(url)}, { memberId: 'child' });
await c.getLock(${JSON.stringify(name)}).acquire();
c.watchElectedAsLeader('g', () => console.log('leading'));
console.log('held');
setInterval(() => {}, 60000);`
    const { proc: child, out } = scriptProcess(t, script)
    await waitFor('the child to hold the lock and lead', () => out().includes('held') && out().includes('leading'), 20_000)
    assert.equal(await c.getLock(name).acquire({ blocking: false }), false)
    assert.equal(await c.getLeader('g'), 'child')
    child.kill('SIGKILL')
    await once(child, 'exit')
    const lock = c.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), true, "the kernel frees a dead holder's lock at once")
    assert.equal(await c.getLeader('g'), null, 'a dead leader leads no more')
    await lock.release()
  })

  it('file: locks: a process whose only pending work is a wait (for .driver_lock, then a lock) stays alive until it is served', async (t) => {
    const dir = tempDir(t)
    const url = `file://${dir}`
    const c = await open(t, url)
    const held = c.getLock('busy')
    await held.acquire()
    const script = `const c = await connect(${JSON.stringify(url)}, { memberId: 'waiter' });
console.log('started');
await c.createGroup('made-while-waiting');
console.log('acquired', await c.getLock('busy').acquire());
await c.stop();`
    // Hold .driver_lock from before the child starts until 1.5 s after, then the named lock for 1.5 s more.
    const { proc: child, out } = await withFileLock(join(dir, '.driver_lock'), 1_000, async () => {
      const started = scriptProcess(t, script)
      await waitFor('the child to start', () => started.out().includes('started'), 20_000)
      await new Promise((r) => setTimeout(r, 1_500))
      assert.equal(started.proc.exitCode, null, `the child exited while waiting for .driver_lock: ${started.out()}`)
      return started
    })
    const exited = once(child, 'exit')
    await new Promise((r) => setTimeout(r, 1_500))
    assert.equal(child.exitCode, null, `the child exited while waiting for the lock: ${out()}`)
    assert.ok(existsSync(join(dir, 'groups', sha1('made-while-waiting'), '.metadata')))
    await held.release()
    const [code] = await exited
    assert.equal(code, 0, out())
    assert.match(out(), /acquired true/)
  })

  it('file: locks: six pending waits (more than the 4 pool threads) stall no fs call of their process, and each is served on release', async (t) => {
    const url = `file://${tempDir(t)}`
    const a = await open(t, url)
    const b = await open(t, url)
    // More waits than libuv's 4 pool threads: a wait blocked on the pool would stall every fs call of the process.
    const names = Array.from({ length: 6 }, () => rid('l'))
    const held = names.map((name) => a.getLock(name))
    for (const lock of held) assert.equal(await lock.acquire(), true)
    const waits = names.map((name) => {
      const lock = b.getLock(name)
      return lock.acquire({ timeoutMs: TIMING.eventMs }).then((got) => ({ got, lock }))
    })
    await new Promise((r) => setTimeout(r, 300))
    const read = fs.promises.readFile(new URL(import.meta.url)).then(() => 'read')
    const stalled = new Promise((r) => setTimeout(r, TIMING.eventMs, 'stalled'))
    assert.equal(await Promise.race([read, stalled]), 'read', 'an fs call waited behind the lock waits')
    for (const lock of held) await lock.release()
    for (const { got, lock } of await Promise.all(waits)) {
      assert.equal(got, true)
      await lock.release()
    }
  })

  it('file: locks: a wait given up (timeout, abort) leaves nothing stuck: the next wait is served and the lock frees', async (t) => {
    const url = `file://${tempDir(t)}`
    const a = await open(t, url)
    const b = await open(t, url)
    const name = rid('l')
    const holder = a.getLock(name)
    await holder.acquire()
    const waiter = b.getLock(name)
    // A wait blocked in the kernel (F_OFD_SETLKW) cannot be cancelled: whatever a given-up wait leaves must not hold the lock.
    assert.equal(await waiter.acquire({ timeoutMs: 400 }), false)
    const controller = new AbortController()
    setTimeout(() => controller.abort(new Error('gave up')), 400)
    await assert.rejects(waiter.acquire({ signal: controller.signal }), /gave up/)
    const served = waiter.acquire({ timeoutMs: TIMING.eventMs })
    setTimeout(() => void holder.release(), 100)
    assert.equal(await served, true)
    assert.equal(await holder.acquire({ blocking: false }), false, 'the waiter holds it')
    await waiter.release()
    await waitFor('the lock to be free again', () => holder.acquire({ blocking: false }), TIMING.eventMs)
    await holder.release()
  })

  it('file: locks: a process whose wait timed out exits once it is done, while another process still holds the lock', async (t) => {
    const url = `file://${tempDir(t)}`
    const c = await open(t, url)
    const name = rid('l')
    const held = c.getLock(name)
    await held.acquire()
    // A wait blocked in the kernel (F_OFD_SETLKW) cannot be cancelled: if one is left, it must not keep the process alive.
    const script = `const c = await connect(${JSON.stringify(url)}, { memberId: 'waiter', heartbeat: false, autoWatch: false });
console.log('acquired', await c.getLock(${JSON.stringify(name)}).acquire({ timeoutMs: 500 }));
await c.stop();`
    const { proc: child, out } = scriptProcess(t, script)
    const [code] = await Promise.race([once(child, 'exit'), new Promise<[string]>((r) => setTimeout(r, 20_000, ['still running']))])
    assert.equal(code, 0, out())
    assert.match(out(), /acquired false/)
    assert.equal(held.acquired, true)
    await held.release()
  })

  it('file: url: relative or host-bearing URLs are refused with InvalidUrlError, before anything is created', async (t) => {
    const dir = tempDir(t)
    await assert.rejects(connect('file://relative/dir'), (e: Error) => e instanceof InvalidUrlError && /three slashes/.test(e.message))
    await assert.rejects(connect(`file://example.com${dir}`), InvalidUrlError)
    await assert.rejects(connect(`file://:99${dir}`), InvalidUrlError)
    await assert.rejects(connect('file://'), (e: Error) => e instanceof InvalidUrlError && /absolute/.test(e.message))
    assert.equal(existsSync('relative'), false)
    const local = await open(t, `file://localhost${dir}/`)
    await local.createGroup('g')
    assert.ok(existsSync(join(dir, 'groups', sha1('g'), '.metadata')))
  })

  it('file: options: an unknown option is refused; timeout sets the liveness window; executor is accepted', async (t) => {
    const dir = tempDir(t)
    await assert.rejects(connect(`file://${dir}?bogus=1`), (e: Error) => e instanceof InvalidOptionError && /timeout/.test(e.message))
    const c = await open(t, `file://${dir}?timeout=3&executor=threaded`)
    assert.equal(await c.heartbeat(), 3_000)
  })

  it('file: ids: group and member ids that have no UTF-8 form are refused', async (t) => {
    const dir = tempDir(t)
    const c = await open(t, `file://${dir}`)
    await assert.rejects(c.createGroup('bad\udc00'), InvalidIdError)
    await assert.rejects(connect(`file://${dir}`, { memberId: 'x\ud800' }), InvalidIdError)
    assert.deepEqual(readdirSync(join(dir, 'groups')), [])
  })
})
