/**
 * Progress for people: commands that wait or work through many items show their state. On a
 * terminal that is one line redrawn in place with a spinner; when output is not a terminal, a
 * plain line each time the state changes (never a line per spinner frame).
 */
import type { Output } from './command.js'

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/**
 * A status line: on a terminal one line redrawn in place with a spinner, cleared before other
 * output; elsewhere a plain line each time the text changes.
 */
/** A status line; see the file's header. */
export class ProgressLine {
  readonly #tty: boolean
  readonly #out: Output
  #text = ''
  #key = ''
  #frame = 0
  #timer: NodeJS.Timeout | undefined

  readonly #quiet: boolean

  /** `quiet`: nothing at all off a terminal (for waits that are usually short). */
  constructor(out: Output, options: { quiet?: boolean } = {}) {
    this.#out = out
    this.#quiet = options.quiet ?? false
    this.#tty = out.isTTY && Boolean(process.stderr.isTTY)
    if (this.#tty) {
      this.#timer = setInterval(() => this.#draw(), 100)
      this.#timer.unref()
    }
  }

  /**
   * Shows `text` as the current state. Off a terminal it is printed only when `key` (default:
   * the text) changes, so that a countdown in the text does not print a line a second.
   */
  set(text: string, key = text): void {
    if (text === this.#text) return
    this.#text = text
    if (this.#tty) this.#draw()
    else if (key !== this.#key && !this.#quiet) this.#out.status(text, true)
    this.#key = key
  }

  /** Prints a line of the events log above the status line. */
  log(fn: () => void): void {
    if (this.#tty) process.stderr.write('\r\x1b[2K')
    fn()
    if (this.#tty) this.#draw()
  }

  /** Clears the line and stops the spinner. */
  done(): void {
    clearInterval(this.#timer)
    if (this.#tty) process.stderr.write('\r\x1b[2K')
  }

  #draw(): void {
    // One terminal row at most: a wrapped line could not be cleared by the next redraw.
    const width = Math.max(20, (process.stderr.columns || 80) - 3)
    const text = this.#text.length > width ? `${this.#text.slice(0, width - 1)}…` : this.#text
    if (text) process.stderr.write(`\r\x1b[2K${SPINNER[this.#frame++ % SPINNER.length]} ${text}`)
  }
}
