/**
 * The logger interface rollcall writes to, and how a user's logger is called. The default
 * discards everything: a library does not choose where its users' logs go.
 *
 * rollcall logs a message and, for some lines, structured fields. Loggers disagree on the order:
 * console and winston take `warn(msg, fields)`, pino takes `warn(fields, msg)` (given
 * `warn(msg, fields)` it keeps the message and drops the fields). So each logger given to rollcall
 * is wrapped once by `adaptLogger()`: a pino logger, known by the symbols pino puts on every
 * logger and child it makes, is called object first; every other logger message first. A line
 * without fields is always `warn(msg)`, so console never prints a stray `undefined`.
 */

/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>

/**
 * Four levels, each taking a message and optional fields. console, winston and pino loggers are
 * accepted as they are (pino is called `warn(fields, msg)`, see docs/api.md); so is any object
 * with these four methods, called `warn(msg)` or `warn(msg, fields)`.
 */
export interface Logger {
  /** Detail, for debugging. */
  debug(msg: string, fields?: LogFields): void
  /** News that needs no action (a connection recovered, a summary of repeated warnings). */
  info(msg: string, fields?: LogFields): void
  /** Something odd that did not stop work (what a `warning` event carries, logged once per kind). */
  warn(msg: string, fields?: LogFields): void
  /** A failure the application should look at (one of its own listeners that failed, an unexpected error). */
  error(msg: string, fields?: LogFields): void
}

const noop = (): void => {}

/** A logger that discards everything (the default). */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop }

const LEVELS = ['debug', 'info', 'warn', 'error'] as const

/** Loggers made by adaptLogger() (and the silent one), which are passed through as they are. */
const adapted = new WeakSet<Logger>([silentLogger])

/**
 * Whether `logger` was made by pino: pino keeps its settings under symbols named `pino.*` (such
 * as `Symbol(pino.messageKey)`) on each logger, and a child logger inherits them from its parent.
 * These are private to pino, so no other logger has them by accident.
 */
export function isPinoLogger(logger: object): boolean {
  for (let o: object | null = logger; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    if (Object.getOwnPropertySymbols(o).some((s) => s.description === 'pino.messageKey')) return true
  }
  return false
}

/**
 * The logger rollcall calls, wrapping the one it was given: pino object first, others message
 * first, a line without fields as `warn(msg)`. The user's methods are called on their object,
 * so loggers that need `this` (winston, pino) work. Idempotent: an adapted logger is returned as is.
 */
export function adaptLogger(logger: Logger): Logger {
  if (adapted.has(logger)) return logger
  const target = logger as unknown as Record<(typeof LEVELS)[number], (...args: unknown[]) => void>
  const objectFirst = isPinoLogger(logger)
  const line = (level: (typeof LEVELS)[number]) => (msg: string, fields?: LogFields): void => {
    if (fields === undefined) target[level](msg)
    else if (objectFirst) target[level](fields, msg)
    else target[level](msg, fields)
  }
  const out: Logger = { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') }
  adapted.add(out)
  return out
}
