/**
 * A small kit for declaring driver options as data.
 *
 * One declaration gives: the URL query spelling (tooz's, in tooz's units, so an existing tooz URL
 * works unchanged), the programmatic camelCase name (every duration carries its unit:
 * `membershipTimeoutMs`), coercion, range checks, defaults, and the docs table. Programmatic
 * values override the query string, as tooz's keyword arguments do. Unknown names are an error
 * that lists the known ones.
 */
import { InvalidOptionError } from '../errors.js'
import { shorten } from './redact.js'

/**
 * The longest duration a Node timer can wait (2^31−1 ms, about 24.8 days): above it, setTimeout
 * fires after 1 ms. Every duration option stops there.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** The declared shape of one option. Build it with {@link opt}. */
export interface OptionSpec<T> {
  /** The URL query key, as tooz spells it. */
  readonly query: string
  /** What the docs table shows as the type and unit. */
  readonly type: string
  readonly doc: string
  /** The default, already in programmatic units; undefined = no default. */
  readonly default: T | undefined
  /** Name of another option whose resolved value is the default (tooz: membership_timeout ← timeout). */
  readonly defaultFrom: string | undefined
  /** True for options that repeat in the URL (`hosts=a&hosts=b`); others keep the last value. */
  readonly repeated: boolean
  /** True when the option is accepted for tooz compatibility but has no effect here. */
  readonly ignored: boolean
  /** Parses one URL value (a string), throwing a message on failure. */
  fromQuery(values: string[]): T
  /** Checks a programmatic value, throwing a message on failure. */
  fromCode(value: unknown): T
  /** The default as shown in docs (in URL units). */
  readonly shownDefault: string
}

/** Options a driver declares, keyed by their programmatic name. */
export type OptionSpecs = Record<string, OptionSpec<unknown>>

/** The resolved values of a spec set. */
export type ResolvedOptions<S extends OptionSpecs> = {
  [K in keyof S]: S[K] extends OptionSpec<infer T> ? T : never
}

interface Common<T> {
  doc: string
  defaultFrom?: string
  ignored?: boolean
  default?: T
}

interface Range {
  min?: number
  max?: number
}

const TRUE = new Set(['1', 't', 'true', 'on', 'y', 'yes'])
const FALSE = new Set(['0', 'f', 'false', 'off', 'n', 'no'])

function last(values: string[]): string {
  return values[values.length - 1] ?? ''
}

function make<T>(query: string, type: string, c: Common<T>, shown: (v: T) => string, parse: (v: string) => T, check: (v: unknown) => T, repeated = false, parseAll?: (v: string[]) => T): OptionSpec<T> {
  return {
    query, type, doc: c.doc, default: c.default, defaultFrom: c.defaultFrom, repeated, ignored: c.ignored ?? false,
    fromQuery: parseAll ?? ((values) => parse(last(values))),
    fromCode: check,
    shownDefault: c.default !== undefined ? shown(c.default) : c.defaultFrom ? `same as ${c.defaultFrom}` : '—',
  }
}

function checkRange(n: number, r: Range, unit: string): number {
  if (r.min !== undefined && n < r.min) throw new Error(`must be at least ${r.min}${unit}`)
  if (r.max !== undefined && n > r.max) throw new Error(`must be at most ${r.max}${unit}`)
  return n
}

function parseNumber(text: string, integer: boolean): number {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text.trim())) throw new Error(`"${shorten(text)}" is not a number`)
  const n = Number(text)
  if (!Number.isFinite(n)) throw new Error(`"${shorten(text)}" is not a finite number`)
  if (integer && !Number.isSafeInteger(n)) throw new Error(`"${shorten(text)}" is not a whole number from ${Number.MIN_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`)
  return n
}

/** Builders for option declarations. */
export const opt = {
  /**
   * A duration: seconds in the URL (tooz's unit), milliseconds in code. Range bounds are in
   * seconds; the upper bound is never above {@link MAX_TIMER_MS}.
   */
  seconds(query: string, c: Common<number> & Range): OptionSpec<number> {
    const check = (ms: number): number => {
      checkRange(ms / 1000, c, ' s')
      if (ms <= 0) throw new Error('must be greater than zero')
      if (ms > MAX_TIMER_MS) throw new Error(`must be at most ${MAX_TIMER_MS / 1000} s (${MAX_TIMER_MS} ms, the longest a Node timer can wait)`)
      return ms
    }
    return make(query, 'seconds', { ...c, default: c.default === undefined ? undefined : c.default * 1000 }, (v) => `${v / 1000}`,
      (s) => check(Math.round(parseNumber(s, false) * 1000)),
      (v) => {
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`must be a finite number of milliseconds, at most ${MAX_TIMER_MS}`)
        return check(v)
      })
  },
  /** A whole number. */
  integer(query: string, c: Common<number> & Range): OptionSpec<number> {
    const check = (n: number): number => checkRange(n, c, '')
    return make(query, 'integer', c, String, (s) => check(parseNumber(s, true)), (v) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Error('must be a whole number')
      return check(v)
    })
  },
  /** true/false; the URL accepts oslo's spellings (1/0, yes/no, on/off, true/false, t/f, y/n). */
  boolean(query: string, c: Common<boolean>): OptionSpec<boolean> {
    return make(query, 'boolean', c, String, (s) => {
      const t = s.trim().toLowerCase()
      if (TRUE.has(t)) return true
      if (FALSE.has(t)) return false
      throw new Error(`"${shorten(s)}" is not a boolean (use true or false)`)
    }, (v) => {
      if (typeof v !== 'boolean') throw new Error('must be true or false')
      return v
    })
  },
  /** Free text. */
  string(query: string, c: Common<string> & { nonEmpty?: boolean }): OptionSpec<string> {
    const check = (s: string): string => {
      if (c.nonEmpty && s === '') throw new Error('must not be empty')
      return s
    }
    return make(query, 'string', c, (v) => (v === '' ? '""' : v), check, (v) => {
      if (typeof v !== 'string') throw new Error('must be a string')
      return check(v)
    })
  },
  /** One of a fixed set of words. */
  enum<const V extends string>(query: string, values: readonly V[], c: Common<V>): OptionSpec<V> {
    const check = (v: unknown): V => {
      if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) throw new Error(`must be one of ${values.join(', ')}`)
      return v as V
    }
    return make(query, values.join(' \\| '), c, String, check, check)
  },
  /** A repeatable option (`hosts=a&hosts=b`); in code, an array of strings. */
  list(query: string, c: Common<string[]>): OptionSpec<string[]> {
    return make(query, 'list', c, (v) => (v.length ? v.join(',') : '—'), (s) => [s], (v) => {
      if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new Error('must be an array of strings')
      return v as string[]
    }, true, (values) => values)
  },
}

/**
 * Resolves a driver's options: defaults, then the URL query, then programmatic values.
 * Throws InvalidOptionError naming the option, the bad value and what is allowed.
 */
export function resolveOptions<S extends OptionSpecs>(specs: S, query: Map<string, string[]>, code: Record<string, unknown>, owner: string): ResolvedOptions<S> {
  const byQuery = new Map(Object.entries(specs).map(([name, spec]) => [spec.query, name]))
  const out: Record<string, unknown> = {}
  const set = new Set<string>()
  for (const [key, values] of query) {
    const name = byQuery.get(key)
    if (name === undefined) {
      throw new InvalidOptionError(`Unknown option "${shorten(key)}" in the ${owner} URL; known options: ${[...byQuery.keys()].sort().join(', ') || '(none)'}`)
    }
    const spec = specs[name]!
    if (!spec.repeated && values.some((v) => v === '')) {
      throw new InvalidOptionError(`Option "${key}" in the ${owner} URL has no value; write ${key}=<${spec.type}>`)
    }
    try {
      out[name] = spec.fromQuery(values)
    } catch (err) {
      throw new InvalidOptionError(`Option "${key}" in the ${owner} URL ${(err as Error).message}`)
    }
    set.add(name)
  }
  for (const [name, value] of Object.entries(code)) {
    if (value === undefined) continue
    const spec = specs[name]
    if (spec === undefined) {
      throw new InvalidOptionError(`Unknown option "${shorten(name)}" for the ${owner} driver; known options: ${Object.keys(specs).sort().join(', ') || '(none)'}`)
    }
    try {
      out[name] = spec.fromCode(value)
    } catch (err) {
      throw new InvalidOptionError(`Option ${name} for the ${owner} driver ${(err as Error).message}`)
    }
    set.add(name)
  }
  // Defaults last, so that a defaultFrom sees the resolved value of the option it follows.
  const resolve = (name: string, seen: string[]): unknown => {
    if (set.has(name) || name in out) return out[name]
    const spec = specs[name]!
    if (spec.defaultFrom !== undefined && !seen.includes(spec.defaultFrom)) {
      out[name] = resolve(spec.defaultFrom, [...seen, name])
    } else {
      out[name] = spec.default
    }
    return out[name]
  }
  for (const name of Object.keys(specs)) resolve(name, [])
  return out as ResolvedOptions<S>
}
