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
import { createHash } from 'node:crypto'
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

/**
 * The waiter queue and the turn of a lock, once for every lock script (redis-lock.ts explains
 * both). KEYS[3] is the queue (a ZSET of waiting tokens scored by arrival), ARGV[3] the prefix of
 * the waiters' liveness keys, KEYS[4] the turn (a HASH: t = the token whose turn it is, n = its
 * acquisitions so far; it expires at the turn's end), ARGV[6] the acquisitions a round of turns
 * allows, ARGV[7] the prefix of the waiters' wake channels, ARGV[8] the fewest a turn allows. Only
 * rollcall reads them. head() drops waiters whose liveness key lapsed off the front and names the
 * first one left; join() queues a waiter (once; later calls keep it alive); leave() unqueues it;
 * turnSize() is the holder's share of the round (ARGV[6] over the holder and the waiters queued
 * now, at least ARGV[8]); turnHolder() names the token whose turn is on, if any, and myTurn()
 * says whether it is a given token's;
 * wakeHead() PUBLISHes on the head's channel and, when nobody receives it (the waiter's process
 * died, or its subscriber connection is down; a waiter queues only once subscribed), drops that
 * head and wakes the next, returning the head that heard it.
 */
const QUEUE = `
local queue, waiters, turn = KEYS[3], ARGV[3], KEYS[4]
local function head()
  while true do
    local first = redis.call('zrange', queue, 0, 0)[1]
    if not first then return nil end
    if redis.call('exists', waiters .. first) == 1 then return first end
    redis.call('zrem', queue, first)
  end
end
local function join(token, waitMs)
  if not redis.call('zscore', queue, token) then
    local last = redis.call('zrange', queue, -1, -1, 'withscores')
    redis.call('zadd', queue, (tonumber(last[2]) or 0) + 1, token)
  end
  redis.call('set', waiters .. token, '1', 'PX', waitMs)
  redis.call('pexpire', queue, waitMs)
end
local function leave(token)
  redis.call('zrem', queue, token)
  redis.call('del', waiters .. token)
end
local function turnSize()
  return math.max(tonumber(ARGV[8]), math.floor(tonumber(ARGV[6]) / (redis.call('zcard', queue) + 1)))
end
local function turnHolder()
  local t = redis.call('hmget', turn, 't', 'n')
  if t[1] and (tonumber(t[2]) or 0) < turnSize() then return t[1] end
  return nil
end
local function myTurn(token)
  return turnHolder() == token
end
local function wakeHead()
  while true do
    local first = head()
    if not first or redis.call('publish', ARGV[7] .. first, first) > 0 then return first end
    leave(first)
  end
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
   * KEYS: lock, fencing counter, waiter queue, turn, fencing epoch. ARGV: token, lock timeout (ms),
   * waiter key prefix, queue for (ms; 0: a try that does not queue), turn length (ms), acquisitions
   * a round of turns allows, wake channel prefix, fewest acquisitions a turn allows (a try refused a
   * free key kept for the head waiter wakes that waiter), the Sentinel config epoch at which this
   * server was confirmed the master (0 without Sentinel).
   * → { fencing epoch, counter } when taken (or already held with this token): the epoch is the
   * highest ever given to this server's fencing-epoch key, which the acquisition raises to ARGV[9]
   * first (restarting the counter), and the counter the INCRed fencing counter (≥ 1); when not taken,
   * −1 − the ms until the next chance (the holder's PTTL; for the head waiter, at most the end of
   * the holder's turn; for the head waiter, or anyone while nobody is queued, and a free key in
   * another holder's turn, the turn's end; for others and a free key kept for the head waiter or
   * another holder's turn, the end of the head waiter's lease), or 0 when unknown. SET NX PX is
   * exactly what tooz (redis-py's Lock) writes, so Python holders exclude us; the queue and the
   * turn only make rollcall decline a free key (redis-lock.ts).
   */
  rollcallLockAcquire: `${QUEUE}
local lock, fence, token, ttl, queueMs = KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[4])
-- A holder that takes the key from the queue (first: the head before this acquisition) starts a turn; one that takes it
-- with nobody queued and no turn of its own ends any turn left over.
local function taken(first, mine)
  if mine then
    redis.call('hincrby', turn, 'n', 1)
  elseif not first then
    redis.call('del', turn)
  else
    leave(token)
    redis.call('del', turn)
    redis.call('hmset', turn, 't', token, 'n', 1)
    redis.call('pexpire', turn, ARGV[5])
  end
  -- The token is { epoch, counter }, compared in that order (redis-lock.ts): a master promoted by a failover is confirmed at a
  -- higher Sentinel epoch than any its predecessor was, so its tokens exceed all of the predecessor's, even ones granted
  -- after the last write that replicated.
  local epoch = tonumber(redis.call('get', KEYS[5]) or '0') or 0
  local confirmed = tonumber(ARGV[9]) or 0
  if confirmed > epoch then
    -- A new epoch dominates every token of the old ones: its counter starts again, so that tokens stay below 2^63.
    redis.call('set', KEYS[5], ARGV[9])
    redis.call('set', fence, 0)
    epoch = confirmed
  end
  return { epoch, redis.call('incr', fence) }
end
local holder = redis.call('get', lock)
if not holder then
  local on = turnHolder()
  -- The turn's holder takes its key back: the hot path of a holder looping on a contended lock.
  if on == token then
    redis.call('set', lock, token, 'PX', ttl)
    return taken(nil, true)
  end
  local first = head()
  if on then
    -- Another rollcall holder's turn is on: it freed the key and takes it back at once, or its client ends the turn
    -- (rollcallLockEndTurn), waking the head. Others leave the key to it until then, queued or not.
    if queueMs > 0 then join(token, queueMs) end
    if not first or first == token then return -1 - math.max(0, redis.call('pttl', turn)) end
    return -1 - math.max(0, redis.call('pttl', waiters .. first))
  end
  if first and first ~= token then
    -- The key is free and kept for the head, whose wake-up may not have come (a turn that lapsed between a release and the
    -- holder's next try): wake it, or drop it if nobody listens for it any more.
    first = wakeHead()
    if first and first ~= token then
      if queueMs > 0 then join(token, queueMs) end
      return -1 - math.max(0, redis.call('pttl', waiters .. first))
    end
  end
  redis.call('set', lock, token, 'PX', ttl)
  return taken(first, false)
end
local first = head()
if holder == token then
  redis.call('pexpire', lock, ttl)
  return taken(first, myTurn(token))
end
if queueMs > 0 then
  join(token, queueMs)
  first = first or token
end
local left = redis.call('pttl', lock)
if first == token and redis.call('hget', turn, 't') ~= token then
  local turnLeft = redis.call('pttl', turn)
  if turnLeft >= 0 and (left < 0 or turnLeft < left) then left = turnLeft end
end
if left >= 0 then return -1 - left end
return 0`,

  /**
   * KEYS and ARGV as rollcallLockAcquire, but ARGV[9] and ARGV[10] are the hold's fencing epoch and
   * counter (empty when not known). → 1 released, 0 not ours (redis-py's compare-and-delete, and the
   * fencing counter and epoch must still be the hold's: a lock object keeps its token from hold to
   * hold, so a release that arrives late, after the same object took the lock again, would otherwise
   * delete that newer hold), 2 released within the holder's turn (the client then ends the turn with
   * rollcallLockEndTurn unless it takes the key back at once). Otherwise deletes the holder's used-up
   * turn and, when a rollcall waiter is queued, PUBLISHes the head waiter's token on that waiter's
   * channel (prefix .. token), dropping heads nobody listens for.
   */
  rollcallLockRelease: `${QUEUE}
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[10] ~= '' and (tonumber(redis.call('get', KEYS[2]) or '0') ~= tonumber(ARGV[10])
    or tonumber(redis.call('get', KEYS[5]) or '0') ~= tonumber(ARGV[9])) then
  return 0
end
redis.call('del', KEYS[1])
local t = redis.call('hmget', turn, 't', 'n')
if t[1] == ARGV[1] then
  if (tonumber(t[2]) or 0) < turnSize() then return 2 end
  -- Used up: gone, so that it cannot count as on again when fewer wait (a turn's size follows the queue's length).
  redis.call('del', turn)
end
wakeHead()
return 1`,

  /**
   * A holder that released within its turn did not take the key back: its turn ends, and the head
   * waiter is woken if the key is still free. KEYS and ARGV as rollcallLockAcquire. → 1.
   */
  rollcallLockEndTurn: `${QUEUE}
if redis.call('hget', turn, 't') == ARGV[1] then redis.call('del', turn) end
if redis.call('exists', KEYS[1]) == 0 then wakeHead() end
return 1`,

  /**
   * A waiter gives up. KEYS and ARGV as rollcallLockRelease. Leaves the queue; when the lock is free, wakes the new head waiter. → 1.
   */
  rollcallLockWithdraw: `${QUEUE}
leave(ARGV[1])
if redis.call('exists', KEYS[1]) == 0 then wakeHead() end
return 1`,

  /** KEYS: lock. ARGV: token, lock timeout (ms). → 1 extended, 0 not ours (redis-py's reacquire). */
  rollcallLockRefresh: `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0`,
} as const

/** A script's name. */
export type ScriptName = keyof typeof SCRIPTS

/** The group scripts' refusals, the numbers tooz's scripts answer (each script's doc says which it gives). */
export const REFUSED = {
  /** The group's hash does not exist. */
  noGroup: -1,
  /** rollcallDeleteGroup: the groups set does not list the group. */
  groupUnlisted: -2,
  /** rollcallDeleteGroup: live members remain once the dead are collected. */
  groupNotEmpty: -3,
  /** rollcallJoin: the member is in the group already. */
  alreadyMember: -2,
  /** rollcallLeave, rollcallUpdateCapabilities, rollcallMemberCapabilities: the member is not (live) in the group. */
  notMember: -2,
} as const

/** One script argument; Uint8Array values travel as raw bytes. */
export type ScriptArg = string | number | Uint8Array

/** A reply as the Buffer variant of a command returns it. */
export type ScriptReply = number | Buffer | null | ScriptReply[]

/**
 * A runner of the scripts on `client` that leaves the client as it was (no defineCommand: the
 * client may be the application's). Each script goes as EVAL the first time, then as EVALSHA,
 * and as EVAL again when the server answers NOSCRIPT (a restarted server lost its script cache);
 * a NOSCRIPT reply means the script did not run, so sending it again is safe.
 */
export function scriptRunner(client: Redis): (name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]) => Promise<ScriptReply> {
  const shas = new Map(Object.entries(SCRIPTS).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')]))
  const loaded = new Set<ScriptName>()
  return async (name, keys, args) => {
    const raw = args.map((a) => (a instanceof Uint8Array ? Buffer.from(a.buffer, a.byteOffset, a.byteLength) : a))
    if (loaded.has(name)) {
      try {
        return (await client.callBuffer('EVALSHA', shas.get(name)!, keys.length, ...keys, ...raw)) as ScriptReply
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err
      }
    }
    const reply = (await client.callBuffer('EVAL', SCRIPTS[name], keys.length, ...keys, ...raw)) as ScriptReply
    loaded.add(name)
    return reply
  }
}
