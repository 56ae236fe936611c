/**
 * tooz's `timeout` and the durations that follow it (`membership_timeout`, `lock_timeout`, ...),
 * declared once for every driver that takes them (Redis, memcached, etcd3, PostgreSQL,
 * MySQL/MariaDB): seconds in the URL, milliseconds in code, `timeout` 30 s by default (tooz's), each
 * of the others the value of `timeout` unless given. A driver supplies what each bounds there.
 */
import { opt, type OptionSpec } from '../../config/options.js'

/** `timeout`, 30 s by default; `doc` says what it bounds in the driver. */
export function timeoutOption(doc: string): OptionSpec<number, true> {
  return opt.seconds('timeout', { default: 30, doc })
}

/** A duration spelt `query` that is the value of `timeout` unless given; `doc` says what it bounds. */
export function followsTimeout(query: string, doc: string): OptionSpec<number, true> {
  return opt.seconds(query, { defaultFrom: 'timeoutMs', doc })
}

/** `membership_timeout`, the value of `timeout` unless given; `doc` says how a member lapses after it. */
export function membershipTimeoutOption(doc: string): OptionSpec<number, true> {
  return followsTimeout('membership_timeout', doc)
}

/** `lock_timeout`, the value of `timeout` unless given; `doc` says how a lock lapses after it. */
export function lockTimeoutOption(doc: string): OptionSpec<number, true> {
  return followsTimeout('lock_timeout', doc)
}
