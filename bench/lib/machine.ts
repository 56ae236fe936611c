/** The machine and software versions a run was taken on, for the results and docs. */
import { execFileSync } from 'node:child_process'
import { cpus, loadavg, totalmem } from 'node:os'
import { connect as tcpConnect } from 'node:net'

function sh(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] }).trim()
  } catch (err) {
    return `unknown (${(err as Error).message.split('\n')[0]})`
  }
}

const firstMatch = (text: string, re: RegExp): string => re.exec(text)?.[1] ?? text.split('\n')[0] ?? text

export interface MachineInfo {
  takenAt: string
  cpuModel: string
  cores: number
  memoryGiB: number
  loadavg: number[]
  kernel: string
  versions: Record<string, string>
}

export function machineInfo(): MachineInfo {
  return {
    takenAt: new Date().toISOString(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
    kernel: sh('uname', ['-sr']),
    versions: {
      node: process.version,
      redis: firstMatch(sh('redis-server', ['--version']), /v=(\S+)/),
      memcached: sh('memcached', ['-V']),
      zookeeper: firstMatch(sh('dpkg-query', ['-W', '-f=${Version}', 'zookeeper']), /(.*)/),
      etcd: firstMatch(sh('etcd', ['--version']), /etcd Version: (\S+)/),
      postgresql: sh('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-tAc', 'show server_version']),
      mariadb: sh('mariadb', ['-h', '127.0.0.1', '-u', 'root', '-N', '-e', 'select version()']),
      python: sh('/usr/bin/python3', ['--version']),
      tooz: sh('dpkg-query', ['-W', '-f=${Version}', 'python3-tooz']),
      kazoo: sh('dpkg-query', ['-W', '-f=${Version}', 'python3-kazoo']),
      'redis-py': sh('dpkg-query', ['-W', '-f=${Version}', 'python3-redis']),
      pymemcache: sh('dpkg-query', ['-W', '-f=${Version}', 'python3-pymemcache']),
      etcd3gw: sh('dpkg-query', ['-W', '-f=${Version}', 'python3-etcd3gw']),
    },
  }
}

/** Sends a four-letter word to ZooKeeper (or any line protocol) and returns the whole answer. */
export function ask(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect(port, host)
    let buf = ''
    s.setTimeout(5000, () => {
      s.destroy()
      reject(new Error(`no answer from ${host}:${port}`))
    })
    s.on('connect', () => s.write(text))
    s.on('data', (d) => (buf += d.toString()))
    s.on('end', () => resolve(buf))
    s.on('error', reject)
  })
}
