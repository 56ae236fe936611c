/**
 * PostgreSQL and MariaDB, a candidate waiting in the leader lock's queue, cut off from the server
 * for longer than the server keeps its connection (issue 27, the bug sql-election-stuck). While
 * the server waits for the lock on the waiter's behalf, the client sends nothing. If the server's
 * TCP gives up on the connection during the cut, nothing of it reaches the client: after the heal
 * its socket still looks open, and without a probe of its own it would wait for an answer for the
 * kernel's two hours, and the campaign, which awaits acquireWaiting() with no bound, with it.
 * - PostgreSQL: rollcall asks the server to probe a silent lock session (tcp_keepalives_*, about
 *   2 × membership_timeout, index.ts lockSessionSettings), so any cut longer than that drops the
 *   waiter's connection on the server (whose backend waits on, unaware, until it is granted).
 * - MariaDB: a waiter re-enters GET_LOCK every half second, and the server's answer to a round,
 *   unacknowledged during the cut, is retransmitted until tcp_retries2 gives up (about 15 minutes
 *   by default). The test shortens that on the server's host (net.ipv4.tcp_retries2=3, a few
 *   seconds) to stand for a longer cut.
 * Lock sessions therefore probe the server themselves after a membership_timeout of silence
 * (src/coordination/drivers/sql/sql-sessions.ts probeServer): the first probe after the heal meets
 * no connection and is reset, the wait fails, and the campaign waits again on a new session. The
 * test cuts the waiter for CUT_MS, heals, stops the leader, and expects the waiter elected within
 * BOUND_MS; it prints what the server and both kernels say of the waiter's connections after the
 * heal. Needs root and `ip netns` (test/partition/support/hosts.ts); skipped otherwise.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { HistoryWriter, awaitRecord, readHistory, type HistoryEntry } from '../fault/support/partition-history.js'
import type { ClientSpec } from './support/client.js'
import { Hosts } from './support/hosts.js'
import { cannotPartition } from './support/short-form.js'
import { startSingleServer, type SingleServerKind } from './support/single-server.js'

const HERE = dirname(fileURLToPath(import.meta.url))
const CLIENT = join(HERE, 'support', 'client.ts')
/** membership_timeout of both clients, in seconds. */
const TIMEOUT_S = 4
/**
 * How long the waiter stays cut off: past the server's end of its connection (PostgreSQL: idle
 * membership_timeout, then 4 probes a quarter of it apart; MariaDB here: tcp_retries2=3, a few
 * seconds), and short of the waiter's own keepalive giving up during the cut (membership_timeout
 * + 10 probes 1 s apart), so that it is the first probe after the heal that finds the connection gone.
 */
const CUT_MS = 12_000
/** The waiter must be elected within this of the leader's exit: a few watch intervals, plus a generous allowance for a loaded machine. */
const BOUND_MS = 10_000

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** What the test asks of the server, per backend. */
interface Probe {
  /** The sessions of `address` that wait for a lock in the server. */
  waiting(address: string): Promise<Record<string, unknown>[]>
  close(): Promise<void>
}

async function pgProbe(url: string): Promise<Probe> {
  const admin = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  admin.on('error', () => {})
  await admin.connect()
  return {
    waiting: async (address) =>
      (await admin.query(
        `SELECT pid, client_port, state, wait_event_type, wait_event, now() - state_change AS in_state FROM pg_stat_activity
         WHERE client_addr = $1::inet AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
        [address],
      )).rows,
    close: () => admin.end(),
  }
}

async function mysqlProbe(url: string): Promise<Probe> {
  const u = new URL(url)
  const admin = await mysql.createConnection({ host: u.hostname, port: Number(u.port), user: 'root', connectTimeout: 5_000 })
  admin.on('error', () => {})
  return {
    waiting: async (address) =>
      (await admin.query(
        "SELECT ID AS id, HOST AS host, STATE AS state, TIME_MS AS ms FROM information_schema.PROCESSLIST WHERE HOST LIKE ? AND STATE = 'User lock'",
        [`${address}:%`],
      ))[0] as Record<string, unknown>[],
    close: () => admin.end(),
  }
}

const BACKENDS: { kind: SingleServerKind; title: string; probe: (url: string) => Promise<Probe>; serverSysctl: string[] }[] = [
  { kind: 'postgresql', title: 'PostgreSQL', probe: pgProbe, serverSysctl: [] },
  { kind: 'mysql', title: 'MariaDB (tcp_retries2=3 on the server)', probe: mysqlProbe, serverSysctl: ['net.ipv4.tcp_retries2=3'] },
]

for (const backend of BACKENDS) {
  describe(`partitions: ${backend.title}, a candidate waiting in the lock queue cut off from the server`, { skip: cannotPartition() ?? false }, () => {
    it(`is elected within ${BOUND_MS} ms of the leader's exit after a ${CUT_MS} ms cut`, { timeout: 180_000 }, async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'rollcall-cut-waiter-'))
      const path = join(dir, 'history.jsonl')
      const hosts = await Hosts.create(['n1', 'c1', 'c2'])
      const nemesis = new HistoryWriter(path, 'nemesis')
      const clients = new Map<string, ChildProcess>()
      const server = await startSingleServer(backend.kind, { hosts: [hosts.host('n1')] }).catch(async (err: unknown) => {
        await hosts.destroy()
        throw err
      })
      let probe: Probe | undefined
      let keep = true
      try {
        for (const s of backend.serverSysctl) await hosts.exec('n1', 'sysctl', ['-w', s])
        probe = await backend.probe(server.url(''))
        const id = randomBytes(3).toString('hex')
        const group = `g-${id}`
        const name = (host: string): string => `${host}-w${id}`
        const spawnClient = (host: string): void => {
          const spec: ClientSpec = {
            url: server.url(`timeout=${TIMEOUT_S}`),
            name: name(host),
            host,
            history: path,
            // A term far longer than the test: the leader stands down only when stopped.
            election: { group, termMs: [600_000, 600_000] },
          }
          clients.set(host, hosts.spawn(host, process.execPath, ['--import', 'tsx', CLIENT, JSON.stringify(spec)], { stdio: 'ignore' }))
        }
        const elected = (process: string) => (e: HistoryEntry): boolean => e.type === 'event' && e.event === 'leaderElected' && e.process === process
        const c2 = hosts.host('c2').address
        spawnClient('c1')
        assert.ok(await awaitRecord(path, elected(name('c1')), 90_000), 'c1 was never elected')
        spawnClient('c2')
        // c2 waits in the server for the lock.
        let waiting: Record<string, unknown>[] = []
        for (const until = Date.now() + 90_000; Date.now() < until && waiting.length === 0; await sleep(200)) waiting = await probe.waiting(c2)
        assert.ok(waiting.length > 0, 'c2 never waited for the lock')
        await sleep(1_000)
        nemesis.write({ type: 'nemesis', what: 'cut', sides: [['c2'], ['n1', 'c1']], majority: 1 })
        await hosts.cut([['c2'], ['n1', 'c1']])
        await sleep(CUT_MS)
        await hosts.heal()
        nemesis.write({ type: 'nemesis', what: 'heal' })
        await sleep(3_000)
        // What each end says of c2's connections now.
        const port = new URL(server.url('')).port
        t.diagnostic(`server, 3 s after the heal, c2's sessions waiting for a lock: ${JSON.stringify(await probe.waiting(c2))}`)
        const ss = async (host: string, filter: string[]): Promise<string> =>
          (await hosts.exec(host, 'ss', ['-tno', ...filter]).catch((err: Error) => err.message)).split('\n').map((l) => l.replace(/\s+/g, ' ')).join('\n')
        t.diagnostic(`c2's sockets to the server, 3 s after the heal:\n${await ss('c2', ['dport', '=', `:${port}`])}`)
        t.diagnostic(`the server's sockets to c2, 3 s after the heal:\n${await ss('n1', ['src', `:${port}`, 'dst', c2])}`)
        assert.ok(!readHistory(path).some(elected(name('c2'))), 'c2 was elected while c1 led')
        const c1 = clients.get('c1')!
        c1.kill('SIGTERM')
        await new Promise((r) => c1.once('exit', r))
        const exit = readHistory(path).find((e) => e.type === 'process' && e.what === 'exit' && e.process === name('c1'))!
        const taken = await awaitRecord(path, elected(name('c2')), BOUND_MS + 10_000)
        t.diagnostic(`c2 elected ${taken ? `${Math.round(taken.at - exit.at)} ms after c1's exit` : 'never'}`)
        assert.ok(taken, `c2 was never elected after c1 stood down (history ${path})`)
        assert.ok(taken.at - exit.at < BOUND_MS, `c2 elected ${Math.round(taken.at - exit.at)} ms after c1's exit (bound ${BOUND_MS}); history ${path}`)
        keep = false
      } finally {
        for (const p of clients.values()) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
        await probe?.close().catch(() => {})
        await server.stop().catch(() => {})
        await hosts.destroy()
        nemesis.close()
        if (!keep) rmSync(dir, { recursive: true, force: true })
      }
    })
  })
}
