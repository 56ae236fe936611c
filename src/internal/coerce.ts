/**
 * The one coercion kit: text (a URL query value, an INI or ROLLCALL_* setting, a CLI flag) or a
 * value from code, turned into a checked number, duration, boolean, word or host:port. A reader
 * returns the value or throws {@link Unfit}, a phrase about the value that never names the
 * setting; each layer wraps it in its own typed error and wording: coordination/config/options.ts
 * (InvalidOptionError), servicegroup/config.ts and settings.ts (InvalidConfigError), cli/command.ts
 * (InvalidArgumentError). One number grammar everywhere, the strict decimal of {@link decimal}: no
 * `0x10`, `0b1` or `Infinity`, which neither tooz's URL parsing nor oslo.config's numbers accept.
 * @internal
 */
import { shorten } from './shown-text.js'

/**
 * The longest duration a Node timer can wait (2^31−1 ms, about 24.8 days): above it, setTimeout
 * fires after 1 ms. Every duration, in every layer, stops there.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** Why a value does not fit: a phrase about the value, without the setting's name. */
export class Unfit extends Error {
  override readonly name = 'Unfit'
}

/** Runs a reader; an {@link Unfit} becomes the caller's own error, built from its phrase. */
export function coerce<T>(read: () => T, wrap: (phrase: string) => Error): T {
  try {
    return read()
  } catch (err) {
    if (err instanceof Unfit) throw wrap(err.message)
    throw err
  }
}

/** Inclusive bounds of a number, in the unit of the value checked (an option's `min`/`max`, in the URL's units). */
export interface Bounds {
  /** The least value accepted. */
  min?: number
  /** The greatest value accepted. */
  max?: number
}

/** Checks `n` against `bounds`. Unfit: `must be at least <min><unit>` / `must be at most <max><unit>`. */
export function inRange(n: number, bounds: Bounds, unit = ''): number {
  if (bounds.min !== undefined && n < bounds.min) throw new Unfit(`must be at least ${bounds.min}${unit}`)
  if (bounds.max !== undefined && n > bounds.max) throw new Unfit(`must be at most ${bounds.max}${unit}`)
  return n
}

/**
 * A strict decimal (digits, optional fraction and exponent, optional sign): the grammar of URL
 * options. `integer` asks for a safe whole number. Unfit: `"<text>" is not a number`, `… is not
 * a finite number`, `… is not a whole number from <min safe> to <max safe>`.
 */
export function decimal(text: string, integer = false): number {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text.trim())) throw new Unfit(`"${shorten(text)}" is not a number`)
  const n = Number(text)
  if (!Number.isFinite(n)) throw new Unfit(`"${shorten(text)}" is not a finite number`)
  if (integer && !Number.isSafeInteger(n)) {
    throw new Unfit(`"${shorten(text)}" is not a whole number from ${Number.MIN_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}`)
  }
  return n
}

/** Checks a duration in ms a timer will wait. Unfit: `must be greater than zero` / `must be at most … s (… ms, the longest a Node timer can wait)`. */
export function timerMs(ms: number): number {
  if (ms <= 0) throw new Unfit('must be greater than zero')
  if (ms > MAX_TIMER_MS) throw new Unfit(`must be at most ${MAX_TIMER_MS / 1000} s (${MAX_TIMER_MS} ms, the longest a Node timer can wait)`)
  return ms
}

/** What {@link secondsText} accepts, as a phrase. */
export const SECONDS_ALLOWED = `a number of seconds from 0 to ${MAX_TIMER_MS / 1000} (the longest a Node timer can wait)`

/**
 * Seconds as a setting or a flag writes them: a decimal (fractions allowed), from 0 to the timer
 * limit. Unfit: {@link SECONDS_ALLOWED}.
 */
export function secondsText(text: string): number {
  const n = coerce(() => decimal(text), () => new Unfit(SECONDS_ALLOWED))
  if (n < 0 || n * 1000 > MAX_TIMER_MS) throw new Unfit(SECONDS_ALLOWED)
  return n
}

/**
 * Whole milliseconds written in digits only (`4000`; not `4e3`, `4000.0`), from `minMs` to the
 * timer limit. Unfit: `whole milliseconds from <minMs> to <max>`.
 */
export function wholeMsText(text: string, minMs: number): number {
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < minMs || n > MAX_TIMER_MS) throw new Unfit(`whole milliseconds from ${minMs} to ${MAX_TIMER_MS}`)
  return n
}

/** Words for true and false. */
export interface BooleanWords {
  readonly true: ReadonlySet<string>
  readonly false: ReadonlySet<string>
}

/** oslo.utils' `bool_from_string` words, as tooz reads URL options: 1/0, t/f, true/false, on/off, y/n, yes/no. */
export const STRUTILS_BOOLEANS: BooleanWords = {
  true: new Set(['1', 't', 'true', 'on', 'y', 'yes']),
  false: new Set(['0', 'f', 'false', 'off', 'n', 'no']),
}

/** oslo.config's Boolean words, as Nova reads nova.conf: true/false, 1/0, on/off, yes/no; empty is false. */
export const OSLO_CONFIG_BOOLEANS: BooleanWords = {
  true: new Set(['true', '1', 'on', 'yes']),
  false: new Set(['false', '0', 'off', 'no', '']),
}

/** A boolean word (case and surrounding space ignored); undefined when it is neither. */
export function booleanWord(text: string, words: BooleanWords): boolean | undefined {
  const t = text.trim().toLowerCase()
  return words.true.has(t) ? true : words.false.has(t) ? false : undefined
}

/** One of a fixed set of words, exactly. Unfit: `one of a, b, c`, ending `, or nothing` when '' is one. */
export function oneOf<V extends string>(value: unknown, values: readonly V[]): V {
  if (typeof value === 'string' && (values as readonly string[]).includes(value)) return value as V
  const words = values as readonly string[]
  throw new Unfit(`one of ${words.filter(Boolean).join(', ')}${words.includes('') ? ', or nothing' : ''}`)
}

/** A host and port, the host without IPv6 brackets. */
export interface HostAndPort {
  /** A name or an address; an IPv6 address without its brackets. */
  host: string
  /** 1–65535. */
  port: number
}

/**
 * A server address as lists of servers write it: `name:port`, `1.2.3.4:port` or `[v6]:port`,
 * port 1–65535. Unfit: `"<text>" is not host:port (port 1–65535)`.
 */
export function hostPort(text: string): HostAndPort {
  const m = /^(\[[0-9a-f:.]+\]|[^\s:,/[\]]+):(\d{1,5})$/i.exec(text)
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) throw new Unfit(`"${shorten(text)}" is not host:port (port 1–65535)`)
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) }
}

/**
 * An address to listen on: `HOST:PORT`, `[v6]:PORT`, `:PORT` or `PORT` (port 0–65535; 0 asks the
 * system for a free one). The host is '' when not written. Unfit: `HOST:PORT (e.g. 127.0.0.1:7979,
 * [::1]:7979 or :7979)`.
 */
export function listenText(text: string): HostAndPort {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^\s:[\]]*):)?(\d{1,5})$/.exec(text.trim())
  if (!m || Number(m[2]) > 65535) throw new Unfit('HOST:PORT (e.g. 127.0.0.1:7979, [::1]:7979 or :7979)')
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(m[2]) }
}
