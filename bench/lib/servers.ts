/**
 * A private memcached that accepts more than 1,000 connections (test/support/servers.ts starts one
 * with memcached's default -c 1024, too few for 1,000 members plus the bench's own clients).
 * Started on a free loopback port and ended by its PID.
 */
import { spawn } from 'node:child_process'
import { freePort, type PrivateServer } from '../../test/support/servers.js'
import { ask } from './machine.js'
import { sleep } from './procs.js'

export async function startBigMemcached(): Promise<PrivateServer> {
  const port = await freePort()
  const child = spawn('memcached', ['-l', '127.0.0.1', '-p', String(port), '-U', '0', '-u', 'nobody', '-m', '256', '-c', '8192'], { stdio: 'ignore' })
  process.once('exit', () => child.kill('SIGKILL'))
  const deadline = Date.now() + 10_000
  for (;;) {
    if (await ask(port, 'version\r\nquit\r\n').then((a) => a.startsWith('VERSION'), () => false)) break
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`private memcached on ${port} did not answer`)
    }
    await sleep(100)
  }
  const unsupported = (): never => {
    throw new Error('not supported by this private memcached')
  }
  return {
    kind: 'memcached',
    port,
    url: `memcached://127.0.0.1:${port}`,
    pid: child.pid,
    pause: unsupported,
    resume: unsupported,
    restart: unsupported,
    kill: () => void child.kill('SIGKILL'),
    start: unsupported,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await new Promise((r) => child.once('exit', r))
      }
    },
  }
}
