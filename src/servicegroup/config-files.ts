/**
 * The files loadConfig() reads (oslo.config's repeated --config-file and --config-dir), how each
 * is read (a regular file of at most MAX_CONFIG_BYTES, never blocking on a FIFO), and the
 * warnings about what a file holds that rollcall ignores: a section spelt in the wrong case, a
 * key that looks like a misspelt known one.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { nearestName } from '../internal/did-you-mean.js'
import { InvalidConfigError } from '../index.js'
import { FileRefused, readRegularFile } from '../internal/regular-file.js'
import { escapeControls } from '../internal/shown-text.js'
import { parseIni, type IniDocument, type IniValue } from './ini.js'

/** Largest configuration file read (a larger one, or one that is not a regular file, is refused). */
export const MAX_CONFIG_BYTES = 1024 * 1024

/** A warning found while loading (the caller logs it). */
export interface ConfigWarning {
  setting: string
  message: string
}

/** Where the INI files come from (part of loadConfig()'s options). */
export interface ConfigSources {
  /** INI file to read (default: `env.ROLLCALL_CONFIG`; none when both are unset). */
  file?: string
  /** INI files to read in order, later ones overriding earlier ones key by key (oslo.config's repeated --config-file); replaces `file`. */
  files?: readonly string[]
  /** A directory whose `*.conf` files are read after `files`, in name order (oslo.config's --config-dir). */
  dir?: string
  /** Directories read in turn after `files`, each one's `*.conf` in name order (oslo.config's repeated --config-dir); replaces `dir`. */
  dirs?: readonly string[]
}

/** One value of the merged files, with the file and line it came from. */
export type FileValue = IniValue & { file: string }

/**
 * The files loadConfig() reads, in order: `files`, else `file`, else ROLLCALL_CONFIG (when no
 * directory is given); then the *.conf files of each of `dirs` (else `dir`), directory by
 * directory, each in name order.
 */
export function configFiles(options: ConfigSources, env: NodeJS.ProcessEnv): string[] {
  const dirs = options.dirs ?? (options.dir !== undefined ? [options.dir] : [])
  const files = [
    ...(options.files ?? (options.file !== undefined ? [options.file] : dirs.length === 0 && env.ROLLCALL_CONFIG ? [env.ROLLCALL_CONFIG] : [])),
  ]
  for (const dir of dirs) {
    let names: string[]
    try {
      names = readdirSync(dir).filter((n) => n.endsWith('.conf')).sort()
    } catch (err) {
      throw new InvalidConfigError(
        '--config-dir',
        `Cannot read the configuration directory ${escapeControls(dir)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      )
    }
    files.push(...names.map((n) => join(dir, n)))
  }
  return files
}

/**
 * Reads and merges the files, later ones overriding earlier ones key by key; `known` lists the
 * settings rollcall reads, for the warnings.
 */
export function readConfigFiles(
  files: readonly string[],
  known: readonly { section: string; key: string }[],
): { merged: Map<string, Map<string, FileValue>>; warnings: ConfigWarning[] } {
  const merged = new Map<string, Map<string, FileValue>>()
  const warnings: ConfigWarning[] = []
  for (const file of files) {
    // Names read from a directory may hold anything, an escape sequence included: shown escaped.
    const shown = escapeControls(file)
    const doc = parseIni(readConfigFile(file), shown)
    warnings.push(...unknownKeys(doc, shown, known), ...miscasedSections(doc, shown, known))
    for (const [section, keys] of doc) {
      const into = merged.get(section) ?? new Map<string, FileValue>()
      merged.set(section, into)
      for (const [key, v] of keys) into.set(key, { ...v, file })
    }
  }
  return { merged, warnings }
}

/** Reads a configuration file: a regular file of at most MAX_CONFIG_BYTES (internal/regular-file.ts). */
function readConfigFile(file: string): string {
  try {
    return readRegularFile(file, MAX_CONFIG_BYTES).toString('utf8')
  } catch (err) {
    if (!(err instanceof FileRefused)) throw err
    const fix = { notRegular: '; give the path of an INI file', tooLarge: '; a configuration file is a few kilobytes', system: '' }[err.kind]
    throw new InvalidConfigError('--config', `Cannot read the configuration file ${escapeControls(file)}: ${err.message}${fix}`)
  }
}

/** Sections that differ from a known one only by case (`[default]`): oslo.config ignores them, so they are reported. */
function miscasedSections(doc: IniDocument, file: string, settings: readonly { section: string }[]): ConfigWarning[] {
  const known = [...new Set(settings.map((x) => x.section))]
  const out: ConfigWarning[] = []
  for (const [section, keys] of doc) {
    const meant = known.find((k) => k !== section && k.toLowerCase() === section.toLowerCase())
    if (!meant) continue
    const first = [...keys.values()][0]
    out.push({
      setting: `[${section}]`,
      message: `${file}${first ? `:${first.line}` : ''}: section [${section}] is not [${meant}] (section names are case-sensitive, as in oslo.config): `
        + `its ${keys.size} setting(s) are ignored; write [${meant}]`,
    })
  }
  return out
}

/** Keys in known sections that look like a misspelt known key (nova.conf has many others; those are ignored). */
function unknownKeys(doc: IniDocument, file: string, settings: readonly { section: string; key: string }[]): ConfigWarning[] {
  const out: ConfigWarning[] = []
  for (const [section, keys] of doc) {
    const known = settings.filter((x) => x.section === section).map((x) => x.key)
    for (const [key, v] of keys) {
      if (known.includes(key)) continue
      const near = nearestName(key, known)
      if (near) {
        out.push({ setting: `[${section}] ${key}`, message: `${file}:${v.line}: unknown setting [${section}] ${key} is ignored; did you mean ${near}?` })
      }
    }
  }
  return out
}
