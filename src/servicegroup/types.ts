/**
 * The records the service-group layer works with: one row of the services table, what a service
 * registers with, and what an operator sees (Nova's `os-services` view).
 */

/** The service-group drivers, a closed set (Nova's `servicegroup_driver` choices plus `tooz`). */
export const DRIVER_NAMES = ['db', 'mc', 'zk', 'tooz'] as const

/** One of {@link DRIVER_NAMES}. */
export type DriverName = (typeof DRIVER_NAMES)[number]

/** Drivers that may be named by `report_to_previous_driver` (the deprecated ones being migrated off). */
export const PREVIOUS_DRIVER_NAMES = ['mc', 'zk'] as const

/** One of {@link PREVIOUS_DRIVER_NAMES}. */
export type PreviousDriverName = (typeof PREVIOUS_DRIVER_NAMES)[number]

/** True when `name` is a service-group driver name. */
export function isDriverName(name: unknown): name is DriverName {
  return typeof name === 'string' && (DRIVER_NAMES as readonly string[]).includes(name)
}

/**
 * One row of the services table. Times are UTC `Date`s. `lastSeenUp` is set by the store, and
 * only when `reportCount` rises (so an admin change can never make a dead service look up).
 */
export interface ServiceRecord {
  id: number
  host: string
  binary: string
  /** The group the service joins (Nova: the RPC topic, e.g. `compute`). */
  topic: string
  availabilityZone: string | null
  /** Administrative: may new work be placed here? Never changes State. */
  disabled: boolean
  disabledReason: string | null
  /** Fenced by an administrator: down whatever the driver says. */
  forcedDown: boolean
  version: number
  reportCount: number
  lastSeenUp: Date | null
  createdAt: Date
  updatedAt: Date | null
  deletedAt: Date | null
}

/** A time as a record may carry it: a Date, an ISO-8601 string (naive = UTC, as Nova's), or epoch milliseconds. */
export type TimeLike = Date | string | number

/**
 * What the liveness checks read from a record. Accepts a {@link ServiceRecord} or any object of
 * the same shape, with times as Dates, strings or numbers (Nova's drivers accept rows that came
 * over RPC with string timestamps).
 */
export interface ServiceRef {
  host: string
  topic: string
  binary?: string
  forcedDown?: boolean | null
  lastSeenUp?: TimeLike | null
  createdAt?: TimeLike | null
  updatedAt?: TimeLike | null
}

/** What a service registers with (the catalog upserts on host + binary). */
export interface ServiceSpec {
  host: string
  binary: string
  topic: string
  availabilityZone?: string | null
  version?: number
}

/** The admin-settable fields of a record (plus reportCount, which only reports change). */
export interface ServiceChanges {
  disabled?: boolean
  disabledReason?: string | null
  forcedDown?: boolean
  reportCount?: number
  version?: number
  availabilityZone?: string | null
  topic?: string
}

/** A record with its liveness, as `service list` shows it. */
export interface ServiceStatus {
  record: ServiceRecord
  /** `enabled` / `disabled`, from the record: administrative intent. */
  status: 'enabled' | 'disabled'
  /** `up` / `down`, from the driver, overridden to `down` by forcedDown. */
  state: 'up' | 'down'
  /** The driver's updated time (db: updated_at; mc, zk, tooz: the newer of the last report and updated_at). */
  updatedAt: Date | null
}

/** A host in a topic, as up/down events name it. */
export interface ServiceEvent {
  topic: string
  host: string
}
