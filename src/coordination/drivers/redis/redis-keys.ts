/**
 * The redis key layout, exactly as tooz writes it (tooz.md §3.1; shared/reference/layouts/redis.txt
 * is a dump of what Debian's tooz 3.1 really writes):
 *
 * | key                               | type   | value                                               |
 * |-----------------------------------|--------|-----------------------------------------------------|
 * | `<ns>_groups`                     | SET    | group ids (not namespaced)                          |
 * | `<ns>_group:<group>`              | HASH   | `__created__` = `1`; `<member>` = msgpack(caps)     |
 * | `<ns>_beats:<member>`             | STRING | `Not dead!`, PX membership_timeout                  |
 * | lock key (style-dependent, below) | STRING | holder's token, PX lock_timeout                     |
 * | `<lock key>:fence`                | STRING | INCR counter, rollcall only (fencing tokens)        |
 * | `<lock key>:fence:epoch`          | STRING | Sentinel epoch of the tokens, rollcall only         |
 * | `<lock key>:queue`                | ZSET   | waiting tokens by arrival, rollcall only            |
 * | `<lock key>:waiter:<token>`       | STRING | `1`, PX 1 s: a queued waiter is alive, rollcall only |
 * | `<lock key>:turn`                 | HASH   | `t` = token, `n` = acquisitions; PX 100 ms, rollcall |
 *
 * Pub/sub channel `<lock key>:wake` (rollcall only): a release names the head waiter's token
 * there (redis-lock.ts).
 *
 * Lock keys changed in tooz 9.0.0 (commit bc1207d), silently: tooz ≤ 8 builds them with
 * `"%s_%s_lock" % (namespace_bytes, name)` on Python 3, so the *repr* of bytes leaks into the key.
 * The `lock_key_style` option picks the layout; processes using different layouts do not exclude
 * each other.
 */
import type { LockKeyStyle } from './redis-options.js'
import { strictUtf8 } from '../../../internal/unicode.js'
import { pythonBytesRepr } from '../../codec/python-str.js'

const utf8 = new TextEncoder()

/** The hash field that marks a group's existence (tooz GROUP_EXISTS); no member may be named so. */
export const GROUP_EXISTS_FIELD = '__created__'
/** Its value (tooz GROUP_EXISTS_VALUE). */
export const GROUP_EXISTS_VALUE = '1'
/** The beat key's value (tooz STILL_ALIVE). */
export const STILL_ALIVE = 'Not dead!'

/** Length of the random part of a lock token: 32 hex characters, the shape of tooz's uuid1().hex. */
const TOKEN_HEX_CHARS = 32

/** Builds every key of one namespace. */
export class RedisKeys {
  /** `<ns>_groups`. */
  readonly groups: string
  readonly #namespace: string
  readonly #style: LockKeyStyle

  constructor(namespace: string, style: LockKeyStyle) {
    this.#namespace = namespace
    this.#style = style
    this.groups = `${namespace}_groups`
  }

  /** `<ns>_group:<group>`. */
  group(group: string): string {
    return `${this.#namespace}_group:${group}`
  }

  /** `<ns>_beats:<member>`; also the prefix the Lua scripts append member ids to. */
  beat(member = ''): string {
    return `${this.#namespace}_beats:${member}`
  }

  /** The key of the lock named `name`, in the configured style. */
  lock(name: string): string {
    switch (this.#style) {
      case 'v9':
        return `${this.#namespace}_${name}_lock`
      case 'legacy':
        return `${this.#legacyNamespace()}_${pythonBytesRepr(utf8.encode(name))}_lock`
      case 'legacy-str':
        return `${this.#legacyNamespace()}_${name}_lock`
    }
  }

  /**
   * The key of `group`'s leader lock: the lock named `leader_of_<group>`. tooz ≤ 8 always builds
   * that name as bytes (`b"leader_of_" + group`), so `legacy-str` uses the bytes form here.
   */
  leaderLock(group: string): string {
    const name = `leader_of_${group}`
    if (this.#style === 'legacy-str') return `${this.#legacyNamespace()}_${pythonBytesRepr(utf8.encode(name))}_lock`
    return this.lock(name)
  }

  /** The fencing counter beside a lock key. */
  fence(lockKey: string): string {
    return `${lockKey}:fence`
  }

  #legacyNamespace(): string {
    return pythonBytesRepr(utf8.encode(this.#namespace))
  }
}

/**
 * A lock token: 32 random hex characters (the shape of tooz's uuid1().hex) followed by the member
 * id, so that anyone reading the key can name a rollcall holder.
 */
export function lockToken(randomHex: string, memberId: string): string {
  return `${randomHex}${memberId}`
}

/**
 * Who holds a lock, from the token stored in its key: the member id for a rollcall token,
 * `tooz:<token>` for anything else (a tooz process stores a bare 32-hex uuid1 token).
 */
export function holderOfToken(raw: Uint8Array): string {
  let token: string
  try {
    token = strictUtf8.decode(raw)
  } catch {
    return `tooz:${Buffer.from(raw).toString('hex')}`
  }
  const head = token.slice(0, TOKEN_HEX_CHARS)
  if (token.length > TOKEN_HEX_CHARS && /^[0-9a-f]{32}$/.test(head)) return token.slice(TOKEN_HEX_CHARS)
  return `tooz:${token}`
}

/** Decodes a member or group id stored by anyone; undefined when it is not UTF-8. */
export function decodeId(raw: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(raw)
  } catch {
    return undefined
  }
}
