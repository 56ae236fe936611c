/**
 * The file driver against Python tooz 3.1 (Debian's python3-tooz, /usr/bin/python3) in one
 * directory: members, capabilities, groups, expiry and locks, both ways.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { connect, type ConnectOptions, type Coordinator } from '../../src/index.js'
import { decodeMemberRecord, encodeMemberRecord } from '../../src/coordination/drivers/file/file-format.js'
import { withFileLock } from '../../src/coordination/drivers/file/file-lock.js'
import { tryLockInProcess } from '../conformance/cases/tooz/support.js'
import { fromPeer, ToozPeer } from '../support/tooz-peer.js'
import { TIMING } from '../support/timing.js'
import { rid, waitFor } from '../support/wait.js'

const sha1 = (id: string): string => createHash('sha1').update(id, 'utf8').digest('hex')

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-file-interop-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function open(t: TestContext, url: string, options: ConnectOptions = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('node'), watchIntervalMs: TIMING.watchIntervalMs, ...options })
  t.after(() => c.stop())
  return c
}

/** Runs a Python snippet (fasteners, as tooz uses it) and resolves with its stdout. */
function python(code: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', code, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`python exited ${code}: ${err}`))))
  })
}

describe('file interop with Python tooz', { concurrency: 3 }, () => {
  it('file: interop: a Python member and a Node member see each other, capabilities decoded exactly', async (t) => {
    const dir = tempDir(t)
    const url = `file://${dir}`
    const py = await ToozPeer.start(t, url, 'py-1')
    const node = await open(t, url)
    const g = rid('g')
    const pyCaps = { blob: { __bytes__: '00ff10' }, text: 'чупакабра ✓', f: 1.5, list: [1, 'x', null], nested: { ok: true } }
    const nodeCaps = { blob: new Uint8Array([1, 2, 255]), text: 'ж ✓', n: -7, big: 2 ** 40, nested: { none: null } }
    await py.call('create_group', { group: g })
    await py.call('join_group', { group: g, capabilities: pyCaps })
    await node.joinGroup(g, nodeCaps)
    assert.deepEqual(await node.getMembers(g), [node.memberId, 'py-1'].sort())
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId, 'py-1'].sort())
    assert.deepEqual(await node.getMemberCapabilities(g, 'py-1'), fromPeer(pyCaps))
    assert.deepEqual(fromPeer(await py.call('get_member_capabilities', { group: g, member: node.memberId })), nodeCaps)
    // The Python record re-encodes to the same bytes here: same keys, order and encodings.
    const pyFile = readFileSync(join(dir, 'groups', sha1(g), `${sha1('py-1')}.raw`))
    const rec = decodeMemberRecord(pyFile)
    assert.equal(Buffer.from(encodeMemberRecord(rec.memberId, rec.capabilities, rec.joinedOnRaw!)).toString('hex'), pyFile.toString('hex'))
    assert.ok(rec.joinedOn && Math.abs(rec.joinedOn.getTime() - Date.now()) < 60_000, 'joined_on is read as local time')
    await py.call('leave_group', { group: g })
    assert.deepEqual(await node.getMembers(g), [node.memberId])
  })

  it('file: interop: Python reads capabilities updated by Node', async (t) => {
    const url = `file://${tempDir(t)}`
    const py = await ToozPeer.start(t, url, 'py-1')
    const node = await open(t, url)
    const g = rid('g')
    await node.joinGroupCreate(g, { v: 1 })
    await node.updateCapabilities(g, { v: 2, bytes: new Uint8Array([9]) })
    assert.deepEqual(fromPeer(await py.call('get_member_capabilities', { group: g, member: node.memberId })), { v: 2, bytes: new Uint8Array([9]) })
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId])
  })

  it('file: interop: groups created on either side are listed, joined and deleted by the other', async (t) => {
    const url = `file://${tempDir(t)}`
    const py = await ToozPeer.start(t, url, 'py-1')
    const node = await open(t, url)
    const fromPy = rid('gpy')
    const fromPyStr = rid('gstr')
    const fromNode = rid('gnode')
    await py.call('create_group', { group: fromPy })
    await py.call('create_group', { group: fromPyStr, str: true })
    await node.createGroup(fromNode)
    const nodeSees = await node.getGroups()
    for (const g of [fromPy, fromPyStr, fromNode]) assert.ok(nodeSees.includes(g), `${g} in ${nodeSees.join(', ')}`)
    const pySees: string[] = await py.call('get_groups')
    for (const g of [fromPy, fromPyStr, fromNode]) assert.ok(pySees.includes(g), `${g} in ${pySees.join(', ')}`)
    await py.call('join_group', { group: fromNode })
    assert.deepEqual(await node.getMembers(fromNode), ['py-1'])
    await node.deleteGroup(fromPy)
    await py.call('delete_group', { group: fromNode }).then(
      () => assert.fail('Python deleted a group with a member'),
      (err: Error) => assert.match(err.message, /GroupNotEmpty/),
    )
    assert.ok(!(await py.call('get_groups') as string[]).includes(fromPy))
  })

  it('file: interop: a dead Python member expires for Node, which then deletes the group tooz alone could not', async (t) => {
    const url = `file://${tempDir(t)}?timeout=${TIMING.expirySeconds}`
    const py = await ToozPeer.start(t, url, 'py-dead')
    const node = await open(t, url)
    const g = rid('g')
    await py.call('create_group', { group: g })
    await py.call('join_group', { group: g })
    assert.deepEqual(await node.getMembers(g), ['py-dead'])
    py.kill()
    await waitFor(
      'the killed Python member to expire',
      async () => (await node.getMembers(g)).length === 0,
      TIMING.expirySeconds * 1000 + TIMING.expirySlackMs,
      200,
    )
    await node.deleteGroup(g)
    assert.ok(!(await node.getGroups()).includes(g))
  })

  it('file: interop: a Node member that stops heartbeating expires for Python', async (t) => {
    const url = `file://${tempDir(t)}?timeout=${TIMING.expirySeconds}`
    const py = await ToozPeer.start(t, url, 'py-1')
    const node = await open(t, url, { heartbeat: false })
    const g = rid('g')
    await node.joinGroupCreate(g)
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId])
    await waitFor(
      'the silent Node member to expire for Python',
      async () => (await py.call('get_members', { group: g })).length === 0,
      TIMING.expirySeconds * 1000 + TIMING.expirySlackMs,
      200,
    )
    await node.heartbeat()
    assert.deepEqual(await py.call('get_members', { group: g }), [node.memberId], 'a heartbeat brings it back')
  })

  it('file: interop: Python and Node locks of one name exclude each other, and a released lock passes across', async (t) => {
    const url = `file://${tempDir(t)}`
    const py = await ToozPeer.start(t, url, 'py-1')
    const node = await open(t, url)
    const name = rid('lock')
    const lock = node.getLock(name)
    assert.equal(await py.call('lock_acquire', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), false, 'Python holds it')
    assert.equal(await lock.acquire({ timeoutMs: TIMING.shortWaitMs }), false, 'still held after a wait')
    assert.equal(await py.call('lock_release', { name }), true)
    assert.equal(await lock.acquire({ blocking: false }), true, 'free once Python released it')
    assert.equal(await py.call('lock_acquire', { name }), false, 'Node holds it')
    assert.equal(await lock.release(), true)
    assert.equal(await py.call('lock_acquire', { name }), true, 'free once Node released it')
    assert.equal(await py.call('lock_release', { name }), true)
  })

  it(
    'file: interop: shared locks: a Python holder of either kind excludes Node readers and writers; Node readers exclude Python and hold together '
      + 'across processes',
    async (t) => {
      const url = `file://${tempDir(t)}`
      const py = await ToozPeer.start(t, url, 'py-1')
      const node = await open(t, url)
      const name = rid('lock')
      for (const pyShared of [false, true]) {
        assert.equal(await py.call('lock_acquire', { name, shared: pyShared }), true)
        assert.equal(
          await node.getLock(name).acquire({ shared: true, blocking: false }),
          false,
          `a Python ${pyShared ? 'shared' : 'exclusive'} holder excludes a Node reader`,
        )
        assert.equal(
          await node.getLock(name).acquire({ blocking: false }),
          false,
          `a Python ${pyShared ? 'shared' : 'exclusive'} holder excludes a Node writer`,
        )
        assert.equal(await py.call('lock_release', { name }), true)
      }
      const reader = node.getLock(name)
      assert.equal(await reader.acquire({ shared: true, blocking: false }), true)
      assert.equal(await py.call('lock_acquire', { name }), false, 'a Node reader excludes a Python exclusive taker')
      assert.equal(await py.call('lock_acquire', { name, shared: true }), false, 'and a Python shared taker (tooz shares within one process only)')
      assert.equal(await tryLockInProcess(url, name, true), true, 'a Node reader in another process holds with it')
      assert.equal(await tryLockInProcess(url, name), false, 'a Node writer in another process is excluded')
      assert.equal(await reader.release(), true)
      assert.equal(await py.call('lock_acquire', { name }), true, 'free for Python once the reader released it')
      assert.equal(await py.call('lock_release', { name }), true)
    },
  )

  it('file: interop: .driver_lock taken by rollcall excludes fasteners (as tooz holds it), and the reverse', async (t) => {
    const dir = tempDir(t)
    const node = await open(t, `file://${dir}`)
    const path = join(dir, '.driver_lock')
    const tryPy = 'import sys, fasteners; l = fasteners.InterProcessLock(sys.argv[1]); print(l.acquire(blocking=False))'
    assert.equal(await withFileLock(path, 1_000, () => python(tryPy, path)), 'False')
    assert.equal(await python(tryPy, path), 'True')
    const holdPy =
      'import sys, time, fasteners; l = fasteners.InterProcessLock(sys.argv[1]); l.acquire(); print("held", flush=True); time.sleep(1.0); l.release()'
    const child = spawn('/usr/bin/python3', ['-c', holdPy, path], { stdio: ['ignore', 'pipe', 'inherit'] })
    t.after(() => void (child.exitCode === null && child.kill('SIGKILL')))
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()))
    const started = Date.now()
    await node.getGroups() // no driver lock, as in tooz
    await node.createGroup(rid('g'))
    const waitedMs = Date.now() - started
    assert.ok(waitedMs >= 600, `createGroup waited ${waitedMs} ms for Python's .driver_lock`)
  })
})
