/** Every bound a test waits on, in one place (Curator's Timing). Generous: these are bounds, not speed checks. */
export const TIMING = {
  /** An event that should be pushed or polled within a second or so. */
  eventMs: 5_000,
  /** The watch interval tests configure, so that polled drivers notice quickly. */
  watchIntervalMs: 200,
  /** Liveness window used by expiry tests (the fast URLs set timeouts to about this). */
  expirySeconds: 2,
  /** Extra slack on top of an expiry before a test gives up. */
  expirySlackMs: 8_000,
  /** A lock wait that must time out. */
  shortWaitMs: 300,
} as const
