/**
 * Private PostgreSQL and MariaDB servers for the fault suite (test/support/servers.ts has the
 * others): each initialised in a temporary directory and listening on a free loopback port.
 * pause(), resume() and kill() signal the server and every process it started, by PID
 * (PostgreSQL serves each connection from a child process). The shared servers of
 * scripts/backends.sh are never touched.
 *
 * With a placement (the partition harness, test/partition/), the server runs in a network
 * namespace on that host's address (servers.ts ServerPlacement) and lets every client of the
 * hosts' private subnet in: PostgreSQL trusts any address, MariaDB gets a `root@'%'` and resolves
 * no names (a reverse lookup of each client's address would stall every connect).
 */
import { execFile, type ChildProcess } from 'node:child_process'
import { appendFileSync, chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { promisify } from 'node:util'
import { join } from 'node:path'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { descendants } from '../../support/processes.js'
import { freePort, spawnInNamespace, type PrivateServer, type ServerPlacement } from '../../support/servers.js'
import { until } from './harness.js'

const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const p of live) killGroup(p, 'SIGKILL')
})

/**
 * Signals a server and every process it started. PostgreSQL's backends call setsid(), so they
 * are not in the postmaster's process group: they are found by parent PID instead. The parent
 * is signalled first when stopping (it forks no new backend meanwhile) and last when resuming.
 */
function killGroup(p: ChildProcess, sig: NodeJS.Signals): void {
  const pids = [p.pid!, ...descendants(p.pid!)]
  for (const pid of sig === 'SIGCONT' ? pids.reverse() : pids) {
    try {
      process.kill(pid, sig)
    } catch {
      // Already gone.
    }
  }
}

/** The PostgreSQL binaries (Debian installs them under a versioned directory). */
function pgBin(name: string): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
  if (versions.length === 0) throw new Error('PostgreSQL is not installed (/usr/lib/postgresql is empty)')
  return join('/usr/lib/postgresql', versions[0]!, 'bin', name)
}

/** Runs a command to its end without blocking the event loop; its stdout, or an error with its stderr. */
async function run(cmd: string, args: string[], what = cmd): Promise<string> {
  try {
    return (await promisify(execFile)(cmd, args, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 })).stdout
  } catch (err) {
    throw new Error(`${what} failed: ${(err as { stderr?: string }).stderr ?? (err as Error).message}`)
  }
}

interface Recipe {
  kind: string
  /**
   * Creates the data directory once. Asynchronously: initdb and mariadb-install-db take seconds,
   * and a synchronous call froze every other fault case of the process meanwhile (no heartbeat, no
   * ZooKeeper ping), which then saw its own session lost.
   */
  init(dir: string): Promise<void>
  /** `host`: the address it listens on. */
  command(dir: string, port: number, host: string): { cmd: string; args: string[] }
  /** Resolves once the server accepts the test's queries; creates the `rollcall` database. */
  ready(port: number, host: string, dir: string): Promise<void>
  url(port: number, host: string): string
}

async function startSql(recipe: Recipe, placement?: ServerPlacement): Promise<PrivateServer> {
  const host = placement?.address ?? '127.0.0.1'
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), `rollcall-${recipe.kind}-`))
  await recipe.init(dir)
  let child: ChildProcess | undefined
  const launch = async (): Promise<void> => {
    const { cmd, args } = recipe.command(dir, port, host)
    const p = spawnInNamespace(placement?.netns, cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true })
    let stderr = ''
    p.stderr!.on('data', (d) => (stderr = (stderr + String(d)).slice(-3_000)))
    live.add(p)
    p.once('exit', () => live.delete(p))
    child = p
    try {
      await until(
        `${recipe.kind} on port ${port}`,
        async () => {
          if (p.exitCode !== null) throw new Error(`${recipe.kind} exited with ${p.exitCode}: ${stderr}`)
          await recipe.ready(port, host, dir)
          return true
        },
        60_000,
        200,
      )
    } catch (err) {
      killGroup(p, 'SIGKILL')
      throw err
    }
  }
  const kill = async (): Promise<void> => {
    const p = child
    if (!p || p.exitCode !== null || p.signalCode !== null) return
    const gone = new Promise((r) => p.once('exit', r))
    const rest = descendants(p.pid!)
    killGroup(p, 'SIGCONT')
    killGroup(p, 'SIGKILL')
    await gone
    // Every server process must be gone before the data directory is used again.
    await until(
      `every ${recipe.kind} process to exit`,
      () =>
        rest.every((pid) => {
          try {
            process.kill(pid, 0)
            return false
          } catch {
            return true
          }
        }),
      10_000,
      50,
    )
  }
  await launch()
  return {
    kind: recipe.kind,
    port,
    url: recipe.url(port, host),
    get pid() {
      return child?.pid
    },
    pause: () => child && killGroup(child, 'SIGSTOP'),
    resume: () => child && killGroup(child, 'SIGCONT'),
    kill: () => void kill(),
    async start() {
      await launch()
    },
    async restart() {
      await kill()
      await launch()
    },
    async stop() {
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A private PostgreSQL, run as the `postgres` user (it refuses root), fsync off (with `placement`: in a network namespace). */
export function startPostgresql(placement?: ServerPlacement): Promise<PrivateServer> {
  const asPostgres = ['--reuid=postgres', '--regid=postgres', '--init-groups']
  return startSql({
    kind: 'postgresql',
    async init(dir) {
      chownSync(dir, Number((await run('id', ['-u', 'postgres'])).trim()), Number((await run('id', ['-g', 'postgres'])).trim()))
      await run('setpriv', [...asPostgres, pgBin('initdb'), '-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'], 'initdb')
      // initdb trusts loopback only; placed, the clients come from the hosts' subnet.
      if (placement) appendFileSync(join(dir, 'data', 'pg_hba.conf'), 'host all all 0.0.0.0/0 trust\n')
    },
    command: (dir, port, host) => ({
      cmd: 'setpriv',
      args: [
        ...asPostgres,
        pgBin('postgres'),
        '-D',
        join(dir, 'data'),
        '-p',
        String(port),
        '-k',
        dir,
        '-h',
        host,
        '-c',
        'fsync=off',
        '-c',
        'max_connections=200',
      ],
    }),
    async ready(port, host) {
      const client = new pg.Client({ host, port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 2_000 })
      client.on('error', () => {})
      await client.connect()
      try {
        const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = 'rollcall'")
        if (rowCount === 0) await client.query('CREATE DATABASE rollcall')
      } finally {
        await client.end().catch(() => {})
      }
    },
    url: (port, host) => `postgresql://postgres@${host}:${port}/rollcall`,
  }, placement)
}

/** A private MariaDB, root without a password, no binary log (with `placement`: in a network namespace). */
export function startMysql(placement?: ServerPlacement): Promise<PrivateServer> {
  return startSql({
    kind: 'mysql',
    async init(dir) {
      await run('mariadb-install-db', [
        '--no-defaults',
        `--datadir=${join(dir, 'data')}`,
        '--user=root',
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
      ])
    },
    command: (dir, port, host) => ({
      cmd: 'mariadbd',
      args: [
        '--no-defaults',
        `--datadir=${join(dir, 'data')}`,
        '--user=root',
        `--port=${port}`,
        `--bind-address=${host}`,
        ...(placement ? ['--skip-name-resolve'] : []),
        `--socket=${join(dir, 'sock')}`,
        `--pid-file=${join(dir, 'pid')}`,
        '--innodb-buffer-pool-size=16M',
        '--skip-log-bin',
        '--innodb-flush-log-at-trx-commit=2',
        '--max-connections=200',
      ],
    }),
    async ready(port, host, dir) {
      // Placed, root may come from the hosts' subnet: granted over the socket (not namespaced), which root@localhost may use.
      const conn = placement
        ? await mysql.createConnection({ socketPath: join(dir, 'sock'), user: 'root', connectTimeout: 2_000 })
        : await mysql.createConnection({ host, port, user: 'root', connectTimeout: 2_000 })
      try {
        if (placement) {
          await conn.query("CREATE USER IF NOT EXISTS 'root'@'%'")
          await conn.query("GRANT ALL ON *.* TO 'root'@'%'")
        }
        await conn.query('CREATE DATABASE IF NOT EXISTS rollcall')
      } finally {
        await conn.end().catch(() => {})
      }
    },
    url: (port, host) => `mysql://root@${host}:${port}/rollcall`,
  }, placement)
}
