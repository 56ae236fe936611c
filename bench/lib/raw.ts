/**
 * The backend's own limit: each operation done with the raw client library in the fewest round
 * trips, on exactly the layout tooz (or, on SQL, rollcall) keeps. Also the "thin client" that
 * writes many members over one connection, to populate big groups without one process per member.
 *
 * Round trips per operation:
 * | backend    | read ids                 | read with capabilities            | beat            | join          | lock cycle            |
 * |------------|--------------------------|-----------------------------------|-----------------|---------------|-----------------------|
 * | redis      | HKEYS + EXISTS pipeline  | HGETALL + EXISTS pipeline          | PSETEX          | HSETNX        | SET NX PX + EVAL del  |
 * | memcached  | get group + multi-get    | same                              | set             | gets + cas    | add + delete          |
 * | zookeeper  | getChildren              | getChildren + getData pipeline    | exists(/tooz)   | create        | create seq + children pipeline, delete |
 * | etcd       | range keys_only          | range                             | lease keepalive | txn           | txn put + delete      |
 * | file       | readdir + stat each      | readdir + stat + read each        | utimes          | write         | open + lock + close   |
 * | SQL        | SELECT                   | SELECT                            | UPDATE          | INSERT        | lock + unlock         |
 */
import type { BenchBackend } from './backends.js'
import { EtcdRaw } from './raw/etcd.js'
import { FileRaw } from './raw/file.js'
import { MemcachedRaw } from './raw/memcached.js'
import { RedisRaw } from './raw/redis.js'
import { MysqlRaw, PostgresRaw } from './raw/sql.js'
import { ZookeeperRaw } from './raw/zookeeper.js'

/** A member as the populating client writes it. */
export interface RawMember {
  id: string
  caps: Uint8Array
}

/** Raw operations on one backend. */
export interface RawBackend {
  /** Writes a group of members in the backend's layout, alive for ttlSeconds (or the session). */
  populate(group: string, members: readonly RawMember[], ttlSeconds: number): Promise<void>
  readIds(group: string): Promise<string[]>
  readWithCaps(group: string): Promise<Map<string, Uint8Array>>
  /** One liveness refresh of member `id` (populated or joined earlier). */
  beat(id: string, ttlSeconds: number): Promise<void>
  join(group: string, member: RawMember, ttlSeconds: number): Promise<void>
  /** One uncontended acquire + release. */
  lockCycle(name: string): Promise<void>
  /**
   * Who holds the group's leader lock, as the backend says (etcd: the key's revision and lease;
   * ZooKeeper: the first contender node; Redis: the token; memcached: the key's CAS), or null when
   * nobody does. Only where leader locks expire with a lease or session that the bench can watch for.
   */
  leaderToken?(group: string): Promise<string | null>
  /** Removes the group and its members (best effort). */
  drop(group: string, ids: readonly string[]): Promise<void>
  close(): Promise<void>
}

/** The raw client of a backend, on `url`. */
export function rawBackend(backend: BenchBackend, url: string): RawBackend {
  switch (backend) {
    case 'redis':
      return new RedisRaw(url)
    case 'memcached':
      return new MemcachedRaw(url)
    case 'zookeeper':
      return new ZookeeperRaw(url)
    case 'etcd3':
      return new EtcdRaw(url)
    case 'file':
      return new FileRaw(url)
    case 'postgresql':
      return new PostgresRaw(url)
    case 'mysql':
      return new MysqlRaw(url)
  }
}

export { EtcdRaw, FileRaw, MemcachedRaw, MysqlRaw, PostgresRaw, RedisRaw, ZookeeperRaw }
