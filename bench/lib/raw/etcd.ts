/** The raw floor on etcd: tooz's keys, over the JSON gateway with a keep-alive agent (rollcall's transport). */
import http from 'node:http'
import { parseBackendUrl } from '../../../src/index.js'
import type { RawBackend, RawMember } from '../raw.js'

const b64 = (s: Uint8Array | string): string => Buffer.from(s).toString('base64')
const prefixEnd = (p: Buffer): Buffer => {
  const e = Buffer.from(p)
  for (let i = e.length - 1; i >= 0; i--) {
    if (e[i]! < 0xff) {
      e[i]! += 1
      return e.subarray(0, i + 1)
    }
  }
  return Buffer.from([0])
}

export class EtcdRaw implements RawBackend {
  readonly #base: string
  readonly #agent = new http.Agent({ keepAlive: true })
  readonly #leases = new Map<string, string>()
  #lease: string | undefined
  constructor(url: string) {
    const u = parseBackendUrl(url)
    this.#base = `http://${u.hosts[0]?.host ?? '127.0.0.1'}:${u.hosts[0]?.port ?? 2379}/v3`
  }
  /** One POST to the JSON gateway over a keep-alive connection (the transport rollcall uses too). */
  call(path: string, body: unknown): Promise<any> {
    const payload = JSON.stringify(body)
    return new Promise((resolve, reject) => {
      const req = http.request(`${this.#base}/${path}`, {
        method: 'POST',
        agent: this.#agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          try {
            const j = JSON.parse(Buffer.concat(chunks).toString('utf8'))
            if ((res.statusCode ?? 500) >= 300) reject(new Error(`etcd ${path}: ${JSON.stringify(j).slice(0, 300)}`))
            else resolve(j)
          } catch (err) {
            reject(err)
          }
        })
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(payload)
    })
  }
  async grant(ttl: number): Promise<string> {
    return String((await this.call('lease/grant', { TTL: ttl })).ID)
  }
  async populate(group: string, members: readonly RawMember[], ttl: number): Promise<void> {
    const gk = `tooz/groups/${group}/`
    await this.call('kv/put', { key: b64(gk), value: b64(gk) })
    this.#lease = await this.grant(ttl)
    const chunks: RawMember[][] = []
    for (let i = 0; i < members.length; i += 128) chunks.push(members.slice(i, i + 128))
    for (let i = 0; i < chunks.length; i += 8) {
      await Promise.all(
        chunks.slice(i, i + 8).map((c) =>
          this.call('kv/txn', { success: c.map((m) => ({ request_put: { key: b64(gk + m.id), value: b64(m.caps), lease: this.#lease } })) })
        ),
      )
    }
    for (const m of members) this.#leases.set(m.id, this.#lease)
  }
  async #range(group: string, keysOnly: boolean): Promise<any[]> {
    const p = Buffer.from(`tooz/groups/${group}/`)
    const r = await this.call('kv/range', { key: b64(p), range_end: b64(prefixEnd(p)), keys_only: keysOnly })
    return (r.kvs ?? []).filter((kv: any) => Buffer.from(kv.key, 'base64').length > p.length)
  }
  async leaderToken(group: string): Promise<string | null> {
    const kv = (await this.call('kv/range', { key: b64(`/tooz/locksleader_of_${group}`) })).kvs?.[0]
    return kv ? `${kv.mod_revision}/${kv.lease}` : null
  }
  async readIds(group: string): Promise<string[]> {
    const plen = `tooz/groups/${group}/`.length
    return (await this.#range(group, true)).map((kv) => Buffer.from(kv.key, 'base64').subarray(plen).toString())
  }
  async readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    const plen = `tooz/groups/${group}/`.length
    return new Map(
      (await this.#range(group, false)).map((kv) => [Buffer.from(kv.key, 'base64').subarray(plen).toString(), Buffer.from(kv.value ?? '', 'base64')]),
    )
  }
  async beat(id: string): Promise<void> {
    // A client that did not populate the members beats a lease of its own (one per member client).
    const lease = this.#leases.get(id) ?? this.#lease ?? (this.#lease = await this.grant(60))
    const r = await this.call('lease/keepalive', { ID: lease })
    if (!r.result?.TTL) throw new Error('lease expired')
  }
  async join(group: string, m: RawMember, ttl: number): Promise<void> {
    // One lease for every raw member, granted before the first join: a rollcall or tooz member
    // grants its lease when it starts, so the join itself is one txn.
    this.#lease ??= await this.grant(ttl)
    const lease = this.#lease
    this.#leases.set(m.id, lease)
    const gk = `tooz/groups/${group}/`
    const r = await this.call('kv/txn', {
      compare: [{ key: b64(gk), target: 'VERSION', result: 'GREATER', version: '0' }],
      success: [{ request_put: { key: b64(gk + m.id), value: b64(m.caps), lease } }],
    })
    if (!r.succeeded) throw new Error('group missing')
  }
  async lockCycle(name: string): Promise<void> {
    const key = b64(`/tooz/locks${name}`)
    const r = await this.call('kv/txn', {
      compare: [{ key, target: 'CREATE', result: 'EQUAL', create_revision: '0' }],
      success: [{ request_put: { key, value: b64('raw') } }],
    })
    if (!r.succeeded) throw new Error('raw etcd lock busy')
    await this.call('kv/deleterange', { key })
  }
  async drop(group: string): Promise<void> {
    const p = Buffer.from(`tooz/groups/${group}/`)
    await this.call('kv/deleterange', { key: b64(p), range_end: b64(prefixEnd(p)) })
    if (this.#lease) await this.call('lease/revoke', { ID: this.#lease }).catch(() => {})
  }
  async close(): Promise<void> {
    this.#agent.destroy()
  }
}
