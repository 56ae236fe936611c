/**
 * A small kit for declaring driver options as data; the values are read by the coercion kit
 * shared with the service-group settings and the CLI (internal/coerce.ts).
 *
 * One declaration gives: the URL query spelling (tooz's, in tooz's units, so an existing tooz URL
 * works unchanged), the programmatic camelCase name (every duration carries its unit:
 * `membershipTimeoutMs`), coercion, range checks, defaults, and the docs table. Programmatic
 * values override the query string, as tooz's keyword arguments do. Unknown names are an error
 * that lists the known ones.
 */
import { InvalidOptionError } from '../../errors.js'
import { MAX_TIMER_MS, STRUTILS_BOOLEANS, booleanWord, coerce, decimal, inRange, oneOf, timerMs, Unfit, type Bounds } from '../../internal/coerce.js'
import { didYouMean, nearestName } from '../../internal/did-you-mean.js'
import { shorten } from '../../internal/redact.js'

export { MAX_TIMER_MS } from '../../internal/coerce.js'
export type { Bounds } from '../../internal/coerce.js'

/**
 * The declared shape of one option. Build it with {@link opt}. `HasDefault` is true when the
 * option always has a value once resolved (it declares a default or a defaultFrom), false when
 * an option left out resolves to undefined; `boolean` when not known.
 */
export interface OptionSpec<T, HasDefault extends boolean = boolean> {
  /** The URL query key, as tooz spells it. */
  readonly query: string
  /** What the docs table shows as the type and unit. */
  readonly type: string
  readonly doc: string
  /** The default, already in programmatic units; undefined = no default. */
  readonly default: T | undefined
  /** Name of another option whose resolved value is the default (tooz: membership_timeout ← timeout). */
  readonly defaultFrom: string | undefined
  /** True when the option declares a default or a defaultFrom, so that its resolved value is never undefined. */
  readonly hasDefault: HasDefault
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

/**
 * The resolved values of a spec set: `T` for an option with a default (or a defaultFrom),
 * `T | undefined` for one without, which resolves to undefined when it is not given.
 */
export type ResolvedOptions<S extends OptionSpecs> = {
  [K in keyof S]: S[K] extends OptionSpec<infer T, true> ? T : S[K] extends OptionSpec<infer T> ? T | undefined : never
}

/** What every builder of {@link opt} takes besides its own bounds. */
export interface OptionDeclaration<T> {
  /** One sentence for the docs table and the option's doc comment. */
  doc: string
  /** Name of another option whose resolved value is the default. */
  defaultFrom?: string
  /** Accepted for tooz compatibility, with no effect. */
  ignored?: boolean
  /** The default, in the URL's units (seconds for durations). */
  default?: T
}

/** Whether a declaration gives its option a value when none is given: a default or a defaultFrom. */
export type DeclaresDefault<C> = C extends { default: {} } | { defaultFrom: string } ? true : false

function last(values: string[]): string {
  return values[values.length - 1] ?? ''
}

function make<T, D extends boolean>(
  query: string,
  type: string,
  c: OptionDeclaration<T>,
  shown: (v: T) => string,
  parse: (v: string) => T,
  check: (v: unknown) => T,
  repeated = false,
  parseAll?: (v: string[]) => T,
): OptionSpec<T, D> {
  return {
    query,
    type,
    doc: c.doc,
    default: c.default,
    defaultFrom: c.defaultFrom,
    hasDefault: (c.default !== undefined || c.defaultFrom !== undefined) as D,
    repeated,
    ignored: c.ignored ?? false,
    fromQuery: parseAll ?? ((values) => parse(last(values))),
    fromCode: check,
    shownDefault: c.default !== undefined ? shown(c.default) : c.defaultFrom ? `same as ${c.defaultFrom}` : '—',
  }
}

/** Builders for option declarations. */
export const opt = {
  /**
   * A duration: seconds in the URL (tooz's unit), milliseconds in code. Range bounds are in
   * seconds; the upper bound is never above `MAX_TIMER_MS`.
   */
  seconds<C extends OptionDeclaration<number> & Bounds>(query: string, c: C): OptionSpec<number, DeclaresDefault<C>> {
    const check = (ms: number): number => {
      inRange(ms / 1000, c, ' s')
      return timerMs(ms)
    }
    return make<number, DeclaresDefault<C>>(
      query,
      'seconds',
      { ...c, default: c.default === undefined ? undefined : c.default * 1000 },
      (v) => `${v / 1000}`,
      (s) => check(Math.round(decimal(s) * 1000)),
      (v) => {
        if (typeof v !== 'number' || !Number.isFinite(v)) throw new Unfit(`must be a finite number of milliseconds, at most ${MAX_TIMER_MS}`)
        return check(v)
      },
    )
  },
  /** A whole number. */
  integer<C extends OptionDeclaration<number> & Bounds>(query: string, c: C): OptionSpec<number, DeclaresDefault<C>> {
    const check = (n: number): number => inRange(n, c)
    return make<number, DeclaresDefault<C>>(query, 'integer', c, String, (s) => check(decimal(s, true)), (v) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Unfit('must be a whole number')
      return check(v)
    })
  },
  /** true/false; the URL accepts oslo's spellings (1/0, yes/no, on/off, true/false, t/f, y/n). */
  boolean<C extends OptionDeclaration<boolean>>(query: string, c: C): OptionSpec<boolean, DeclaresDefault<C>> {
    return make<boolean, DeclaresDefault<C>>(query, 'boolean', c, String, (s) => {
      const b = booleanWord(s, STRUTILS_BOOLEANS)
      if (b === undefined) throw new Unfit(`"${shorten(s)}" is not a boolean (use true or false)`)
      return b
    }, (v) => {
      if (typeof v !== 'boolean') throw new Unfit('must be true or false')
      return v
    })
  },
  /** Free text. */
  string<C extends OptionDeclaration<string> & { nonEmpty?: boolean }>(query: string, c: C): OptionSpec<string, DeclaresDefault<C>> {
    const check = (s: string): string => {
      if (c.nonEmpty && s === '') throw new Unfit('must not be empty')
      return s
    }
    return make<string, DeclaresDefault<C>>(query, 'string', c, (v) => (v === '' ? '""' : v), check, (v) => {
      if (typeof v !== 'string') throw new Unfit('must be a string')
      return check(v)
    })
  },
  /** One of a fixed set of words. */
  enum<const V extends string, C extends OptionDeclaration<NoInfer<V>> = OptionDeclaration<V>>(
    query: string,
    values: readonly V[],
    c: C,
  ): OptionSpec<V, DeclaresDefault<C>> {
    const check = (v: unknown): V => coerce(() => oneOf(v, values), (phrase) => new Unfit(`must be ${phrase}`))
    return make<V, DeclaresDefault<C>>(query, values.join(' \\| '), c, String, check, check)
  },
  /** A repeatable option (`hosts=a&hosts=b`); in code, an array of strings. */
  list<C extends OptionDeclaration<string[]>>(query: string, c: C): OptionSpec<string[], DeclaresDefault<C>> {
    return make<string[], DeclaresDefault<C>>(
      query,
      'list',
      c,
      (v) => (v.length ? v.join(',') : '—'),
      (s) => [s],
      (v) => {
        if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) throw new Unfit('must be an array of strings')
        return v as string[]
      },
      true,
      (values) => values,
    )
  },
}

/** A problem with one key of a URL query, for the caller to word as its own error (`near`: the key probably meant). */
export type QueryProblem =
  | { kind: 'unknown'; key: string; known: string[]; near: string | undefined }
  | { kind: 'empty'; key: string; type: string }
  | { kind: 'unfit'; key: string; phrase: string }

/**
 * Reads a URL query against a spec set: programmatic name → value. `fail` words each problem as
 * the caller's error (`known` is sorted). A key without a value is the `empty` problem unless the
 * option repeats or `parseEmpty` is set; then its spec reads ''.
 */
export function readQuery(specs: OptionSpecs, query: Map<string, string[]>, fail: (problem: QueryProblem) => Error, parseEmpty = false): Map<string, unknown> {
  const byQuery = new Map(Object.entries(specs).map(([name, spec]) => [spec.query, name]))
  const out = new Map<string, unknown>()
  for (const [key, values] of query) {
    const name = byQuery.get(key)
    if (name === undefined) throw fail({ kind: 'unknown', key, known: [...byQuery.keys()].sort(), near: nearestOption(specs, key, 'query') })
    const spec = specs[name]!
    if (!spec.repeated && !parseEmpty && values.some((v) => v === '')) throw fail({ kind: 'empty', key, type: spec.type })
    try {
      out.set(name, spec.fromQuery(values))
    } catch (err) {
      throw fail({ kind: 'unfit', key, phrase: (err as Error).message })
    }
  }
  return out
}

/**
 * The option probably meant by an unknown `name`, spelt as `as` wants it (the URL key or the
 * programmatic name), whichever spelling the typo is near: `membership_timout` and
 * `membershipTimeoutMs` in a URL both suggest `membership_timeout`. Undefined when none is near.
 */
export function nearestOption(specs: OptionSpecs, name: string, as: 'query' | 'code'): string | undefined {
  const spelt = new Map<string, string>()
  for (const [code, spec] of Object.entries(specs)) {
    const wanted = as === 'query' ? spec.query : code
    spelt.set(code, wanted).set(spec.query, wanted)
  }
  const near = nearestName(name, spelt.keys())
  return near === undefined ? undefined : spelt.get(near)
}

/** The values given, and for every other option its default: a defaultFrom follows the resolved value of the option it names. */
export function withDefaults(specs: OptionSpecs, given: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = Object.fromEntries(given)
  const resolve = (name: string, seen: string[]): unknown => {
    if (name in out) return out[name]
    const spec = specs[name]!
    out[name] = spec.defaultFrom !== undefined && !seen.includes(spec.defaultFrom) ? resolve(spec.defaultFrom, [...seen, name]) : spec.default
    return out[name]
  }
  for (const name of Object.keys(specs)) resolve(name, [])
  return out
}

/**
 * Resolves a driver's options: defaults, then the URL query, then programmatic values.
 * Throws InvalidOptionError naming the option, the bad value and what is allowed.
 */
export function resolveOptions<S extends OptionSpecs>(
  specs: S,
  query: Map<string, string[]>,
  code: Record<string, unknown>,
  owner: string,
): ResolvedOptions<S> {
  const given = readQuery(specs, query, (p) =>
    new InvalidOptionError(
      p.kind === 'unknown'
        ? `Unknown option "${shorten(p.key)}" in the ${owner} URL${didYouMean(p.near)}; known options: ${p.known.join(', ') || '(none)'}`
        : p.kind === 'empty'
        ? `Option "${p.key}" in the ${owner} URL has no value; write ${p.key}=<${p.type}>`
        : `Option "${p.key}" in the ${owner} URL ${p.phrase}`,
    ))
  for (const [name, value] of Object.entries(code)) {
    if (value === undefined) continue
    const spec = specs[name]
    if (spec === undefined) {
      throw new InvalidOptionError(
        `Unknown option "${shorten(name)}" for the ${owner} driver${didYouMean(nearestOption(specs, name, 'code'))}; known options: ${
          Object.keys(specs).sort().join(', ') || '(none)'
        }`,
      )
    }
    try {
      given.set(name, spec.fromCode(value))
    } catch (err) {
      throw new InvalidOptionError(`Option ${name} for the ${owner} driver ${(err as Error).message}`)
    }
  }
  // Defaults last, so that a defaultFrom sees the resolved value of the option it follows.
  return withDefaults(specs, given) as ResolvedOptions<S>
}
