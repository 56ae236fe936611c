/**
 * What an idle `rollcall serve` costs (issue 28.12): over 2,000 empty groups it sent ~32,000 Redis
 * commands a second and used 42 % of a core, as it re-read every group (and its leader) at every
 * refresh. Its cost must follow the changes and what is shown, not the number of groups. Measured
 * on a private redis-server, so that the command count is this server's alone; the process's CPU
 * time comes from /proc. A change made while it idles must still show.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { connect } from '../../src/index.js'
import { startRedis } from '../support/servers.js'
import { rid, waitFor } from '../support/wait.js'
import { call, cli, WEB_TIMING } from './support.js'

const WINDOW_MS = 10_000

/** Commands the server has processed, INFO and this connection's own aside (one INFO per call). */
async function commands(raw: Redis): Promise<number> {
  const info = await raw.info('stats')
  return Number(/total_commands_processed:(\d+)/.exec(info)![1])
}

/** User + system CPU time of a process, in seconds (Linux /proc; clock ticks of 100 Hz). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

describe('web: idle cost', { concurrency: 1 }, () => {
  it('web: idle cost: rollcall serve over 2,000 empty groups and 2 live ones sends few commands, and a join still shows', { timeout: 180_000 }, async (t) => {
    const redis = await startRedis()
    t.after(() => redis.stop())
    const raw = new Redis(redis.port, '127.0.0.1')
    t.after(() => raw.disconnect())
    const creator = await connect(redis.url, { memberId: rid('creator') })
    t.after(() => creator.stop())
    const empty = Array.from({ length: 2000 }, (_v, i) => `empty-${String(i).padStart(4, '0')}`)
    for (let i = 0; i < empty.length; i += 200) await Promise.all(empty.slice(i, i + 200).map((g) => creator.createGroup(g)))
    const live = ['live-a', 'live-b']
    for (const g of live) await creator.joinGroupCreate(g, { role: g })

    const serve = cli(t, ['serve', '--url', redis.url, '--listen', '127.0.0.1:0'])
    const base = await serve.url()
    await waitFor(
      'the live groups to show',
      async () => (await call(base, 'GET', '/v1/groups')).json?.groups?.some((g: { group: string }) => g.group === 'live-b') || undefined,
      WEB_TIMING.startMs,
      100,
    )
    // Let start-up settle, then idle for the window.
    await new Promise((r) => setTimeout(r, 3000))
    const c0 = await commands(raw)
    const cpu0 = cpuSeconds(serve.child.pid!)
    const t0 = performance.now()
    await new Promise((r) => setTimeout(r, WINDOW_MS))
    const seconds = (performance.now() - t0) / 1000
    const perSecond = ((await commands(raw)) - c0 - 1) / seconds
    const cpuPercent = ((cpuSeconds(serve.child.pid!) - cpu0) / seconds) * 100
    t.diagnostic(`idle over 2,000 empty + 2 live groups: ${Math.round(perSecond)} Redis commands/s, ${cpuPercent.toFixed(1)} % of a core`)
    // Before: ~32,000/s (16 a group a second). Now the two live groups and a slow pass over the
    // empty ones (a few pipelined reads per empty group per slow period): well under 1,000/s.
    assert.ok(perSecond < 1000, `${Math.round(perSecond)} commands/s while idle`)
    // Before: 38-42 % of a core; now ~2 %. CPU time, not wall time, so a loaded machine barely moves it.
    assert.ok(cpuPercent < 15, `${cpuPercent.toFixed(1)} % of a core while idle`)

    // A join into a live group shows at once; a direct read of a group that was empty sees its member
    // (the lists find it in their slow pass: test/web/group-list.test.ts).
    const joiner = await connect(redis.url, { memberId: rid('joiner') })
    t.after(() => joiner.stop())
    await joiner.joinGroup('live-a', {})
    await joiner.joinGroup(empty[1234]!, {})
    await waitFor(
      'the join into a live group to show on the page',
      async () => (await call(base, 'GET', '/')).text.includes(joiner.memberId) || undefined,
      WEB_TIMING.liveMs,
      100,
    )
    const direct = await call(base, 'GET', `/v1/groups/${empty[1234]}`)
    assert.deepEqual(direct.json.group.members.map((m: { member_id: string }) => m.member_id), [joiner.memberId])
    serve.child.kill('SIGTERM')
    assert.equal((await serve.exited).code, 0)
  })
})
