/**
 * Server-side counters (operations, writes, bytes, memory), read from the server itself, so that
 * "backend work per member per interval" is what the backend saw and not what the client believes.
 * Only meaningful on a private server that nobody else uses (test/support/servers.ts).
 */
import { Redis } from 'ioredis'
import { parseBackendUrl } from '../../src/index.js'
import type { BenchBackend } from './backends.js'
import { ask } from './machine.js'

export interface Counters {
  /** Requests the server handled. */
  ops: number
  /** Of which changed data (Redis write commands, memcached sets/touches/deletes, etcd proposals and lease renewals). */
  writes: number
  bytesIn: number
  bytesOut: number
  /** Memory the server uses for data, where it says (bytes). */
  memory: number
}

const REDIS_WRITES = new Set(['set', 'psetex', 'setex', 'hset', 'hsetnx', 'hdel', 'del', 'pexpire', 'expire', 'sadd', 'srem', 'unlink'])

function kv(text: string, sep: string): Map<string, string> {
  const m = new Map<string, string>()
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(sep)
    if (i > 0) m.set(line.slice(0, i).trim(), line.slice(i + sep.length).trim())
  }
  return m
}

async function redisCounters(url: string): Promise<Counters> {
  const u = parseBackendUrl(url)
  const r = new Redis({ host: u.hosts[0]!.host, port: u.hosts[0]!.port ?? 6379 })
  try {
    const info = await r.info('all')
    const m = kv(info, ':')
    let writes = 0
    let ops = 0
    for (const [k, v] of m) {
      if (!k.startsWith('cmdstat_')) continue
      const calls = Number(/calls=(\d+)/.exec(v)?.[1] ?? 0)
      const name = k.slice(8)
      if (name === 'info') continue
      // Commands run inside scripts are counted too; client round trips are the top-level ones.
      if (REDIS_WRITES.has(name)) writes += calls
      ops += calls
    }
    return {
      ops,
      writes,
      bytesIn: Number(m.get('total_net_input_bytes')),
      bytesOut: Number(m.get('total_net_output_bytes')),
      memory: Number(m.get('used_memory')),
    }
  } finally {
    r.disconnect()
  }
}

async function memcachedCounters(url: string): Promise<Counters> {
  const u = parseBackendUrl(url)
  const text = await ask(u.hosts[0]?.port ?? 11211, 'stats\r\nquit\r\n', u.hosts[0]?.host)
  const m = new Map<string, number>()
  for (const line of text.split('\r\n')) {
    const [, k, v] = line.split(' ')
    if (k && v !== undefined) m.set(k, Number(v))
  }
  const g = (k: string): number => m.get(k) ?? 0
  const writes = g('cmd_set') + g('cmd_touch') + g('delete_hits') + g('delete_misses')
  return { ops: g('cmd_get') + writes, writes, bytesIn: g('bytes_read'), bytesOut: g('bytes_written'), memory: g('bytes') }
}

async function zookeeperCounters(url: string): Promise<Counters> {
  const u = parseBackendUrl(url)
  const m = kv(await ask(u.hosts[0]?.port ?? 2181, 'mntr', u.hosts[0]?.host), '\t')
  const g = (k: string): number => Number(m.get(k) ?? 0)
  // mntr has no byte counters; packets stand in for operations (pings included).
  return { ops: g('zk_packets_received'), writes: Number.NaN, bytesIn: Number.NaN, bytesOut: Number.NaN, memory: g('zk_approximate_data_size') }
}

async function etcdCounters(url: string): Promise<Counters> {
  const u = parseBackendUrl(url)
  const text = await (await fetch(`http://${u.hosts[0]?.host ?? '127.0.0.1'}:${u.hosts[0]?.port ?? 2379}/metrics`)).text()
  const sum = (re: RegExp): number => {
    let total = 0
    for (const line of text.split('\n')) if (!line.startsWith('#') && re.test(line)) total += Number(line.split(' ').at(-1))
    return total
  }
  const keepalives = sum(/^grpc_server_msg_received_total\{.*grpc_method="LeaseKeepAlive"/)
  return {
    ops: sum(/^grpc_server_msg_received_total\{/),
    writes: sum(/^etcd_server_proposals_committed_total/) + keepalives,
    bytesIn: sum(/^etcd_network_client_grpc_received_bytes_total/),
    bytesOut: sum(/^etcd_network_client_grpc_sent_bytes_total/),
    memory: sum(/^etcd_mvcc_db_total_size_in_use_in_bytes/),
  }
}

/** The server's counters now, or undefined for backends without them here. */
export async function readCounters(backend: BenchBackend, url: string): Promise<Counters | undefined> {
  switch (backend) {
    case 'redis':
      return redisCounters(url)
    case 'memcached':
      return memcachedCounters(url)
    case 'zookeeper':
      return zookeeperCounters(url)
    case 'etcd3':
      return etcdCounters(url)
    default:
      return undefined
  }
}

export function diff(a: Counters, b: Counters): Counters {
  return { ops: b.ops - a.ops, writes: b.writes - a.writes, bytesIn: b.bytesIn - a.bytesIn, bytesOut: b.bytesOut - a.bytesOut, memory: b.memory - a.memory }
}
