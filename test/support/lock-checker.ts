/**
 * A safety checker for mutual exclusion (locks) and leadership, from a shared append-only log.
 *
 * Every contender appends one line per step to one file opened with O_APPEND, in a single write()
 * of less than PIPE_BUF bytes, so lines never interleave and the order of lines in the file is
 * the order in which the steps happened (each append completes before the next one starts). The
 * checker therefore trusts the file order, not the clocks; the times only measure.
 *
 * Line format: `<kind> <pid> <token|-> <epoch ms>`
 * - `enter` / `exit`: took / is about to release the lock (written BEFORE release() is called);
 * - `lost`: learned that the lock was lost (lockLost) while holding it;
 * - `lead` / `unlead`: elected / stops believing it leads (written BEFORE stepping down);
 * - `kill`: written by the test BEFORE it sends SIGKILL to `pid`: from this line on the process
 *   may be dead, and whatever it held is released by the backend (at once when the lock is tied
 *   to the connection or file descriptor, after the lease or session lapses otherwise).
 *
 * Violations: an `enter` (or `lead`) while another process holds (leads) and has written neither
 * exit/lost (unlead) nor been killed; and, where the backend issues fencing tokens, a token that
 * does not exceed every earlier holder's.
 */
import { openSync, readFileSync, writeSync, closeSync } from 'node:fs'

/** The kinds of line. */
export type LogKind = 'enter' | 'exit' | 'lost' | 'lead' | 'unlead' | 'kill'

/** One parsed line. */
export interface LogLine {
  kind: LogKind
  pid: number
  token: bigint | undefined
  /** Epoch milliseconds (fractional). */
  at: number
  /** 1-based line number, for messages. */
  line: number
}

/** What a check found. */
export interface CheckReport {
  /** Holds (lock) or terms (leadership) seen. */
  holds: number
  /** Holds ended by a SIGKILL of the holder. */
  killedInside: number
  /** Holds ended by the holder learning it had lost the lock or leadership. */
  lostInside: number
  /** Longest time from the kill of a holder to the next enter (its lock being free again). */
  worstTakeoverAfterKillMs: number | undefined
  /** Longest hold, enter to its end. */
  longestHoldMs: number | undefined
  /** Empty when safe. */
  violations: string[]
}

/**
 * The wall clock at performance.now() zero, measured once per process. Node's own
 * performance.timeOrigin pairs a wall-clock read with a monotonic one at startup, and a process
 * started on a loaded machine can be preempted between the two: its timeOrigin is then off by the
 * preemption (8 ms seen in a PostgreSQL partition replay, every history record of one client
 * ahead of the others', whose releases then seemed to come after the next grants). Here each
 * sample spins until Date.now() turns to a new millisecond and reads performance.now() at once;
 * a preempted sample only reads a later performance.now(), so the largest of a few is the offset,
 * to within microseconds.
 */
let originMs: number | undefined
function wallClockOriginMs(): number {
  if (originMs === undefined) {
    let best = Number.NEGATIVE_INFINITY
    for (let sample = 0; sample < 5; sample++) {
      const before = Date.now()
      let tick: number
      while ((tick = Date.now()) === before) {}
      best = Math.max(best, tick - performance.now())
    }
    originMs = best
  }
  return originMs
}

/**
 * The clock of the fault logs, in fractional ms: the wall clock at the process's monotonic zero
 * (wallClockOriginMs) plus the monotonic time since. Every process on the host (in any network
 * namespace) reads the same clocks, so their times compare; it never steps back inside a process.
 */
export function clockMs(): number {
  return wallClockOriginMs() + performance.now()
}

const KINDS = new Set<LogKind>(['enter', 'exit', 'lost', 'lead', 'unlead', 'kill'])

/** An O_APPEND writer of log lines (one write() per line). */
export class AppendLog {
  readonly #fd: number

  constructor(readonly path: string) {
    this.#fd = openSync(path, 'a')
  }

  /** Appends `kind pid token at`. */
  write(kind: LogKind, pid: number, token?: bigint): void {
    writeSync(this.#fd, `${kind} ${pid} ${token === undefined ? '-' : token.toString()} ${clockMs().toFixed(3)}\n`)
  }

  close(): void {
    closeSync(this.#fd)
  }
}

/** Parses a log; malformed lines (there should be none) throw. */
export function parseLog(text: string): LogLine[] {
  const out: LogLine[] = []
  text.split('\n').forEach((raw, i) => {
    if (raw === '') return
    const [kind, pid, token, at, ...rest] = raw.split(' ')
    if (!KINDS.has(kind as LogKind) || rest.length > 0 || !/^\d+$/.test(pid ?? '') || !/^(-|\d+)$/.test(token ?? '') || !Number.isFinite(Number(at))) {
      throw new Error(`line ${i + 1} of the log is malformed: ${JSON.stringify(raw)}`)
    }
    out.push({ kind: kind as LogKind, pid: Number(pid), token: token === '-' ? undefined : BigInt(token!), at: Number(at), line: i + 1 })
  })
  return out
}

/** Reads and parses a log file. */
export function readLog(path: string): LogLine[] {
  return parseLog(readFileSync(path, 'utf8'))
}

/** Lines `from`..`to` (1-based) of the log, one short entry each, so that a violation can be read without the log file. */
function excerpt(lines: readonly LogLine[], from: number, to: number): string {
  const t0 = lines[0]?.at ?? 0
  return lines.filter((l) => l.line >= from && l.line <= to)
    .map((l) => `${l.line} ${l.kind} ${l.pid}${l.token === undefined ? '' : ` #${l.token}`} @${(l.at - t0).toFixed(0)}`)
    .join('; ')
}

/**
 * Checks one resource: `lock` (enter/exit/lost) or `leader` (lead/unlead). With `fencing`, every
 * enter must carry a token larger than all earlier ones.
 */
export function checkExclusive(lines: readonly LogLine[], resource: 'lock' | 'leader', options: { fencing?: boolean } = {}): CheckReport {
  const begin: LogKind = resource === 'lock' ? 'enter' : 'lead'
  const ends = new Set<LogKind>(resource === 'lock' ? ['exit', 'lost'] : ['unlead'])
  const violations: string[] = []
  let holder: LogLine | undefined
  let lastToken: LogLine | undefined
  let killedAt: LogLine | undefined
  let holds = 0
  let killedInside = 0
  let lostInside = 0
  let worstTakeover: number | undefined
  let longestHold: number | undefined
  const endHold = (end: LogLine): void => {
    longestHold = Math.max(longestHold ?? 0, end.at - holder!.at)
    holder = undefined
  }
  for (const l of lines) {
    if (l.kind === begin) {
      holds += 1
      if (holder?.pid === l.pid) {
        violations.push(
          `${resource}: pid ${l.pid} ${begin}s again at line ${l.line} without having ended its hold of line ${holder.line}: one process began two `
            + `overlapping holds (terms)`,
        )
      } else if (holder) {
        violations.push(
          `${resource}: pid ${l.pid} ${begin}s at line ${l.line} while pid ${holder.pid} has held it since line ${holder.line} (${
            (l.at - holder.at).toFixed(0)
          } ms earlier) and has neither ended nor been killed; the log around it: ${excerpt(lines, holder.line - 3, l.line + 3)}`,
        )
      }
      if (options.fencing) {
        if (l.token === undefined) violations.push(`${resource}: pid ${l.pid} ${begin}s at line ${l.line} without a fencing token`)
        else if (lastToken && l.token <= lastToken.token!) {
          violations.push(
            `${resource}: fencing token ${l.token} of pid ${l.pid} at line ${l.line} does not exceed token ${lastToken.token} of pid ${lastToken.pid} at `
              + `line ${lastToken.line}`,
          )
        }
        if (l.token !== undefined) lastToken = l
      }
      if (killedAt) {
        worstTakeover = Math.max(worstTakeover ?? 0, l.at - killedAt.at)
        killedAt = undefined
      }
      holder = l
    } else if (ends.has(l.kind)) {
      if (holder?.pid === l.pid) {
        if (l.kind === 'lost') lostInside += 1
        endHold(l)
      }
    } else if (l.kind === 'kill') {
      if (holder?.pid === l.pid) {
        killedInside += 1
        killedAt = l
        endHold(l)
      }
    }
  }
  return { holds, killedInside, lostInside, worstTakeoverAfterKillMs: worstTakeover, longestHoldMs: longestHold, violations }
}
