// Prepares a ZooKeeper 3.8 that speaks TLS on its secureClientPort, the one recipe both
// scripts/backends.sh (the shared test server) and test/support/zookeeper-tls.ts (private servers
// with other settings) start:
//
//   node scripts/zookeeper-tls.mjs DIR SECURE_PORT CLIENT_AUTH [PLAIN_PORT PLAIN_ADDRESS]
//
// writes into DIR a throw-away CA (openssl) with a server key pair in a PKCS12 keystore and the CA
// in a PKCS12 truststore (keytool, from the JDK the server runs on), a client certificate signed by
// the CA, a second CA that signed nothing (for tests of a wrong CA), zoo.cfg and log4j.properties,
// then prints the class path to run org.apache.zookeeper.server.ZooKeeperServerMain DIR/zoo.cfg
// with. Certificates already in DIR are kept, so a restart keeps what clients were given.
//
// Client files (PEM): DIR/ca.pem, DIR/client.pem, DIR/client.key, DIR/other-ca.pem.
// SECURE_PORT listens on 127.0.0.1 with Netty (ZooKeeper's TLS needs NettyServerCnxnFactory).
// CLIENT_AUTH: need (clients must present a certificate signed by the CA) or none.
// PLAIN_PORT, PLAIN_ADDRESS: a plain client port too, on that address (e.g. :: for IPv6 and IPv4).
//
// Debian's netty-all.jar only names the other Netty jars in its manifest, so they are put on the
// class path one by one (without netty-codec every handshake dies with NoClassDefFoundError).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const NETTY = ['netty-all', 'netty-codec', 'netty-handler', 'netty-buffer', 'netty-transport', 'netty-common', 'netty-resolver']
const STORE_PASSWORD = 'rollcall'
const DAYS = '3650'

const [dirArg, securePort, clientAuth, plainPort, plainAddress] = process.argv.slice(2)
if (!dirArg || !/^\d+$/.test(securePort ?? '') || !['need', 'none'].includes(clientAuth ?? '') || (plainPort !== undefined && !plainAddress)) {
  console.error('usage: node scripts/zookeeper-tls.mjs DIR SECURE_PORT need|none [PLAIN_PORT PLAIN_ADDRESS]')
  process.exit(2)
}
const dir = resolve(dirArg)
mkdirSync(join(dir, 'data'), { recursive: true })

const run = (cmd, args) => execFileSync(cmd, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
const ssl = (...args) => run('openssl', args)
const selfSigned = (name, cn) =>
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', DAYS, '-subj', `/CN=${cn}`)
const signed = (name, cn, ...ext) => {
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`)
  ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', DAYS, ...ext)
}

if (!existsSync(join(dir, 'truststore.p12'))) {
  selfSigned('ca', 'rollcall test CA')
  selfSigned('other-ca', 'rollcall other CA')
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n')
  signed('server', 'localhost', '-extfile', 'san.ext')
  signed('client', 'rollcall client')
  ssl('pkcs12', '-export', '-in', 'server.pem', '-inkey', 'server.key', '-certfile', 'ca.pem', '-out', 'keystore.p12', '-passout', `pass:${STORE_PASSWORD}`)
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
    STORE_PASSWORD,
  ])
}

const plain = plainPort === undefined ? [] : [`clientPort=${plainPort}`, `clientPortAddress=${plainAddress}`]
writeFileSync(
  join(dir, 'zoo.cfg'),
  [
    // A test server: sessions from 1 s up, and no fsync per transaction (a loaded disk stalls it for seconds).
    'tickTime=500',
    'minSessionTimeout=1000',
    'maxSessionTimeout=60000',
    'forceSync=no',
    `dataDir=${join(dir, 'data')}`,
    ...plain,
    `secureClientPort=${securePort}`,
    'secureClientPortAddress=127.0.0.1',
    'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
    `ssl.keyStore.location=${join(dir, 'keystore.p12')}`,
    `ssl.keyStore.password=${STORE_PASSWORD}`,
    'ssl.keyStore.type=PKCS12',
    `ssl.trustStore.location=${join(dir, 'truststore.p12')}`,
    `ssl.trustStore.password=${STORE_PASSWORD}`,
    'ssl.trustStore.type=PKCS12',
    `ssl.clientAuth=${clientAuth}`,
    'admin.enableServer=false',
    '4lw.commands.whitelist=srvr,ruok,stat,cons',
    'maxClientCnxns=0',
    '',
  ].join('\n'),
)
writeFileSync(
  join(dir, 'log4j.properties'),
  'log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n',
)
console.log([dir, '/usr/share/java/zookeeper.jar', ...NETTY.map((j) => `/usr/share/java/${j}.jar`)].join(':'))
