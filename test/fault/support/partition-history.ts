/**
 * The history of a partition run (issue 27): every operation, library event, process start/kill
 * and nemesis step of every process in every network namespace, one JSON object per line in one
 * shared file, read back by partition-checker.ts.
 *
 * One clock. Each record's `at` is historyClockMs(): the host's wall clock at the process's
 * monotonic zero, measured once at a millisecond tick of Date.now() (test/support/lock-checker.ts
 * says why not performance.timeOrigin), plus the monotonic time elapsed since, in fractional
 * milliseconds. Network namespaces do not virtualise clocks, so every process on the host reads
 * the same two clocks, and two processes' `at` agree to microseconds (plus any NTP step between
 * their starts; the test host steps none).
 * Unlike Date.now() it never goes backwards inside a process when the wall clock is adjusted, and
 * unlike process.hrtime() it is a date a person can read and that every process maps alike. That
 * is what makes the checker's real-time comparisons across processes exact.
 *
 * One write per line. Each writer opens the shared file with O_APPEND and writes each record in
 * a single write() of less than PIPE_BUF (4 KiB), as test/support/lock-checker.ts's AppendLog
 * does: lines from different processes never interleave, and a line whose write() returned is in
 * the file even if its process is SIGKILLed the next instant (it is in the kernel's page cache;
 * only a machine crash could lose it, and a partition run does not crash the machine).
 *
 * Names. A process is named by the harness (`n1-locks-2`); a process that joins a group uses its
 * name as its member id, so that a member's host is known. Event records use the library's event
 * names and payloads (src/coordination/events.ts) as they are, so the checker reads the words the
 * Coordinator emits. Fencing tokens (bigints) are written as decimal strings and read as bigints.
 * Lines carry no id: the reader numbers them (1-based line number), and the checker names
 * records by that number.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs'
import type { CoordinatorEvents } from '../../../src/coordination/events.js'
import { clockMs } from '../../support/lock-checker.js'

/** The clock of every record: shared by all processes on the host (see the file's doc). */
export const historyClockMs = clockMs

/** Fields every record has. */
interface RecordBase {
  /** When, in ms on historyClockMs(). */
  at: number
  /** The process the record is about: the writer itself, or (for `kill`) the one the harness kills. */
  process: string
}

/**
 * A process's life: `start` (written by the process itself, naming its host, before any other
 * record of it), `exit` (it ends cleanly, after its last record), `kill` (written by the harness
 * BEFORE it sends SIGKILL: from then on the process may be dead and believes nothing).
 */
export interface ProcessRecord extends RecordBase {
  type: 'process'
  what: 'start' | 'exit' | 'kill'
  /** The host (network namespace) the process runs in; required on `start`. */
  host?: string
  pid?: number
}

/** What an operation does. */
export type OpName =
  /** Lock.acquire(): `resource` is the lock; `ok` carries the fencing token where the backend has one. */
  | 'acquire'
  /** Lock.release(): its `invoke` is written BEFORE release() is called, ending the holder's belief. */
  | 'release'
  /** joinGroup()/joinGroupCreate() of `resource` (the group), or the service-group API's join() of a topic. */
  | 'join'
  /** leaveGroup(): the `invoke`, written before the call, ends the membership. */
  | 'leave'
  /** standDownGroupLeader(): the `invoke`, written before the call, ends the leader's belief. */
  | 'standDown'
  /** getMembers() of `resource`: `ok` carries the member ids seen (a watcher's snapshot). */
  | 'getMembers'
  /**
   * The service-group API's isUp(): `resource` is the topic, `member` the process reporting the service asked about (so
   * that its host is known: the service's host is that process's), `ok` carries the answer.
   */
  | 'isUp'
  /** A write to the fenced register `resource` with `token` (the register's own verdict is a `fence` record). */
  | 'write'

/** One step of an operation, Jepsen style: `invoke` before the call, then `ok` or `fail`. */
export interface OpRecord extends RecordBase {
  type: 'op'
  op: OpName
  phase: 'invoke' | 'ok' | 'fail'
  /** The lock, group, topic or register. */
  resource: string
  /** Fencing token (acquire ok, write). */
  token?: bigint
  /** For isUp: the member asked about. */
  member?: string
  /** For getMembers ok: the ids; for isUp ok: the answer. */
  value?: string[] | boolean
  /** For fail: why. */
  error?: string
}

/** The library events the history records, by their names in src/coordination/events.ts. */
export type HistoryEventName =
  | 'lockLost'
  | 'leadershipLost'
  | 'membershipLost'
  | 'rejoined'
  | 'leaderElected'
  | 'memberJoined'
  | 'memberLeft'
  | 'connectionStateChanged'

/** A Coordinator event as its process saw it: the event's name and its payload's fields, unchanged. */
export type EventRecord = {
  [K in HistoryEventName]: RecordBase & { type: 'event'; event: K } & CoordinatorEvents[K][0]
}[HistoryEventName]

/** The fenced register's verdict on one write, written by the register itself in the order it decided. */
export interface FenceRecord extends RecordBase {
  type: 'fence'
  register: string
  token: bigint
  /** The process whose write it is. */
  writer: string
  accepted: boolean
}

/**
 * A nemesis step. `cut`: from now on only hosts on the same side reach each other (`sides` lists
 * every host, each on one side; the side with more than half of them is the majority, unless
 * `majority` names another). `heal`:
 * everything reaches everything again. Each is written as the nemesis begins to apply it (which
 * takes effect host by host). Cuts do not nest: each is healed before the next.
 */
export type NemesisRecord =
  | RecordBase & {
    type: 'nemesis'
    what: 'cut'
    sides: string[][]
    /** The cut leaves the cluster's leader (ZooKeeper leader, etcd leader) off the majority side, so the majority elects one first. */
    takesLeader?: boolean
    /**
     * The index in `sides` of the side that is served: the one with more than half of the
     * servers, however few clients are on it (the nemesis always writes it). Without it, the side
     * with more than half of the hosts.
     */
    majority?: number
    /** The cut-off side is not cut off by the network: its processes are paused (SIGSTOP) until the heal, and write nothing meanwhile. */
    paused?: boolean
  }
  | RecordBase & { type: 'nemesis'; what: 'heal' }

/**
 * Which nodes lead the cluster, as the harness's monitor last found when it asked every node
 * (ZooKeeper's `srvr` mode, etcd's status), written each time the answer changes: the hosts of
 * the nodes that say they lead. The side a cut serves is served only while a node on it leads:
 * without a leader no session or lease is renewed or expired and nothing is granted. Written
 * only for clusters that elect; a history without these records is taken as led throughout.
 */
export interface ClusterRecord extends RecordBase {
  type: 'cluster'
  leaders: string[]
}

/** One line of a history. */
export type HistoryRecord = ProcessRecord | OpRecord | EventRecord | FenceRecord | NemesisRecord | ClusterRecord

/** A record as read back: with its 1-based line number. */
export type HistoryEntry = HistoryRecord & { id: number }

/** A record for HistoryWriter.write: no time (the writer stamps it), and the process optional. */
export type HistoryDraft = HistoryRecord extends infer R ? R extends HistoryRecord ? Omit<R, 'at' | 'process'> & { process?: string } : never : never

/** Longest line a writer writes (PIPE_BUF): longer writes could interleave with another process's. */
export const MAX_LINE_BYTES = 4096

/** Appends records to a shared history file: one write() per line, O_APPEND, time stamped at the write. */
export class HistoryWriter {
  readonly #fd: number

  /** `process` is this writer's process name, used for records that do not name another. */
  constructor(readonly path: string, readonly process: string) {
    this.#fd = openSync(path, 'a')
  }

  /** Stamps `record` with historyClockMs() and appends it; returns what was written. */
  write(record: HistoryDraft): HistoryRecord {
    const full = { at: historyClockMs(), ...record, process: record.process ?? this.process } as HistoryRecord
    const line = `${JSON.stringify(full, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`
    if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
      throw new RangeError(`history record of ${Buffer.byteLength(line)} bytes exceeds ${MAX_LINE_BYTES} (PIPE_BUF): split it, or lines could interleave`)
    }
    writeSync(this.#fd, line)
    return full
  }

  /** Closes the file. */
  close(): void {
    closeSync(this.#fd)
  }
}

/** A history line the reader refuses: names the line and what is wrong with it. */
export class HistoryFormatError extends Error {
  override readonly name = 'HistoryFormatError'

  /** `line` is 1-based. */
  constructor(readonly line: number, problem: string, text: string) {
    super(`history line ${line}: ${problem}: ${text.length > 200 ? `${text.slice(0, 200)}...` : text}`)
  }
}

const OPS = new Set<OpName>(['acquire', 'release', 'join', 'leave', 'standDown', 'getMembers', 'isUp', 'write'])
const STATES = new Set(['connected', 'suspended', 'reconnected', 'lost'])
/** Each event's payload fields that must be strings. */
const EVENT_FIELDS: Record<HistoryEventName, readonly string[]> = {
  lockLost: ['name', 'reason'],
  leadershipLost: ['group', 'reason'],
  membershipLost: ['group', 'reason'],
  rejoined: ['group'],
  leaderElected: ['group', 'member'],
  memberJoined: ['group', 'member'],
  memberLeft: ['group', 'member'],
  connectionStateChanged: [],
}

/** Checks one parsed line; returns the problem, or undefined. Converts token strings to bigints in place. */
function problemOf(r: Record<string, unknown>): string | undefined {
  if (typeof r.at !== 'number' || !Number.isFinite(r.at)) return '`at` is not a finite number of ms'
  if (typeof r.process !== 'string' || r.process === '') return '`process` is not a non-empty string'
  const str = (k: string): boolean => typeof r[k] === 'string' && r[k] !== ''
  const token = (required: boolean): string | undefined => {
    if (r.token === undefined && !required) return undefined
    if (typeof r.token !== 'string' || !/^-?\d+$/.test(r.token)) return '`token` is not a decimal string'
    r.token = BigInt(r.token)
    return undefined
  }
  switch (r.type) {
    case 'process':
      if (r.what !== 'start' && r.what !== 'exit' && r.what !== 'kill') return '`what` of a process record is not start, exit or kill'
      if (r.what === 'start' && !str('host')) return 'a process start names no `host`'
      return undefined
    case 'op':
      if (!OPS.has(r.op as OpName)) return `unknown op ${JSON.stringify(r.op)}`
      if (r.phase !== 'invoke' && r.phase !== 'ok' && r.phase !== 'fail') return '`phase` is not invoke, ok or fail'
      if (!str('resource')) return 'an op names no `resource`'
      if (r.op === 'isUp' && !str('member')) return 'an isUp op names no `member`'
      if (r.phase === 'ok' && r.op === 'isUp' && typeof r.value !== 'boolean') return 'an isUp ok has no boolean `value`'
      if (r.phase === 'ok' && r.op === 'getMembers' && !(Array.isArray(r.value) && r.value.every((m) => typeof m === 'string'))) {
        return 'a getMembers ok has no `value` list of member ids'
      }
      return token(r.op === 'write')
    case 'event': {
      const fields = EVENT_FIELDS[r.event as HistoryEventName]
      if (!fields) return `unknown event ${JSON.stringify(r.event)}`
      const missing = fields.find((f) => !str(f))
      if (missing) return `a ${String(r.event)} event has no \`${missing}\``
      if (r.event === 'connectionStateChanged' && !STATES.has(r.state as string)) return 'a connectionStateChanged event has no known `state`'
      return undefined
    }
    case 'fence':
      if (!str('register') || !str('writer') || typeof r.accepted !== 'boolean') return 'a fence record needs `register`, `writer` and boolean `accepted`'
      return token(true)
    case 'nemesis':
      if (r.what === 'heal') return undefined
      if (r.what !== 'cut') return '`what` of a nemesis record is not cut or heal'
      if (!Array.isArray(r.sides) || r.sides.length < 2 || !r.sides.every((s) => Array.isArray(s) && s.length > 0 && s.every((h) => typeof h === 'string'))) {
        return 'a cut needs `sides`: two or more non-empty lists of hosts'
      }
      if (new Set(r.sides.flat()).size !== r.sides.flat().length) return 'a host is on two sides of a cut'
      if (r.takesLeader !== undefined && typeof r.takesLeader !== 'boolean') return '`takesLeader` of a cut is not a boolean'
      if (r.paused !== undefined && typeof r.paused !== 'boolean') return '`paused` of a cut is not a boolean'
      if (r.majority !== undefined && !(Number.isInteger(r.majority) && (r.majority as number) >= 0 && (r.majority as number) < r.sides.length)) {
        return '`majority` of a cut is not the index of one of its sides'
      }
      return undefined
    case 'cluster':
      if (!Array.isArray(r.leaders) || !r.leaders.every((h) => typeof h === 'string' && h !== '')) return 'a cluster record needs `leaders`: a list of hosts'
      return undefined
    default:
      return `unknown record type ${JSON.stringify(r.type)}`
  }
}

/** Parses a history; throws HistoryFormatError at the first malformed line. Empty lines are skipped. */
export function parseHistory(text: string): HistoryEntry[] {
  const out: HistoryEntry[] = []
  text.split('\n').forEach((raw, i) => {
    if (raw === '') return
    let r: unknown
    try {
      r = JSON.parse(raw)
    } catch {
      throw new HistoryFormatError(i + 1, 'not JSON (a line cut short?)', raw)
    }
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new HistoryFormatError(i + 1, 'not a JSON object', raw)
    const problem = problemOf(r as Record<string, unknown>)
    if (problem) throw new HistoryFormatError(i + 1, problem, raw)
    out.push({ ...(r as HistoryRecord), id: i + 1 })
  })
  return out
}

/** Reads and parses a history file. */
export function readHistory(path: string): HistoryEntry[] {
  return parseHistory(readFileSync(path, 'utf8'))
}

/** Resolves with the first record of the history at `path` that `match` accepts, or undefined after `ms` (read again every 100 ms). */
export async function awaitRecord(path: string, match: (e: HistoryEntry) => boolean, ms: number): Promise<HistoryEntry | undefined> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    const found = readHistory(path).find(match)
    if (found) return found
    await new Promise((r) => setTimeout(r, 100))
  }
  return undefined
}
