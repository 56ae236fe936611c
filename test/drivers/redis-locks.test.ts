/**
 * Redis lock wake-ups and fair hand-over (src/coordination/drivers/redis/redis-lock.ts): a release
 * that ends the holder's turn PUBLISHes the head waiter's token on its channel `<key>:wake:<token>`; a holder looping
 * on the lock cannot starve a waiter; a waiter that gives up leaves the queue; a dead subscriber
 * connection degrades to polling; a release that arrives late does not delete a later hold of the
 * same lock object. Keys and channels are read with a raw client.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { describe, it, type TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { connect, type Coordinator, type Lock } from '../../src/index.js'
import { RedisKeys } from '../../src/coordination/drivers/redis/redis-keys.js'
import { RedisLock, type RedisLockHost } from '../../src/coordination/drivers/redis/redis-lock.js'
import { scriptRunner } from '../../src/coordination/drivers/redis/redis-scripts.js'
import { serverUrl } from '../support/backends.js'
import { TcpProxy } from '../support/proxy.js'
import { scriptProcess } from '../support/script-process.js'
import { rid, waitFor } from '../support/wait.js'

/** Redis's turns, as docs/drivers.md states them: a holder's share of 1024 acquisitions with the waiters behind it, at least 32, within 100 ms. */
const ROUND_ACQUISITIONS = 1024
const MIN_TURN = 32
const TURN_MS = 100

const URL = serverUrl('redis')
const { port: PORT } = new globalThis.URL(URL.replace(/^redis:/, 'http:'))

async function open(t: TestContext, memberId = rid('m')): Promise<Coordinator> {
  const c = await connect(`${URL}?timeout=10`, { memberId, autoWatch: false })
  t.after(() => c.stop())
  return c
}

function raw(t: TestContext): Redis {
  const r = new Redis({ port: Number(PORT), host: '127.0.0.1' })
  t.after(() => r.disconnect())
  return r
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** A fresh lock taken by one coordinator, and another's waiter queued behind it (with a raw client to read the keys). */
async function queuedBehindHolder(t: TestContext, name = rid('lock'), waiterId = rid('m')) {
  const [a, b] = [await open(t), await open(t, waiterId)]
  const key = `_tooz_${name}_lock`
  const admin = raw(t)
  const holder = a.getLock(name)
  assert.equal(await holder.acquire(), true)
  const waiter = b.getLock(name)
  const waiting = waiter.acquire({ timeoutMs: 10_000 })
  // Queued from its second attempt on (about 20 ms).
  await waitFor('the waiter queued', async () => (await admin.zcard(`${key}:queue`)) === 1, 5_000)
  return { a, b, key, admin, holder, waiter, waiting }
}

/**
 * Gives the current holder a turn of 60 s, as if it had taken the lock with waiters queued (an acquisition with nobody
 * queued starts no turn), so that a queued waiter, which leaves a free key to a holder in its turn, would wait for it
 * unless the holder ends the turn.
 */
async function stretchTurn(admin: Redis, key: string): Promise<void> {
  const holderToken = await admin.get(key)
  assert.ok(holderToken, 'the lock is held')
  await admin.hset(`${key}:turn`, 't', holderToken, 'n', 1)
  assert.equal(await admin.pexpire(`${key}:turn`, 60_000), 1)
}

/**
 * A lock of coordinator `c` whose release has left the key free and its turn on with `n` acquisitions used, lasting 60 s (the
 * state a release within a turn leaves while waiters are queued), and the token that names it.
 */
async function freeInTurn(admin: Redis, c: Coordinator, name: string, n: number): Promise<{ lock: Lock; token: string }> {
  const key = `_tooz_${name}_lock`
  const lock = c.getLock(name)
  assert.equal(await lock.acquire({ blocking: false }), true)
  const token = await admin.get(key)
  assert.ok(token, 'the lock is held')
  // Nobody is queued: the release ends no turn, and the turn is written here.
  assert.equal(await lock.release(), true)
  await giveTurn(admin, key, token, n)
  return { lock, token }
}

/**
 * Releases `lock` and asks for it again at once, as a holder looping on it does: true when the release left the turn on
 * for it (within the turn), false when it used the turn up (a waiter is queued, so the key is kept for the head).
 */
async function releaseAndRetake(lock: Lock): Promise<boolean> {
  assert.equal(await lock.release(), true)
  return lock.acquire({ blocking: false })
}

/** Queues `n` live waiters (tokens w0…) behind lock `key`, as their acquire scripts would. */
async function queueWaiters(admin: Redis, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await admin.zadd(`${key}:queue`, i + 1, `w${i}`)
    await admin.set(`${key}:waiter:w${i}`, '1', 'PX', 60_000)
  }
}

/** A turn for `token` with `n` acquisitions used, lasting 60 s. */
async function giveTurn(admin: Redis, key: string, token: string, n: number): Promise<void> {
  await admin.hset(`${key}:turn`, 't', token, 'n', n)
  await admin.pexpire(`${key}:turn`, 60_000)
}

describe('redis lock wake-ups and hand-over', { concurrency: 3 }, () => {
  it("redis: locks: a holder's turn keeps the free key from every other rollcall attempt, queued or not, and from nobody else", async (t) => {
    const admin = raw(t)
    const name = rid('lock')
    const key = `_tooz_${name}_lock`
    const [a, b] = [await open(t), await open(t)]
    const { lock: holder } = await freeInTurn(admin, a, name, 1)
    // Nobody is queued: an attempt of another lock object (the releaser of the turn before, whose first attempt of a new acquire queues nothing) is refused.
    assert.equal(await b.getLock(name).acquire({ blocking: false }), false, "another attempt took the key in the holder's turn")
    const other = b.getLock(name)
    const waiting = other.acquire({ timeoutMs: 1_000 })
    await waitFor('the queueing attempt queued', async () => (await admin.zcard(`${key}:queue`)) === 1, 5_000)
    assert.equal(await waiting, false, 'a queueing attempt took the key')
    assert.equal(await admin.exists(key), 0)
    // A Python tooz process ignores the turn: SET NX is all it does, and it gets the free key.
    assert.equal(await admin.set(key, 'python', 'PX', 10_000, 'NX'), 'OK')
    await admin.del(key)
    assert.equal(await holder.acquire({ blocking: false }), true, 'the holder could not take its key back')
    assert.equal(await admin.hget(`${key}:turn`, 'n'), '2', 'the re-take counts in the turn')
    assert.equal(await releaseAndRetake(holder), true, 'a release within the turn did not leave it on for the holder')
    assert.equal(await admin.hget(`${key}:turn`, 'n'), '3')
    await holder.release()
  })

  it(`redis: locks: a turn is the holder's share of ${ROUND_ACQUISITIONS} acquisitions with the waiters queued (at least ${MIN_TURN}); the release that uses it up ends it and wakes the head`, async (t) => {
    const admin = raw(t)
    const name = rid('lock')
    const key = `_tooz_${name}_lock`
    const a = await open(t)
    const sub = raw(t)
    const heard: string[] = []
    sub.on('message', (_channel: string, message: string) => heard.push(message))
    await sub.subscribe(`${key}:wake:w0`)
    const share = ROUND_ACQUISITIONS / 2
    const { lock: holder } = await freeInTurn(admin, a, name, share - 2)
    await queueWaiters(admin, key, 1)
    assert.equal(await holder.acquire({ blocking: false }), true)
    assert.equal(await releaseAndRetake(holder), true, `acquisition ${share - 1} of a turn of ${share}`)
    assert.equal(await releaseAndRetake(holder), false, `acquisition ${share} uses the turn up`)
    assert.equal(await admin.exists(`${key}:turn`), 0, 'the used-up turn is gone')
    await waitFor('the head woken', () => heard.includes('w0'), 2_000)
    // More waiters, smaller turns: with many queued a turn allows MIN_TURN.
    const many = Math.ceil(ROUND_ACQUISITIONS / MIN_TURN)
    await admin.del(`${key}:queue`)
    const { lock: next } = await freeInTurn(admin, a, name, MIN_TURN - 1)
    await queueWaiters(admin, key, many)
    assert.equal(await next.acquire({ blocking: false }), true)
    assert.equal(await releaseAndRetake(next), false, `with ${many} queued a turn allows ${MIN_TURN}`)
  })

  it('redis: locks: two processes looping on one lock alternate in whole turns', async (t) => {
    const name = rid('lock')
    // Each process loops acquire → release for 2 s once told to go, then prints when (epoch ms) it took the lock each time.
    const looper = (): ReturnType<typeof scriptProcess> =>
      scriptProcess(
        t,
        `const c = await connect(${JSON.stringify(`${URL}?timeout=10`)}, { autoWatch: false });
const lock = c.getLock(${JSON.stringify(name)});
process.stdout.write('ready\\n');
await new Promise((r) => process.stdin.once('data', r));
const took = [];
const end = performance.now() + 2000;
while (performance.now() < end) {
  if (!(await lock.acquire({ timeoutMs: 10000 }))) continue;
  took.push(performance.timeOrigin + performance.now());
  await lock.release();
}
await c.stop();
process.stdout.write(JSON.stringify(took) + '\\n');`,
      )
    const procs = [looper(), looper()]
    await waitFor('both loopers connected', () => procs.every((p) => p.out().includes('ready')), 30_000)
    for (const p of procs) p.proc.stdin!.end('go\n')
    await Promise.all(procs.map((p) => once(p.proc, 'exit')))
    const took = procs
      .flatMap((p, who) => (JSON.parse(p.out().split('\n')[1]!) as number[]).map((at) => [at, who] as const))
      .sort((x, y) => x[0] - y[0])
    // Runs of one process's acquisitions: how many, and how long from the run's first to the next run's first.
    const runs: { len: number; ms: number }[] = []
    for (let i = 0, start = 0; i < took.length; i++) {
      if (took[i + 1]?.[1] === took[i]![1]) continue
      runs.push({ len: i + 1 - start, ms: (took[i + 1]?.[0] ?? took[i]![0]) - took[start]![0] })
      start = i + 1
    }
    // The first and last runs are cut by the loops' start and end.
    const whole = runs.slice(1, -1)
    const lens = whole.map((r) => r.len).sort((x, y) => x - y)
    t.diagnostic(`${took.length} acquisitions in ${runs.length} runs; whole runs: min ${lens[0]}, median ${lens[lens.length >> 1]}, max ${lens.at(-1)}`)
    assert.ok(whole.length >= 2, `the lock changed hands ${runs.length - 1} times in 2 s`)
    // A turn is MIN_TURN acquisitions or more, unless TURN_MS ends it first: on a loaded machine, where a cycle takes a few
    // ms, a turn may end at its time after fewer. Most runs ending both short and quick means turns were cut: the releaser,
    // whose first attempt of its next acquire is not queued yet, took the key back whenever the new holder freed it (runs of
    // 1-7 acquisitions in a few ms; the turn script test above pins the rule).
    const cut = whole.filter((r) => r.len < MIN_TURN && r.ms < TURN_MS / 2)
    assert.ok(cut.length <= whole.length / 2, `runs (acquisitions in ms): ${whole.map((r) => `${r.len} in ${r.ms.toFixed(0)}`).join(', ')}`)
    assert.ok(lens.at(-1)! <= ROUND_ACQUISITIONS, `a run longer than a round: ${lens.at(-1)}`)
  })

  it('redis: locks: a release after the turn PUBLISHes on <key>:wake:<token> of the queued waiter only, and that waiter takes the lock', async (t) => {
    const name = rid('lock')
    const sub = raw(t)
    const heard: string[] = []
    sub.on('pmessage', (_pattern: string, channel: string, message: string) => heard.push(message, channel))
    await sub.psubscribe(`_tooz_${name}_lock:wake*`)
    const { b, key, admin, holder, waiter, waiting } = await queuedBehindHolder(t, name, rid('waiter'))
    await sleep(150) // any turn of the holder's (100 ms) is over
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    // The raw subscriber's copy may be read after the waiter's own (another socket).
    await waitFor('the wake message', () => heard.length > 0, 2_000)
    assert.equal(heard.length, 2, 'one message')
    assert.ok(heard[0]!.endsWith(b.memberId), `the message names the waiter's token, not ${heard[0]}`)
    assert.equal(heard[1], `${key}:wake:${heard[0]}`, "it goes to that waiter's own channel")
    assert.equal(await admin.zcard(`${key}:queue`), 0, 'the new holder left the queue')
    await waiter.release()
  })

  it('redis: locks: a turn starts only for a holder that takes the lock with waiters queued', async (t) => {
    const { key, admin, holder, waiter, waiting } = await queuedBehindHolder(t)
    assert.equal(await admin.exists(`${key}:turn`), 0, 'an acquisition with nobody queued wrote a turn')
    await sleep(150) // any turn of the holder's (100 ms) is over
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    assert.equal(await admin.hget(`${key}:turn`, 't'), await admin.get(key), 'the head waiter that took the lock has the turn')
    await waiter.release()
  })

  it('redis: locks: a holder looping acquire → release cannot starve a waiter', async (t) => {
    const [a, b] = [await open(t), await open(t)]
    const name = rid('lock')
    const looper = a.getLock(name)
    const waiter = b.getLock(name)
    assert.equal(await looper.acquire(), true)
    let stop = false
    let loops = 0
    const looping = (async () => {
      await looper.release()
      while (!stop) {
        if (!(await looper.acquire({ timeoutMs: 10_000 }))) continue
        loops += 1
        await looper.release()
      }
    })()
    await sleep(200)
    const t0 = performance.now()
    const got = await waiter.acquire({ timeoutMs: 8_000 })
    const waitedMs = performance.now() - t0
    try {
      assert.equal(got, true, `the waiter starved behind ${loops} loops`)
    } finally {
      stop = true
      await waiter.release()
      await looping
    }
    t.diagnostic(`waiter got the lock after ${waitedMs.toFixed(0)} ms and ${loops} loops of the holder`)
  })

  it('redis: locks: a releaser whose turn is over does not take the free lock back ahead of a queued waiter', async (t) => {
    const { holder, waiter, waiting } = await queuedBehindHolder(t)
    await sleep(150) // any turn of the holder's (100 ms) is over
    assert.equal(await holder.release(), true)
    assert.equal(await holder.acquire({ blocking: false }), false, 'the releaser re-took the lock ahead of the waiter')
    assert.equal(await waiting, true)
    await waiter.release()
  })

  it('redis: locks: a waiter that times out leaves the queue, so a free lock is taken at once by anyone', async (t) => {
    const [a, b, c] = [await open(t), await open(t), await open(t)]
    const name = rid('lock')
    const key = `_tooz_${name}_lock`
    const admin = raw(t)
    const holder = a.getLock(name)
    assert.equal(await holder.acquire(), true)
    assert.equal(await b.getLock(name).acquire({ timeoutMs: 300 }), false)
    await waitFor('the waiter gone from the queue', async () => (await admin.zcard(`${key}:queue`)) === 0, 2_000)
    assert.equal(await holder.release(), true)
    const other = c.getLock(name)
    assert.equal(await other.acquire({ blocking: false }), true)
    await other.release()
  })

  it('redis: locks: with the wake-up subscriber connection killed, a waiter still gets the lock by polling', async (t) => {
    const { b, admin, holder, waiter, waiting } = await queuedBehindHolder(t, rid('lock'), rid('deaf'))
    // Kill the waiter's subscriber (found by its connection name) and stop it from coming back.
    const subName = `rollcall:${b.memberId}:sub`
    // Opened by the waiter's first wait; under load its CLIENT SETNAME may not have run yet.
    const sub = await waitFor(`a subscriber connection named ${subName}`, async () => {
      const subs = String(await admin.call('client', 'list')).split('\n').filter((l) => l.includes(` name=${subName} `))
      return subs.length === 1 ? subs[0] : undefined
    }, 5_000)
    const id = /\bid=(\d+)/.exec(sub)![1]!
    await admin.call('client', 'kill', 'id', id)
    await sleep(150)
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    await waiter.release()
  })

  it('redis: locks: a queued waiter whose process is killed does not keep the freed lock from the waiter behind it', async (t) => {
    const name = rid('lock')
    const key = `_tooz_${name}_lock`
    const admin = raw(t)
    const holder = (await open(t)).getLock(name)
    assert.equal(await holder.acquire(), true)
    // The first waiter is another process, killed while it heads the queue.
    const doomedId = rid('doomed')
    const { proc: doomed } = scriptProcess(
      t,
      `const c = await connect(${JSON.stringify(`${URL}?timeout=10`)}, { memberId: ${JSON.stringify(doomedId)}, autoWatch: false });
await c.getLock(${JSON.stringify(name)}).acquire({ timeoutMs: 60_000 });`,
    )
    await waitFor('the doomed process to head the queue', async () => (await admin.zrange(`${key}:queue`, '0', '0'))[0]?.endsWith(doomedId) === true, 30_000)
    const waiter = (await open(t)).getLock(name)
    const waiting = waiter.acquire({ timeoutMs: 10_000 })
    await waitFor('the second waiter queued', async () => (await admin.zcard(`${key}:queue`)) === 2, 5_000)
    doomed.kill('SIGKILL')
    await once(doomed, 'exit')
    // Its place would otherwise be kept until its liveness key lapses (up to 1 s after its last attempt).
    const [doomedToken] = await admin.zrange(`${key}:queue`, '0', '0')
    const leaseLeftMs = await admin.pttl(`${key}:waiter:${doomedToken}`)
    await sleep(150) // any turn of the holder's (100 ms) is over
    const releasedAt = performance.now()
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    const tookMs = performance.now() - releasedAt
    assert.ok(leaseLeftMs - 150 > 0, `the dead waiter's liveness key had ${leaseLeftMs} ms left: too little to tell`)
    assert.ok(
      tookMs < leaseLeftMs - 150,
      `the waiter behind the dead one got the lock ${tookMs.toFixed(0)} ms after the release, when the dead one's place lapsed`,
    )
    await waiter.release()
  })

  it('redis: locks: a holder that releases within its turn and does not take the lock back ends its turn and wakes the waiter', async (t) => {
    const name = rid('lock')
    const sub = raw(t)
    const heard: string[] = []
    sub.on('pmessage', (_pattern: string, _channel: string, message: string) => heard.push(message))
    await sub.psubscribe(`_tooz_${name}_lock:wake*`)
    const { b, key, admin, holder, waiter, waiting } = await queuedBehindHolder(t, name, rid('waiter'))
    await stretchTurn(admin, key)
    assert.equal(await holder.release(), true)
    assert.equal(await waiting, true)
    assert.ok(heard.some((m) => m.endsWith(b.memberId)), 'the waiter was woken by a message, not by its poll')
    await waiter.release()
  })

  it("redis: locks: stopping a coordinator right after a release within the holder's turn ends that turn", async (t) => {
    const { a, key, admin, holder, waiter, waiting } = await queuedBehindHolder(t)
    await stretchTurn(admin, key)
    assert.equal(await holder.release(), true)
    await a.stop()
    assert.equal(await waiting, true)
    await waiter.release()
  })

  it('redis: locks: a release that reaches Redis late (after a later hold of the same lock object) does not delete that hold', async (t) => {
    // The etcd driver had this bug (issue 27): a release sent to a server that was cut off timed out, the same lock object took the
    // lock again (its key still held the object's token), and after the heal the kernel delivered the old release, which compared
    // only the key's value: it deleted the new hold, and the lock was free while its holder believed it held it.
    const proxy = await TcpProxy.start(Number(PORT))
    t.after(() => proxy.close())
    const good = raw(t)
    const late = new Redis({ port: proxy.port, host: '127.0.0.1', commandTimeout: 500, maxRetriesPerRequest: 0, retryStrategy: () => null })
    late.on('error', () => {})
    t.after(() => late.disconnect())
    await late.ping()
    const runners = { good: scriptRunner(good), late: scriptRunner(late) }
    let via: keyof typeof runners = 'good'
    const host: RedisLockHost = {
      client: () => good,
      run: (name, keys, args) => runners[via](name, keys, args),
      acquire: (keys, args) => runners[via]('rollcallLockAcquire', keys, [...args, 0]),
      lockTimeoutMs: 10_000,
      memberId: rid('m'),
      turnOpen: () => {},
      holding: () => {},
      wakeups: undefined,
    }
    const keys = new RedisKeys('_tooz', 'v9')
    const key = keys.lock(rid('late-release'))
    const lock = new RedisLock(host, key, keys.fence(key))
    assert.equal(await lock.tryAcquire(), true)
    const first = lock.fencingToken!
    // The release goes through the silent link and times out; the client gives up on that connection.
    proxy.pause({ lateDelivery: true })
    via = 'late'
    const released = lock.release()
    via = 'good'
    await assert.rejects(released, /timed out/)
    late.disconnect()
    // The same object takes the lock again: its token is still the key's value.
    assert.equal(await lock.tryAcquire(), true)
    assert.ok(lock.fencingToken! > first)
    // The heal: the old release reaches Redis now.
    proxy.resume()
    await waitFor('the late release delivered', () => proxy.connections === 0, 5_000)
    assert.equal(await good.pttl(key) > 0, true, 'the later hold is still in place')
    assert.equal(await lock.isStillOwner(), true)
    assert.equal(await lock.release(), true)
    assert.equal(await good.exists(key), 0)
  })
})
