/**
 * The options of the status routes, apart from status-app.ts so that the public `rollcall/web`
 * types (createStatusHandler's options) name neither the views nor prom-client.
 */
import type { Coordinator, Logger } from '../index.js'
import type { ServiceGroup } from '../servicegroup/index.js'

/** What the status page, API and health check show, and how; shared by `rollcall serve` and createStatusHandler(). */
export interface StatusAppOptions {
  /** Services to show (the os-services view and API). */
  serviceGroup?: ServiceGroup
  /** A coordinator to read groups through (joins nothing). */
  coordinator?: Coordinator
  /** Bearer token for writes; undefined = read-only. */
  token?: string
  /** How often the views are re-read (default 1000 ms); pushed changes show sooner. */
  refreshMs?: number
  /**
   * How long one pass over the empty groups takes (default 60 000 ms): a first member joining a
   * group that was empty shows within it. Groups with members are watched; see groups.ts.
   */
  emptyRefreshMs?: number
  /** How often the coordinator's heartbeat round trip is measured (default 5000 ms). */
  heartbeatProbeMs?: number
  /**
   * True when `coordinator` reads the backend of the tooz service-group driver: then each group
   * read (what keeps the groups section live) also carries the services' report times into the
   * services table, instead of waiting for the driver's next full read.
   */
  groupsAreServiceTopics?: boolean
  /** The page's title (default "rollcall"). */
  title?: string
  /** Where unexpected errors are logged (default: nowhere). */
  logger?: Logger
  /** Bytes that may wait on one event stream before it is dropped (default 8 MiB). */
  maxStreamQueueBytes?: number
  /** Event streams open at once (default 200; 503 beyond). */
  maxStreams?: number
  /** Event streams one client (an IPv4 address or an IPv6 /64: see sse.ts) keeps open at once (default 32; 429 beyond). */
  maxStreamsPerClient?: number
  /** How long data may wait unsent on one event stream before it is dropped (default 30 000 ms). */
  streamStallMs?: number
  /** How long one event stream lives before it is ended; browsers reconnect (default 600 000 ms). */
  maxStreamMs?: number
}
