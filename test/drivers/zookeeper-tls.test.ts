/**
 * ZooKeeper over TLS (issue 13): kazoo's options (use_ssl, ca, certfile, keyfile, verify_certs)
 * against a real ZooKeeper whose port speaks only TLS, with and without client certificates, and
 * the failures a misconfigured client must get quickly and in words. The server that needs client
 * certificates is the shared one of scripts/backends.sh; one that asks for none is private.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it, type TestContext } from 'node:test'
import { ConnectionError, connect, type Coordinator } from '../../src/index.js'
import { rid } from '../support/wait.js'
import { sharedZookeeperTls, startZookeeperTls, type TlsServer, type TlsZookeeper } from '../support/zookeeper-tls.js'
import { assertGroupAndLockShared } from './zookeeper-support.js'

/**
 * The server's URL with TLS options (paths are not %-encoded: they hold no reserved character
 * here). A 15 s session by default: a TLS handshake with a cold JVM on a loaded machine has taken
 * more than the 5 s the refusal cases allow themselves.
 */
function tlsUrl(z: TlsServer, options: Record<string, string>): string {
  const query = Object.entries({ use_ssl: 'true', timeout: '15', ...options }).map(([k, v]) => `${k}=${v}`).join('&')
  return `${z.url}?${query}`
}

async function open(t: TestContext, url: string): Promise<Coordinator> {
  const c = await connect(url, { memberId: rid('m') })
  t.after(() => c.stop())
  return c
}

describe('zookeeper over TLS', { concurrency: 2 }, () => {
  const needsCert = sharedZookeeperTls()
  let anyClient: TlsZookeeper
  before(async () => {
    anyClient = await startZookeeperTls('none')
  })
  after(() => anyClient?.server.stop())

  it('zookeeper-tls: with a client certificate, members share a group with capabilities, and a lock, over TLS', async (t) => {
    const url = tlsUrl(needsCert, { verify_certs: 'true', ca: needsCert.files.ca, certfile: needsCert.files.certfile, keyfile: needsCert.files.keyfile })
    await assertGroupAndLockShared(await open(t, url), await open(t, url))
  })

  it('zookeeper-tls: without a client certificate, a server that asks for none is reached; one that needs one refuses quickly, in words', async (t) => {
    const c = await open(t, tlsUrl(anyClient, { verify_certs: 'true', ca: anyClient.files.ca }))
    const g = rid('g')
    await c.joinGroupCreate(g)
    assert.deepEqual(await c.getMembers(g), [c.memberId])
    const started = Date.now()
    await assert.rejects(connect(tlsUrl(needsCert, { timeout: '5', verify_certs: 'true', ca: needsCert.files.ca }), { memberId: rid('m') }), (err: Error) => {
      assert.ok(err instanceof ConnectionError, String(err))
      assert.match(err.message, /TLS handshake failed.*(certificate|CERTIFICATE)/)
      return true
    })
    assert.ok(Date.now() - started < 15_000, `failed after ${Date.now() - started} ms (timeout 5 s)`)
  })

  it('zookeeper-tls: a CA that did not sign the server fails within the timeout with a ConnectionError naming the certificate problem', async () => {
    const started = Date.now()
    await assert.rejects(
      connect(
        tlsUrl(needsCert, {
          timeout: '5',
          verify_certs: 'true',
          ca: needsCert.files.otherCa,
          certfile: needsCert.files.certfile,
          keyfile: needsCert.files.keyfile,
        }),
        { memberId: rid('m') },
      ),
      (err: Error) => {
        assert.ok(err instanceof ConnectionError, String(err))
        assert.match(err.message, /TLS handshake failed \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT)/)
        assert.match(err.message, /check the ca, certfile and keyfile options/)
        return true
      },
    )
    assert.ok(Date.now() - started < 15_000, `failed after ${Date.now() - started} ms (timeout 5 s)`)
  })
})
