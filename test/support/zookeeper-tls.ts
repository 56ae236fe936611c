/**
 * A private ZooKeeper that speaks TLS on its secureClientPort (Netty, as secured ensembles run
 * it), with a throw-away CA made by openssl at start: the server's key pair in a PKCS12 keystore,
 * the CA in a PKCS12 truststore (keytool, from the JDK the server runs on), and a client
 * certificate signed by the same CA. Debian's netty-all.jar only names the other Netty jars, so
 * they are put on the class path one by one (without netty-codec every handshake dies with
 * NoClassDefFoundError).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startPrivate, type PrivateServer } from './servers.js'

/** The files a TLS client needs, PEM. */
export interface TlsFiles {
  ca: string
  certfile: string
  keyfile: string
  /** A CA that signed nothing here: verifying the server with it must fail. */
  otherCa: string
}

/** A TLS ZooKeeper and the client's files. */
export interface TlsZookeeper {
  server: PrivateServer
  files: TlsFiles
}

const NETTY = ['netty-all', 'netty-codec', 'netty-handler', 'netty-buffer', 'netty-transport', 'netty-common', 'netty-resolver']

function run(cmd: string, args: string[], cwd: string): void {
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
}

/** Makes the CA, the server's stores and a client certificate in `dir`. */
function makeCertificates(dir: string): TlsFiles {
  const ssl = (...args: string[]): void => run('openssl', args, dir)
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=rollcall test CA')
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other.key', '-out', 'other.pem', '-days', '2', '-subj', '/CN=rollcall other CA')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext')
  ssl(
    'pkcs12',
    '-export',
    '-in',
    'server.pem',
    '-inkey',
    'server.key',
    '-certfile',
    'ca.pem',
    '-out',
    'keystore.p12',
    '-passout',
    'pass:rollcall',
    '-name',
    'server',
  )
  run('keytool', [
    '-importcert',
    '-noprompt',
    '-alias',
    'ca',
    '-file',
    'ca.pem',
    '-keystore',
    'truststore.p12',
    '-storetype',
    'PKCS12',
    '-storepass',
    'rollcall',
  ], dir)
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/CN=rollcall client')
  ssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.pem', '-days', '2')
  return { ca: join(dir, 'ca.pem'), certfile: join(dir, 'client.pem'), keyfile: join(dir, 'client.key'), otherCa: join(dir, 'other.pem') }
}

/**
 * Starts a ZooKeeper whose port speaks only TLS, on 127.0.0.1. `clientAuth` need: clients must
 * present a certificate signed by the CA; none: the server asks for none.
 */
export async function startZookeeperTls(clientAuth: 'need' | 'none'): Promise<TlsZookeeper> {
  const certs = mkdtempSync(join(tmpdir(), 'rollcall-zk-tls-'))
  const files = makeCertificates(certs)
  const server = await startPrivate({
    kind: 'zookeeper',
    scheme: 'zookeeper',
    probe: undefined,
    expect: /^/,
    readyMs: 30_000,
    prepare(port, dir) {
      mkdirSync(join(dir, 'data'), { recursive: true })
      writeFileSync(
        join(dir, 'zoo.cfg'),
        [
          'tickTime=500',
          'minSessionTimeout=1000',
          'maxSessionTimeout=60000',
          'forceSync=no',
          `dataDir=${join(dir, 'data')}`,
          `secureClientPort=${port}`,
          'secureClientPortAddress=127.0.0.1',
          'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
          `ssl.keyStore.location=${join(certs, 'keystore.p12')}`,
          'ssl.keyStore.password=rollcall',
          'ssl.keyStore.type=PKCS12',
          `ssl.trustStore.location=${join(certs, 'truststore.p12')}`,
          'ssl.trustStore.password=rollcall',
          'ssl.trustStore.type=PKCS12',
          `ssl.clientAuth=${clientAuth}`,
          'admin.enableServer=false',
          'maxClientCnxns=0',
        ].join('\n'),
      )
      writeFileSync(
        join(dir, 'log4j.properties'),
        'log4j.rootLogger=WARN, '
          + 'CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n',
      )
    },
    command: (_port, dir) => ({
      cmd: 'java',
      args: [
        '-Xmx256m',
        '-Dzookeeper.admin.enableServer=false',
        '-cp',
        [dir, '/usr/share/java/zookeeper.jar', ...NETTY.map((j) => `/usr/share/java/${j}.jar`)].join(':'),
        'org.apache.zookeeper.server.ZooKeeperServerMain',
        join(dir, 'zoo.cfg'),
      ],
    }),
  })
  return { server, files }
}
