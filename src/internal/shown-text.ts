/**
 * How text that came from outside (a value, a file name read from a directory) is shown in an
 * error or a log line: control characters escaped, so that it can neither start a new line nor
 * send an escape sequence to a terminal, and long text cut. Not marked internal: this comment
 * leads the first declaration, which stripInternal would then drop from the `.d.ts`.
 */

/** Longest text an error message shows of one value; longer input is cut with `…`. */
export const MAX_SHOWN_CHARS = 200

/**
 * C0 and C1 controls and DEL (ESC starts a terminal escape sequence, U+009B is a one-byte CSI),
 * the Unicode line and paragraph separators, and the bidirectional overrides and isolates, which
 * reorder what a terminal shows.
 */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** `text` with every control character written as `\uXXXX`; anything else as it is. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** Escapes control characters (a value must not start a new log line) and cuts long text. */
export function shorten(text: string, max = MAX_SHOWN_CHARS): string {
  return escapeControls(text.length > max ? `${text.slice(0, max)}…` : text)
}
