/** The machine's processes as /proc shows them (Linux): for tests that check what is left running. */
import { readdirSync, readFileSync } from 'node:fs'

/** One process, from /proc/PID/stat. */
export interface ProcessInfo {
  ppid: number
  pgid: number
  /** R, S, D, T (stopped), Z (a zombie: exited, not yet reaped)... */
  state: string
}

/** Every process on the machine, by PID. */
export function processes(): Map<number, ProcessInfo> {
  const table = new Map<number, ProcessInfo>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue // exited meanwhile
    }
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    table.set(Number(name), { state: state!, ppid: Number(ppid), pgid: Number(pgid) })
  }
  return table
}

/** PIDs of every descendant of `root` (not `root` itself), parents before their children. */
export function descendants(root: number, table: Map<number, ProcessInfo> = processes()): number[] {
  const found = [root]
  for (let i = 0; i < found.length; i++) for (const [pid, info] of table) if (info.ppid === found[i]) found.push(pid)
  return found.slice(1)
}
