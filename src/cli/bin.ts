#!/usr/bin/env node
/**
 * The `rollcall` executable. Exits explicitly so that nothing left open keeps it alive, but only
 * once stdout and stderr have drained: to a pipe, writes are asynchronous, and process.exit()
 * would drop whatever is still queued (everything past the first 64 KiB).
 */
import { redactUrl } from '../index.js'
import { main } from './main.js'

/** Resolves once everything written to `stream` so far has been handed to the OS (or the stream failed). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) return resolve()
    stream.once('error', () => resolve())
    stream.write('', () => resolve())
  })
}

const status = await main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`rollcall: unexpected error: ${redactUrl((err as Error)?.message ?? String(err))}\n`)
  return 1
})
await Promise.all([drained(process.stdout), drained(process.stderr)])
process.exit(status)
