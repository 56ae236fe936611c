/** connect()'s AbortSignal and the Coordinator's `await using`, against real sockets. */
import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import { describe, it } from 'node:test'
import { connect, InvalidOptionError, type Coordinator } from '../../src/index.js'

describe('unit: connect', () => {
  it('connect: an aborted signal ends a connection to a server that never answers', async () => {
    // Accepts and never replies: without the signal, connect() waits for the 30 s socket timeout.
    const sockets: Socket[] = []
    const server = createServer((s) => sockets.push(s))
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const { port } = server.address() as { port: number }
    try {
      const controller = new AbortController()
      const started = Date.now()
      setTimeout(() => controller.abort(new Error('user gave up')), 1_000)
      await assert.rejects(connect(`redis://127.0.0.1:${port}`, { signal: controller.signal }), /user gave up/)
      const elapsedMs = Date.now() - started
      assert.ok(elapsedMs < 5_000, `rejected after ${elapsedMs} ms`)
    } finally {
      sockets.forEach((s) => s.destroy())
      server.close()
    }
  })

  it('connect: a signal aborted before the call rejects at once, before any I/O', async () => {
    await assert.rejects(connect('redis://127.0.0.1:1', { signal: AbortSignal.abort(new Error('too late')) }), /too late/)
  })

  it('connect: await using stops the coordinator at the end of the block', async () => {
    let seen: Coordinator | undefined
    {
      await using c = await connect('memory://')
      seen = c
      assert.equal(c.state, 'started')
    }
    assert.equal(seen.state, 'stopped')
  })

  it('connect: a misspelt option is refused at run time too', async () => {
    const options: Record<string, unknown> = { membershipTimeotMs: 5 }
    await assert.rejects(connect('memory://', options), InvalidOptionError)
  })
})
