/**
 * The redis driver's Lua scripts. Each runs atomically on the server, so every check-and-act is
 * one round trip and no other client can interleave (tooz uses the same scripts for create,
 * delete and update, and WATCH/MULTI transactions for the rest; a script gives the same isolation).
 *
 * Return codes follow tooz's where tooz has a script (create_group: 0/1; delete_group: -1/-2
 * missing, -3 not empty, -4 set removal failed; update_capabilities: -1 no group, -2 not joined).
 *
 * Where tooz has bugs, the scripts fix them without changing what is stored (tooz.md §6):
 * - join checks HEXISTS first, so a second join never overwrites the first one's capabilities;
 * - a member whose beat key is gone is never reported (by any listing or member_caps), and is
 *   collected (HDEL) by whoever reads, except the reader itself: tooz's lazy GC, minus its habit of
 *   reporting itself while dead and of returning the capabilities of dead members. That rule is
 *   written once (LIVE below) and spliced into every script that reads members;
 * - delete_group collects dead members before deciding that a group is not empty.
 *
 * Member keys are built inside the scripts (`<beat prefix> .. member`), so these scripts need a
 * single Redis server (or Sentinel master): like tooz's, they are not Redis Cluster-safe.
 */
import type { Redis } from 'ioredis'
import { GROUP_EXISTS_FIELD, GROUP_EXISTS_VALUE } from './redis-keys.js'

const CREATED = JSON.stringify(GROUP_EXISTS_FIELD)

/**
 * The liveness rule, once for every script that reads members. `live(group, beats, self, fields)`
 * looks at the group-hash fields listed in `fields` and returns a table that is true at the
 * position of each live member, whether `self` is in the hash while dead, and the smallest
 * remaining TTL (ms) of a live member's beat key (-1 when none has one). A member is live while
 * its beat key exists. A dead member is never reported and is collected (HDEL) at once, except
 * `self`: a reader never collects itself (it may be about to beat again).
 *
 * One PTTL per member (as cheap as EXISTS, and it tells when the member expires): MGET over
 * batches of 1,000 beat keys measured no cheaper on Redis 7.0 (100,000 members: about 100 ms of
 * server CPU either way, within noise); building each beat key and looking it up is the cost.
 */
const LIVE = `
local function live(group, beats, self, fields)
  local alive, selfDead, soonest = {}, false, -1
  for i = 1, #fields do
    local m = fields[i]
    if m ~= ${CREATED} then
      local ttl = redis.call('pttl', beats .. m)
      if ttl ~= -2 then
        alive[i] = true
        if ttl >= 0 and (soonest < 0 or ttl < soonest) then soonest = ttl end
      elseif m == self then selfDead = true
      else redis.call('hdel', group, m) end
    end
  end
  return alive, selfDead, soonest
end`

/** Every script by name. KEYS and ARGV are documented at the top of each. */
export const SCRIPTS = {
  /** KEYS: group, groups set. ARGV: group id. → 1 created, 0 exists. */
  rollcallCreateGroup: `
local group, groups, gid = KEYS[1], KEYS[2], ARGV[1]
if redis.call('exists', group) == 1 then return 0 end
redis.call('sadd', groups, gid)
redis.call('hset', group, ${CREATED}, ${JSON.stringify(GROUP_EXISTS_VALUE)})
return 1`,

  /**
   * KEYS: group, groups set. ARGV: group id, beat prefix, own member id. → 1, or -1..-4 as tooz.
   * Not empty (-3) once the dead are collected: live members remain, or this member (never collected).
   */
  rollcallDeleteGroup: `${LIVE}
local group, groups, gid, beats, self = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
if redis.call('exists', group) == 0 then return -1 end
if redis.call('sismember', groups, gid) == 0 then return -2 end
live(group, beats, self, redis.call('hkeys', group))
if redis.call('hlen', group) > 1 then return -3 end
if redis.call('srem', groups, gid) == 0 then return -4 end
redis.call('del', group)
return 1`,

  /** KEYS: group. ARGV: member, capabilities. → 1 joined, -1 no group, -2 already a member. */
  rollcallJoin: `
if redis.call('exists', KEYS[1]) == 0 then return -1 end
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then return -2 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
return 1`,

  /** KEYS: group. ARGV: member. → 1 left, -1 no group, -2 not a member. */
  rollcallLeave: `
if redis.call('exists', KEYS[1]) == 0 then return -1 end
if redis.call('hdel', KEYS[1], ARGV[1]) == 0 then return -2 end
return 1`,

  /** KEYS: group. ARGV: member, capabilities. → 1, -1 no group, -2 not a member (tooz's script). */
  rollcallUpdateCapabilities: `
if redis.call('exists', KEYS[1]) == 0 then return -1 end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -2 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
return 1`,

  /**
   * KEYS: group. ARGV: beat prefix, own member id. → -1 no group, else { ids of live members,
   * smallest remaining beat TTL in ms or -1 }. Collects the dead.
   */
  rollcallListMemberIds: `${LIVE}
local group, beats, self = KEYS[1], ARGV[1], ARGV[2]
if redis.call('exists', group) == 0 then return -1 end
local ids = redis.call('hkeys', group)
local alive, _, soonest = live(group, beats, self, ids)
local out = {}
for i = 1, #ids do
  if alive[i] then out[#out + 1] = ids[i] end
end
return { out, soonest }`,

  /**
   * KEYS: group. ARGV: beat prefix, own member id. Collects the dead; → -1 no group, 1 when this
   * member is in the hash while dead (so a reader must not report it), else 0. Sent inside
   * MULTI before an HGETALL of the group (redis.ts listMembers): the capabilities then go straight
   * from the hash to the socket instead of through Lua tables (about a quarter less server CPU at
   * 100,000 members), and the HGETALL sees exactly the live members plus, perhaps, this one.
   */
  rollcallCollectDead: `${LIVE}
local group, beats, self = KEYS[1], ARGV[1], ARGV[2]
if redis.call('exists', group) == 0 then return -1 end
local _, selfDead = live(group, beats, self, redis.call('hkeys', group))
if selfDead then return 1 end
return 0`,

  /** KEYS: group. ARGV: member, beat prefix, own member id. → capabilities, -1 no group, -2 not a live member. */
  rollcallMemberCapabilities: `${LIVE}
local group, m, beats, self = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if redis.call('exists', group) == 0 then return -1 end
local caps = redis.call('hget', group, m)
if not caps or not live(group, beats, self, { m })[1] then return -2 end
return caps`,

  /**
   * KEYS: own beat key, then every joined group. ARGV: membership timeout (ms), beat value, own
   * member id. Sets the beat key; → the 1-based positions of groups whose hash lacks this member.
   */
  rollcallHeartbeat: `
redis.call('psetex', KEYS[1], ARGV[1], ARGV[2])
local lost = {}
for i = 2, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[3]) == 0 then lost[#lost + 1] = i - 1 end
end
return lost`,

  /**
   * KEYS: lock, fencing counter. ARGV: token, lock timeout (ms).
   * → the new fencing token (≥ 1) when taken (or already held with this token); when busy, −1 − the
   * holder's PTTL (its lease lapses that many ms from now unless refreshed), or 0 when it has none.
   * SET NX PX is exactly what tooz (redis-py's Lock) writes, so Python holders exclude us.
   */
  rollcallLockAcquire: `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return redis.call('incr', KEYS[2])
end
local ttl = redis.call('pttl', KEYS[1])
if ttl >= 0 then return -1 - ttl end
return 0`,

  /** KEYS: lock. ARGV: token. → 1 released, 0 not ours (redis-py's compare-and-delete). */
  rollcallLockRelease: `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`,

  /** KEYS: lock. ARGV: token, lock timeout (ms). → 1 extended, 0 not ours (redis-py's reacquire). */
  rollcallLockRefresh: `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0`,
} as const

/** A script's name. */
export type ScriptName = keyof typeof SCRIPTS

/** One script argument; Uint8Array values travel as raw bytes. */
export type ScriptArg = string | number | Uint8Array

/** A reply as the Buffer variant of a command returns it. */
export type ScriptReply = number | Buffer | null | ScriptReply[]

type BufferScript = (numberOfKeys: number, ...args: (string | number | Buffer)[]) => Promise<ScriptReply>

/**
 * Registers every script on `client` (ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT,
 * so a restarted server that lost its script cache is handled) and returns a runner.
 */
export function installScripts(client: Redis): (name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]) => Promise<ScriptReply> {
  for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { lua })
  const commands = client as unknown as Record<string, BufferScript>
  return (name, keys, args) => {
    const raw = args.map((a) => (a instanceof Uint8Array ? Buffer.from(a.buffer, a.byteOffset, a.byteLength) : a))
    return commands[`${name}Buffer`]!.call(client, keys.length, ...keys, ...raw)
  }
}
