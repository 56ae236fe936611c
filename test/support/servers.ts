/**
 * Private backend servers for tests that stop, pause, restart or cut a server: each on its own
 * free loopback port, with its own data directory, started as a child of the test process and
 * ended by its PID. The shared servers of scripts/backends.sh are never touched.
 *
 * With a {@link ServerPlacement} (the partition harness, test/partition/) the server runs inside a
 * network namespace (`ip netns exec`, which execs the server, so the PID is the server's) and
 * listens on that host's address instead of loopback.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A server this test process owns. */
export interface PrivateServer {
  readonly kind: string
  readonly port: number
  /** A URL for rollcall (no options). */
  readonly url: string
  readonly pid: number | undefined
  /** SIGSTOP: the server stops answering, connections stay open. */
  pause(): void
  /** SIGCONT after pause(). */
  resume(): void
  /** SIGKILL, then start again on the same port (and data directory). */
  restart(options?: { wipe?: boolean }): Promise<void>
  /** SIGKILL without restarting. */
  kill(): void
  /** Starts it again after kill(). */
  start(options?: { wipe?: boolean }): Promise<void>
  /** Kills it and removes its data. */
  stop(): Promise<void>
}

/** Where a private server runs when not on loopback: a network namespace and its address (test/partition/support/hosts.ts). */
export interface ServerPlacement {
  readonly address: string
  readonly netns: string
}

/**
 * Spawns `cmd` in network namespace `netns`, or here without one. In a namespace it gets a session
 * and process group of its own: the partition runs SIGSTOP such processes, and if the runner's
 * group became orphaned meanwhile (the shell that started it exited: a run started in the
 * background), the kernel would send SIGHUP to every process of that group for the stopped one, and
 * end them (seen twice: a client paused by pause-client ended with SIGHUP). Nothing is lost by it:
 * whatever runs in a test's namespaces is ended by PID when the test ends or is interrupted
 * (test/partition/support/hosts.ts).
 */
export function spawnInNamespace(netns: string | undefined, cmd: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  return netns === undefined ? spawn(cmd, args, options) : spawn('ip', ['netns', 'exec', netns, cmd, ...args], { ...options, detached: true })
}

const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

/** Busy-waits (at most 2 s) until every thread of `pid` is in the stopped state. */
function waitAllStopped(pid: number): void {
  const deadline = Date.now() + 2000
  while (Date.now() < deadline) {
    try {
      const states = readdirSync(`/proc/${pid}/task`).map((tid) => readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').replace(/^.*\) /s, '')[0])
      if (states.every((st) => st === 'T' || st === 't')) return
    } catch {
      return
    }
  }
}

/** A port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** Resolves once `probe` succeeds on 127.0.0.1:port, or rejects after ms. */
async function waitReady(port: number, probe: string | undefined, expect: RegExp, ms: number, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = tcpConnect(port, host)
      let buf = ''
      const done = (v: boolean): void => {
        s.destroy()
        resolve(v)
      }
      s.setTimeout(1000, () => done(false))
      s.on('error', () => done(false))
      s.on('connect', () => {
        if (probe === undefined) done(true)
        else s.write(probe)
      })
      s.on('data', (d) => {
        buf += d.toString()
        if (expect.test(buf)) done(true)
      })
      s.on('end', () => done(expect.test(buf)))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`server on port ${port} not ready after ${ms} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** How to run one kind of private server. */
export interface Recipe {
  kind: string
  scheme: string
  command(port: number, dir: string, extraPort: number): { cmd: string; args: string[] }
  prepare?(port: number, dir: string): void
  probe: string | undefined
  expect: RegExp
  readyMs: number
  /** The loopback address it listens on (default 127.0.0.1); with a placement, the placement's address instead. */
  host?: '127.0.0.1' | '::1'
}

/** Starts a private server of `recipe` on a free loopback port (with `placement`: in its namespace, on its address). */
export async function startPrivate(recipe: Recipe, placement?: ServerPlacement): Promise<PrivateServer> {
  const host = placement?.address ?? recipe.host ?? '127.0.0.1'
  const port = await freePort()
  const extraPort = await freePort()
  const dir = mkdtempSync(join(tmpdir(), `rollcall-${recipe.kind}-`))
  let child: ChildProcess | undefined
  const launch = async (wipe: boolean): Promise<void> => {
    if (wipe) {
      rmSync(dir, { recursive: true, force: true })
      mkdirSync(dir, { recursive: true })
    }
    recipe.prepare?.(port, dir)
    const { cmd, args } = recipe.command(port, dir, extraPort)
    const p = spawnInNamespace(placement?.netns, cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    p.stderr!.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)))
    live.add(p)
    p.once('exit', () => live.delete(p))
    child = p
    try {
      await waitReady(port, recipe.probe, recipe.expect, recipe.readyMs, host)
    } catch (err) {
      p.kill('SIGKILL')
      throw new Error(`${(err as Error).message}; ${recipe.kind} said: ${stderr}`)
    }
  }
  const kill = (): void => {
    if (child && child.exitCode === null) {
      child.kill('SIGCONT')
      child.kill('SIGKILL')
    }
  }
  const waitExit = async (): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) await new Promise((r) => child!.once('exit', r))
  }
  await launch(true)
  return {
    kind: recipe.kind,
    port,
    url: `${recipe.scheme}://${host === '::1' ? '[::1]' : host}:${port}`,
    get pid() {
      return child?.pid
    },
    pause: () => {
      child?.kill('SIGSTOP')
      // A multi-threaded server (etcd, the JVM) answers for a moment after SIGSTOP: wait until
      // every thread shows stopped.
      if (child?.pid) waitAllStopped(child.pid)
    },
    resume: () => child?.kill('SIGCONT'),
    kill,
    async start(options = {}) {
      await launch(options.wipe ?? false)
    },
    async restart(options = {}) {
      kill()
      await waitExit()
      await launch(options.wipe ?? false)
    },
    async stop() {
      kill()
      await waitExit()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * A private redis-server (no persistence, so a restart comes back empty). `requirePass`: the
 * password it demands (`--requirepass`; the URL then needs it). `fsyncEveryWrite`: an append-only
 * file fsynced on every write instead, so that a restart keeps every key (locks included).
 */
export function startRedis(options: { requirePass?: string; fsyncEveryWrite?: boolean } = {}): Promise<PrivateServer> {
  const auth = options.requirePass === undefined ? [] : ['--requirepass', options.requirePass]
  const persistence = options.fsyncEveryWrite ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']
  return startPrivate({
    // Ready when it answers at all: PONG, or NOAUTH when it wants a password first.
    kind: 'redis',
    scheme: 'redis',
    probe: 'PING\r\n',
    expect: /PONG|NOAUTH/,
    readyMs: 10_000,
    command: (port, dir) => ({
      cmd: 'redis-server',
      args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir, ...auth],
    }),
  })
}

/** A private memcached (with `placement`: in a network namespace, on its address). */
export function startMemcached(placement?: ServerPlacement): Promise<PrivateServer> {
  return startPrivate({
    kind: 'memcached',
    scheme: 'memcached',
    probe: 'version\r\n',
    expect: /VERSION/,
    readyMs: 10_000,
    command: (port) => ({ cmd: 'memcached', args: ['-l', placement?.address ?? '127.0.0.1', '-p', String(port), '-U', '0', '-u', 'nobody', '-m', '64'] }),
  }, placement)
}

/** A private single-node ZooKeeper (tickTime 500 ms, so sessions from 1 s up), on 127.0.0.1 or ::1. */
export function startZookeeper(host: '127.0.0.1' | '::1' = '127.0.0.1'): Promise<PrivateServer> {
  return startPrivate({
    kind: 'zookeeper',
    scheme: 'zookeeper',
    probe: 'srvr',
    expect: /Mode:/,
    readyMs: 30_000,
    host,
    prepare(port, dir) {
      mkdirSync(join(dir, 'data'), { recursive: true })
      writeFileSync(
        join(dir, 'zoo.cfg'),
        [
          // forceSync=no: the rest of the suite's disk load can stall an fsync of the transaction log
          // for seconds, and every answer (pings included) with it; sessions here are seconds long.
          'tickTime=500',
          'minSessionTimeout=1000',
          'maxSessionTimeout=60000',
          'forceSync=no',
          `dataDir=${join(dir, 'data')}`,
          `clientPort=${port}`,
          `clientPortAddress=${host}`,
          'admin.enableServer=false',
          '4lw.commands.whitelist=*',
          'maxClientCnxns=0',
        ].join('\n'),
      )
      writeFileSync(
        join(dir, 'log4j.properties'),
        'log4j.rootLogger=WARN, '
          + 'CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n',
      )
    },
    command: (_port, dir) => ({
      cmd: 'java',
      args: [
        '-Xmx256m',
        '-Dzookeeper.admin.enableServer=false',
        '-Dzookeeper.4lw.commands.whitelist=*',
        '-cp',
        `${dir}:/usr/share/java/zookeeper.jar`,
        'org.apache.zookeeper.server.ZooKeeperServerMain',
        join(dir, 'zoo.cfg'),
      ],
    }),
  })
}

/** A private single-member etcd (peer port on loopback too). */
export function startEtcd(): Promise<PrivateServer> {
  return startPrivate({
    kind: 'etcd',
    scheme: 'etcd3+http',
    probe: 'GET /version HTTP/1.0\r\n\r\n',
    expect: /etcdserver/,
    readyMs: 20_000,
    command: (port, dir, peer) => ({
      cmd: 'etcd',
      args: [
        '--name',
        'private',
        '--data-dir',
        join(dir, 'data'),
        '--listen-client-urls',
        `http://127.0.0.1:${port}`,
        '--advertise-client-urls',
        `http://127.0.0.1:${port}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${peer}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${peer}`,
        '--initial-cluster',
        `private=http://127.0.0.1:${peer}`,
        '--log-level',
        'error',
      ],
    }),
  })
}
