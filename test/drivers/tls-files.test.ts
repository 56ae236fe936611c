/**
 * Files named by TLS options (issue 28, item 6), through connect() against the real servers: a
 * device (/dev/zero), a FIFO nobody writes to, a directory and a 2 MiB regular file, given as the
 * CA, certificate or key of every driver that reads one. Each must end in an InvalidOptionError
 * naming the option and the file, at once. Before, `ca=/dev/zero` read until memory ran out (18 GB
 * for ZooKeeper, 3.5 GB in 6 s for memcached and Redis) and a FIFO blocked connect() for good.
 *
 * The cases run in a child process that this test watches: it is killed when it takes more than
 * CHILD_LIMIT_MS or its resident memory passes RSS_LIMIT_BYTES, so a regression fails the test
 * instead of hanging it or exhausting the machine.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, type TestContext } from 'node:test'
import { serverUrl } from '../support/backends.js'
import { scriptProcess } from '../support/script-process.js'
import { sharedZookeeperTls } from '../support/zookeeper-tls.js'

/** The child's whole run: starting Node with tsx on a loaded machine, then every case (a few ms each when idle). */
const CHILD_LIMIT_MS = 120_000
/** Resident memory the child may reach: Node and tsx take about 100 MB; 2 MiB files read whole would add little, /dev/zero gigabytes. */
const RSS_LIMIT_BYTES = 600 * 1024 * 1024
/** One refused file: a stat and an open, well under 100 ms when idle. */
const CASE_LIMIT_MS = 10_000

interface Case {
  url: string
  option: string
  file: string
}

interface Outcome {
  name?: string
  code?: string
  message?: string
  ms: number
}

/** Runs connect() on each case's URL in a watched child; the outcome of each (the error it ended in). */
async function connectInChild(t: TestContext, cases: readonly Case[]): Promise<Outcome[]> {
  const script = `
    const out = []
    for (const url of ${JSON.stringify(cases.map((c) => c.url))}) {
      const t0 = performance.now()
      try {
        const c = await connect(url, { memberId: 'tls-files' })
        await c.stop()
        out.push({ ms: performance.now() - t0 })
      } catch (err) {
        out.push({ name: err.name, code: err.code, message: err.message, ms: performance.now() - t0 })
      }
    }
    process.stdout.write(JSON.stringify(out), () => process.exit(0))`
  const { proc, out } = scriptProcess(t, script)
  proc.stdin!.end()
  let peakRss = 0
  let killedFor: string | undefined
  const started = Date.now()
  const watch = setInterval(() => {
    let rss = 0
    try {
      const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))
      rss = kb ? Number(kb[1]) * 1024 : 0
    } catch {
      return // exited
    }
    peakRss = Math.max(peakRss, rss)
    if (rss > RSS_LIMIT_BYTES) killedFor = `resident memory ${Math.round(rss / 2 ** 20)} MB`
    else if (Date.now() - started > CHILD_LIMIT_MS) killedFor = `no end after ${CHILD_LIMIT_MS} ms`
    if (killedFor) proc.kill('SIGKILL')
  }, 50)
  const code = await new Promise<number | null>((resolve) => proc.on('exit', (c) => resolve(c)))
  clearInterval(watch)
  assert.equal(killedFor, undefined, `the child was killed: ${killedFor}`)
  assert.equal(code, 0, `the child ended with ${code}: ${out()}`)
  assert.ok(peakRss < RSS_LIMIT_BYTES, `peak RSS ${peakRss}`)
  return JSON.parse(out()) as Outcome[]
}

/** /dev/zero, a FIFO, a directory and a 2 MiB regular file, in a temporary directory removed after the test. */
function hostileFiles(t: TestContext): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-tls-files-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const fifo = join(dir, 'ca-fifo.pem')
  execFileSync('mkfifo', [fifo])
  const big = join(dir, 'big.pem')
  writeFileSync(big, Buffer.alloc(2 * 1024 * 1024, 'A'))
  const directory = join(dir, 'certs.pem')
  mkdirSync(directory)
  return ['/dev/zero', fifo, directory, big]
}

describe('TLS files named by options', () => {
  it('tls-files: every driver refuses a device, a FIFO, a directory or a 2 MiB file as a CA, certificate or key, at once, naming the option', async (t) => {
    const zk = sharedZookeeperTls()
    const redis = serverUrl('redis')
    const memcached = serverUrl('memcached')
    const etcd = serverUrl('etcd3').replace(/^etcd3\+http:/, 'etcd3+https:')
    const mysql = serverUrl('mysql')
    const cases: Case[] = []
    for (const file of hostileFiles(t)) {
      cases.push(
        { url: `${zk.url}?use_ssl=true&ca=${file}`, option: 'ca', file },
        { url: `${zk.url}?use_ssl=true&ca=${zk.files.ca}&certfile=${file}&keyfile=${zk.files.keyfile}`, option: 'certfile', file },
        { url: `${zk.url}?use_ssl=true&ca=${zk.files.ca}&certfile=${zk.files.certfile}&keyfile=${file}`, option: 'keyfile', file },
        { url: `${memcached}?use_ssl=true&ca_cert=${file}`, option: 'ca_cert', file },
        { url: `${memcached}?use_ssl=true&ssl_cert=${file}`, option: 'ssl_cert', file },
        { url: `${redis}?ssl=true&ssl_ca_certs=${file}`, option: 'ssl_ca_certs', file },
        { url: `${redis}?ssl=true&ssl_keyfile=${file}`, option: 'ssl_keyfile', file },
        { url: `${etcd}?ca_cert=${file}`, option: 'ca_cert', file },
        { url: `${mysql}?ssl_ca=${file}`, option: 'ssl_ca', file },
        { url: `${mysql}?ssl_key=${file}`, option: 'ssl_key', file },
      )
    }
    const outcomes = await connectInChild(t, cases)
    assert.equal(outcomes.length, cases.length)
    for (const [i, c] of cases.entries()) {
      const o = outcomes[i]!
      const what = `${c.url}: ${JSON.stringify(o)}`
      assert.equal(o.code, 'INVALID_OPTION', what)
      assert.equal(o.name, 'InvalidOptionError', what)
      assert.ok(o.message!.includes(`Option ${c.option} `), what)
      assert.ok(o.message!.includes(`"${c.file}"`), what)
      assert.match(o.message!, c.file.endsWith('big.pem') ? /larger than 1048576 bytes \(1 MiB\)/ : /not a regular file/, what)
      assert.ok(o.ms < CASE_LIMIT_MS, `${what}: ${Math.round(o.ms)} ms`)
    }
  })
})
