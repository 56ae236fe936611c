/**
 * The logger interface rollcall writes to. The default discards everything: a library does not
 * choose where its users' logs go. pino, console and most loggers fit as they are.
 */

/** Structured fields attached to a log line. */
export type LogFields = Record<string, unknown>

/** Four levels, each taking a message and optional fields. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
}

const noop = (): void => {}

/** A logger that discards everything (the default). */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop }
