/** The fenced code blocks of Markdown files, for the tests that hold the docs to the code. */
import { readFileSync } from 'node:fs'

/** One fenced block: ```LANG INFO, its code, and where it is. */
export interface FencedBlock {
  file: string
  /** Line of the opening fence (1-based). */
  line: number
  lang: string
  /** The words after the language, trimmed. */
  info: string
  /** The code, without the fences and the fence's indentation. */
  code: string
}

/** The blocks of `files` whose language is one of `langs`, in order. Indented fences (in lists) count. */
export function fencedBlocks(files: readonly string[], langs: readonly string[]): FencedBlock[] {
  const out: FencedBlock[] = []
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n')
    for (let i = 0; i < lines.length; i++) {
      const open = /^(\s*)```\s*(\S+)?\s*(.*)$/.exec(lines[i]!)
      if (!open) continue
      const indent = open[1]!
      let end = i + 1
      while (end < lines.length && lines[end]!.trimEnd() !== `${indent}\`\`\``) end++
      const lang = open[2] ?? ''
      if (langs.includes(lang)) {
        const code = lines.slice(i + 1, end).map((l) => l.slice(indent.length)).join('\n')
        out.push({ file, line: i + 1, lang, info: open[3]!.trim(), code: `${code}\n` })
      }
      i = end
    }
  }
  return out
}
