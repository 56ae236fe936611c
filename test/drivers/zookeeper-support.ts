/**
 * Helpers for the ZooKeeper tests: a plain client (rollcall's ZkConnection, without any driver
 * on top), closed when the test ends, to read back exactly what is stored (paths, data,
 * ephemeral owners, ACLs); and a way to end another client's session with its id and password
 * (Curator's KillSession).
 */
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { OPEN_ACL, ZkConnection, type ZkAcl, type ZkStat } from '../../src/clients/zookeeper/zookeeper-client.js'
import { ZkSession } from '../../src/clients/zookeeper/zookeeper-session.js'
import { parseBackendUrl, type Coordinator } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { rid } from '../support/wait.js'

/** host:port of the shared server. */
export function sharedHostPort(): { host: string; port: number } {
  const h = parseBackendUrl(serverUrl('zookeeper')).hosts[0]!
  return { host: h.host, port: h.port ?? 2181 }
}

/** A plain client with promises; `auth` is a digest `user:password`. */
export interface RawZk {
  readonly conn: ZkConnection
  get(path: string): Promise<{ data: Buffer; stat: ZkStat }>
  children(path: string): Promise<string[]>
  exists(path: string): Promise<ZkStat | null>
  acl(path: string): Promise<ZkAcl[]>
  create(path: string, data?: Buffer): Promise<string>
  set(path: string, data: Buffer): Promise<void>
  remove(path: string): Promise<void>
  close(): Promise<void>
}

/** Connects a plain client, not tied to a test. */
export async function openRawZk(options: { host?: string; port?: number; auth?: string; timeoutMs?: number } = {}): Promise<RawZk> {
  const shared = sharedHostPort()
  const host = options.host ?? (options.port ? '127.0.0.1' : shared.host)
  const port = options.port ?? shared.port
  const timeoutMs = options.timeoutMs ?? 10_000
  const conn = new ZkConnection({
    servers: [{ host, port }],
    randomizeHosts: false,
    sessionTimeoutMs: timeoutMs,
    connectTimeoutMs: timeoutMs,
    opTimeoutMs: timeoutMs,
    digestAuth: options.auth,
    acl: OPEN_ACL,
    shownAs: `raw ${host}:${port}`,
    onState: () => {},
    onNewSession: async () => {},
  })
  await conn.start()
  return {
    conn,
    get: (path) => conn.getData(path),
    children: (path) => conn.getChildren(path),
    exists: (path) => conn.exists(path),
    acl: (path) => conn.getAcl(path),
    create: (path, data) => conn.create(path, data, 'PERSISTENT'),
    set: async (path, data) => void (await conn.setData(path, data)),
    remove: (path) => conn.remove(path),
    close: () => conn.stop(),
  }
}

/** Connects a plain client (closed after the test). */
export async function rawZk(t: TestContext, options: { port?: number; auth?: string } = {}): Promise<RawZk> {
  const raw = await openRawZk(options)
  t.after(() => raw.close())
  return raw
}

/** Resumes the session `creds` on host:port from a second client and closes it there. */
export async function closeSessionOf(host: string, port: number, creds: { id: Buffer; password: Buffer }, timeoutMs = 10_000): Promise<void> {
  let session: ZkSession | undefined
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the second client did not resume the session')), timeoutMs)
    session = new ZkSession(
      { servers: [{ host, port }], randomizeHosts: false, sessionTimeoutMs: 6_000, auth: [], tls: undefined, chroot: '', resume: creds },
      1,
      (_s, event) => {
        clearTimeout(timer)
        if (event === 'connected') resolve()
        else reject(new Error(`the second client could not resume the session: ${event}`))
      },
    )
  })
  await session!.close(timeoutMs)
  session!.abandon(new Error('done'))
}

/** The ZooKeeper error code of a rejection (NO_AUTH = -102, NO_NODE = -101). */
export function codeOf(err: unknown): number | undefined {
  return (err as { code?: unknown })?.code as number | undefined
}

/**
 * Two members of one server share a group, each seeing the other's capabilities, and a lock that
 * excludes the other until released: the round trip the transport tests (TLS, IPv6) run over.
 */
export async function assertGroupAndLockShared(a: Coordinator, b: Coordinator): Promise<void> {
  const g = rid('g')
  await a.joinGroupCreate(g, { member: 'a' })
  await b.joinGroup(g, { member: 'b' })
  assert.deepEqual(Object.fromEntries(await b.getMembersWithCapabilities(g)), { [a.memberId]: { member: 'a' }, [b.memberId]: { member: 'b' } })
  const name = rid('l')
  const held = a.getLock(name)
  assert.equal(await held.acquire(), true)
  assert.equal(await b.getLock(name).acquire({ blocking: false }), false)
  assert.equal(await held.release(), true)
  assert.equal(await b.getLock(name).acquire({ blocking: false }), true)
}
