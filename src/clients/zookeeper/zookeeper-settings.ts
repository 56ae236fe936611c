/** What a ZkConnection is told at construction, and what it reports to its owner. */
import type { ConnectionOptions as TlsOptions } from 'node:tls'
import type { ZkAcl } from './zookeeper-frames.js'

/** What a connection reports to its owner. `connected` is implicit in start() resolving. */
export type ZkSessionState = 'suspended' | 'reconnected' | 'lost'

/** Settings of one ZkConnection. */
export interface ZkConnectionOptions {
  servers: readonly { host: string; port: number }[]
  /** Try servers in random order (kazoo's default) or in the order given. */
  randomizeHosts: boolean
  /** TLS settings, or undefined for plain TCP. */
  tls?: TlsOptions
  /** A chroot applied by the client to every path ('' or undefined for none). */
  chroot?: string
  /** The session timeout asked of the server; the server may negotiate it into its own bounds. */
  sessionTimeoutMs: number
  /** How long start() waits for a first session. */
  connectTimeoutMs: number
  /** How long any one operation may take, queueing included. */
  opTimeoutMs: number
  /** Digest credentials (`user:password`) sent on every connect, or undefined. */
  digestAuth: string | undefined
  /** The ACL of every node created. */
  acl: readonly ZkAcl[]
  /** The backend as messages name it (redacted URL). */
  shownAs: string
  /** A transport or session change, after the initial connect. */
  onState(state: ZkSessionState, cause?: Error): void
  /** A replacement session is up; called at its connect, before any answer on it is read, and before `reconnected` is reported. Must not reject. */
  onNewSession(): Promise<void>
}
