/**
 * MySQL/MariaDB locks hand over in turns between rollcall contenders
 * (src/coordination/drivers/mysql/mysql-turn.ts): a holder re-takes the lock within its turn while
 * another waits, the waiter gets it once the turn is used up, the turn lock is freed when its holder
 * stops, and a non-blocking try from elsewhere is never refused because of a turn. Real server;
 * every bound is generous and none is a speed check.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import mysql from 'mysql2/promise'
import { turnLockName } from '../../src/coordination/drivers/mysql/mysql-turn.js'
import type { Lock } from '../../src/index.js'
import { serverUrl } from '../support/backends.js'
import { TIMING } from '../support/timing.js'
import { rid, waitFor } from '../support/wait.js'
import { openSql, sqlAdmin, type SqlAdmin } from './sql-support.js'

/** MySQL/MariaDB's turns (docs/drivers.md). */
const TURN_SIZE = 32
const URL = serverUrl('mysql')

/** The server session holding GET_LOCK `name`, or null. */
async function holderOf(admin: SqlAdmin, name: string): Promise<number | null> {
  const id = (await admin.query('SELECT IS_USED_LOCK($1) AS id', [name]))[0]!.id
  return id === null ? null : Number(id)
}

/** True while some session waits in GET_LOCK(name, …) on the server. */
async function waitsFor(admin: SqlAdmin, name: string): Promise<boolean> {
  const rows = await admin.query("SELECT id FROM information_schema.processlist WHERE state = 'User lock' AND info LIKE $1", [`%${name}%`])
  return rows.length > 0
}

/**
 * `b` waits behind `a` for `name` and gets it on a's release: b then holds the lock and its turn.
 */
async function turnHolder(admin: SqlAdmin, a: Lock, b: Lock, name: string): Promise<void> {
  assert.equal(await a.acquire(), true)
  const waiting = b.acquire({ timeoutMs: TIMING.eventMs })
  await waitFor(
    'b to hold the turn lock and wait for the lock',
    async () => (await holderOf(admin, turnLockName(name))) !== null && (await waitsFor(admin, name)),
    TIMING.eventMs,
  )
  await a.release()
  assert.equal(await waiting, true)
}

describe('mysql driver: turns', { concurrency: 3 }, () => {
  it(`mysql: locks: a holder re-takes the lock within its turn while another waits, and the waiter gets it after at most ${TURN_SIZE} acquisitions`, async (t) => {
    const admin = sqlAdmin(t, 'mysql', URL)
    const name = rid('turn')
    const a = (await openSql(t, URL)).getLock(name)
    const b = (await openSql(t, URL)).getLock(name)
    const c = (await openSql(t, URL)).getLock(name)
    // a holds the lock, b waits for it holding the turn lock, and c queues for the turn lock behind b (in the server: waiting in GET_LOCK
    // on the turn name). All of it before b's turn starts: a turn lasts TURN_MS from its first acquisition, which the slow checks of the
    // server's process list must not use up.
    assert.equal(await a.acquire(), true)
    const bWaits = b.acquire({ timeoutMs: TIMING.eventMs })
    await waitFor(
      'b to hold the turn lock and wait for the lock',
      async () => (await holderOf(admin, turnLockName(name))) !== null && (await waitsFor(admin, name)),
      TIMING.eventMs,
    )
    let cGot = false
    const cWaits = c.acquire({ timeoutMs: TIMING.eventMs }).then(async (ok) => {
      cGot = ok
      await c.release()
      return ok
    })
    await waitFor('c to queue for the turn', () => waitsFor(admin, turnLockName(name)), TIMING.eventMs)
    await a.release()
    assert.equal(await bWaits, true)
    // b's turn starts now; b loops; once its turn is used up its next acquire queues behind c (and returns after c's release).
    let retakes = 0
    for (let i = 0; i < 3 * TURN_SIZE && !cGot; i++) {
      await b.release()
      if (cGot) break
      assert.equal(await b.acquire({ timeoutMs: TIMING.eventMs }), true)
      if (!cGot) retakes += 1
    }
    assert.equal(await cWaits, true, 'the waiter got the lock')
    // With the server's plain queue the waiter is handed the lock on b's first release (0 re-takes).
    assert.ok(retakes >= 1, `the holder re-took the lock ${retakes} times within its turn`)
    assert.ok(retakes < TURN_SIZE, `the holder kept the lock for ${retakes} acquisitions past a turn of ${TURN_SIZE}`)
    await b.release()
  })

  it('mysql: locks: the turn lock is freed once its holder releases and does not re-take the lock', async (t) => {
    const admin = sqlAdmin(t, 'mysql', URL)
    const name = rid('turn')
    const a = (await openSql(t, URL)).getLock(name)
    const b = (await openSql(t, URL)).getLock(name)
    await turnHolder(admin, a, b, name)
    assert.notEqual(await holderOf(admin, turnLockName(name)), null, 'the turn lock is held with the lock')
    await b.release()
    await waitFor('the turn lock to be freed', async () => (await holderOf(admin, turnLockName(name))) === null, TIMING.eventMs)
    assert.equal(await holderOf(admin, name), null)
  })

  it('mysql: locks: while a turn lock is held, a non-blocking try still takes the free lock and a blocking acquire waits for the turn', async (t) => {
    const admin = sqlAdmin(t, 'mysql', URL)
    const name = rid('turn')
    // A session in the middle of its turn: it holds the turn lock, not the lock.
    const turn = await mysql.createConnection({ uri: URL })
    t.after(() => turn.end())
    await turn.query('SELECT GET_LOCK(?, 0)', [turnLockName(name)])
    const c = (await openSql(t, URL)).getLock(name)
    assert.equal(await c.acquire({ blocking: false }), true, 'a try ignores the turn lock, as tooz does')
    await c.release()
    const d = (await openSql(t, URL)).getLock(name)
    const dWaits = d.acquire({ timeoutMs: TIMING.eventMs })
    await waitFor('the blocking acquire to queue for the turn', () => waitsFor(admin, turnLockName(name)), TIMING.eventMs)
    assert.equal(await holderOf(admin, name), null, 'the lock itself is free meanwhile')
    await turn.query('SELECT RELEASE_LOCK(?)', [turnLockName(name)])
    assert.equal(await dWaits, true)
    await d.release()
  })
})
