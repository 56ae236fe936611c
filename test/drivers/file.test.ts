/**
 * The file driver's own behaviour: tooz's exact on-disk layout and bytes, expiry by mtime, garbage
 * collection of dead members, corrupt records, lock names and URLs it refuses.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import {
  connect, dumps, GroupNotEmptyError, InvalidIdError, InvalidOptionError, InvalidUrlError, SerializationError, type ConnectOptions, type Coordinator,
} from '../../src/index.js'
import { decodeMemberRecord, encodeMemberRecord } from '../../src/coordination/drivers/file-format.js'
import { withFileLock } from '../../src/coordination/drivers/file-lock.js'
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

/** A record as tooz 3.1 writes it, with `capabilities` given as raw msgpack. */
function rawRecord(capabilities: Uint8Array, memberId: Uint8Array): Uint8Array {
  return Buffer.concat([Uint8Array.of(0x84), dumps('capabilities'), capabilities, dumps('joined_on'), dumps(new Date()), dumps('member_id'), dumps(memberId), dumps('encoded'), dumps(false)])
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
    assert.equal(hex(a), '84ac6361706162696c697469657382a161c40178a175a2d0b6a96a6f696e65645f6f6ec73a0187a364617902a56d6f6e746801a479656172cd07e8a4686f757203a66d696e75746504a67365636f6e6405ab6d6963726f7365636f6e64cd1770a96d656d6265725f6964c4026d31a7656e636f646564c2')
    const b = encodeMemberRecord('ж', dumps(null), joinedOn)
    assert.equal(hex(b), '84ac6361706162696c6974696573c0a96a6f696e65645f6f6ec73a0187a364617902a56d6f6e746801a479656172cd07e8a4686f757203a66d696e75746504a67365636f6e6405ab6d6963726f7365636f6e64cd1770a96d656d6265725f6964c402d0b6a7656e636f646564c2')
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
    writeFileSync(join(groupDir, `${sha1('old-m')}.raw`), dumps(new Map<unknown, unknown>([[utf8('member_id'), utf8('old-m')], [utf8('joined_on'), new Date()], [utf8('capabilities'), { x: 1 }]])))
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
    writeFileSync(join(groupDir, `${sha1('cut')}.raw`), Buffer.concat([Uint8Array.of(0x82), dumps('member_id'), dumps(utf8('cut')), dumps('capabilities'), Uint8Array.of(0x92, 0x01)]))
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

  it('file: locks: reserved and escaping names are refused before anything is written', async (t) => {
    const dir = tempDir(t)
    const c = await open(t, `file://${dir}`)
    const before = readdirSync(dir).sort()
    for (const name of ['../escape', 'a/../../escape', '/etc/passwd', '.', './', 'groups', 'groups/x', 'tmp', 'tmp/x', '.driver_lock', '.leaders/x', 'nul\0byte', 'x'.repeat(256), 'bad\ud800']) {
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
    const script = `const { connect } = await import(${JSON.stringify(new URL('../../src/index.ts', import.meta.url).href)});
const c = await connect(${JSON.stringify(url)}, { memberId: 'child' });
await c.getLock(${JSON.stringify(name)}).acquire();
c.watchElectedAsLeader('g', () => console.log('leading'));
console.log('held');
setInterval(() => {}, 60000);`
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    t.after(() => void (child.exitCode === null && child.kill('SIGKILL')))
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
    await waitFor('the child to hold the lock and lead', () => out.includes('held') && out.includes('leading'), 20_000)
    assert.equal(await c.getLock(name).acquire({ blocking: false }), false)
    assert.equal(await c.getLeader('g'), 'child')
    child.kill('SIGKILL')
    await once(child, 'exit')
    const lock = c.getLock(name)
    assert.equal(await lock.acquire({ blocking: false }), true, 'the kernel frees a dead holder\'s lock at once')
    assert.equal(await c.getLeader('g'), null, 'a dead leader leads no more')
    await lock.release()
  })

  it('file: locks: a process whose only pending work is a wait (for .driver_lock, then a lock) stays alive until it is served', async (t) => {
    const dir = tempDir(t)
    const url = `file://${dir}`
    const c = await open(t, url)
    const held = c.getLock('busy')
    await held.acquire()
    const script = `const { connect } = await import(${JSON.stringify(new URL('../../src/index.ts', import.meta.url).href)});
const c = await connect(${JSON.stringify(url)}, { memberId: 'waiter' });
console.log('started');
await c.createGroup('made-while-waiting');
console.log('acquired', await c.getLock('busy').acquire());
await c.stop();`
    let out = ''
    // Hold .driver_lock from before the child starts until 1.5 s after, then the named lock for 1.5 s more.
    const child = await withFileLock(join(dir, '.driver_lock'), 1_000, async () => {
      const p = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
      t.after(() => void (p.exitCode === null && p.kill('SIGKILL')))
      p.stdout!.on('data', (d: Buffer) => (out += d.toString()))
      await waitFor('the child to start', () => out.includes('started'), 20_000)
      await new Promise((r) => setTimeout(r, 1_500))
      assert.equal(p.exitCode, null, `the child exited while waiting for .driver_lock: ${out}`)
      return p
    })
    const exited = once(child, 'exit')
    await new Promise((r) => setTimeout(r, 1_500))
    assert.equal(child.exitCode, null, `the child exited while waiting for the lock: ${out}`)
    assert.ok(existsSync(join(dir, 'groups', sha1('made-while-waiting'), '.metadata')))
    await held.release()
    const [code] = await exited
    assert.equal(code, 0, out)
    assert.match(out, /acquired true/)
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
