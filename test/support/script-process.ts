/**
 * A child Node process running a few lines of test script against rollcall's source: the script
 * is ES module text with `connect` (from src/index.ts) in scope. The child is SIGKILLed when the
 * test ends if it still runs; its stdout is collected.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import type { TestContext } from 'node:test'

const INDEX = JSON.stringify(new URL('../../src/index.ts', import.meta.url).href)

/** Starts `script` in a child process (stdin piped, stderr inherited). */
export function scriptProcess(t: TestContext, script: string): { proc: ChildProcess; out: () => string } {
  const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `const { connect } = await import(${INDEX});\n${script}`], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  t.after(() => void (proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL')))
  let out = ''
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  return { proc, out: () => out }
}
