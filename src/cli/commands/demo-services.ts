/**
 * The demo's services: which run, and each as a real `rollcall service run` child process, started
 * on the demo's configuration and stopped when the demo ends. Each is watched (see ../child.ts):
 * when the demo dies in any way, SIGKILL included, its services end with it.
 */
import type { ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { CANNOT_RUN, spawnWatched } from '../child.js'

/** The CLI the children run. */
const BIN = fileURLToPath(new URL('../bin.js', import.meta.url))

/** Writes what happens: a line stamped with the seconds since the demo began, or a JSON object with --json. */
export type DemoLog = (text: string, fields: Record<string, unknown>) => void

/** One demo service. */
export interface DemoService {
  topic: string
  binary: string
  host: string
  zone: string
  child?: ChildProcess
  /** Set when the demo itself stops it (so its exit is not reported as a surprise). */
  stopping?: boolean
  stderr: string
}

/** The services the demo runs: two topics, three hosts, two zones. */
export function demoServices(suffix: string): DemoService[] {
  const api = `api${suffix}`
  const worker = `worker${suffix}`
  return [
    { topic: api, binary: 'rollcall-api', host: 'node-1', zone: 'az1', stderr: '' },
    { topic: api, binary: 'rollcall-api', host: 'node-2', zone: 'az2', stderr: '' },
    { topic: worker, binary: 'rollcall-worker', host: 'node-1', zone: 'az1', stderr: '' },
    { topic: worker, binary: 'rollcall-worker', host: 'node-2', zone: 'az2', stderr: '' },
    { topic: worker, binary: 'rollcall-worker', host: 'node-3', zone: 'az1', stderr: '' },
  ]
}

/** Starts a service as a `rollcall service run` child on the demo's configuration; an exit the demo did not cause is logged. */
export function serviceStarter(file: string, stop: AbortSignal, log: DemoLog): (s: DemoService) => void {
  const childEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROLLCALL_')))
  return (s) => {
    s.stopping = false
    s.stderr = ''
    const args = [BIN, 'service', 'run', '--config', file, '--binary', s.binary, '--host', s.host, '--topic', s.topic, '--zone', s.zone]
    const watched = spawnWatched(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...childEnv, ROLLCALL_CONFIG: file } })
    if (!watched) {
      s.child = undefined
      log(`${s.topic} ${s.host}: cannot start rollcall service run: /bin/sh, which watches it, cannot be started`, {
        event: 'exited',
        topic: s.topic,
        host: s.host,
        code: CANNOT_RUN.notExecutable,
        signal: null,
      })
      return
    }
    const { child } = watched
    s.child = child
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (s.stderr = (s.stderr + d).slice(-2000)))
    child.once('exit', (code, signal) => {
      if (s.child === child) s.child = undefined
      if (!s.stopping && !stop.aborted) {
        const lastLines = s.stderr.trim().split('\n').slice(-3).join(' | ')
        log(`${s.topic} ${s.host}: rollcall service run exited unexpectedly (${signal ?? `status ${code}`}): ${lastLines}`, {
          event: 'exited',
          topic: s.topic,
          host: s.host,
          code,
          signal,
        })
      }
    })
    log(`started ${s.binary} on ${s.host} in topic ${s.topic} (pid ${child.pid})`, {
      event: 'started',
      topic: s.topic,
      host: s.host,
      binary: s.binary,
      pid: child.pid,
    })
  }
}

/** SIGTERM to every child (they leave), then SIGKILL to any still alive after 5 s. */
export async function stopChildren(services: DemoService[]): Promise<void> {
  const alive = services.filter((s) => s.child && s.child.exitCode === null && s.child.signalCode === null)
  await Promise.all(alive.map((s) =>
    new Promise<void>((resolve) => {
      const child = s.child!
      s.stopping = true
      const force = setTimeout(() => child.kill('SIGKILL'), 5000)
      child.once('exit', () => {
        clearTimeout(force)
        resolve()
      })
      child.kill('SIGTERM')
    })
  ))
}
