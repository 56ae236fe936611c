/**
 * A small INI parser for nova.conf-style files (the subset oslo.config reads):
 * - `[section]` headers (case-sensitive; `[DEFAULT]` holds the top-level options);
 * - `key = value` or `key: value`; the value is trimmed, and one pair of surrounding quotes is
 *   removed; inline `#` is part of the value, as in oslo.config;
 * - indented lines continue the previous value (joined with a newline);
 * - `#` and `;` start comment lines; blank lines are ignored;
 * - a key given twice keeps the last value.
 * Anything else is an InvalidConfigError naming the file and line (never showing the line).
 */
import { InvalidConfigError } from '../index.js'
import { shorten } from '../internal/shown-text.js'

/** One value with where it was written. */
export interface IniValue {
  /** The text after `=`, trimmed and unquoted; indented continuation lines are joined with newlines. */
  value: string
  /** The line its key is on, for messages. */
  line: number
}

/** A parsed file: section → key → value. */
export type IniDocument = Map<string, Map<string, IniValue>>

/**
 * Parses INI text; `file` names it in errors. Each line is classified with indexOf and single
 * character tests, never a backtracking regular expression: a line costs time linear in its
 * length whatever it holds (a `key` then a long run of spaces cost quadratic time in the regular
 * expression this replaces: 22 s of CPU for a 160 KB line). An error names the file, the line
 * number and what is wrong, never the line's text, which may be a secret written without its key.
 */
export function parseIni(text: string, file = '<config>'): IniDocument {
  const doc: IniDocument = new Map([['DEFAULT', new Map()]])
  let section: Map<string, IniValue> | undefined
  let last: IniValue | undefined
  const lines = (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split(/\r?\n/)
  lines.forEach((raw, i) => {
    const line = i + 1
    const where = `${file}:${line}`
    if (isBlankOrComment(raw)) return
    if (isSpace(raw.charCodeAt(0))) {
      if (!last) throw new InvalidConfigError(where, `${where}: an indented line continues a value, but no key = value comes before it`)
      last.value = `${last.value}\n${raw.trim()}`
      return
    }
    const name = sectionName(raw)
    if (name !== undefined) {
      section = doc.get(name) ?? new Map()
      doc.set(name, section)
      last = undefined
      return
    }
    const pair = keyValue(raw)
    if (typeof pair === 'string') {
      throw new InvalidConfigError(where, `${where}: ${pair}; expected "[section]", "key = value" or a comment (the line is not shown)`)
    }
    if (!section) throw new InvalidConfigError(where, `${where}: "${shorten(pair.key)}" comes before any [section]; put it under [DEFAULT]`)
    last = { value: unquote(pair.value), line }
    section.set(pair.key, last)
  })
  return doc
}

/**
 * White space as regular expressions' `\s` and String#trim() know it: what a line may start with
 * to continue a value, and what is trimmed around keys and values.
 */
function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029
    || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
}

/** A line terminator, which the value of a pair and the text of a comment may not hold (`.` in a regular expression). */
function isLineTerminator(c: number): boolean {
  return c === 0x0a || c === 0x0d || c === 0x2028 || c === 0x2029
}

/** Whether `s` from `from` on holds a line terminator. */
function hasLineTerminator(s: string, from: number): boolean {
  for (let k = from; k < s.length; k++) if (isLineTerminator(s.charCodeAt(k))) return true
  return false
}

/** A blank line, or white space then `#` or `;` and a comment without a line terminator. */
function isBlankOrComment(raw: string): boolean {
  let k = 0
  while (k < raw.length && isSpace(raw.charCodeAt(k))) k++
  if (k === raw.length) return true
  const c = raw.charCodeAt(k)
  return (c === 0x23 /* # */ || c === 0x3b /* ; */) && !hasLineTerminator(raw, k + 1)
}

/** The trimmed name of a `[name]` header (anything but `]` inside, only white space after); undefined when the line is no header. */
function sectionName(raw: string): string | undefined {
  if (raw.charCodeAt(0) !== 0x5b /* [ */) return undefined
  const close = raw.indexOf(']', 1)
  if (close <= 1) return undefined
  for (let k = close + 1; k < raw.length; k++) if (!isSpace(raw.charCodeAt(k))) return undefined
  return raw.slice(1, close).trim()
}

/**
 * `key = value` or `key: value`, split at the first `=` or `:` (a key holds neither), both sides
 * trimmed; or a phrase saying what is wrong with the line, without its text.
 */
function keyValue(raw: string): { key: string; value: string } | string {
  const eq = raw.indexOf('=')
  const colon = raw.indexOf(':')
  const sep = eq < 0 ? colon : colon < 0 ? eq : Math.min(eq, colon)
  if (sep < 0) return raw.startsWith('[') ? 'a "[" starts it, but it is not a [section] header' : 'it has no "=" or ":"'
  if (sep === 0) return `it starts with "${raw[0]}", so it names no key`
  // One white space character after the separator is skipped before the value, which must then hold no line terminator.
  if (hasLineTerminator(raw, isSpace(raw.charCodeAt(sep + 1)) ? sep + 2 : sep + 1)) return 'its value holds a line break (a carriage return or U+2028/U+2029)'
  return { key: raw.slice(0, sep).trim(), value: raw.slice(sep + 1).trim() }
}
function unquote(v: string): string {
  return v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0] ? v.slice(1, -1) : v
}
