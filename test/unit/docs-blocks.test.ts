/**
 * Every TypeScript and JavaScript block of README.md and docs/*.md is a test (issue 26).
 *
 * Fences (the words after the language, e.g. ```ts run=readme-coordination):
 * - ```ts, ```typescript, ```js, ```javascript: a whole module, as a user would paste it. It is
 *   type-checked, strict, with the project's compiler options ('rollcall' and
 *   'rollcall/servicegroup' resolve to this checkout's source).
 * - ```ts run=NAME: also run, against the test servers, by `node --import tsx`. RUNS below says
 *   how (the names it gives to groups, members and locks are made unique for the run, the URL is
 *   the test server's, an optional signal once a line has printed) and what it must print.
 * - ```ts partial: DECLARATIONS: a fragment. It is type-checked after DECLARATIONS (TypeScript,
 *   e.g. `declare const c: import('rollcall').Coordinator`), the context it assumes.
 * - ```ts skip: REASON: not checked at all; the reason is required and listed by the test.
 *
 * All blocks are type-checked by one compiler program, so the cost does not grow with their number.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { after, describe, it } from 'node:test'
import ts from 'typescript'
import { connect } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { fencedBlocks } from '../support/doc-blocks.js'
import { rid } from '../support/wait.js'

const ROOT = process.cwd()
const SOURCES = ['README.md', ...readdirSync('docs').filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]
const LANGS: Record<string, 'ts' | 'js'> = { ts: 'ts', typescript: 'ts', js: 'js', javascript: 'js' }

/** How a runnable block is run and what it must print. */
interface Run {
  /** Quoted names in the block ('api', ...) made unique for the run: parallel runs share the servers. */
  names: string[]
  /** Once stdout matches, the process is sent `signal` (a block that runs until stopped). */
  stopWith?: { after: RegExp; signal: NodeJS.Signals }
  /** What stdout must match, in this order. */
  prints: RegExp[]
  /** Checked once the block has exited, with the names it used (name as written → name in the run). */
  afterwards?: (names: Map<string, string>) => Promise<void>
  /** When given, the block is also run a second time and SIGKILLed at `stopWith.after`; then this is checked. */
  crashed?: (names: Map<string, string>, killedAtMs: number) => Promise<void>
}

const RUNS: Record<string, Run> = {
  'api-own-client': {
    names: ['workers', 'nightly', 'worker-1'],
    prints: [/members: \[ 'worker-1-\w+' \] fencing token: \d+n/, /client after stop\(\): ready PONG/],
  },
  'api-status-handler': {
    names: ['web-1', 'web'],
    prints: [/page 200 true/, /health 200 ok/, /groups true/],
  },
  'api-metrics': {
    names: ['metrics-1', 'workers'],
    prints: [/rollcall_group_members\{group="workers-[a-z0-9]+"\} 1/, /rollcall_backend_connection_state\{state="connected"\} 1/],
  },
  'api-leadership': {
    names: ['reports', 'scheduler', 'scheduler-1'],
    prints: [
      /fencing token \d+n aborted: false/,
      /leading scheduler in term \d+n/,
      /leading again in a later term: true runs so far 1/,
      /resigned, leader now: false/,
    ],
  },
  'api-tracing': {
    names: ['billing', 'billing-1', 'invoices'],
    prints: [
      /span rollcall:heartbeat in rollcall:connect for billing-1-\w+ on redis/,
      /span rollcall:connect in \(root\) for billing-1-\w+ on redis/,
      /span rollcall:group\.join in nightly-job/,
      /span rollcall:lock\.acquire in nightly-job/,
      /span rollcall:lock\.release in nightly-job/,
    ],
  },
  'api-typed-group': {
    names: ['workers', 'worker-1'],
    prints: [/refused: true/, /worker-1-?\w* in az1 with 4 slots/],
  },
  'api-typed-watch': {
    names: ['workers', 'dispatcher-1', 'worker-1', 'legacy-1'],
    prints: [/worker-1-\w+ joined in az1 with 4 slots/, /withheld: The capabilities of member "legacy-1-\w+" in group "workers-\w+"/, /worker-1-\w+ left az1/],
  },
  'readme-coordination': {
    names: ['api', 'api-1', 'nightly-report'],
    stopWith: { after: /I lead the api group now/, signal: 'SIGINT' },
    prints: [/api-1-\w+' => \{ zone: 'az1', version: '2\.4\.0' \}/, /holding the lock, fencing token \d+n/, /I lead the api group now/],
    // What the README says of stopping: the group and leadership are free at once.
    afterwards: async (names) => {
      const c = await connect(serverUrl('redis'), { heartbeat: false, autoWatch: false })
      try {
        assert.deepEqual(await c.getMembers(names.get('api')!), [])
        assert.equal(await c.getLeader(names.get('api')!), null)
      } finally {
        await c.stop()
      }
    },
    // What the README says of a crash: with ?timeout=5 the leadership is free 5 s later, not tooz's 30 s.
    crashed: async (names, killedAtMs) => {
      const c = await connect(serverUrl('redis'), { memberId: rid('next') })
      try {
        const elected = new Promise<number>((done) => c.watchElectedAsLeader(names.get('api')!, () => done(performance.now())))
        const limit = new Promise<never>((_, fail) => setTimeout(() => fail(new Error('no new leader 20 s after the leader was killed')), 20_000).unref())
        const afterMs = (await Promise.race([elected, limit])) - killedAtMs
        assert.ok(afterMs < 5_000 + 5_000, `a new leader took ${Math.round(afterMs)} ms after the leader was killed (timeout=5)`)
      } finally {
        await c.stop()
      }
    },
  },
}

/** One fenced block of a Markdown file. */
interface Block {
  /** `file:line` of the opening fence. */
  where: string
  /** Line of the markdown file where the code starts (1-based). */
  codeLine: number
  lang: 'ts' | 'js'
  code: string
  run?: string
  partial?: string
  skip?: string
}

/** The TypeScript/JavaScript blocks, with what their fences say. */
function tsBlocks(): Block[] {
  return fencedBlocks(SOURCES, Object.keys(LANGS)).map((f) => {
    const block: Block = { where: `${f.file}:${f.line}`, codeLine: f.line + 1, lang: LANGS[f.lang]!, code: f.code }
    const m = /^(run=([\w-]+)|partial:\s*(.*)|skip:\s*(.*)|)$/.exec(f.info)
    assert.ok(m, `${block.where}: unknown fence words "${f.info}" (allowed: run=NAME, partial: DECLARATIONS, skip: REASON)`)
    if (m[2]) block.run = m[2]
    if (m[3] !== undefined) block.partial = m[3]
    if (m[4] !== undefined) {
      assert.ok(m[4].length > 10, `${block.where}: a skip says why`)
      block.skip = m[4]
    }
    return block
  })
}

const BLOCKS = tsBlocks()
// Inside node_modules/, so that a block's other imports (pino, winston) resolve as in a user's project.
const dir = mkdtempSync(join(ROOT, 'node_modules', '.docs-blocks-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** The compiler options of tsconfig.json, with the package names mapped to this checkout's source. */
function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (f) => ts.sys.readFile(f))
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT)
  return {
    ...parsed.options,
    noEmit: true,
    rootDir: undefined,
    allowJs: true,
    checkJs: true,
    typeRoots: [join(ROOT, 'node_modules/@types')],
    paths: {
      'rollcall': [join(ROOT, 'src/index.ts')],
      'rollcall/servicegroup': [join(ROOT, 'src/servicegroup/index.ts')],
      'rollcall/web': [join(ROOT, 'src/web/public.ts')],
    },
  }
}

describe('unit: docs blocks', () => {
  it('docs blocks: every TypeScript/JavaScript block of README.md and docs/*.md type-checks (one program, strict)', () => {
    const checked = BLOCKS.filter((b) => b.skip === undefined)
    assert.ok(checked.length >= 4, `found ${checked.length} blocks`)
    const files = new Map<string, { block: Block; preludeLines: number }>()
    for (const [i, b] of checked.entries()) {
      const prelude = b.partial ? `${b.partial}\n` : ''
      // export {} keeps a block without imports a module, so that top-level await and names stay its own.
      const file = join(dir, `block-${i}.${b.lang === 'ts' ? 'mts' : 'mjs'}`)
      writeFileSync(file, `${prelude}${b.code}export {}\n`)
      files.set(resolve(file), { block: b, preludeLines: prelude ? prelude.split('\n').length - 1 : 0 })
    }
    const program = ts.createProgram([...files.keys()], compilerOptions())
    const problems: string[] = []
    for (const d of [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()]) {
      problems.push(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    }
    for (const sf of program.getSourceFiles()) {
      const owner = files.get(resolve(sf.fileName))
      if (!owner) continue
      for (const d of [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]) {
        const line = d.start === undefined ? 0 : sf.getLineAndCharacterOfPosition(d.start).line
        const at = line < owner.preludeLines
          ? `${owner.block.where} (in its partial declarations)`
          : `${owner.block.where.split(':')[0]}:${owner.block.codeLine + line - owner.preludeLines}`
        problems.push(`${at}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`)
      }
    }
    assert.deepEqual(problems, [])
  })

  it('docs blocks: every skipped block is listed with its reason, and every run name has its expectations', () => {
    const skipped = BLOCKS.filter((b) => b.skip).map((b) => `${b.where}: ${b.skip}`)
    // Shown so that a skip is never silent; none at present.
    assert.deepEqual(skipped, [])
    const runs = BLOCKS.filter((b) => b.run).map((b) => b.run!)
    assert.deepEqual([...runs].sort(), Object.keys(RUNS).sort(), 'each ```ts run=NAME block needs an entry in RUNS, and each entry its block')
  })

  for (const block of BLOCKS.filter((b) => b.run)) {
    const run = RUNS[block.run!]
    it(`docs blocks: ${block.run} (${block.where}) runs against the test servers and prints what it says`, async () => {
      assert.ok(run, `no RUNS entry for ${block.run}`)
      const r = await runBlock(block, run, run.stopWith?.signal)
      assert.equal(r.signal, null, `${block.where} was killed (${r.signal}); stdout:\n${r.stdout}\nstderr:\n${r.stderr}`)
      assert.equal(r.status, 0, `${block.where} exited ${r.status}; stdout:\n${r.stdout}\nstderr:\n${r.stderr}`)
      let from = 0
      for (const re of run.prints) {
        const m = re.exec(r.stdout.slice(from))
        assert.ok(m, `${block.where} did not print ${re} (after offset ${from}); stdout:\n${r.stdout}\nstderr:\n${r.stderr}`)
        from += m.index + m[0].length
      }
      await run.afterwards?.(r.names)
    })
    if (run?.crashed) {
      it(`docs blocks: ${block.run} (${block.where}) killed with SIGKILL is replaced as its text says`, async () => {
        const r = await runBlock(block, run, 'SIGKILL')
        assert.equal(r.signal, 'SIGKILL', `${block.where} ended by itself; stdout:\n${r.stdout}\nstderr:\n${r.stderr}`)
        await run.crashed!(r.names, r.signalledAtMs!)
      })
    }
  }
})

/** What one run of a block did. */
interface Ran {
  stdout: string
  stderr: string
  status: number | null
  signal: NodeJS.Signals | null
  /** When the block was sent the signal (performance.now()), if it was. */
  signalledAtMs: number | undefined
  names: Map<string, string>
}

/**
 * Runs a block as the user would (`node --import tsx`), with 'rollcall' resolved to the source, the
 * test server's URL and unique names; sends `signal` once stdout matches `run.stopWith.after`.
 * A run that has not ended after 60 s is killed, and fails.
 */
async function runBlock(block: Block, run: Run, signal: NodeJS.Signals | undefined): Promise<Ran> {
  const suffix = rid('').slice(1)
  let code = block.code
    .replaceAll("from 'rollcall/servicegroup'", `from '${join(ROOT, 'src/servicegroup/index.ts')}'`)
    .replaceAll("from 'rollcall/web'", `from '${join(ROOT, 'src/web/public.ts')}'`)
    .replaceAll("from 'rollcall'", `from '${join(ROOT, 'src/index.ts')}'`)
    .replaceAll('redis://127.0.0.1:6379', serverUrl('redis'))
  const names = new Map(run.names.map((n) => [n, `${n}-${suffix}`]))
  for (const [name, unique] of names) {
    assert.ok(code.includes(`'${name}'`), `${block.where} no longer names '${name}'`)
    code = code.replaceAll(`'${name}'`, `'${unique}'`)
  }
  const file = join(dir, `run-${block.run}-${suffix}.${block.lang === 'ts' ? 'mts' : 'mjs'}`)
  writeFileSync(file, code)
  const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  let signalledAtMs: number | undefined
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8')
    if (signal && run.stopWith && signalledAtMs === undefined && run.stopWith.after.test(stdout)) {
      signalledAtMs = performance.now()
      child.kill(signal)
    }
  })
  child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString('utf8')))
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGKILL')
  }, 60_000)
  const [status, ended] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => child.on('exit', (c, s) => done([c, s])))
  clearTimeout(timer)
  assert.ok(!timedOut, `${block.where} had not ended after 60 s; stdout:\n${stdout}\nstderr:\n${stderr}`)
  if (signal && run.stopWith) {
    assert.ok(signalledAtMs !== undefined, `${block.where} ended before printing ${run.stopWith.after}:\n${stdout}\nstderr:\n${stderr}`)
  }
  return { stdout, stderr, status, signal: ended, signalledAtMs, names }
}
