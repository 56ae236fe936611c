/**
 * Hostile data: what another writer (a buggy tool, a half-finished write, an operator) leaves on
 * the backend where a member's capabilities belong: garbage bytes, truncated msgpack, a length
 * prefix claiming 2 GB, a huge garbage blob, a huge but valid value, and a value of the wrong
 * backend type. Readers must get typed errors (SerializationError for that member alone, and a
 * `warning`), the rest of the group must stay readable and writable, liveness must not change,
 * and nothing rollcall does afterwards (reads, heartbeats, watchers, another member's writes) may
 * write over the foreign value. Where a backend keeps a whole group in one value (memcached), the
 * whole group is what gets corrupted: then that group fails with SerializationError, every other
 * group works, and writes to it are refused rather than replacing what was there.
 *
 * Tampering needs each backend's layout (tooz's, see shared/reference/tooz.md §3), so the raw
 * access is per backend; what is expected depends only on where the value lives.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { connect as tcpConnect } from 'node:net'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { Redis } from 'ioredis'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { connect, dumps, parseBackendUrl, SerializationError, type Coordinator, type RollcallError } from '../../src/index.js'
import { encodeMemberRecord, safeName } from '../../src/coordination/drivers/file/file-format.js'
import type { Backend, BackendConfig } from '../support/backends.js'
import { rid } from '../support/wait.js'
import { openRawZk } from '../drivers/zookeeper-support.js'
import { faultBackends, type FaultBackend } from './support/backends.js'
import { repeat, sleep, withTimeout } from './support/harness.js'
import { ResultsWriter } from './support/results.js'

const writer = new ResultsWriter(import.meta.url)
const backends = await faultBackends()

/** Raw access to where one member's capabilities (or, for `group`, the whole group) are stored. */
interface Tamper {
  readonly granularity: 'member' | 'group'
  /** The largest value the backend accepts (etcd: 1.5 MB requests; ZooKeeper: 1 MB nodes). */
  readonly maxBytes: number
  /** The raw value of the slot. */
  read(group: string, member: string): Promise<Buffer | undefined>
  /** Replaces the raw value of the slot. */
  write(group: string, member: string, bytes: Buffer): Promise<void>
  /** Wraps capability bytes into what the slot holds (a group map, a member record); identity by default. */
  wrap?(member: string, caps: Buffer): Buffer
  /** Puts a value of the wrong backend type in the slot, when the backend has types; returns a fingerprint to compare later. */
  wrongType?(group: string, member: string): Promise<() => Promise<string>>
  /** Removes a tampered group from a shared server, so that it breaks nobody else's reads. */
  cleanup?(group: string): Promise<void>
  close(): Promise<void>
}

const hostPort = (config: BackendConfig): { host: string; port: number } => {
  const h = parseBackendUrl(config.url).hosts[0]!
  return { host: h.host || '127.0.0.1', port: h.port! }
}

/** A memcached text-protocol exchange, for raw reads and writes. */
async function memcached(port: number, request: Buffer, end: RegExp): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    s.setTimeout(5_000, () => {
      s.destroy()
      reject(new Error('memcached did not answer'))
    })
    s.on('error', reject)
    s.on('data', (d: Buffer) => {
      chunks.push(d)
      const all = Buffer.concat(chunks)
      if (end.test(all.subarray(Math.max(0, all.length - 64)).toString('latin1'))) {
        s.end()
        resolve(all)
      }
    })
    s.write(request)
  })
}

const TAMPERS: Partial<Record<Backend, (config: BackendConfig) => Promise<Tamper>>> = {
  redis: async (config) => {
    const r = new Redis({ ...hostPort(config), lazyConnect: false })
    return {
      granularity: 'member',
      maxBytes: 32 * 1024 * 1024,
      read: async (g, m) => (await r.hgetBuffer(`_tooz_group:${g}`, m)) ?? undefined,
      write: async (g, m, bytes) => void (await r.hset(`_tooz_group:${g}`, m, bytes)),
      async wrongType(g) {
        // The group's hash becomes a list: every group command meets WRONGTYPE.
        await r.del(`_tooz_group:${g}`)
        await r.rpush(`_tooz_group:${g}`, 'not', 'a', 'hash')
        return async () => `${await r.type(`_tooz_group:${g}`)}:${(await r.lrange(`_tooz_group:${g}`, 0, -1)).join(',')}`
      },
      cleanup: async (g) => void (await r.multi().del(`_tooz_group:${g}`).srem('_tooz_groups', g).exec()),
      close: async () => void r.disconnect(),
    }
  },
  memcached: async (config) => {
    const { port } = hostPort(config)
    const get = async (key: string): Promise<{ flags: number; value: Buffer } | undefined> => {
      const out = await memcached(port, Buffer.from(`get ${key}\r\n`), /END\r\n$/)
      const m = /^VALUE \S+ (\d+) (\d+)\r\n/.exec(out.toString('latin1'))
      if (!m) return undefined
      const start = m[0].length
      return { flags: Number(m[1]), value: out.subarray(start, start + Number(m[2])) }
    }
    const set = async (key: string, flags: number, value: Buffer): Promise<void> => {
      const out = await memcached(port, Buffer.concat([Buffer.from(`set ${key} ${flags} 0 ${value.length}\r\n`), value, Buffer.from('\r\n')]), /\r\n$/)
      if (!out.toString().startsWith('STORED')) throw new Error(`memcached refused the value: ${out.toString().slice(0, 80)}`)
    }
    return {
      granularity: 'group',
      maxBytes: 1024 * 1024 - 1024,
      // A tooz group map whose one entry, the victim's, holds `caps`: the map header stays honest.
      wrap: (member, caps) =>
        Buffer.concat([
          Buffer.from([0x81]),
          Buffer.from(dumps(new TextEncoder().encode(member))),
          Buffer.from([0x81]),
          Buffer.from(dumps(new TextEncoder().encode('capabilities'))),
          caps,
        ]),
      read: async (g) => (await get(`_TOOZ_GROUP_${g}`))?.value,
      write: (g, _m, bytes) => set(`_TOOZ_GROUP_${g}`, 2, bytes),
      async wrongType(g) {
        // Raw bytes (flags 1) where tooz keeps a msgpack map (flags 2).
        const before = await get(`_TOOZ_GROUP_${g}`)
        await set(`_TOOZ_GROUP_${g}`, 1, before!.value)
        return async () => {
          const now = await get(`_TOOZ_GROUP_${g}`)
          return `${now?.flags}:${now?.value.toString('hex')}`
        }
      },
      cleanup: async (g) => void (await memcached(port, Buffer.from(`delete _TOOZ_GROUP_${g}\r\n`), /\r\n$/)),
      close: async () => {},
    }
  },
  zookeeper: async (config) => {
    const { host, port } = hostPort(config)
    const raw = await withTimeout(openRawZk({ host, port }), 15_000, 'a raw ZooKeeper client connecting')
    return {
      granularity: 'member',
      maxBytes: 1_000_000,
      read: async (g, m) => (await raw.get(`/tooz/${g}/${m}`)).data,
      write: (g, m, bytes) => raw.set(`/tooz/${g}/${m}`, bytes),
      close: () => raw.close(),
    }
  },
  etcd3: async (config) => {
    const base = `http://${hostPort(config).host}:${hostPort(config).port}/v3`
    const post = async (path: string, body: unknown): Promise<any> => (await fetch(`${base}/${path}`, { method: 'POST', body: JSON.stringify(body) })).json()
    const key = (g: string, m: string): string => Buffer.from(`tooz/groups/${g}/${m}`).toString('base64')
    return {
      granularity: 'member',
      maxBytes: 1_400_000,
      async read(g, m) {
        const kv = (await post('kv/range', { key: key(g, m) })).kvs?.[0]
        return kv && Buffer.from(kv.value ?? '', 'base64')
      },
      // ignore_lease keeps the member's lease: liveness stays the member's own.
      write: async (g, m, bytes) => void (await post('kv/put', { key: key(g, m), value: bytes.toString('base64'), ignore_lease: true })),
      close: async () => {},
    }
  },
  file: async (config) => {
    const dir = parseBackendUrl(config.url).path
    const path = (g: string, m: string): string => join(dir, 'groups', safeName(g), `${safeName(m)}.raw`)
    return {
      granularity: 'member',
      maxBytes: 32 * 1024 * 1024,
      // The slot is the member's whole record (its id, capabilities and join time).
      wrap: (member, caps) => Buffer.from(encodeMemberRecord(member, caps, new Date())),
      read: (g, m) => readFile(path(g, m)).catch(() => undefined),
      write: (g, m, bytes) => writeFile(path(g, m), bytes),
      close: async () => {},
    }
  },
  postgresql: async (config) => {
    const pool = new pg.Pool({ connectionString: config.url, max: 1 })
    return {
      granularity: 'member',
      maxBytes: 32 * 1024 * 1024,
      read: async (g, m) =>
        (await pool.query('SELECT capabilities FROM rollcall_members WHERE group_id = $1 AND member_id = $2', [g, m])).rows[0]?.capabilities as
          | Buffer
          | undefined,
      write: async (g, m, bytes) =>
        void (await pool.query('UPDATE rollcall_members SET capabilities = $3 WHERE group_id = $1 AND member_id = $2', [g, m, bytes])),
      close: () => pool.end(),
    }
  },
  mysql: async (config) => {
    const pool = mysql.createPool({ uri: config.url, connectionLimit: 1 })
    return {
      granularity: 'member',
      maxBytes: 8 * 1024 * 1024,
      async read(g, m) {
        const [rows] = await pool.query('SELECT capabilities FROM rollcall_members WHERE group_id = ? AND member_id = ?', [g, m])
        return (rows as { capabilities: Buffer }[])[0]?.capabilities
      },
      write: async (g, m, bytes) => void (await pool.query('UPDATE rollcall_members SET capabilities = ? WHERE group_id = ? AND member_id = ?', [bytes, g, m])),
      close: () => pool.end(),
    }
  },
}

type Kind = 'garbage' | 'truncated' | 'lying-length' | 'huge-garbage' | 'huge-valid' | 'wrong-type'
const KINDS: Kind[] = ['garbage', 'truncated', 'lying-length', 'huge-garbage', 'huge-valid', 'wrong-type']

/** The bytes of each kind, from the slot's original bytes. Undefined: the kind does not apply. */
function hostileBytes(kind: Kind, original: Buffer, tamper: Tamper, victim: string): Buffer | undefined {
  const huge = Math.min(tamper.maxBytes, 4 * 1024 * 1024)
  const wrap = (caps: Buffer): Buffer => tamper.wrap?.(victim, caps) ?? caps
  switch (kind) {
    // The whole slot replaced or damaged.
    case 'garbage':
      return Buffer.concat([Buffer.from([0xc1]), randomBytes(63)])
    case 'truncated':
      return original.subarray(0, Math.max(1, Math.floor(original.length / 2)))
    case 'huge-garbage':
      return Buffer.alloc(huge - 1024, 0xc1)
    // Only the capabilities, inside an otherwise well-formed slot.
    case 'lying-length':
      return wrap(Buffer.from([0xdb, 0x7f, 0xff, 0xff, 0xff, 0x61, 0x62, 0x63]))
    case 'huge-valid':
      return tamper.granularity === 'member' ? wrap(Buffer.from(dumps({ blob: 'x'.repeat(huge - 2048) }))) : undefined
    case 'wrong-type':
      return undefined
  }
}

function applicable(b: FaultBackend): string | undefined {
  if (!b.caps.has('groups')) return `unsupported by ${b.name}: groups`
  if (!TAMPERS[b.name]) return `${b.name} keeps no data outside this process for another writer to corrupt`
  return undefined
}

async function open(t: TestContext, url: string, options: Record<string, unknown> = {}): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m'), watchIntervalMs: 200, ...options })
  t.after(() => c.stop())
  return c
}

describe('fault: hostile data', { concurrency: 4 }, () => {
  for (const b of backends) {
    const skip = applicable(b)
    for (const kind of KINDS) {
      it(`${b.name}: fault: hostile data: ${kind} where capabilities belong gives typed errors; the rest of the group works; nothing is written over`, {
        skip,
        timeout: 300_000,
      }, async (t) => {
        const tamper = await TAMPERS[b.name]!(b.config)
        const tampered: string[] = []
        t.after(async () => {
          for (const g of tampered) await tamper.cleanup?.(g)
          await tamper.close()
        })
        if (kind === 'wrong-type' && !tamper.wrongType) return t.skip(`${b.name} has no value types to confuse`)
        if (kind === 'huge-valid' && tamper.granularity === 'group') return t.skip('a huge valid value is not hostile for a group-wide value')
        const url = b.config.url
        const reader = await open(t, url)
        const writerC = await open(t, url)
        // The victim neither beats nor watches: its own writes are not under test.
        const victim = await open(t, url, { heartbeat: false, autoWatch: false })
        const warnings: RollcallError[] = []
        reader.on('warning', (w) => void warnings.push(w))
        await repeat(t, {
          writer,
          scenario: `hostile.${kind}`,
          backend: b.name,
          runTimeoutMs: 120_000,
          runs: 1,
          title: `${kind}: ${
            {
              'garbage': 'random bytes starting with 0xc1 (never valid msgpack)',
              'truncated': 'the stored msgpack cut in half',
              'lying-length': 'a str32 header claiming 2 GB, followed by three bytes',
              'huge-garbage': "up to 4 MB of invalid msgpack (the backend's limit, if lower)",
              'huge-valid': 'up to 4 MB of valid msgpack, written by someone else',
              'wrong-type': 'a value of the wrong backend type (a Redis list for the group hash; raw-bytes flags on a memcached group)',
            }[kind]
          } where tooz keeps capabilities; readers get SerializationError for that ${tamper.granularity} only, the rest works, nothing is written over.`,
          measure: 'reading the tampered group',
        }, async () => {
          const g = rid('g')
          const other = rid('g')
          tampered.push(g)
          await reader.joinGroupCreate(g, { who: 'reader' })
          await writerC.joinGroup(g, { who: 'writer' })
          await victim.joinGroup(g, { who: 'victim' })
          await reader.joinGroupCreate(other, { who: 'reader' })
          const original = await tamper.read(g, victim.memberId)
          assert.ok(original, "the victim's stored value is there to tamper with")
          let fingerprint: () => Promise<string>
          if (kind === 'wrong-type') {
            fingerprint = await tamper.wrongType!(g, victim.memberId)
          } else {
            const bytes = hostileBytes(kind, original, tamper, victim.memberId)!
            await tamper.write(g, victim.memberId, bytes)
            fingerprint = async () => (await tamper.read(g, victim.memberId))?.toString('hex') ?? 'gone'
          }
          const before = await fingerprint()
          const started = Date.now()
          if (tamper.granularity === 'member' && kind !== 'wrong-type') {
            const members = await reader.getMembersWithCapabilities(g)
            const readMs = Date.now() - started
            assert.deepEqual(members.get(reader.memberId), { who: 'reader' })
            assert.deepEqual(members.get(writerC.memberId), { who: 'writer' })
            const got = members.get(victim.memberId)
            if (kind === 'huge-valid') {
              assert.equal((got as { blob?: string } | undefined)?.blob?.length, Math.min(tamper.maxBytes, 4 * 1024 * 1024) - 2048)
            } else {
              // Listed with a SerializationError, or (where the id itself is in the corrupt record) left out with a warning.
              if (got !== undefined) assert.ok(got instanceof SerializationError, `the victim's entry is a SerializationError, not ${String(got).slice(0, 80)}`)
              assert.ok(warnings.some((w) => w instanceof SerializationError), 'a warning with a SerializationError was emitted')
              await assert.rejects(
                reader.getMemberCapabilities(g, victim.memberId),
                (err: Error) => err instanceof SerializationError || err.name === 'MemberNotJoinedError',
              )
            }
            // Liveness is untouched: the victim is as listed as before, unless its record hid its id.
            const ids = await reader.getMembers(g)
            assert.ok(ids.includes(reader.memberId) && ids.includes(writerC.memberId), `members: ${ids.join(', ')}`)
            // The rest of the group stays writable and readable.
            await writerC.updateCapabilities(g, { who: 'writer', after: kind })
            assert.deepEqual(await reader.getMemberCapabilities(g, writerC.memberId), { who: 'writer', after: kind })
            await reader.heartbeat()
            await writerC.heartbeat()
            await sleep(600) // a few watcher ticks and beats of the others
            assert.equal(await fingerprint(), before, 'nothing wrote over the foreign value')
            return { ms: readMs }
          }
          // The whole group (or its backend type) is corrupt: typed errors for it, nothing else affected.
          const failure = await reader.getMembersWithCapabilities(g).then(() => undefined, (err: unknown) => err)
          const readMs = Date.now() - started
          assert.ok(
            failure instanceof Error && (failure instanceof SerializationError || (failure as RollcallError).code === 'BACKEND_ERROR'),
            `reading the corrupt group fails with a typed error, not ${String(failure)}`,
          )
          assert.equal((failure as RollcallError).code !== undefined, true)
          assert.deepEqual(await reader.getMembers(other), [reader.memberId], 'another group is unaffected')
          await assert.rejects(
            writerC.updateCapabilities(g, { who: 'writer', after: kind }),
            (err: RollcallError) => err.code !== undefined,
            'a write to the corrupt group is refused',
          )
          await reader.heartbeat().catch(() => 0)
          await writerC.heartbeat().catch(() => 0)
          await sleep(600)
          assert.equal(await fingerprint(), before, 'nothing wrote over the foreign value')
          return { ms: readMs }
        })
      })
    }
  }
})
