/**
 * ZooKeeper over TLS for tests: the shared server scripts/backends.sh starts (client certificates
 * required; found in .backends/urls.json), and private ones with other settings. Both are made by
 * scripts/zookeeper-tls.mjs: a throw-away CA, the server's PKCS12 key and trust stores, a client
 * certificate, Netty on the class path.
 */
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { serverUrl } from './backends.js'
import { startPrivate, type PrivateServer } from './servers.js'

/** The files a TLS client needs, PEM. */
export interface TlsFiles {
  ca: string
  certfile: string
  keyfile: string
  /** A CA that signed nothing here: verifying the server with it must fail. */
  otherCa: string
}

/** A TLS ZooKeeper (its URL has no options) and the client's files. */
export interface TlsServer {
  url: string
  files: TlsFiles
}

/** A private TLS ZooKeeper, with its server handle. */
export interface TlsZookeeper extends TlsServer {
  server: PrivateServer
}

/** The shared TLS ZooKeeper of scripts/backends.sh: TLS on 127.0.0.1, client certificates required. */
export function sharedZookeeperTls(): TlsServer {
  return {
    url: serverUrl('zookeeper-tls'),
    files: {
      ca: serverUrl('zookeeper-tls-ca'),
      certfile: serverUrl('zookeeper-tls-certfile'),
      keyfile: serverUrl('zookeeper-tls-keyfile'),
      otherCa: serverUrl('zookeeper-tls-other-ca'),
    },
  }
}

/**
 * Starts a private ZooKeeper whose port speaks only TLS, on 127.0.0.1. `clientAuth` need: clients
 * must present a certificate signed by the CA; none: the server asks for none.
 */
export async function startZookeeperTls(clientAuth: 'need' | 'none'): Promise<TlsZookeeper> {
  let classpath = ''
  let files: TlsFiles | undefined
  const server = await startPrivate({
    kind: 'zookeeper',
    scheme: 'zookeeper',
    probe: undefined,
    expect: /^/,
    readyMs: 30_000,
    prepare(port, dir) {
      classpath = execFileSync('node', ['scripts/zookeeper-tls.mjs', dir, String(port), clientAuth], { encoding: 'utf8' }).trim()
      files = { ca: join(dir, 'ca.pem'), certfile: join(dir, 'client.pem'), keyfile: join(dir, 'client.key'), otherCa: join(dir, 'other-ca.pem') }
    },
    command: (_port, dir) => ({
      cmd: 'java',
      args: ['-Xmx256m', '-Dzookeeper.admin.enableServer=false', '-cp', classpath, 'org.apache.zookeeper.server.ZooKeeperServerMain', join(dir, 'zoo.cfg')],
    }),
  })
  return { server, url: server.url, files: files! }
}
