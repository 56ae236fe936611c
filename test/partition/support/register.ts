/**
 * The fenced register of a partition run (issue 27): an HTTP server in the test process, listening
 * on the root namespace's address on the hosts' bridge (a link the nemesis never cuts), that
 * accepts a write only if its fencing token is at least the highest it has accepted for that
 * register, and writes its own verdict (a `fence` record) to the history in the order it decided.
 *
 * POST /?register=NAME&token=DECIMAL&writer=PROCESS → 200 accepted, 409 rejected (stale), 400 bad.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { HistoryWriter } from '../../fault/support/partition-history.js'

/** A running register. */
export interface FencedRegister {
  /** `http://address:port/`, for the clients. */
  readonly url: string
  /** Writes accepted and rejected so far. */
  readonly counts: { accepted: number; rejected: number }
  close(): Promise<void>
}

/** Starts a register on `address` writing verdicts to `historyPath` as process `register`. */
export async function startRegister(address: string, historyPath: string): Promise<FencedRegister> {
  const h = new HistoryWriter(historyPath, 'register')
  const highest = new Map<string, bigint>()
  const counts = { accepted: 0, rejected: 0 }
  const server = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams
    const register = q.get('register')
    const writer = q.get('writer')
    const text = q.get('token') ?? ''
    if (req.method !== 'POST' || !register || !writer || !/^-?\d+$/.test(text)) {
      res.writeHead(400).end()
      return
    }
    const token = BigInt(text)
    const top = highest.get(register)
    const accepted = top === undefined || token >= top
    if (accepted) highest.set(register, token)
    h.write({ type: 'fence', register, token, writer, accepted })
    counts[accepted ? 'accepted' : 'rejected']++
    res.writeHead(accepted ? 200 : 409).end()
  })
  server.keepAliveTimeout = 1_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, address, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${address}:${port}/`,
    counts,
    async close() {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      h.close()
    },
  }
}
