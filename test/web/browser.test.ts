/**
 * The status page in a real browser: Debian's Chromium (never a downloaded one) driven by
 * playwright-core. Real `rollcall service run` processes and `rollcall serve` from dist/; the
 * page must show them, then turn a killed service's row down by itself (no reload), filter, and
 * read on a phone-width screen; and the page of createStatusHandler() mounted under a prefix in a
 * node:http server of the test's own, live through its relative event stream. With
 * ROLLCALL_UPDATE_DOCS=1 it refreshes docs/status-page.png for the README (otherwise the
 * screenshot goes to a temporary directory, so a test run leaves the tree clean).
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, it } from 'node:test'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect } from '../../src/index.js'
import { createStatusHandler } from '../../src/web/public.js'
import { serverUrl } from '../support/backends.js'
import { rid } from '../support/wait.js'
import { waitFor } from '../support/wait.js'
import { cli, startService, tempDir, writeConfig, WEB_TIMING, type CliProcess } from './support.js'

// Functions passed to page.evaluate() run in Chromium; this project compiles without the DOM library.
declare const document: any, window: any, getComputedStyle: any

const CHROMIUM = '/usr/bin/chromium'
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
const SCREENSHOT = 'docs/status-page.png'

/** Debian's Chromium, headless, with a profile in `dir`. */
function launch(dir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(join(dir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1100, height: 820 },
    timeout: 30_000,
  })
}

const SERVICES = [
  { binary: 'rollcall-api', host: 'node-1', topic: 'api', zone: 'az1' },
  { binary: 'rollcall-api', host: 'node-2', topic: 'api', zone: 'az2' },
  { binary: 'rollcall-worker', host: 'node-1', topic: 'worker', zone: 'az1' },
  { binary: 'rollcall-worker', host: 'node-2', topic: 'worker', zone: 'az2' },
  { binary: 'rollcall-worker', host: 'node-3', topic: 'worker', zone: 'az1' },
]

/** The State cell's text of the row of `host` in `topic`, or undefined when there is no such row. */
function stateOf(page: Page, topic: string, host: string): Promise<string | undefined> {
  return page.evaluate(([t, h]) => {
    for (const tr of document.querySelectorAll('#topics tr[data-id]')) {
      if (tr.dataset.topic === t && tr.querySelector('.c-host')?.textContent === h) return tr.querySelector('.c-state')?.textContent ?? undefined
    }
    return undefined
  }, [topic, host] as const)
}

describe('web: browser', () => {
  it('web: browser: the page shows the services, turns a killed one down by itself, filters, and fits a phone', { timeout: 120_000 }, async (t) => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/backends.sh installs Debian's chromium`)
    const dir = tempDir(t)
    const config = writeConfig(dir, { timeoutSeconds: 3 })
    const procs = new Map<string, CliProcess>()
    await Promise.all(SERVICES.map(async (s) => procs.set(`${s.topic}/${s.host}`, await startService(t, config, s))))
    const serve = cli(t, ['serve', '--config', config, '--listen', '127.0.0.1:0', '--refresh', '0.5', '--title', 'rollcall status'])
    const url = await serve.url()

    let context: BrowserContext | undefined
    try {
      context = await launch(dir)
      const page = context.pages()[0] ?? await context.newPage()
      const consoleErrors: string[] = []
      page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
      page.on('pageerror', (e) => consoleErrors.push(String(e)))
      const external: string[] = []
      page.on('request', (r) => !r.url().startsWith(url) && !r.url().startsWith('data:') && external.push(r.url()))
      await page.goto(url, { waitUntil: 'domcontentloaded', timeout: WEB_TIMING.requestMs })
      await page.waitForSelector('body[data-synced="true"]', { timeout: WEB_TIMING.liveMs })
      await page.waitForFunction(() => document.getElementById('live')?.textContent === 'live', undefined, { timeout: WEB_TIMING.liveMs })

      // Every service shows, up, in its topic's table.
      await waitFor(
        'every service up on the page',
        async () => {
          for (const s of SERVICES) if ((await stateOf(page, s.topic, s.host)) !== 'up') return false
          return true
        },
        WEB_TIMING.liveMs,
        100,
      )
      const topics = await page.$$eval('#topics section.topic', (els: any[]) => els.map((e) => (e as any).dataset.topic))
      assert.deepEqual(topics, ['api', 'worker'])
      const groups = await page.$$eval('#group-list article.group', (els: any[]) => els.map((e) => (e as any).dataset.group))
      assert.deepEqual(groups, ['api', 'worker'])
      assert.match(await page.textContent('#summary') ?? '', /5 services: 5 up, 0 down/)

      // Kill one service process: its row turns down without a reload.
      await page.evaluate(() => {
        window.notReloaded = true
      })
      const killed = procs.get('worker/node-2')!
      const killedAt = Date.now()
      killed.child.kill('SIGKILL')
      await page.waitForFunction(
        () => {
          for (const tr of document.querySelectorAll('#topics tr[data-id]')) {
            if (tr.dataset.topic === 'worker' && tr.querySelector('.c-host')?.textContent === 'node-2') {
              return tr.querySelector('.c-state')?.textContent === 'down'
            }
          }
          return false
        },
        undefined,
        { timeout: 15_000, polling: 100 },
      )
      const killedDownMs = Date.now() - killedAt
      assert.equal(await page.evaluate(() => window.notReloaded), true, 'the page was not reloaded')
      assert.equal(await page.getAttribute('#topics tr[data-state="down"]', 'data-topic'), 'worker')

      // A graceful stop shows at once (it leaves).
      const stopped = procs.get('api/node-2')!
      const stoppedAt = Date.now()
      stopped.child.kill('SIGTERM')
      await waitFor('api node-2 down', async () => (await stateOf(page, 'api', 'node-2')) === 'down', WEB_TIMING.liveMs, 50)
      const stoppedDownMs = Date.now() - stoppedAt
      assert.ok(stoppedDownMs < 3000, `SIGTERM showed after ${stoppedDownMs} ms`)
      assert.match(await page.textContent('#summary') ?? '', /5 services: 3 up, 2 down/)
      t.diagnostic(`SIGKILL → down on the page after ${killedDownMs} ms; SIGTERM → ${stoppedDownMs} ms`)

      const shot = process.env.ROLLCALL_UPDATE_DOCS === '1' ? SCREENSHOT : join(dir, 'status-page.png')
      mkdirSync(dirname(shot), { recursive: true })
      await page.screenshot({ path: shot, fullPage: true })
      assert.ok(statSync(shot).size > 10_000, 'the screenshot has content')

      // Filters: state=down leaves only the down rows, and goes into the address.
      await page.selectOption('#f-state', 'down')
      const visible = await page.$$eval(
        '#topics tr[data-id]:not([hidden])',
        (rows: any[]) => rows.map((r) => `${(r as any).dataset.topic}/${r.querySelector('.c-host')?.textContent}`),
      )
      assert.deepEqual(visible.sort(), ['api/node-2', 'worker/node-2'])
      assert.match(page.url(), /[?&]state=down/)
      await page.selectOption('#f-topic', 'api')
      assert.deepEqual(
        await page.$$eval('#topics section.topic:not([hidden])', (els: any[]) => els.map((e) => (e as any).dataset.topic)),
        ['api'],
      )
      await page.selectOption('#f-state', '')
      await page.selectOption('#f-topic', '')

      // Phone width: nothing scrolls sideways, cells are labelled.
      await page.setViewportSize({ width: 375, height: 740 })
      const fits = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)
      assert.ok(fits, 'the page fits a 375 px wide screen')
      const label = await page.$eval('#topics td.c-state', (td: any) => getComputedStyle(td, '::before').content)
      assert.equal(label, '"State"')
      await page.screenshot({ path: process.env.ROLLCALL_PHONE_SHOT ?? join(dir, 'phone.png'), fullPage: true })

      assert.deepEqual(external, [], 'nothing was fetched from elsewhere')
      assert.deepEqual(consoleErrors, [])
    } finally {
      await context?.close()
      serve.child.kill('SIGTERM')
      const exit = await serve.exited
      assert.equal(exit.code, 0, `serve stopped cleanly on SIGTERM: ${serve.stderr()}`)
    }
  })

  it(
    'web: browser: Updated At and Last report follow each report of a tooz service, and the CSP allows styles by nonce only',
    { timeout: 120_000 },
    async (t) => {
      const dir = tempDir(t)
      const config = writeConfig(dir, { timeoutSeconds: 5, reportIntervalSeconds: 1 })
      await startService(t, config, { binary: 'rollcall-api', host: 'node-1', topic: 'api' })
      const serve = cli(t, ['serve', '--config', config, '--listen', '127.0.0.1:0', '--refresh', '0.5'])
      const url = await serve.url()
      let context: BrowserContext | undefined
      try {
        const csp = (await fetch(url)).headers.get('content-security-policy') ?? ''
        assert.match(csp, /style-src 'nonce-[^']+'/)
        assert.doesNotMatch(csp, /unsafe-inline/)
        context = await launch(dir)
        const page = context.pages()[0] ?? await context.newPage()
        const consoleErrors: string[] = []
        page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
        await page.goto(url, { waitUntil: 'domcontentloaded', timeout: WEB_TIMING.requestMs })
        await page.waitForSelector('body[data-synced="true"]', { timeout: WEB_TIMING.liveMs })
        // The nonce'd stylesheet applied: the header is laid out by it, not by the browser's defaults.
        assert.notEqual(await page.evaluate(() => getComputedStyle(document.querySelector('header')).display), 'block')
        const cell = (): Promise<string[]> =>
          page.evaluate(() => {
            const tr = document.querySelector('#topics tr[data-id]')
            return [tr?.querySelector('.c-updated')?.textContent ?? '', tr?.querySelector('.c-age')?.textContent ?? '']
          })
        // The service reports every second; the driver's own view re-reads report times every 30 s.
        const seen = new Set<string>()
        const started = Date.now()
        await waitFor(
          'Updated At to change with the reports, without a reload',
          async () => {
            const [updated] = await cell()
            if (updated && updated !== '\u2014') seen.add(updated)
            return seen.size >= 3
          },
          20_000,
          100,
        )
        t.diagnostic(`3 distinct Updated At values within ${Date.now() - started} ms`)
        const [, age = ''] = await cell()
        const ageSeconds = Number(/(\d+)/.exec(age)?.[1] ?? NaN)
        assert.ok(ageSeconds <= 5, `Last report shows ${age} for a service reporting every second`)
        assert.deepEqual(consoleErrors, [], 'no CSP violation or script error')
      } finally {
        await context?.close()
        serve.child.kill('SIGTERM')
        await serve.exited
      }
    },
  )

  it('web: browser: groups with members only by default, live; empty=1 keeps an emptied group; the links keep the prefix', {
    timeout: 120_000,
  }, async (t) => {
    const dir = tempDir(t)
    const backendUrl = `file://${join(dir, 'coord')}?timeout=3&watch_interval=0.2`
    const member = await connect(backendUrl, { memberId: 'm-1' })
    t.after(() => member.stop())
    await member.joinGroupCreate('g-busy', { zone: 'az1' })
    await member.createGroup('g-empty')
    const serve = cli(t, ['serve', '--url', backendUrl, '--listen', '127.0.0.1:0', '--refresh', '0.3', '--empty-refresh', '2'])
    const url = await serve.url()
    let context: BrowserContext | undefined
    try {
      context = await launch(dir)
      const cards = (page: Page): Promise<string[]> =>
        page.evaluate(() => [...document.querySelectorAll('#group-list article')].map((a: any) => a.dataset.group))
      const open = async (path: string): Promise<Page> => {
        const page = await context!.newPage()
        await page.goto(new URL(path, url).href, { waitUntil: 'domcontentloaded', timeout: WEB_TIMING.requestMs })
        await page.waitForSelector('body[data-synced="true"]', { timeout: WEB_TIMING.liveMs })
        return page
      }
      const plain = await open('/')
      const withEmpty = await open('/?empty=1')
      assert.deepEqual(await cards(plain), ['g-busy'])
      assert.deepEqual(await cards(withEmpty), ['g-busy', 'g-empty'])
      // The last member leaves: the default page drops the group by itself; empty=1 keeps it, with 0 members.
      await member.leaveGroup('g-busy')
      await waitFor('the emptied group to leave the default page', async () => (await cards(plain)).length === 0 || undefined, WEB_TIMING.liveMs, 100)
      assert.equal(await plain.evaluate(() => document.getElementById('no-groups').hidden), false)
      await waitFor(
        'the emptied group to show 0 members with empty=1',
        async () => (await withEmpty.evaluate(() => document.querySelector('[data-group="g-busy"] .count')?.textContent)) === '0 members' || undefined,
        WEB_TIMING.liveMs,
        100,
      )
      assert.deepEqual(await cards(withEmpty), ['g-busy', 'g-empty'])
      // A first member into a group that was empty: found by the slow pass, shown by itself.
      await member.joinGroup('g-empty', {})
      await waitFor('the group that was empty to show', async () => (await cards(plain)).includes('g-empty') || undefined, 20_000, 100)
      // Prefix and empty are in the address; the link to show empty groups keeps the prefix.
      const prefixed = await open('/?prefix=g-b&empty=1')
      assert.deepEqual(await cards(prefixed), ['g-busy'])
      assert.match(String(await prefixed.evaluate(() => document.querySelector('.group-filter a')?.getAttribute('href'))), /prefix=g-b/)
      // One group a page: the live stream keeps to the page (a change of a group past it adds nothing).
      await member.joinGroup('g-busy', {})
      await waitFor('both groups on the default page', async () => (await cards(plain)).length === 2 || undefined, WEB_TIMING.liveMs, 100)
      const first = await open('/?limit=1')
      assert.deepEqual(await cards(first), ['g-busy'])
      assert.ok(await first.evaluate(() => !!document.getElementById('next-groups')))
      await member.updateCapabilities('g-empty', { changed: true })
      await waitFor(
        'the change to reach the default page',
        async () => (await plain.evaluate(() => document.querySelector('[data-group="g-empty"] .caps')?.textContent))?.includes('changed') || undefined,
        WEB_TIMING.liveMs,
        100,
      )
      assert.deepEqual(await cards(first), ['g-busy'])
    } finally {
      await context?.close()
      serve.child.kill('SIGTERM')
      await serve.exited
    }
  })

  it("web: browser: mounted under a prefix in the app's own server, the page goes live through its relative stream and shows a join without reload", {
    timeout: 120_000,
  }, async (t) => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/backends.sh installs Debian's chromium`)
    const dir = tempDir(t)
    const group = rid('browser')
    const observer = await connect(serverUrl('redis'), { memberId: rid('observer') })
    t.after(() => observer.stop())
    const first = await connect(serverUrl('redis'), { memberId: rid('first') })
    t.after(() => first.stop())
    await first.joinGroupCreate(group)
    const status = await createStatusHandler({ coordinator: observer, basePath: '/ops/rollcall', refreshMs: 300 })
    t.after(() => status.close())
    const server = createServer((req, res) => status(req, res, () => void res.writeHead(404).end('app 404')))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    t.after(() => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    })
    const context = await launch(dir)
    t.after(() => context.close())
    const page = context.pages()[0] ?? await context.newPage()
    const consoleErrors: string[] = []
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
    page.on('pageerror', (e) => consoleErrors.push(String(e)))
    const requested: string[] = []
    page.on('request', (r) => requested.push(new URL(r.url()).pathname))
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/ops/rollcall`, { timeout: WEB_TIMING.liveMs })
    await page.waitForSelector('body[data-synced="true"]', { timeout: WEB_TIMING.liveMs })
    const count = (): Promise<string | undefined> =>
      page.evaluate((g) => document.querySelector(`article[data-group="${g}"] .count`)?.textContent ?? undefined, group)
    assert.equal(await count(), '1 member')
    const second = await connect(serverUrl('redis'), { memberId: rid('second') })
    t.after(() => second.stop())
    await second.joinGroup(group)
    await waitFor('the join to show without reload', async () => (await count()) === '2 members', WEB_TIMING.liveMs)
    assert.ok(requested.includes('/ops/rollcall/v1/events'), `the stream under the prefix: ${requested.join(', ')}`)
    assert.equal(requested[0], '/ops/rollcall', 'the page was asked for without its slash (and redirected)')
    assert.deepEqual(requested.slice(1).filter((p) => !p.startsWith('/ops/rollcall/')), [], 'every request after stays under the prefix')
    assert.deepEqual(consoleErrors, [])
  })
})
