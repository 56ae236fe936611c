/**
 * Child processes of the benchmarks: Python tooz roles (bench/tooz_bench.py) and rollcall roles
 * (bench/agents/member.ts), both speaking JSON lines on stdout. Every child is recorded and ended
 * by its PID; none outlives the bench.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')
const ROOT = join(BENCH_DIR, '..')
const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const p of live) {
    if (p.pid) {
      try {
        process.kill(p.pid, 'SIGKILL')
      } catch { /* gone */ }
    }
  }
})

/** A JSON-lines child. */
export class Agent {
  readonly child: ChildProcess
  readonly lines: Record<string, any>[] = []
  readonly #waiters: { test: (l: Record<string, any>) => boolean; resolve: (l: Record<string, any>) => void }[] = []
  #stderr = ''
  readonly exited: Promise<number | null>

  constructor(cmd: string, args: string[], readonly label: string) {
    this.child = spawn(cmd, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
    live.add(this.child)
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        live.delete(this.child)
        resolve(code)
      })
    )
    this.child.stderr!.setEncoding('utf8')
    this.child.stderr!.on('data', (d: string) => (this.#stderr = (this.#stderr + d).slice(-4000)))
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let msg: Record<string, any>
      try {
        msg = JSON.parse(line)
      } catch {
        return
      }
      this.lines.push(msg)
      for (const w of [...this.#waiters]) {
        if (w.test(msg)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1)
          w.resolve(msg)
        }
      }
    })
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  get stderr(): string {
    return this.#stderr
  }

  /** The first line (already received or future) that passes `test`; rejects on exit or timeout. */
  next(test: (l: Record<string, any>) => boolean, timeoutMs: number): Promise<Record<string, any>> {
    const seen = this.lines.find(test)
    if (seen) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`${this.label}: no matching line within ${timeoutMs} ms; stderr: ${this.#stderr.slice(-800)}`))
      }, timeoutMs)
      const onExit = (): void => {
        setTimeout(() => {
          cleanup()
          const found = this.lines.find(test)
          if (found) resolve(found)
          else reject(new Error(`${this.label} exited; last lines ${JSON.stringify(this.lines.slice(-2))}; stderr: ${this.#stderr.slice(-800)}`))
        }, 50)
      }
      const waiter = {
        test,
        resolve: (l: Record<string, any>) => {
          cleanup()
          resolve(l)
        },
      }
      const cleanup = (): void => {
        clearTimeout(timer)
        this.child.off('exit', onExit)
        const i = this.#waiters.indexOf(waiter)
        if (i >= 0) this.#waiters.splice(i, 1)
      }
      this.#waiters.push(waiter)
      this.child.once('exit', onExit)
    })
  }

  /** Waits for {"ready": true} (or fails with the child's error). */
  async ready(timeoutMs = 60_000): Promise<void> {
    const l = await this.next((m) => m.ready === true || m.error !== undefined, timeoutMs)
    if (l.error) throw new Error(`${this.label}: ${l.error}: ${l.message}`)
  }

  /** The final result line (anything that is not ready/event), failing on {"error"}. */
  async result(timeoutMs: number): Promise<Record<string, any>> {
    const l = await this.next((m) => m.ready === undefined, timeoutMs)
    if (l.error) throw new Error(`${this.label}: ${l.error}: ${l.message}; stderr: ${this.#stderr.slice(-800)}`)
    return l
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`)
  }

  /** SIGKILL by PID, at once; resolves to the wall-clock time of the kill. */
  kill(): number {
    const t = Date.now()
    if (this.child.pid && this.child.exitCode === null && this.child.signalCode === null) process.kill(this.child.pid, 'SIGKILL')
    return t
  }

  /** Ends the process (SIGTERM, then SIGKILL after graceMs). */
  async end(graceMs = 5_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    if (this.child.pid) process.kill(this.child.pid, 'SIGTERM')
    const timer = setTimeout(() => this.kill(), graceMs)
    await this.exited
    clearTimeout(timer)
  }
}

/** A Python tooz role (see bench/tooz_bench.py). */
export function tooz(role: string, args: Record<string, unknown>, label = `tooz ${role}`): Agent {
  return new Agent('/usr/bin/python3', [join(BENCH_DIR, 'tooz_bench.py'), role, JSON.stringify(args)], label)
}

/** A rollcall role in its own Node process (see bench/agents/member.ts). */
export function rollcall(role: string, args: Record<string, unknown>, label = `rollcall ${role}`): Agent {
  return new Agent(process.execPath, ['--expose-gc', '--import', 'tsx', join(BENCH_DIR, 'agents', 'member.ts'), role, JSON.stringify(args)], label)
}

/** Ends every agent, in parallel. */
export async function endAll(agents: readonly Agent[], graceMs = 5_000): Promise<void> {
  await Promise.all(agents.map((a) => a.end(graceMs)))
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
