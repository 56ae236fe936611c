/**
 * Captures the ZooKeeper byte vectors of zookeeper-vectors.ts (run by hand, never by the tests):
 *
 *   node --import tsx test/clients/capture-vectors.ts > test/clients/zookeeper-vectors.ts
 *
 * A recording proxy on loopback sits in front of the real server (127.0.0.1:2181) and splits
 * each direction into frames (int length + body, the length kept). Kazoo (capture-kazoo.py) and
 * then this client (ZkSession) run the same named steps through it, one at a time, each step
 * announced before its first byte, so every frame is labelled with the step that caused it.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect, createServer, type Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { OPEN_ACL } from '../../src/clients/zookeeper/zookeeper-frames.js'
import { ZkSession } from '../../src/clients/zookeeper/zookeeper-session.js'

const SERVER_PORT = 2181
const BASE = '/rollcall-zkvectors'

interface Frame {
  step: string
  dir: 'request' | 'reply'
  hex: string
}

let step = 'start'
const frames: Frame[] = []
const links = new Set<[Socket, Socket]>()

/** Cuts a byte stream into frames (length prefix included) as they complete. */
function recorder(dir: Frame['dir']): (chunk: Buffer) => void {
  let buf = Buffer.alloc(0)
  return (chunk) => {
    buf = Buffer.concat([buf, chunk])
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
      const n = 4 + buf.readInt32BE(0)
      frames.push({ step, dir, hex: buf.subarray(0, n).toString('hex') })
      buf = buf.subarray(n)
    }
  }
}

const proxy = createServer((client) => {
  const server = connect(SERVER_PORT, '127.0.0.1')
  const link: [Socket, Socket] = [client, server]
  links.add(link)
  const up = recorder('request')
  const down = recorder('reply')
  client.on('data', (c: Buffer) => (up(c), server.write(c)))
  server.on('data', (c: Buffer) => (down(c), client.write(c)))
  const end = (): void => {
    links.delete(link)
    client.destroy()
    server.destroy()
  }
  client.on('close', end).on('error', end)
  server.on('close', end).on('error', end)
})
proxy.listen(0, '127.0.0.1')
await once(proxy, 'listening')
const port = (proxy.address() as { port: number }).port

function dropAll(): void {
  for (const [client, server] of links) {
    client.destroy()
    server.destroy()
  }
}

async function captureKazoo(): Promise<Frame[]> {
  frames.length = 0
  const py = spawn('/usr/bin/python3', [new URL('./capture-kazoo.py', import.meta.url).pathname, String(port), String(SERVER_PORT), `${BASE}-kazoo`], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  for await (const line of createInterface({ input: py.stdout })) {
    const m = /^STEP (\w+)$/.exec(line)
    if (!m) continue
    await sleep(200) // frames of the previous step (a late reply, a ping) are in
    step = m[1]!
    if (step === 'drop') dropAll()
    py.stdin.write('ok\n')
  }
  const [code] = await once(py, 'exit')
  if (code !== 0) throw new Error(`kazoo capture failed (${code})`)
  return frames.splice(0)
}

async function captureOurs(): Promise<Frame[]> {
  frames.length = 0
  const base = `${BASE}-ours`
  const at = async (name: string): Promise<void> => {
    await sleep(200)
    step = name
  }
  const connected = { resolve: (): void => {} }
  step = 'connect'
  const s = new ZkSession(
    {
      servers: [{ host: '127.0.0.1', port }],
      randomizeHosts: false,
      sessionTimeoutMs: 4000,
      auth: [{ scheme: 'digest', auth: Buffer.from('user:secret') }],
      tls: undefined,
      chroot: '',
    },
    1,
    (_s, ev) => ev === 'connected' && connected.resolve(),
  )
  await new Promise<void>((resolve) => (connected.resolve = resolve))
  const T = 5000
  const req = s.request.bind(s) as (r: never, t: number, w: string, onReply?: (err: Error | undefined) => void) => Promise<unknown>
  const run = (r: object, onReply?: (err: Error | undefined) => void): Promise<unknown> => req(r as never, T, 'capture', onReply).catch((e: Error) => e)
  const acl = OPEN_ACL
  const data = (s: string): Buffer => Buffer.from(s)
  await at('ping')
  await sleep(1200)
  s.check(performance.now())
  await at('create')
  await run({ op: 'create', path: base, data: data('data'), acl, mode: 'PERSISTENT', withStat: false })
  await at('createEphemeral')
  await run({ op: 'create', path: `${base}/eph`, data: data('e'), acl, mode: 'EPHEMERAL', withStat: false })
  await at('createSequential')
  await run({ op: 'create', path: `${base}/seq-`, data: data('s'), acl, mode: 'PERSISTENT_SEQUENTIAL', withStat: false })
  await at('create2')
  await run({ op: 'create', path: `${base}/c2`, data: data('c2'), acl, mode: 'PERSISTENT', withStat: true })
  await at('exists')
  await run({ op: 'exists', path: base, watch: false })
  await at('existsNoNode')
  await run({ op: 'exists', path: `${base}/missing`, watch: false })
  await at('getData')
  await run({ op: 'getData', path: base, watch: false })
  await at('setData')
  await run({ op: 'setData', path: base, data: data('new'), version: 0 })
  await at('getChildren2')
  await run({ op: 'getChildren', path: base, watch: false })
  await at('multi')
  await run({
    op: 'multi',
    ops: [
      { op: 'create', path: `${base}/tx`, data: data('tx'), acl, mode: 'PERSISTENT' },
      { op: 'check', path: base, version: 1 },
      { op: 'setData', path: `${base}/tx`, data: data('tx2'), version: 0 },
      { op: 'delete', path: `${base}/tx`, version: 1 },
    ],
  })
  await at('multiFailing')
  await run({
    op: 'multi',
    ops: [{ op: 'create', path: `${base}/tx2`, data: data('tx'), acl, mode: 'PERSISTENT' }, {
      op: 'create',
      path: `${base}/eph`,
      data: data('dup'),
      acl,
      mode: 'PERSISTENT',
    }],
  })
  await at('multiRead')
  await run({ op: 'multiRead', ops: [{ op: 'getData', path: base }, { op: 'getData', path: `${base}/missing` }, { op: 'getChildren', path: base }] })
  await at('getDataNoNode')
  await run({ op: 'getData', path: `${base}/missing`, watch: false })
  await at('createNodeExists')
  await run({ op: 'create', path: base, data: data('again'), acl, mode: 'PERSISTENT', withStat: false })
  await at('setDataBadVersion')
  await run({ op: 'setData', path: base, data: data('x'), version: 42 })
  await at('deleteNotEmpty')
  await run({ op: 'delete', path: base, version: -1 })
  await at('delete')
  await run({ op: 'delete', path: `${base}/c2`, version: 0 })
  await at('getDataWatch')
  let fired!: () => void
  const notified = new Promise<void>((resolve) => (fired = resolve))
  await run({ op: 'getData', path: base, watch: true }, () => s.watch('data', base, () => fired()))
  await at('notification')
  const other = new ZkSession(
    { servers: [{ host: '127.0.0.1', port: SERVER_PORT }], randomizeHosts: false, sessionTimeoutMs: 4000, auth: [], tls: undefined, chroot: '' },
    1,
    () => {},
  )
  await other.request({ op: 'setData', path: base, data: data('changed'), version: -1 }, T, 'change')
  await notified
  await at('watchesToRestore')
  await run({ op: 'getData', path: base, watch: true }, () => s.watch('data', base, () => {}))
  await run({ op: 'exists', path: `${base}/later`, watch: true }, () => s.watch('exist', `${base}/later`, () => {}))
  await run({ op: 'getChildren', path: base, watch: true }, () => s.watch('child', base, () => {}))
  await at('drop')
  const back = new Promise<void>((resolve) => (connected.resolve = resolve))
  dropAll()
  s.check(performance.now())
  await back
  await run({ op: 'exists', path: base, watch: false })
  await at('addWatch')
  await run({ op: 'addWatch', path: base, mode: 'PERSISTENT' }, () => s.watch('persistent', base, () => {}))
  await run({ op: 'addWatch', path: `${base}/tree`, mode: 'PERSISTENT_RECURSIVE' }, () => s.watch('recursive', `${base}/tree`, () => {}))
  await at('dropPersistent')
  const back2 = new Promise<void>((resolve) => (connected.resolve = resolve))
  dropAll()
  s.check(performance.now())
  await back2
  await run({ op: 'exists', path: base, watch: false })
  await at('removeWatches')
  await run({ op: 'removeWatches', path: base, type: 3 })
  await at('closeSession')
  await s.close(T)
  s.abandon(new Error('done'))
  await sleep(200)
  step = 'end'
  for (const p of [`${base}/eph`, `${base}/tx2`]) await other.request({ op: 'delete', path: p, version: -1 }, T, 'clean').catch(() => {})
  const kids = await other.request({ op: 'getChildren', path: base, watch: false }, T, 'clean')
  for (const k of kids.children) await other.request({ op: 'delete', path: `${base}/${k}`, version: -1 }, T, 'clean')
  await other.request({ op: 'delete', path: base, version: -1 }, T, 'clean')
  await other.close(T)
  other.abandon(new Error('done'))
  return frames.splice(0)
}

function emit(name: string, list: Frame[]): string {
  const by = new Map<string, Frame[]>()
  for (const f of list) by.set(f.step, [...(by.get(f.step) ?? []), f])
  // Hex in lines of 128 digits, within the house line width.
  const hex = (h: string): string => (h.match(/.{1,128}/g) ?? []).join(`' +\n      '`)
  const lines = [...by].map(([k, fs]) => `  ${k}: [\n${fs.map((f) => `    ['${f.dir}', '${hex(f.hex)}'],`).join('\n')}\n  ],`)
  return `export const ${name}: Record<string, readonly (readonly [Dir, string])[]> = {\n${lines.join('\n')}\n}\n`
}

const kazoo = await captureKazoo()
const ours = await captureOurs()
proxy.close()
dropAll()
const header = `/**
 * Byte vectors of ZooKeeper's client protocol, captured once from real exchanges by
 * capture-vectors.ts (${new Date().toISOString().slice(0, 10)}; do not edit, capture again):
 * ZooKeeper 3.8.0 at 127.0.0.1:2181 (standalone, default tickTime), talking to kazoo 2.8.0
 * (Debian's python3-kazoo, capture-kazoo.py) in KAZOO and to rollcall's own client (ZkSession)
 * in OURS, each through a recording proxy. Each step lists its frames in wire order, length
 * prefix included: 'request' is what the client sent, 'reply' what the server sent.
 *
 * Kazoo 2.8 has no multiRead, no persistent watches (addWatch, removeWatches, setWatches2) and
 * restores no watches on reconnect (no setWatches): those are in OURS only. Per run and per
 * side, these vary: xid, session id and password, zxid, ctime/mtime, sequence numbers; the paths
 * differ between KAZOO and OURS.
 */

/** Who sent a frame. */
export type Dir = 'request' | 'reply'

/** Frames per step, as [who sent it, hex]. */
`
process.stdout.write(header + emit('KAZOO', kazoo) + '\n/** Frames per step, as [who sent it, hex]. */\n' + emit('OURS', ours))
