/**
 * The partition harness's hosts (test/partition/support/hosts.ts): three network namespaces on a
 * bridge reach each other over TCP; a cut host does not (both ways), a one-way drop blocks one
 * direction's connections, a heal restores everything, and destroy() leaves no namespace, link
 * or process behind, also for a run whose owner died (the sweep).
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { Hosts, MARKER_DIR, sweepLeftovers } from './support/hosts.js'

const canNetns = process.getuid?.() === 0 && (() => {
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

/** Connects from host `from` to `address:port` with socat; true if the connection opened within 1 s. */
async function connects(hosts: Hosts, from: string, address: string, port: number): Promise<boolean> {
  try {
    await hosts.exec(from, 'socat', ['-T1', '/dev/null', `TCP:${address}:${port},connect-timeout=1`], 5_000)
    return true
  } catch {
    return false
  }
}

describe('partition hosts', { skip: canNetns ? false : 'needs root and ip netns' }, () => {
  it('three hosts reach each other; cut, one-way drop and heal work; nothing is left behind', { timeout: 60_000 }, async () => {
    const hosts = await Hosts.create(['n1', 'n2', 'n3'])
    try {
      assert.deepEqual(hosts.leftovers().sort(), [`${hosts.prefix}-br`, `${hosts.prefix}-n1`, `${hosts.prefix}-n2`, `${hosts.prefix}-n3`])
      const [n1, n2, n3] = hosts.hosts
      // A listener on each host (socat forks a child per connection; all of them die with the namespace).
      for (const h of hosts.hosts) hosts.spawn(h.name, 'socat', [`TCP-LISTEN:7000,bind=${h.address},fork,reuseaddr`, 'SYSTEM:true'], { stdio: 'ignore' })
      for (const h of hosts.hosts) assert.ok(await waitReachable(h.address), `${h.name} listener reachable from the root namespace`)
      assert.equal(await connects(hosts, 'n2', n1!.address, 7000), true, 'n2 → n1 before the cut')
      assert.equal(await connects(hosts, 'n3', n1!.address, 7000), true, 'n3 → n1 before the cut')

      await hosts.cut([['n1'], ['n2', 'n3']])
      assert.equal(await connects(hosts, 'n2', n1!.address, 7000), false, 'n2 → n1 during the cut')
      assert.equal(await connects(hosts, 'n1', n3!.address, 7000), false, 'n1 → n3 during the cut')
      assert.equal(await connects(hosts, 'n2', n3!.address, 7000), true, 'n2 → n3 (same side) during the cut')
      assert.ok(await Hosts.reachable(n1!.address, 7000), 'the root namespace still reaches n1 (its link is never cut)')

      await hosts.heal()
      assert.equal(await connects(hosts, 'n2', n1!.address, 7000), true, 'n2 → n1 after the heal')

      // One way: packets from n2 to n1 are lost (n2's SYN never arrives); n3's are not.
      await hosts.drop(['n2'], ['n1'])
      assert.equal(await connects(hosts, 'n2', n1!.address, 7000), false, 'n2 → n1 with n2→n1 dropped')
      assert.equal(await connects(hosts, 'n3', n1!.address, 7000), true, 'n3 → n1 unaffected')
      await hosts.heal()
      assert.equal(await connects(hosts, 'n2', n1!.address, 7000), true, 'n2 → n1 healed again')
    } finally {
      await hosts.destroy()
    }
    assert.deepEqual(hosts.leftovers(), [], 'no namespace of the run is left')
    assert.equal(existsSync(join(MARKER_DIR, hosts.prefix)), false, 'the marker is gone')
    assert.throws(() => execFileSync('ip', ['link', 'show', `${hosts.prefix}-a`], { stdio: 'ignore' }), 'the root-side link is gone')
  })

  it('the sweep removes a dead run marked as ours, and never a namespace without a marker', { timeout: 30_000 }, async () => {
    const ours = `rc${Math.floor(Math.random() * 0xffffff).toString(16).padStart(6, '0')}`
    const foreign = `rc${Math.floor(Math.random() * 0xffffff).toString(16).padStart(6, '0')}`
    try {
      execFileSync('ip', ['netns', 'add', `${ours}-n1`])
      execFileSync('ip', ['netns', 'add', `${foreign}-n1`])
      // A process inside the dead run's namespace, which the sweep must end.
      const sleeper = spawn('ip', ['netns', 'exec', `${ours}-n1`, 'sleep', '300'], { stdio: 'ignore' })
      await new Promise((r) => setTimeout(r, 300))
      // A dead owner: a PID that does not exist (beyond pid_max's usual range).
      mkdirSync(MARKER_DIR, { recursive: true })
      writeFileSync(join(MARKER_DIR, ours), JSON.stringify({ pid: 2 ** 22 + 7 }))
      const removed = sweepLeftovers()
      assert.ok(removed.includes(ours), `swept ${removed.join(', ')}`)
      assert.ok(!removed.includes(foreign))
      const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      assert.ok(!left.includes(`${ours}-n1`), 'the marked namespace is gone')
      assert.ok(left.includes(`${foreign}-n1`), 'the unmarked one is kept')
      await new Promise<void>((r) => (sleeper.exitCode !== null || sleeper.signalCode !== null ? r() : sleeper.once('exit', () => r())))
      assert.equal(sleeper.signalCode, 'SIGKILL')
    } finally {
      for (const n of [`${ours}-n1`, `${foreign}-n1`]) {
        try {
          execFileSync('ip', ['netns', 'del', n], { stdio: 'ignore' })
        } catch {}
      }
    }
  })
})

async function waitReachable(address: string): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if (await Hosts.reachable(address, 7000, 500)) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}
