/** The raw floor on ZooKeeper: tooz's paths, with node-zookeeper-client. */
import { randomBytes } from 'node:crypto'
import zookeeper from 'node-zookeeper-client'
import { parseBackendUrl } from '../../../src/index.js'
import type { RawBackend, RawMember } from '../raw.js'

type ZkClient = zookeeper.Client
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const zk = <T>(fn: (cb: (err: any, v?: any) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v as T))))

export class ZookeeperRaw implements RawBackend {
  readonly #c: ZkClient
  readonly #parents = new Set<string>()
  readonly ready: Promise<void>
  constructor(url: string, sessionTimeoutMs = 30_000) {
    const u = parseBackendUrl(url)
    this.#c = zookeeper.createClient(u.hosts.map((h) => `${h.host}:${h.port ?? 2181}`).join(','), { sessionTimeout: sessionTimeoutMs })
    this.ready = new Promise((resolve) => this.#c.once('connected', () => resolve()))
    this.#c.connect()
  }
  async #ensure(path: string): Promise<void> {
    await zk<string>((cb) => this.#c.mkdirp(path, cb))
  }
  async populate(group: string, members: readonly RawMember[]): Promise<void> {
    await this.ready
    await this.#ensure(`/tooz/${group}`)
    for (let i = 0; i < members.length; i += 1000) {
      await Promise.all(members.slice(i, i + 1000).map((m) => zk<string>((cb) => this.#c.create(`/tooz/${group}/${m.id}`, Buffer.from(m.caps), zookeeper.CreateMode.EPHEMERAL, cb))))
    }
  }
  async readIds(group: string): Promise<string[]> {
    await this.ready
    return zk<string[]>((cb) => this.#c.getChildren(`/tooz/${group}`, cb))
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    const ids = await this.readIds(group)
    const data = await Promise.all(ids.map((id) => zk<Buffer>((cb) => this.#c.getData(`/tooz/${group}/${id}`, cb)).catch(() => undefined)))
    return new Map(ids.flatMap((id, i) => (data[i] ? [[id, data[i]!] as [string, Uint8Array]] : [])))
  }
  async leaderToken(group: string): Promise<string | null> {
    await this.ready
    const children = await zk<string[]>((cb) => this.#c.getChildren(`/tooz/${group}/leader`, cb)).catch(() => [] as string[])
    return children.sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0] ?? null
  }
  async beat(): Promise<void> {
    await this.ready
    await zk((cb) => this.#c.exists('/tooz', cb))
  }
  async join(group: string, m: RawMember): Promise<void> {
    await zk<string>((cb) => this.#c.create(`/tooz/${group}/${m.id}`, Buffer.from(m.caps), zookeeper.CreateMode.EPHEMERAL, cb))
  }
  async lockCycle(name: string): Promise<void> {
    await this.ready
    const parent = `/tooz/locks/${name}`
    if (!this.#parents.has(parent)) {
      await this.#ensure(parent)
      this.#parents.add(parent)
    }
    const path = await zk<string>((cb) => this.#c.create(`${parent}/${randomBytes(16).toString('hex')}__lock__`, Buffer.from('raw'), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, cb))
    const children = await zk<string[]>((cb) => this.#c.getChildren(parent, cb))
    const mine = path.slice(parent.length + 1)
    if (children.sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0] !== mine) throw new Error('raw zookeeper lock busy')
    await zk((cb) => this.#c.remove(path, -1, cb))
  }
  async drop(group: string, ids: readonly string[]): Promise<void> {
    await Promise.all(ids.map((id) => zk((cb) => this.#c.remove(`/tooz/${group}/${id}`, -1, cb)).catch(() => {})))
    await zk((cb) => this.#c.remove(`/tooz/${group}`, -1, cb)).catch(() => {})
  }
  async close(): Promise<void> {
    this.#c.close()
  }
}
