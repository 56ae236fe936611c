/** The raw floor on memcached: tooz's keys and flags, over a minimal text-protocol client. */
import { connect as tcpConnect, type Socket } from 'node:net'
import { parseBackendUrl } from '../../../src/index.js'
import { encodeGroup, memberEntry, KEYS as MC_KEYS, decodeGroup, FLAG_BYTES,
  FLAG_MSGPACK } from '../../../src/coordination/drivers/memcached/memcached-layout.js'
import type { RawBackend, RawMember } from '../raw.js'

interface McPending {
  parse: (buf: Buffer) => number
  resolve: (v: any) => void
  reject: (e: Error) => void
  result?: any
}

/** A minimal memcached text-protocol client: one connection, requests answered in order. */
export class McConn {
  readonly #s: Socket
  #buf: Buffer = Buffer.alloc(0)
  readonly #queue: McPending[] = []
  readonly ready: Promise<void>
  constructor(host: string, port: number) {
    this.#s = tcpConnect(port, host)
    this.#s.setNoDelay(true)
    this.ready = new Promise((resolve, reject) => {
      this.#s.once('connect', () => resolve())
      this.#s.once('error', reject)
    })
    this.#s.on('data', (d: Buffer) => {
      this.#buf = this.#buf.length ? Buffer.concat([this.#buf, d]) : Buffer.from(d)
      for (;;) {
        const head = this.#queue[0]
        if (!head) break
        const used = head.parse(this.#buf)
        if (used < 0) break
        this.#buf = this.#buf.subarray(used)
        this.#queue.shift()
        head.resolve(head.result)
      }
    })
  }
  /** Sends a command whose reply is one line. */
  line(cmd: Buffer | string): Promise<string> {
    return new Promise((resolve, reject) => {
      const entry: McPending = {
        resolve,
        reject,
        parse: (buf) => {
          const i = buf.indexOf('\r\n')
          if (i < 0) return -1
          entry.result = buf.subarray(0, i).toString()
          return i + 2
        },
      }
      this.#queue.push(entry)
      this.#s.write(cmd)
    })
  }
  /** get/gets of many keys: key → { flags, value, cas }. */
  get(keys: readonly string[], cas = false): Promise<Map<string, { flags: number; value: Buffer; cas?: string }>> {
    if (keys.length === 0) return Promise.resolve(new Map())
    return new Promise((resolve, reject) => {
      const items = new Map<string, { flags: number; value: Buffer; cas?: string }>()
      const entry: McPending = {
        resolve,
        reject,
        result: items,
        parse: (buf) => {
          let pos = 0
          for (;;) {
            const eol = buf.indexOf('\r\n', pos)
            if (eol < 0) return -1
            const header = buf.subarray(pos, eol).toString()
            if (header === 'END') return eol + 2
            if (!header.startsWith('VALUE ')) {
              entry.reject(new Error(`memcached: ${header}`))
              return eol + 2
            }
            const [, key, flags, bytes, casId] = header.split(' ')
            const start = eol + 2
            const end = start + Number(bytes)
            if (buf.length < end + 2) return -1
            items.set(key!, { flags: Number(flags), value: Buffer.from(buf.subarray(start, end)), cas: casId })
            pos = end + 2
          }
        },
      }
      this.#queue.push(entry)
      this.#s.write(`${cas ? 'gets' : 'get'} ${keys.join(' ')}\r\n`)
    })
  }
  store(cmd: 'set' | 'add' | 'cas', key: string, flags: number, ttl: number, value: Buffer, casId?: string): Promise<string> {
    return this.line(Buffer.concat([Buffer.from(`${cmd} ${key} ${flags} ${ttl} ${value.length}${casId ? ` ${casId}` : ''}\r\n`), value, Buffer.from('\r\n')]))
  }
  close(): void {
    this.#s.destroy()
  }
}

export class MemcachedRaw implements RawBackend {
  readonly #c: McConn
  constructor(url: string) {
    const u = parseBackendUrl(url)
    this.#c = new McConn(u.hosts[0]?.host ?? '127.0.0.1', u.hosts[0]?.port ?? 11211)
  }
  async populate(group: string, members: readonly RawMember[], ttl: number): Promise<void> {
    await this.#c.ready
    await this.#c.store('set', MC_KEYS.group(group), FLAG_MSGPACK, 0, encodeGroup(members.map((m) => memberEntry(m.id, m.caps))))
    await Promise.all(members.map((m) => this.beat(m.id, ttl)))
  }
  async readIds(group: string): Promise<string[]> {
    return [...(await this.readWithCaps(group)).keys()]
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    await this.#c.ready
    const g = (await this.#c.get([MC_KEYS.group(group)])).get(MC_KEYS.group(group))
    const entries = decodeGroup(g && { value: g.value, flags: g.flags, cas: undefined }, group) ?? []
    const live = await this.#c.get(entries.map((e) => MC_KEYS.member(e.id!)))
    return new Map(entries.filter((e) => live.has(MC_KEYS.member(e.id!))).map((e) => [e.id!, e.value]))
  }
  async beat(id: string, ttl: number): Promise<void> {
    await this.#c.ready
    const r = await this.#c.store('set', MC_KEYS.member(id), FLAG_BYTES, ttl, Buffer.from("It's alive!"))
    if (r !== 'STORED') throw new Error(`memcached set: ${r}`)
  }
  async join(group: string, m: RawMember): Promise<void> {
    await this.#c.ready
    for (;;) {
      const item = (await this.#c.get([MC_KEYS.group(group)], true)).get(MC_KEYS.group(group))
      if (!item) throw new Error('group missing')
      const entries = decodeGroup({ value: item.value, flags: item.flags, cas: undefined }, group) ?? []
      const r = await this.#c.store('cas', MC_KEYS.group(group), FLAG_MSGPACK, 0, encodeGroup([...entries, memberEntry(m.id, m.caps)]), item.cas)
      if (r === 'STORED') return
    }
  }
  async lockCycle(name: string): Promise<void> {
    await this.#c.ready
    if ((await this.#c.store('add', MC_KEYS.lock(name), FLAG_BYTES, 30, Buffer.from('raw'))) !== 'STORED') throw new Error('raw memcached lock busy')
    await this.#c.line(`delete ${MC_KEYS.lock(name)}\r\n`)
  }
  /** The leader key's value, the holder's member id (not its CAS: every refresh changes that). */
  async leaderToken(group: string): Promise<string | null> {
    await this.#c.ready
    const key = MC_KEYS.leader(group)
    return (await this.#c.get([key])).get(key)?.value.toString('latin1') ?? null
  }
  async drop(group: string, ids: readonly string[]): Promise<void> {
    await this.#c.ready
    await Promise.all([MC_KEYS.group(group), ...ids.map((id) => MC_KEYS.member(id))].map((k) => this.#c.line(`delete ${k}\r\n`)))
  }
  async close(): Promise<void> {
    this.#c.close()
  }
}
