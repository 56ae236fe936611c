/**
 * Helpers for the ZooKeeper driver tests: a plain node-zookeeper-client, closed when the test
 * ends, to read back exactly what is stored (paths, data, ephemeral owners, ACLs).
 */
import type { TestContext } from 'node:test'
import type * as Zk from 'node-zookeeper-client'
import { parseBackendUrl } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'

/** The node-zookeeper-client module. */
export async function zkLib(): Promise<typeof Zk> {
  const mod = await import('node-zookeeper-client')
  return ((mod as unknown as { default?: typeof Zk }).default ?? mod) as typeof Zk
}

/** host:port of the shared server. */
export function sharedHostPort(): { host: string; port: number } {
  const h = parseBackendUrl(serverUrl('zookeeper')).hosts[0]!
  return { host: h.host, port: h.port ?? 2181 }
}

/** A plain client with promises; `auth` is a digest `user:password`. */
export interface RawZk {
  readonly client: Zk.Client
  get(path: string): Promise<{ data: Buffer; stat: Zk.Stat }>
  children(path: string): Promise<string[]>
  exists(path: string): Promise<Zk.Stat | null>
  acl(path: string): Promise<{ scheme: string; id: string; perms: number }[]>
  create(path: string, data?: Buffer): Promise<string>
  set(path: string, data: Buffer): Promise<void>
  remove(path: string): Promise<void>
}

/** Connects a plain client (closed after the test). */
export async function rawZk(t: TestContext, options: { port?: number; auth?: string } = {}): Promise<RawZk> {
  const zk = await zkLib()
  const { host, port } = options.port ? { host: '127.0.0.1', port: options.port } : sharedHostPort()
  const client = zk.createClient(`${host}:${port}`, { sessionTimeout: 10_000 })
  if (options.auth) client.addAuthInfo('digest', Buffer.from(options.auth))
  t.after(() => client.close())
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the raw ZooKeeper client did not connect')), 10_000)
    client.once('connected', () => {
      clearTimeout(timer)
      resolve()
    })
    client.connect()
  })
  const p = <T>(fn: (cb: (err: unknown, v?: T) => void) => void): Promise<T> =>
    new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v as T))))
  return {
    client,
    get: (path) => p<{ data: Buffer; stat: Zk.Stat }>((cb) => client.getData(path, (e, data, stat) => cb(e, { data: data ?? Buffer.alloc(0), stat }))),
    children: (path) => p<string[]>((cb) => client.getChildren(path, (e, c) => cb(e, c))),
    exists: (path) => p<Zk.Stat | null>((cb) => client.exists(path, (e, s) => cb(e, s ?? null))),
    acl: (path) => p((cb) => client.getACL(path, (e, acls) => cb(e, e ? [] : acls.map((a) => {
      const raw = a as unknown as { permission: number; id: { scheme: string; id: string } }
      return { scheme: raw.id.scheme, id: raw.id.id, perms: raw.permission }
    })))),
    create: (path, data) => p<string>((cb) => client.create(path, data ?? Buffer.alloc(0), (e, created) => cb(e, created))),
    set: (path, data) => p<void>((cb) => client.setData(path, data, (e) => cb(e))),
    remove: (path) => p<void>((cb) => client.remove(path, (e) => cb(e))),
  }
}

/** The library error code of a rejection (NO_AUTH = -102, NO_NODE = -101). */
export function codeOf(err: unknown): number | undefined {
  return (err as { code?: unknown })?.code as number | undefined
}
