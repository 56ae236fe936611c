/**
 * `rollcall serve` as operators run it (dist/): what it says at start-up, where it listens, what
 * it shows, read-only versus token, the Host names it answers ([api] allowed_hosts), and a clean
 * stop on SIGTERM and SIGINT with event streams open.
 */
import assert from 'node:assert/strict'
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { freePort } from '../support/servers.js'
import { rid, waitFor } from '../support/wait.js'
import { call, cli, openEvents, send, startService, tempDir, writeConfig, WEB_TIMING } from './support.js'

describe('web: serve', { concurrency: 4 }, () => {
  it('web: serve: --help describes every option', async (t) => {
    const help = cli(t, ['serve', '--help'])
    assert.equal((await help.exited).code, 0)
    for (const option of ['--listen', '--refresh', '--empty-refresh', '--title', '--verbose', '--url', '--config']) {
      const line = help.stdout().split('\n').find((l) => l.trimStart().startsWith(option))
      assert.ok(line, `${option} is listed`)
      assert.match(line!, new RegExp(`^\\s+${option}(?: VALUE)?\\s{2,}\\S`), `${option} has a description: ${JSON.stringify(line)}`)
    }
    assert.match(help.stdout(), /--refresh VALUE\s+.*SECONDS/)
  })

  it('web: serve: read-only without a token, says so, and stops cleanly on SIGTERM with a stream open', async (t) => {
    const dir = tempDir(t)
    const config = writeConfig(dir)
    await startService(t, config, { binary: 'rollcall-worker', host: 'node-1', topic: 'worker' })
    const serve = cli(t, ['serve', '--config', config, '--listen', '127.0.0.1:0'])
    const url = await serve.url()
    assert.match(serve.stderr(), /read-only \(no \[api\] token or ROLLCALL_API_TOKEN is set/)
    assert.match(serve.stderr(), /services from the tooz driver/)
    assert.match(serve.stderr(), /groups from file:\/\//)
    const rows = await waitFor(
      'the service up',
      async () => {
        const r = await call(url, 'GET', '/v1/services?state=up')
        return r.json.services.length === 1 ? r.json.services : undefined
      },
      WEB_TIMING.liveMs,
      100,
    )
    const put = await send(url, 'PUT', `/v1/services/${rows[0].id}`, { status: 'disabled' }, 'anything')
    assert.equal(put.status, 403)
    const stream = await openEvents(url)
    await stream.next('snapshot', () => true)
    const t0 = Date.now()
    serve.child.kill('SIGTERM')
    const exit = await serve.exited
    assert.equal(exit.code, 0, serve.stderr())
    assert.ok(Date.now() - t0 < 5000, 'stopped within 5 s')
    stream.close()
  })

  it('web: serve: ROLLCALL_API_TOKEN enables writes, which change the catalog; SIGINT stops it', async (t) => {
    const dir = tempDir(t)
    const config = writeConfig(dir)
    const token = rid('tok')
    await startService(t, config, { binary: 'rollcall-api', host: 'node-9', topic: 'api' })
    const serve = cli(t, ['serve', '--config', config, '--listen', '127.0.0.1:0'], { ROLLCALL_API_TOKEN: token })
    const url = await serve.url()
    assert.match(serve.stderr(), /writes enabled/)
    const id = (await waitFor('the service', async () => (await call(url, 'GET', '/v1/services')).json.services[0]?.id, WEB_TIMING.liveMs, 100)) as number
    const put = await send(url, 'PUT', `/v1/services/${id}`, { status: 'disabled', disabled_reason: 'patching' }, token)
    assert.equal(put.status, 200, put.text)
    const list = cli(t, ['service', 'list', '--config', config, '--json', '--long'])
    assert.equal((await list.exited).code, 0, list.stderr())
    const fromCli = JSON.parse(list.stdout()) as { id: number; status: string; disabled_reason: string }[]
    assert.deepEqual(fromCli.map((s) => [s.id, s.status, s.disabled_reason]), [[id, 'disabled', 'patching']])
    const del = await call(url, 'DELETE', `/v1/services/${id}`, { headers: { authorization: `Bearer ${token}` } })
    assert.equal(del.status, 204, del.text)
    const after = cli(t, ['service', 'list', '--config', config, '--json'])
    await after.exited
    assert.deepEqual(JSON.parse(after.stdout()), [])
    serve.child.kill('SIGINT')
    assert.equal((await serve.exited).code, 130, `Ctrl-C is 130, as for every command: ${serve.stderr()}`)
  })

  it('web: serve: --url alone shows coordination groups only', async (t) => {
    const dir = tempDir(t)
    const backend = `file://${join(dir, 'coord')}`
    const member = cli(t, ['group', 'join', 'workers', '--create', '--member', 'w-1', '--capabilities', '{"zone":"az1"}', '--for', '30', '--url', backend])
    const serve = cli(t, ['serve', '--url', backend, '--listen', '127.0.0.1:0'])
    const url = await serve.url()
    assert.doesNotMatch(serve.stderr(), /services from/)
    const g = await waitFor(
      'the group with its member',
      async () => {
        const r = await call(url, 'GET', '/v1/groups/workers')
        return r.status === 200 && r.json.group.members.length === 1 ? r.json.group : undefined
      },
      WEB_TIMING.liveMs,
      100,
    )
    assert.deepEqual(g.members[0], { member_id: 'w-1', capabilities: { zone: 'az1' } })
    assert.equal(g.leader, null)
    assert.equal((await call(url, 'GET', '/v1/services')).status, 404)
    member.child.kill('SIGTERM')
    serve.child.kill('SIGTERM')
    assert.equal((await serve.exited).code, 0)
  })

  it('web: serve: listens on [api] listen from the configuration when --listen is not given', async (t) => {
    const dir = tempDir(t)
    const config = writeConfig(dir)
    const port = await freePort()
    appendFileSync(config, `[api]\nlisten = 127.0.0.1:${port}\n`)
    const serve = cli(t, ['serve', '--config', config])
    assert.equal(await serve.url(), `http://127.0.0.1:${port}/`)
    serve.child.kill('SIGTERM')
    assert.equal((await serve.exited).code, 0)
  })

  it('web: serve: [api] allowed_hosts (and ROLLCALL_API_ALLOWED_HOSTS) names are answered; any other Host gets 421', async (t) => {
    const dir = tempDir(t)
    const config = writeConfig(dir)
    appendFileSync(config, '[api]\nallowed_hosts = status.example.com, Rollcall.Internal\n')
    const serve = cli(t, ['serve', '--config', config, '--listen', '127.0.0.1:0'])
    const url = await serve.url()
    const port = new URL(url).port
    for (const host of ['status.example.com', `status.example.com:${port}`, 'rollcall.internal', `127.0.0.1:${port}`]) {
      for (const path of ['/', '/v1/services', '/healthz']) {
        const r = await call(url, 'GET', path, { headers: { host } })
        assert.equal(r.status, 200, `${host} ${path}: ${r.text.slice(0, 200)}`)
      }
    }
    for (const host of ['evil.example', `evil.example:${port}`, 'status.example.com.evil.example']) {
      for (const path of ['/', '/v1/services']) {
        const r = await call(url, 'GET', path, { headers: { host } })
        assert.equal(r.status, 421, `${host} ${path}`)
        assert.equal(r.json.error.code, 'MISDIRECTED_REQUEST')
      }
    }
    serve.child.kill('SIGTERM')
    assert.equal((await serve.exited).code, 0)
    // The environment variable, with --url alone (no configuration file).
    const byEnv = cli(t, ['serve', '--url', `file://${join(dir, 'coordination')}`, '--listen', '127.0.0.1:0'], {
      ROLLCALL_API_ALLOWED_HOSTS: 'fleet.example.net',
    })
    const envUrl = await byEnv.url()
    assert.equal((await call(envUrl, 'GET', '/v1/groups', { headers: { host: 'fleet.example.net' } })).status, 200)
    assert.equal((await call(envUrl, 'GET', '/v1/groups', { headers: { host: 'status.example.com' } })).status, 421)
    byEnv.child.kill('SIGTERM')
    assert.equal((await byEnv.exited).code, 0)
  })

  it('web: serve: a bad --listen or --refresh is a usage error naming the option', async (t) => {
    const bad = cli(t, ['serve', '--url', 'memory://', '--listen', 'example.org'])
    assert.equal((await bad.exited).code, 2)
    assert.match(bad.stderr(), /--listen takes HOST:PORT/)
    const port = cli(t, ['serve', '--url', 'memory://', '--listen', '127.0.0.1:70000'])
    assert.equal((await port.exited).code, 2)
    const refresh = cli(t, ['serve', '--url', 'memory://', '--refresh', 'soon'])
    assert.equal((await refresh.exited).code, 2)
    assert.match(refresh.stderr(), /--refresh takes a number of seconds/)
    const emptyRefresh = cli(t, ['serve', '--url', 'memory://', '--empty-refresh', '0.5'])
    assert.equal((await emptyRefresh.exited).code, 2)
    assert.match(emptyRefresh.stderr(), /--empty-refresh takes at least 1 second/)
  })
})
