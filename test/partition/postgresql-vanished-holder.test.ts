/**
 * PostgreSQL, a lock holder whose host vanishes (issue 27): cut off for good, no FIN, no RST. Its
 * coordinator gives the lock up (lockLost) one membership_timeout after its last heartbeat, but
 * the server frees an advisory lock only when it sees the session end, which over a silent cut TCP
 * would tell it after the kernel's defaults (keepalive after two hours). Found by the partition
 * runs: a cut-off holder (or a waiter granted the lock as it was cut off) kept it on the server
 * for the whole cut. rollcall's lock sessions now ask the server to probe a silent client
 * (src/coordination/drivers/postgresql/index.ts lockSessionSettings): the other client gets the
 * lock about 2 × membership_timeout after the holder last spoke, after the holder was told.
 * Needs root and `ip netns` (test/partition/support/hosts.ts); skipped otherwise.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { checkPartitionHistory, renderPartitionReport } from '../fault/support/partition-checker.js'
import { HistoryWriter, awaitRecord, readHistory, type HistoryEntry } from '../fault/support/partition-history.js'
import type { ClientSpec } from './support/client.js'
import { Hosts } from './support/hosts.js'
import { startRegister } from './support/register.js'
import { cannotPartition } from './support/short-form.js'
import { startSingleServer } from './support/single-server.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const CLIENT = join(HERE, 'support', 'client.ts')
/** membership_timeout of both clients, in seconds. */
const TIMEOUT_S = 4
/** How long the holder stays cut off: far longer than the bound below. */
const CUT_MS = 30_000
/** The other client must have the lock within this of the cut: 2 × membership_timeout, plus a generous allowance for a loaded machine. */
const BOUND_MS = 2 * TIMEOUT_S * 1_000 + 8_000

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

describe('partitions: PostgreSQL, a lock holder cut off for good', { skip: cannotPartition() ?? false }, () => {
  it(`the server frees its lock within ${BOUND_MS} ms of the cut, after the holder was told it lost it`, { timeout: 180_000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-vanished-holder-'))
    const path = join(dir, 'history.jsonl')
    const hosts = await Hosts.create(['n1', 'c1', 'c2'])
    const nemesis = new HistoryWriter(path, 'nemesis')
    const clients: ChildProcess[] = []
    const server = await startSingleServer('postgresql', { hosts: [hosts.host('n1')] }).catch(async (err: unknown) => {
      await hosts.destroy()
      throw err
    })
    const register = await startRegister(hosts.adminAddress, path)
    let keep = true
    try {
      const id = randomBytes(3).toString('hex')
      const spawnClient = (host: string, holdMs: [number, number]): void => {
        const spec: ClientSpec = {
          url: server.url(`timeout=${TIMEOUT_S}`),
          name: `${host}-w${id}`,
          host,
          history: path,
          lock: { name: `lock-${id}`, register: register.url, holdMs },
        }
        clients.push(hosts.spawn(host, process.execPath, ['--import', 'tsx', CLIENT, JSON.stringify(spec)], { stdio: 'ignore' }))
      }
      const granted = (process: string) => (e: HistoryEntry): boolean => e.type === 'op' && e.op === 'acquire' && e.phase === 'ok' && e.process === process
      // c1 takes the lock and holds it far longer than the test; then c2 waits for it.
      spawnClient('c1', [600_000, 600_000])
      assert.ok(await awaitRecord(path, granted(`c1-w${id}`), 90_000), 'c1 never got the lock')
      spawnClient('c2', [300, 600])
      assert.ok(await awaitRecord(path, (e) => e.type === 'op' && e.op === 'acquire' && e.process === `c2-w${id}`, 90_000), 'c2 never asked')
      await sleep(2_000)
      const cut = nemesis.write({ type: 'nemesis', what: 'cut', sides: [['c1'], ['n1', 'c2']], majority: 1 })
      await hosts.cut([['c1'], ['n1', 'c2']])
      const taken = await awaitRecord(path, granted(`c2-w${id}`), CUT_MS)
      await hosts.heal()
      nemesis.write({ type: 'nemesis', what: 'heal' })
      await sleep(3_000)
      for (const p of clients) p.kill('SIGTERM')
      await Promise.all(clients.map((p) => (p.exitCode !== null ? undefined : Promise.race([new Promise((r) => p.once('exit', r)), sleep(15_000)]))))
      const history = readHistory(path)
      const report = checkPartitionHistory(history)
      assert.ok(taken, `c2 was not granted the lock during a ${CUT_MS} ms cut of c1: the server kept the cut-off holder's session (history ${path})`)
      const told = history.find((e) => e.type === 'event' && e.event === 'lockLost' && e.process === `c1-w${id}`)
      const ms = taken.at - cut.at
      t.diagnostic(`c2 granted ${Math.round(ms)} ms after the cut; c1 told ${told ? Math.round(told.at - cut.at) : '-'} ms after it`)
      assert.ok(told && told.at < taken.at, `c1 was not told it lost the lock before c2 was granted it (history ${path})`)
      assert.ok(ms < BOUND_MS, `c2 granted ${Math.round(ms)} ms after the cut (bound ${BOUND_MS}); history ${path}`)
      assert.equal(report.beliefOverlaps.count + report.fencingViolations.count, 0, renderPartitionReport(report))
      keep = false
    } finally {
      for (const p of clients) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
      await register.close().catch(() => {})
      await server.stop().catch(() => {})
      await hosts.destroy()
      nemesis.close()
      if (!keep) rmSync(dir, { recursive: true, force: true })
    }
  })
})
