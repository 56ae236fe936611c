/**
 * Two processes looping on one lock for 5 s, as the bench runs them: one impatient (each acquire
 * times out after 1-60 ms, so waits end at every step: during the first attempt, queued, as the
 * head, as a turn ends), one patient (10 s). A queue that strands a waiter behind a free lock
 * shows as a patient wait near 10 s. Used by the lock-queue tests of each backend that has one.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { TestContext } from 'node:test'
import { scriptProcess } from './script-process.js'

/** What one looping process did: acquisitions, and its longest acquire (taken or timed out). */
export interface ChurnLoop {
  acquired: number
  longestMs: number
}

/** Runs the two loops on lock `name` of `url` and returns what each did (both must exit cleanly). */
export async function lockChurn(t: TestContext, url: string, name: string): Promise<{ impatient: ChurnLoop; patient: ChurnLoop }> {
  const loop = (timeoutMs: string): string =>
    `const c = await connect(${JSON.stringify(url)}, { autoWatch: false });
const lock = c.getLock(${JSON.stringify(name)});
const endAt = performance.now() + 5_000;
let acquired = 0, longestMs = 0;
while (performance.now() < endAt) {
  const askedAt = performance.now();
  const got = await lock.acquire({ timeoutMs: ${timeoutMs} });
  longestMs = Math.max(longestMs, performance.now() - askedAt);
  if (!got) continue;
  acquired += 1;
  await lock.release();
}
await c.stop();
console.log(JSON.stringify({ acquired, longestMs }));`
  const runs = [scriptProcess(t, loop('1 + Math.random() * 60')), scriptProcess(t, loop('10_000'))]
  const [impatient, patient] = await Promise.all(runs.map(async ({ proc, out }) => {
    const [code] = await once(proc, 'exit')
    assert.equal(code, 0, 'a looping process failed')
    return JSON.parse(out()) as ChurnLoop
  }))
  return { impatient: impatient!, patient: patient! }
}
