/**
 * Hosts for partition runs (issue 27): one network namespace per host, named with a per-run random
 * prefix (`rc1a2b3c-n1`), each with one veth into a bridge that lives in a namespace of its own
 * (`rc1a2b3c-br`), addresses 10.77.S.1.. from a private /24 chosen per run. The root namespace gets
 * one more veth into the bridge (`rc1a2b3c-a`, address 10.77.S.254) so that the test process can
 * start, probe and serve (the fenced register) the hosts; the nemesis never cuts that link.
 *
 * Cuts. Traffic is dropped on arrival, by policy routing in the receiving host's namespace: one
 * `ip rule … from <sender> iif eth0 blackhole` per host it must not hear (the namespace's `local`
 * rule is moved behind them at build). Packets vanish silently, as in a real partition (no RST, no
 * ICMP), so TCP retransmits and times out as it would; a host's own sends are never refused, so
 * connects hang as they do across a real cut. (The kernels this runs on need no tc classifier,
 * netem or iptables, which containers often lack.) `cut(sides)` blocks both ways between hosts on
 * different sides, `drop(from, to)` one way only, `heal()` removes every rule. Pauses are SIGSTOP
 * and SIGCONT of a process by PID.
 *
 * Cleanup. Everything is removed by the names this run chose and by PID: `destroy()` SIGKILLs every
 * process inside the run's namespaces (`ip netns pids`), deletes the namespaces (which removes their
 * veths and the root-side one), and deletes the run's marker. It runs at the end, on SIGINT/SIGTERM
 * and at the process's exit. A marker file in /run/rollcall-partitions/<prefix> (written BEFORE the
 * first namespace is made) names the owning PID; `sweepLeftovers()`, run before each new set of
 * hosts, removes only namespaces whose name has the harness's pattern AND whose prefix has a marker
 * whose owner is gone. Namespaces this harness did not make are never touched.
 */
import { execFile, execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { spawnInNamespace } from '../../support/servers.js'

const run = promisify(execFile)

/** Where markers live (tmpfs: gone after a reboot, as are the namespaces). */
export const MARKER_DIR = '/run/rollcall-partitions'
/** The names this harness gives namespaces and links: `rc` + 6 hex + `-` + role. */
const NAME = /^(rc[0-9a-f]{6})-[a-z0-9]+$/

/** One host: a network namespace with one address. */
export interface Host {
  /** The name the test gave it (`n1`, `c2`). */
  readonly name: string
  /** Its namespace (`rc1a2b3c-n1`). */
  readonly netns: string
  /** Its address, 10.77.S.i. */
  readonly address: string
}

/** True if a process with this PID exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function namespaces(): string[] {
  const out = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
  return out.split('\n').map((l) => l.split(' ')[0]!).filter((n) => n !== '')
}

/** SIGCONT + SIGKILL to every process inside `netns`, then deletes it; synchronous (usable in exit handlers). */
function removeNamespaceSync(netns: string): void {
  for (let i = 0; i < 20; i++) {
    let pids: number[] = []
    try {
      pids = execFileSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number)
    } catch {
      return // gone already
    }
    if (pids.length === 0) break
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGCONT')
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    execFileSync('sleep', ['0.05'])
  }
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' })
  } catch {}
}

/** Removes everything of run `prefix`: its namespaces, its root-side link, its marker. */
function removeRunSync(prefix: string): void {
  const mine = namespaces().filter((n) => n.startsWith(`${prefix}-`))
  // Hosts first (their processes), the bridge last.
  for (const n of mine.sort((a, b) => Number(a.endsWith('-br')) - Number(b.endsWith('-br')))) removeNamespaceSync(n)
  try {
    execFileSync('ip', ['link', 'del', `${prefix}-a`], { stdio: 'ignore' })
  } catch {}
  rmSync(join(MARKER_DIR, prefix), { force: true })
}

/**
 * Removes leftovers of earlier runs of this harness that did not clean up (killed with SIGKILL):
 * only namespaces named by the harness's pattern whose prefix has a marker whose owner is gone.
 * Returns the prefixes removed.
 */
export function sweepLeftovers(): string[] {
  if (!existsSync(MARKER_DIR)) return []
  const removed: string[] = []
  const prefixes = new Set(
    [...namespaces().map((n) => NAME.exec(n)?.[1]), ...readdirSync(MARKER_DIR)].filter((p) => p !== undefined && /^rc[0-9a-f]{6}$/.test(p)),
  )
  for (const prefix of prefixes) {
    const marker = join(MARKER_DIR, prefix!)
    if (!existsSync(marker)) continue // not ours: never touched
    const owner = Number((JSON.parse(readFileSync(marker, 'utf8')) as { pid: number }).pid)
    if (alive(owner)) continue // another run in progress
    removeRunSync(prefix!)
    removed.push(prefix!)
  }
  return removed
}

/** Every set of hosts not yet destroyed, for the exit and signal handlers. */
const open = new Set<Hosts>()
let handlersInstalled = false
function installHandlers(): void {
  if (handlersInstalled) return
  handlersInstalled = true
  process.on('exit', () => {
    for (const h of open) h.destroySync()
  })
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const h of open) h.destroySync()
      process.kill(process.pid, sig)
    })
  }
}

/** Free third octets of 10.77.0.0/16: not on any root-namespace interface. */
function pickSubnet(): number {
  const used = execFileSync('ip', ['-4', '-o', 'addr'], { encoding: 'utf8' })
  for (;;) {
    const s = 1 + randomBytes(1)[0]! % 250
    if (!used.includes(`10.77.${s}.`)) return s
  }
}

/** A set of hosts on one bridge; see the file's doc. */
export class Hosts {
  readonly hosts: readonly Host[]
  /** The root namespace's own address on the bridge (never cut): where the test serves the hosts. */
  readonly adminAddress: string
  readonly bridgeNetns: string
  /** Host → the blackhole rules in its namespace now. */
  readonly #rules = new Map<string, Set<string>>()
  readonly #children = new Set<ChildProcess>()
  #destroyed = false

  private constructor(readonly prefix: string, subnet: number, names: readonly string[]) {
    this.bridgeNetns = `${prefix}-br`
    this.adminAddress = `10.77.${subnet}.254`
    this.hosts = names.map((name, i) => ({ name, netns: `${prefix}-${name}`, address: `10.77.${subnet}.${i + 1}` }))
  }

  /** Makes `names.length` hosts (names: lowercase letters and digits, at most 6 characters). */
  static async create(names: readonly string[]): Promise<Hosts> {
    for (const n of names) {
      if (!/^[a-z0-9]{1,6}$/.test(n) || n === 'br' || n === 'a') throw new Error(`host name ${JSON.stringify(n)}: use 1-6 lowercase letters or digits`)
    }
    sweepLeftovers()
    installHandlers()
    const prefix = `rc${randomBytes(3).toString('hex')}`
    mkdirSync(MARKER_DIR, { recursive: true })
    writeFileSync(join(MARKER_DIR, prefix), `${JSON.stringify({ pid: process.pid, created: new Date().toISOString() })}\n`)
    const h = new Hosts(prefix, pickSubnet(), names)
    open.add(h)
    try {
      await h.#build()
    } catch (err) {
      h.destroySync()
      throw err
    }
    return h
  }

  async #build(): Promise<void> {
    const br = this.bridgeNetns
    const ipIn = (ns: string, ...args: string[]) => run('ip', ['-n', ns, ...args])
    await run('ip', ['netns', 'add', br])
    await ipIn(br, 'link', 'add', 'br0', 'type', 'bridge')
    await ipIn(br, 'link', 'set', 'br0', 'up')
    await ipIn(br, 'link', 'set', 'lo', 'up')
    for (const host of this.hosts) {
      await run('ip', ['netns', 'add', host.netns])
      const port = `to-${host.name}`
      await run('ip', ['link', 'add', 'name', 'eth0', 'netns', host.netns, 'type', 'veth', 'peer', 'name', port, 'netns', br])
      await ipIn(br, 'link', 'set', port, 'master', 'br0')
      await ipIn(br, 'link', 'set', port, 'up')
      await ipIn(host.netns, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0')
      await ipIn(host.netns, 'link', 'set', 'eth0', 'up')
      await ipIn(host.netns, 'link', 'set', 'lo', 'up')
      // The nemesis's blackhole rules (pref 10) must come before the lookup of local addresses (pref 0 by default).
      await ipIn(host.netns, 'rule', 'add', 'pref', '100', 'lookup', 'local')
      await ipIn(host.netns, 'rule', 'del', 'pref', '0')
    }
    const admin = `${this.prefix}-a`
    await run('ip', ['link', 'add', 'name', admin, 'type', 'veth', 'peer', 'name', 'admin', 'netns', br])
    await ipIn(br, 'link', 'set', 'admin', 'master', 'br0')
    await ipIn(br, 'link', 'set', 'admin', 'up')
    await run('ip', ['addr', 'add', `${this.adminAddress}/24`, 'dev', admin])
    await run('ip', ['link', 'set', admin, 'up'])
  }

  /** The host named `name`. */
  host(name: string): Host {
    const h = this.hosts.find((x) => x.name === name)
    if (!h) throw new Error(`no host ${name} (hosts: ${this.hosts.map((x) => x.name).join(', ')})`)
    return h
  }

  /** The host whose address is `address`. */
  hostAt(address: string): Host | undefined {
    return this.hosts.find((x) => x.address === address)
  }

  /** Spawns `cmd` inside host `name`'s namespace (the PID is the command's own: `ip netns exec` execs it). */
  spawn(name: string, cmd: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    const p = spawnInNamespace(this.host(name).netns, cmd, args, options)
    this.#children.add(p)
    p.once('exit', () => this.#children.delete(p))
    return p
  }

  /** Runs `cmd` inside host `name` to its end; resolves with its stdout, rejects on a non-zero exit. */
  async exec(name: string, cmd: string, args: readonly string[], timeoutMs = 10_000): Promise<string> {
    const { stdout } = await run('ip', ['netns', 'exec', this.host(name).netns, cmd, ...args], { timeout: timeoutMs })
    return stdout
  }

  /** Runs `ip` commands in host `name`'s namespace in one batch. */
  async #ipBatch(name: string, lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return
    await new Promise<void>((resolve, reject) => {
      const p = spawn('ip', ['-n', this.host(name).netns, '-batch', '-'], { stdio: ['pipe', 'ignore', 'pipe'] })
      let err = ''
      p.stderr!.on('data', (d) => (err += String(d)))
      p.once('error', reject)
      p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ip batch in ${name} failed (${code}): ${err.trim()}`))))
      p.stdin!.end(`${lines.join('\n')}\n`)
    })
  }

  /** Drops every packet from any host of `from` to any host of `to` (one way), added to what is dropped already. */
  async drop(from: readonly string[], to: readonly string[]): Promise<void> {
    await Promise.all(to.map(async (t) => {
      const rules = this.#rules.get(t) ?? new Set<string>()
      this.#rules.set(t, rules)
      const add = from.filter((f) => f !== t).map((f) => `rule add pref 10 from ${this.host(f).address} iif eth0 blackhole`).filter((r) => !rules.has(r))
      for (const r of add) rules.add(r)
      await this.#ipBatch(t, add)
    }))
  }

  /** Blocks both ways between hosts on different sides (hosts on no side are left as they are). */
  async cut(sides: readonly (readonly string[])[]): Promise<void> {
    await Promise.all(sides.map((side, i) => this.drop(sides.filter((_, j) => j !== i).flat(), side)))
  }

  /** Removes every drop: everything reaches everything again. */
  async heal(): Promise<void> {
    const all = [...this.#rules.entries()]
    this.#rules.clear()
    await Promise.all(all.map(([t, rules]) => this.#ipBatch(t, [...rules].map((r) => r.replace('rule add', 'rule del')))))
  }

  /** SIGSTOP of a process (a pause: it neither runs nor answers, its sockets stay open). */
  pause(pid: number): void {
    process.kill(pid, 'SIGSTOP')
  }

  /** SIGCONT of a paused process. */
  resume(pid: number): void {
    process.kill(pid, 'SIGCONT')
  }

  /** Whether a TCP connection from the root namespace to `address:port` opens within `ms`. */
  static reachable(address: string, port: number, ms = 1_000): Promise<boolean> {
    return new Promise((resolve) => {
      const s = tcpConnect({ host: address, port, timeout: ms })
      const done = (ok: boolean): void => {
        s.destroy()
        resolve(ok)
      }
      s.once('connect', () => done(true))
      s.once('timeout', () => done(false))
      s.once('error', () => done(false))
    })
  }

  /** Kills every process inside the hosts and removes the namespaces, links and marker. */
  destroySync(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    open.delete(this)
    for (const p of this.#children) {
      try {
        p.kill('SIGCONT')
        p.kill('SIGKILL')
      } catch {}
    }
    removeRunSync(this.prefix)
  }

  /** destroySync(), after the event loop turns once (so that exit events of children are seen). */
  async destroy(): Promise<void> {
    await new Promise((r) => setImmediate(r))
    this.destroySync()
  }

  /** The run's namespaces that exist now (empty after destroy()). */
  leftovers(): string[] {
    return namespaces().filter((n) => n.startsWith(`${this.prefix}-`))
  }
}
