/**
 * What a CLI command is, and the helpers every command shares: argument parsing (node:util
 * parseArgs), the common `--url`/`--member` options, and printing. Commands hold no logic of their
 * own: parse, call the public API, print, return an exit status.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { InvalidArgumentError } from '../errors.js'
import { redactUrl, type Logger } from '../index.js'
import { coerce, secondsText } from '../internal/coerce.js'

/** Option declarations in node:util parseArgs form. */
export type OptionsConfig = NonNullable<ParseArgsConfig['options']>

/** What a command's run() receives. */
export interface CommandContext {
  /** Parsed option values. */
  values: Record<string, string | boolean | string[] | undefined>
  /** Positional arguments (before `--`). */
  positionals: string[]
  /** Everything after `--` (a command to run). */
  rest: string[]
  /** Aborted on SIGINT/SIGTERM. */
  signal: AbortSignal
  /** Process environment (for ROLLCALL_* settings). */
  env: NodeJS.ProcessEnv
  out: Output
}

/** A CLI command. */
export interface Command {
  /** Words that select it, e.g. `group create`. */
  name: string
  summary: string
  /** Usage line after `rollcall <name>`, e.g. `GROUP [--json]`. */
  usage: string
  options?: OptionsConfig
  /** Names of positionals, for `--help` and for counting. */
  positionals?: readonly string[]
  /** Accepts a command after `--`. */
  takesCommand?: boolean
  /** One line per option for `--help` (common options have theirs in OPTION_HELP). */
  optionHelp?: Record<string, string>
  run(ctx: CommandContext): Promise<number | void>
}

/** Where commands write. stdout carries results; stderr carries progress and errors. */
export interface Output {
  readonly isTTY: boolean
  line(text: string): void
  json(value: unknown): void
  error(text: string): void
  /** Progress/state for people: a line on a terminal, nothing when piped unless `always`. */
  status(text: string, always?: boolean): void
}

/** A logger that writes warnings and errors (and, `verbose`, info and debug) to stderr as `rollcall: warning: ...`, credentials redacted. */
export function stderrLogger(out: Output, verbose = false): Logger {
  return {
    debug: (msg) => verbose && out.error(`rollcall: debug: ${redactUrl(msg)}`),
    info: (msg) => verbose && out.error(`rollcall: ${redactUrl(msg)}`),
    warn: (msg) => out.error(`rollcall: warning: ${redactUrl(msg)}`),
    error: (msg) => out.error(`rollcall: error: ${redactUrl(msg)}`),
  }
}

/** The standard Output on process.stdout/stderr. */
export function processOutput(): Output {
  return {
    isTTY: Boolean(process.stderr.isTTY),
    line: (text) => void process.stdout.write(`${text}\n`),
    json: (value) => void process.stdout.write(`${JSON.stringify(value, jsonReplacer)}\n`),
    error: (text) => void process.stderr.write(`${text}\n`),
    status(text, always = false) {
      if (this.isTTY || always) process.stderr.write(`${text}\n`)
    },
  }
}

/** JSON for values msgpack can hold: bytes as { $bytes: base64 }, bigint as a string, Set as an array, Map as an object. */
export function jsonReplacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') }
  if (value instanceof Set) return [...value]
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [k instanceof Uint8Array ? Buffer.from(k).toString() : String(k), v]))
  if (value instanceof Error) return { error: value.name, code: (value as { code?: string }).code, message: value.message }
  return value
}

/** Options of backend-facing commands that wait by design (watch, join, lock, elect). */
export const DIAL_OPTIONS: OptionsConfig = {
  url: { type: 'string' },
  member: { type: 'string' },
  'dial-timeout': { type: 'string' },
}

/** Options of backend-facing commands that ask and answer: DIAL_OPTIONS and --command-timeout. */
export const CONNECTION_OPTIONS: OptionsConfig = {
  ...DIAL_OPTIONS,
  'command-timeout': { type: 'string' },
}

/** Help lines of options that several commands share. */
export const OPTION_HELP: Record<string, string> = {
  url: 'backend URL (default: $ROLLCALL_URL)',
  member: 'member id (default: $ROLLCALL_MEMBER, else rollcall-cli-<host>-<pid>)',
  'dial-timeout': 'give up connecting after SECONDS (default 5; status 7)',
  'command-timeout': 'give up on each backend request after SECONDS (default 5; status 7)',
  json: 'print JSON',
  config: 'configuration file (default: $ROLLCALL_CONFIG)',
  'config-file': 'configuration file; repeatable, later files override earlier ones',
  'config-dir': 'directory of *.conf files, read in name order after --config-file; repeatable, later directories override earlier ones',
  set: 'KEY=VALUE: one setting, over the file and the environment; repeatable',
  help: 'show this help',
}

/** The `--help` text of one command: usage, summary and every option. */
export function commandHelpText(cmd: Command): string {
  const options = Object.entries({ ...cmd.options, help: { type: 'boolean', short: 'h' } } as OptionsConfig)
  const names = options.map(([name, o]) =>
    `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${/timeout|for$/.test(name) ? 'SECONDS' : 'VALUE'}` : ''}`
  )
  const width = Math.max(...names.map((n) => n.length))
  const lines = options.map(([name], i) => `  ${names[i]!.padEnd(width)}  ${cmd.optionHelp?.[name] ?? OPTION_HELP[name] ?? ''}`.trimEnd())
  return `Usage: rollcall ${cmd.name} ${cmd.usage}\n\n${cmd.summary}\n\nOptions:\n${lines.join('\n')}`
}

/** Parses argv for one command; throws InvalidArgumentError on unknown options or wrong counts. */
export function parseCommandArgs(cmd: Command, argv: string[]): { values: CommandContext['values']; positionals: string[]; rest: string[] } {
  const dashdash = argv.indexOf('--')
  const own = dashdash >= 0 ? argv.slice(0, dashdash) : argv
  const rest = dashdash >= 0 ? argv.slice(dashdash + 1) : []
  if (rest.length > 0 && !cmd.takesCommand) throw new InvalidArgumentError(`rollcall ${cmd.name} takes no command after "--"`)
  let parsed
  try {
    parsed = parseArgs({ args: own, options: { help: { type: 'boolean', short: 'h' }, ...cmd.options }, allowPositionals: true, strict: true })
  } catch (err) {
    throw new InvalidArgumentError(`${(err as Error).message.replace(/\. To specify a positional.*$/s, '')}; see rollcall ${cmd.name} --help`)
  }
  const expected = cmd.positionals ?? []
  if (!parsed.values.help && cmd.takesCommand && dashdash < 0 && parsed.positionals.length > expected.length) {
    const words = parsed.positionals
    throw new InvalidArgumentError(
      `rollcall ${cmd.name}: put the command after "--": rollcall ${cmd.name} ${words.slice(0, expected.length).join(' ')} -- ${
        words.slice(expected.length).join(' ')
      }`,
    )
  }
  if (!parsed.values.help && parsed.positionals.length !== expected.length) {
    throw new InvalidArgumentError(
      `rollcall ${cmd.name} takes ${expected.length ? expected.join(' ') : 'no arguments'}; usage: rollcall ${cmd.name} ${cmd.usage}`,
    )
  }
  return { values: parsed.values as CommandContext['values'], positionals: parsed.positionals, rest }
}

/**
 * Reads a flag's value with a reader of the coercion kit (internal/coerce.ts); undefined when the
 * flag is absent. A value that does not fit is an InvalidArgumentError: `<flag> takes <what the
 * reader allows>, not "<value>"`.
 */
export function flagValue<T>(value: unknown, flag: string, read: (text: string) => T): T | undefined {
  if (value === undefined) return undefined
  return coerce(
    () => read(typeof value === 'string' ? value : ''),
    (phrase) => new InvalidArgumentError(`${flag} takes ${phrase}, not ${JSON.stringify(String(value).slice(0, 100))}`),
  )
}

/** Reads a number of seconds from an option, or undefined. */
export function secondsOption(value: unknown, name: string): number | undefined {
  return flagValue(value, `--${name}`, secondsText)
}

/** Formats rows as a plain text table with a header. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const fmt = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()
  return [fmt(headers), ...rows.map(fmt)].join('\n')
}
