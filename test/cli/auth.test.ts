/**
 * Refused credentials get their own code (AUTH_FAILED) and exit status (10), the same through
 * --url (coordination) and through [database] connection (the service catalog); a server that
 * speaks another protocol is a connection error whose message is rollcall's, not the client
 * library's. The built binary against the real MariaDB, PostgreSQL and memcached, and a private
 * redis-server started with --requirepass (ended by its PID).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { serverUrl } from '../support/backends.js'
import { startRedis } from '../support/servers.js'

const BIN = resolve('dist/cli/bin.js')

function rollcall(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const k of Object.keys(env)) if (k.startsWith('ROLLCALL_')) delete env[k]
  const r = spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** The test server's URL with a user the server does not know and a password. */
function withBadCredentials(name: 'mysql' | 'postgresql'): string {
  const u = new URL(serverUrl(name))
  u.username = 'rollcall_no_such_user'
  u.password = 'not-the-password-7f3a'
  return u.toString()
}

describe('cli: refused credentials', { concurrency: 2 }, () => {
  for (const name of ['mysql', 'postgresql'] as const) {
    it(`auth: ${name}: refused credentials exit 10 through --url and through [database] connection`, () => {
      const url = withBadCredentials(name)
      const coordination = rollcall(['group', 'list', '--url', url])
      assert.equal(coordination.code, 10, coordination.stderr)
      assert.match(coordination.stderr, /refused the credentials/)
      const dir = mkdtempSync(join(tmpdir(), 'rollcall-auth-'))
      const conf = join(dir, 'rollcall.conf')
      writeFileSync(conf, `[database]\nconnection = ${url}\n`)
      const catalog = rollcall(['service', 'list', '--config', conf])
      assert.equal(catalog.code, 10, catalog.stderr)
      assert.match(catalog.stderr, /refused the credentials/)
      for (const out of [coordination, catalog]) assert.doesNotMatch(out.stderr + out.stdout, /not-the-password-7f3a/)
    })
  }

  it('auth: redis: a wrong password (and none) exits 10 through --url; the right one works', async () => {
    const srv = await startRedis({ requirePass: 'the-right-password-9c1e' })
    try {
      const at = `127.0.0.1:${srv.port}`
      for (const url of [`redis://:not-the-password-7f3a@${at}`, `redis://default:not-the-password-7f3a@${at}`]) {
        const r = rollcall(['group', 'list', '--url', url])
        assert.equal(r.code, 10, `${url}: ${r.stderr}`)
        assert.match(r.stderr, /refused the credentials/)
        assert.doesNotMatch(r.stderr + r.stdout, /not-the-password-7f3a|the-right-password-9c1e|WRONGPASS/)
      }
      const none = rollcall(['group', 'list', '--url', `redis://${at}`])
      assert.equal(none.code, 10, none.stderr)
      assert.doesNotMatch(none.stderr, /NOAUTH/)
      // The server is fine and the failure was the password: with the right one the command works.
      const right = rollcall(['group', 'list', '--url', `redis://:the-right-password-9c1e@${at}`])
      assert.equal(right.code, 0, right.stderr)
      assert.doesNotMatch(right.stderr + right.stdout, /the-right-password-9c1e/)
    } finally {
      await srv.stop()
    }
  })

  it("auth: a Redis URL at memcached's port is a connection error in rollcall's words", () => {
    const memcached = new URL(serverUrl('memcached'))
    const r = rollcall(['group', 'list', '--url', `redis://${memcached.hostname}:${memcached.port}`])
    assert.equal(r.code, 7, r.stderr)
    assert.match(r.stderr, /answered, but not as a redis server \(is the port right\?\)/)
    assert.doesNotMatch(r.stderr, /RESP|Please report/)
  })
})
