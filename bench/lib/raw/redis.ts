/** The raw floor on Redis: tooz's keys, with ioredis. */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { parseBackendUrl } from '../../../src/index.js'
import type { RawBackend, RawMember } from '../raw.js'

const STILL_ALIVE_REDIS = 'Not dead!'

export class RedisRaw implements RawBackend {
  readonly #r: Redis
  constructor(url: string) {
    const u = parseBackendUrl(url)
    this.#r = new Redis({ host: u.hosts[0]!.host, port: u.hosts[0]!.port ?? 6379, lazyConnect: false, enableAutoPipelining: false })
  }
  async populate(group: string, members: readonly RawMember[], ttl: number): Promise<void> {
    const key = `_tooz_group:${group}`
    await this.#r.sadd('_tooz_groups', group)
    await this.#r.hset(key, '__created__', '1')
    for (let i = 0; i < members.length; i += 2000) {
      const p = this.#r.pipeline()
      for (const m of members.slice(i, i + 2000)) {
        p.hset(key, m.id, Buffer.from(m.caps))
        p.psetex(`_tooz_beats:${m.id}`, ttl * 1000, STILL_ALIVE_REDIS)
      }
      await p.exec()
    }
  }
  async #alive(ids: string[]): Promise<string[]> {
    const p = this.#r.pipeline()
    for (const id of ids) p.exists(`_tooz_beats:${id}`)
    const r = (await p.exec()) ?? []
    return ids.filter((_, i) => r[i]?.[1] === 1)
  }
  async readIds(group: string): Promise<string[]> {
    const ids = (await this.#r.hkeys(`_tooz_group:${group}`)).filter((k) => k !== '__created__')
    return this.#alive(ids)
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    const all = await this.#r.hgetallBuffer(`_tooz_group:${group}`)
    delete all.__created__
    const live = await this.#alive(Object.keys(all))
    return new Map(live.map((id) => [id, all[id]!]))
  }
  async beat(id: string, ttl: number): Promise<void> {
    await this.#r.psetex(`_tooz_beats:${id}`, ttl * 1000, STILL_ALIVE_REDIS)
  }
  async join(group: string, m: RawMember): Promise<void> {
    await this.#r.hsetnx(`_tooz_group:${group}`, m.id, Buffer.from(m.caps))
  }
  async lockCycle(name: string): Promise<void> {
    const key = `_tooz_${name}_lock`
    const token = randomBytes(16).toString('hex')
    if ((await this.#r.set(key, token, 'PX', 30_000, 'NX')) !== 'OK') throw new Error('raw redis lock busy')
    await this.#r.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", 1, key, token)
  }
  /** The leader lock's token, under tooz ≥ 9's key (rollcall's default) or tooz 3.1's bytes-repr key. */
  async leaderToken(group: string): Promise<string | null> {
    const [v9, legacy] = await this.#r.mget(`_tooz_leader_of_${group}_lock`, `b'_tooz'_b'leader_of_${group}'_lock`)
    return v9 ?? legacy ?? null
  }
  async drop(group: string, ids: readonly string[]): Promise<void> {
    const p = this.#r.pipeline()
    p.del(`_tooz_group:${group}`)
    p.srem('_tooz_groups', group)
    for (const id of ids) p.del(`_tooz_beats:${id}`)
    await p.exec()
  }
  async close(): Promise<void> {
    this.#r.disconnect()
  }
}
