/**
 * The raw floor on ZooKeeper: tooz's paths, on rollcall's own protocol client (ZkConnection)
 * without the driver. readWithCaps() uses multiRead batches, the fastest read the server offers.
 */
import { randomBytes } from 'node:crypto'
import { OPEN_ACL, ZkConnection } from '../../../src/clients/zookeeper/zookeeper-client.js'
import { parseBackendUrl } from '../../../src/index.js'
import type { RawBackend, RawMember } from '../raw.js'

export class ZookeeperRaw implements RawBackend {
  readonly #c: ZkConnection
  readonly #parents = new Set<string>()
  readonly ready: Promise<void>
  constructor(url: string, sessionTimeoutMs = 30_000) {
    const u = parseBackendUrl(url)
    this.#c = new ZkConnection({
      servers: u.hosts.map((h) => ({ host: h.host, port: h.port ?? 2181 })),
      randomizeHosts: false,
      sessionTimeoutMs,
      connectTimeoutMs: sessionTimeoutMs,
      opTimeoutMs: sessionTimeoutMs,
      digestAuth: undefined,
      acl: OPEN_ACL,
      shownAs: 'raw zookeeper',
      onState: () => {},
      onNewSession: async () => {},
    })
    this.ready = this.#c.start()
  }
  async populate(group: string, members: readonly RawMember[]): Promise<void> {
    await this.ready
    await this.#c.ensurePath(`/tooz/${group}`)
    for (let i = 0; i < members.length; i += 1000) {
      await Promise.all(members.slice(i, i + 1000).map((m) => this.#c.create(`/tooz/${group}/${m.id}`, Buffer.from(m.caps), 'EPHEMERAL')))
    }
  }
  async readIds(group: string): Promise<string[]> {
    await this.ready
    return this.#c.getChildren(`/tooz/${group}`)
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    const ids = await this.readIds(group)
    const data = await this.#c.getDataMany(ids.map((id) => `/tooz/${group}/${id}`))
    return new Map(ids.flatMap((id, i) => (data[i] ? [[id, data[i]!] as [string, Uint8Array]] : [])))
  }
  async leaderToken(group: string): Promise<string | null> {
    await this.ready
    const children = await this.#c.getChildren(`/tooz/${group}/leader`).catch(() => [] as string[])
    return children.sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0] ?? null
  }
  async beat(): Promise<void> {
    await this.ready
    await this.#c.exists('/tooz')
  }
  async join(group: string, m: RawMember): Promise<void> {
    await this.#c.create(`/tooz/${group}/${m.id}`, Buffer.from(m.caps), 'EPHEMERAL')
  }
  async lockCycle(name: string): Promise<void> {
    await this.ready
    const parent = `/tooz/locks/${name}`
    if (!this.#parents.has(parent)) {
      await this.#c.ensurePath(parent)
      this.#parents.add(parent)
    }
    // One round trip for both: the server answers a session's requests in order, so the listing includes the new node.
    const [path, children] = await Promise.all([
      this.#c.create(`${parent}/${randomBytes(16).toString('hex')}__lock__`, Buffer.from('raw'), 'EPHEMERAL_SEQUENTIAL'),
      this.#c.getChildren(parent),
    ])
    const mine = path.slice(parent.length + 1)
    if (children.sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0] !== mine) throw new Error('raw zookeeper lock busy')
    await this.#c.remove(path)
  }
  async drop(group: string, ids: readonly string[]): Promise<void> {
    await Promise.all(ids.map((id) => this.#c.remove(`/tooz/${group}/${id}`).catch(() => {})))
    await this.#c.remove(`/tooz/${group}`).catch(() => {})
  }
  async close(): Promise<void> {
    await this.#c.stop()
  }
}
