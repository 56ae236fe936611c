/**
 * The INI parser on untrusted lines (issue 28, item 7): linear in the line's length, and the same
 * document as the regular expressions it replaced for every line they parsed in reasonable time.
 * `/^([^=:\s][^=:]*?)\s*[=:]\s?(.*)$/` took 21.7 s of CPU on a 160 KB line of `a`, spaces, `x`
 * (about 15 minutes for the 1 MiB a file may hold). Errors name the file and line, never the text.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { InvalidConfigError, parseIni, type IniDocument } from '../../src/servicegroup/index.js'

/** CPU time a 1 MiB line may take: a few milliseconds when idle, whatever the load (CPU, not wall time). */
const LINE_CPU_LIMIT_MS = 1_000

/**
 * The parser as it was before (regular expressions), as an oracle for short lines: a document,
 * or 'error'.
 */
function regexParse(text: string): IniDocument | 'error' {
  const doc: IniDocument = new Map([['DEFAULT', new Map()]])
  let section: Map<string, { value: string; line: number }> | undefined
  let last: { value: string; line: number } | undefined
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  for (const [i, raw] of lines.entries()) {
    const line = i + 1
    if (/^\s*([#;].*)?$/.test(raw)) continue
    if (/^\s/.test(raw)) {
      if (!last) return 'error'
      last.value = `${last.value}\n${raw.trim()}`
      continue
    }
    const header = /^\[([^\]]+)\]\s*$/.exec(raw)
    if (header) {
      const name = header[1]!.trim()
      section = doc.get(name) ?? new Map()
      doc.set(name, section)
      last = undefined
      continue
    }
    const pair = /^([^=:\s][^=:]*?)\s*[=:]\s?(.*)$/.exec(raw)
    if (!pair || !section) return 'error'
    const v = pair[2]!.trim()
    last = { value: v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0] ? v.slice(1, -1) : v, line }
    section.set(pair[1]!.trim(), last)
  }
  return doc
}

function parseOrError(text: string): IniDocument | 'error' {
  try {
    return parseIni(text, 'p.conf')
  } catch (err) {
    assert.ok(err instanceof InvalidConfigError, String(err))
    return 'error'
  }
}

/** How long the child of {@link inChild} may run: Node and tsx start in seconds on a loaded machine. */
const CHILD_LIMIT_MS = 60_000

/** Runs ES module `script` in a child Node (with tsx), killed after CHILD_LIMIT_MS; what it printed, as JSON. */
async function inChild(script: string): Promise<Record<string, any>> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_LIMIT_MS)
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  clearTimeout(timer)
  assert.equal(code, 0, `the child ended with ${code} (killed after ${CHILD_LIMIT_MS} ms?): ${out}`)
  return JSON.parse(out) as Record<string, any>
}

/** Characters that matter to the grammar, white space of every kind, and line terminators. */
const CHARS = ['a', 'k', 'x', '=', ':', '[', ']', '#', ';', '"', "'", ' ', '\t', '\r', '\v', '\f', '\u00a0', '\u2000', '\u2028', '\u3000', '\ufeff', 'é']
const piece = fc.oneof(
  fc.constantFrom(...CHARS),
  // Long runs of white space: where the old expression backtracked.
  fc.tuple(fc.constantFrom(' ', '\t', '\u3000'), fc.integer({ min: 1, max: 300 })).map(([c, n]) => c.repeat(n)),
  fc.string({ maxLength: 8 }),
)
const line = fc.array(piece, { maxLength: 12 }).map((parts) => parts.join(''))
const text = fc.array(fc.oneof(line, fc.constantFrom('[DEFAULT]', '[s]', 'k = v', '  more')), { maxLength: 8 }).map((lines) => lines.join('\n'))

describe('servicegroup: INI parser', () => {
  it('ini: any text parses to the document the regular expressions gave, or fails where they failed', { timeout: 120_000 }, () => {
    fc.assert(
      fc.property(text, (t) => {
        assert.deepEqual(parseOrError(t), regexParse(t))
      }),
      { numRuns: 10_000 },
    )
  })

  it('ini: a 1 MiB line of "a", spaces, then "x" (or "= x") takes well under a second of CPU', async () => {
    // In a child killed after CHILD_LIMIT_MS: the old expression, synchronous, would hold this process for minutes.
    const r = await inChild(`
      const { parseIni } = await import(${JSON.stringify(new URL('../../src/servicegroup/index.ts', import.meta.url).href)})
      const cpuMs = (fn) => { const b = process.cpuUsage(); fn(); const u = process.cpuUsage(b); return (u.user + u.system) / 1000 }
      const spaces = ' '.repeat(1024 * 1024 - 2)
      let message, doc
      const failing = cpuMs(() => { try { parseIni('[DEFAULT]\\na' + spaces + 'x\\n', 'big.conf') } catch (err) { message = err.name + ': ' + err.message } })
      const parsing = cpuMs(() => (doc = parseIni('[DEFAULT]\\na' + spaces + '= x\\nb' + '\\t'.repeat(1024 * 1024) + ':' + spaces + 'y\\n')))
      const d = doc.get('DEFAULT')
      process.stdout.write(JSON.stringify({ failing, parsing, message, a: d.get('a').value, b: d.get('b').value }))`)
    assert.match(r.message, /^InvalidConfigError: big\.conf:2: it has no "=" or ":"/)
    assert.equal(r.a, 'x')
    assert.equal(r.b, 'y')
    // ~10 ms each when idle; the regular expression took ~15 minutes on the first.
    assert.ok(r.failing < LINE_CPU_LIMIT_MS, `${r.failing} ms of CPU for the line with no separator`)
    assert.ok(r.parsing < LINE_CPU_LIMIT_MS, `${r.parsing} ms of CPU for two long pairs`)
  })

  it('ini: a syntax error names the file, the line and what is wrong, never the line (it may be a secret without its key)', () => {
    const cases: [string, RegExp][] = [
      ['token Sup3rS3cretTokenValue1234', /x\.conf:2: it has no "=" or ":"; expected "\[section\]", "key = value" or a comment \(the line is not shown\)/],
      ['=Sup3rS3cretTokenValue1234', /x\.conf:2: it starts with "=", so it names no key/],
      [':Sup3rS3cretTokenValue1234', /x\.conf:2: it starts with ":", so it names no key/],
      ['[Sup3rS3cretTokenValue1234', /x\.conf:2: a "\[" starts it, but it is not a \[section\] header/],
      ['k = Sup3rS3cret\rTokenValue1234', /x\.conf:2: its value holds a line break/],
    ]
    for (const [bad, expected] of cases) {
      assert.throws(() => parseIni(`[DEFAULT]\n${bad}\n`, 'x.conf'), (err: unknown) => {
        assert.ok(err instanceof InvalidConfigError)
        assert.equal(err.setting, 'x.conf:2')
        assert.match(err.message, expected)
        assert.ok(!err.message.includes('Sup3rS3cret'), err.message)
        return true
      })
    }
  })
})
