/** The raw floor on files: tooz's layout, with Node's fs and fs-native-extensions' record locks. */
import { createRequire } from 'node:module'
import { mkdir, open, readdir, readFile, stat, utimes, writeFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { parseBackendUrl } from '../../../src/index.js'
import { encodeGroupMetadata, encodeMemberRecord, safeName } from '../../../src/coordination/drivers/file/file-format.js'
import type { RawBackend, RawMember } from '../raw.js'

export class FileRaw implements RawBackend {
  readonly #dir: string
  /** The liveness window, from the URL's `timeout` (tooz's default 10 s). */
  readonly #timeoutMs: number
  constructor(url: string) {
    const u = parseBackendUrl(url)
    this.#dir = u.path
    this.#timeoutMs = Number(new URLSearchParams(url.split('?')[1] ?? '').get('timeout') ?? 10) * 1000
  }
  #groupDir(group: string): string {
    return join(this.#dir, 'groups', safeName(group))
  }
  async populate(group: string, members: readonly RawMember[]): Promise<void> {
    const dir = this.#groupDir(group)
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, '.metadata'), encodeGroupMetadata(group))
    const when = new Date()
    for (let i = 0; i < members.length; i += 500) {
      await Promise.all(members.slice(i, i + 500).map((m) => writeFile(join(dir, `${safeName(m.id)}.raw`), encodeMemberRecord(m.id, m.caps, when))))
    }
  }
  async #live(group: string, withData: boolean, timeoutMs = this.#timeoutMs): Promise<Map<string, Uint8Array>> {
    const dir = this.#groupDir(group)
    const names = (await readdir(dir)).filter((n) => n.endsWith('.raw'))
    const limit = Date.now() - timeoutMs
    const out = new Map<string, Uint8Array>()
    for (let i = 0; i < names.length; i += 256) {
      await Promise.all(
        names.slice(i, i + 256).map(async (n) => {
          try {
            const s = await stat(join(dir, n))
            if (s.mtimeMs < limit) return
            out.set(n, withData ? await readFile(join(dir, n)) : new Uint8Array())
          } catch (err) {
            // rollcall deletes other members' stale files as it lists them: gone is not live.
            if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
          }
        }),
      )
    }
    return out
  }
  async readIds(group: string): Promise<string[]> {
    return [...(await this.#live(group, false)).keys()]
  }
  readWithCaps(group: string): Promise<Map<string, Uint8Array>> {
    return this.#live(group, true)
  }
  async beat(id: string): Promise<void> {
    const t = new Date()
    await utimes(join(this.#dir, 'beat', `${safeName(id)}.raw`), t, t).catch(async () => {
      await mkdir(join(this.#dir, 'beat'), { recursive: true })
      await writeFile(join(this.#dir, 'beat', `${safeName(id)}.raw`), '')
    })
  }
  async join(group: string, m: RawMember): Promise<void> {
    await writeFile(join(this.#groupDir(group), `${safeName(m.id)}.raw`), encodeMemberRecord(m.id, m.caps, new Date()), { flag: 'wx' })
  }
  async lockCycle(name: string): Promise<void> {
    const native = createRequire(import.meta.url)('fs-native-extensions') as { tryLock(fd: number): boolean; unlock(fd: number): void }
    const h = await open(join(this.#dir, name), 'a')
    try {
      if (!native.tryLock(h.fd)) throw new Error('raw file lock busy')
      native.unlock(h.fd)
    } finally {
      await h.close()
    }
  }
  async drop(group: string): Promise<void> {
    await rm(this.#groupDir(group), { recursive: true, force: true })
  }
  async close(): Promise<void> {}
}
