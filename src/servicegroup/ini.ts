/**
 * A small INI parser for nova.conf-style files (the subset oslo.config reads):
 * - `[section]` headers (case-sensitive; `[DEFAULT]` holds the top-level options);
 * - `key = value` or `key: value`; the value is trimmed, and one pair of surrounding quotes is
 *   removed; inline `#` is part of the value, as in oslo.config;
 * - indented lines continue the previous value (joined with a newline);
 * - `#` and `;` start comment lines; blank lines are ignored;
 * - a key given twice keeps the last value.
 * Anything else is an InvalidConfigError naming the file and line.
 */
import { InvalidConfigError } from '../index.js'

/** One value with where it was written. */
export interface IniValue {
  value: string
  line: number
}

/** A parsed file: section → key → value. */
export type IniDocument = Map<string, Map<string, IniValue>>

/** Parses INI text; `file` names it in errors. */
export function parseIni(text: string, file = '<config>'): IniDocument {
  const doc: IniDocument = new Map([['DEFAULT', new Map()]])
  let section: Map<string, IniValue> | undefined
  let last: IniValue | undefined
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  lines.forEach((raw, i) => {
    const line = i + 1
    if (/^\s*([#;].*)?$/.test(raw)) return
    if (/^\s/.test(raw)) {
      if (!last) throw new InvalidConfigError(`${file}:${line}`, `${file}:${line}: an indented line continues a value, but no key = value comes before it`)
      last.value = `${last.value}\n${raw.trim()}`
      return
    }
    const header = /^\[([^\]]+)\]\s*$/.exec(raw)
    if (header) {
      const name = header[1]!.trim()
      section = doc.get(name) ?? new Map()
      doc.set(name, section)
      last = undefined
      return
    }
    const pair = /^([^=:\s][^=:]*?)\s*[=:]\s?(.*)$/.exec(raw)
    if (!pair) {
      throw new InvalidConfigError(
        `${file}:${line}`,
        `${file}:${line}: expected "[section]", "key = value" or a comment, got ${JSON.stringify(raw.slice(0, 80))}`,
      )
    }
    if (!section) throw new InvalidConfigError(`${file}:${line}`, `${file}:${line}: "${pair[1]}" comes before any [section]; put it under [DEFAULT]`)
    last = { value: unquote(pair[2]!.trim()), line }
    section.set(pair[1]!.trim(), last)
  })
  return doc
}

function unquote(v: string): string {
  return v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0] ? v.slice(1, -1) : v
}
