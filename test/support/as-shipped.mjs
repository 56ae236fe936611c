/**
 * Runs tests against the package as shipped: wherever a test imports the library's root entry
 * point by its source path (`src/index.js`, which tsx maps to src/index.ts), this module resolve
 * hook hands it `rollcall` itself instead, resolved through package.json's `exports` like a
 * consumer's import, so the built dist/index.js and every dist/ module it loads lazily (the
 * drivers). Importing this module registers the hook for the importing process (a static import
 * resolved before that still gets the source); through NODE_OPTIONS (`--import=<this file's URL>`)
 * it does the same in a child process.
 */
import { register } from 'node:module'
import { isMainThread } from 'node:worker_threads'

const SOURCE_ENTRY = new URL('../../src/index.ts', import.meta.url).href

// This file is also the hook module; node loads it a second time, off the main thread, to run it.
if (isMainThread) register(import.meta.url)

/** The resolve hook: the source entry point becomes the package's own `.` export; anything else is left alone. */
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context)
  return resolved.url === SOURCE_ENTRY ? nextResolve('rollcall', context) : resolved
}
