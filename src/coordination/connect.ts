/**
 * connect(): from a URL to a started Coordinator.
 *
 * Everything is validated before any I/O: the URL, the scheme, every option (URL query and code),
 * the member id and the required capabilities. A bad value fails here with an error that names
 * it; nothing has been written anywhere.
 */
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import { CapabilityMismatchError, InvalidIdError, InvalidOptionError, InvalidUrlError } from '../errors.js'
import { keepListenedTo } from '../internal/linked-signal.js'
import { isCapability } from './capabilities.js'
import type { ConnectOptions, ConnectOptionsFor } from './config/connect-options.js'
import { Coordinator } from './coordinator.js'
import type { DriverDefinition } from './driver.js'
import { adaptLogger, silentLogger } from './logger.js'
import { opt, resolveOptions, type OptionSpecs } from './config/options.js'
import { loadDriver } from './config/registry.js'
import { shorten } from '../internal/redact.js'
import { parseBackendUrl, type BackendUrl } from './config/url.js'

/** Options every driver accepts, in the URL (tooz-style spelling) or in code. */
export const COMMON_OPTIONS = {
  watchIntervalMs: opt.seconds('watch_interval', {
    default: 1,
    doc: 'How often watchers re-read groups the backend does not push, and candidates retry elections that have no wait queue.',
    min: 0.01,
  }),
  rejoin: opt.boolean('rejoin', {
    default: true,
    doc: 'Rejoin, with the last capabilities, a group this member was dropped from (session expiry, lapsed or evicted keys).',
  }),
} satisfies OptionSpecs

/** A default member id, unique per process: `<hostname>-<pid>-<6 hex>`. */
export function defaultMemberId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`
}

/**
 * Connects to the backend named by `url` (a string, or a `URL` object) and returns a started
 * Coordinator. The options are typed by the URL's scheme (see {@link ConnectOptionsFor}); `signal` aborts the connection attempt.
 * The Coordinator is `AsyncDisposable`: `await using c = await connect(url)` stops it at the end
 * of the block.
 *
 * @example
 * ```ts
 * const c = await connect('kazoo://127.0.0.1:2181?timeout=5', { memberId: 'api-1', signal: AbortSignal.timeout(5_000) })
 * await c.joinGroupCreate('api', { zone: 'az1' })
 * ```
 */
export async function connect<U extends string>(url: U | URL, options: ConnectOptionsFor<U> = {} as ConnectOptionsFor<U>): Promise<Coordinator> {
  // createCoordinator() refuses options that are not an object, before anything reads them.
  const coordinator = await createCoordinator(url, options)
  const { signal } = options as ConnectOptions
  if (!signal) {
    await coordinator.start()
    return coordinator
  }
  signal.throwIfAborted()
  let onAbort!: () => void
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    await Promise.race([coordinator.start(), aborted])
    return coordinator
  } catch (err) {
    // Whatever start() began (sockets, sessions) ends here; start() itself then fails too.
    if (signal.aborted) await coordinator.stop().catch(() => {})
    throw signal.aborted ? signal.reason : err
  } finally {
    signal.removeEventListener('abort', onAbort)
    aborted.catch(() => {})
  }
}

/** Like connect() but does not start it: for code that wires events first. */
export async function createCoordinator<U extends string>(url: U | URL, options: ConnectOptionsFor<U> = {} as ConnectOptionsFor<U>): Promise<Coordinator> {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`The options of connect() must be an object such as { memberId: 'api-1' }, not ${describe(options)}`)
  }
  const { memberId = defaultMemberId(), require = [], heartbeat = true, autoWatch = true, logger = silentLogger, signal, client, ...rest } = options as
    & ConnectOptions
    & Record<string, unknown>
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidOptionError(`Option signal must be an AbortSignal (AbortSignal.timeout(5_000), a controller's signal), not ${describe(signal)}`)
  }
  const parsed = parseBackendUrl(url)
  const definition: DriverDefinition<any> = await loadDriver(parsed.scheme)
  if (typeof memberId !== 'string' || memberId === '') throw new InvalidIdError(`memberId must be a non-empty string, not ${describe(memberId)}`)
  const idProblem = definition.validateId?.('member', memberId)
  if (idProblem) throw new InvalidIdError(`The member id ${JSON.stringify(shorten(memberId))} cannot be stored by the ${definition.name} driver: ${idProblem}`)
  if (!Array.isArray(require)) {
    throw new InvalidOptionError(`Option require must be an array of capability names such as ['groups', 'locks'], not ${describe(require)}`)
  }
  for (const [name, value] of [['heartbeat', heartbeat], ['autoWatch', autoWatch]] as const) {
    if (typeof value !== 'boolean') throw new InvalidOptionError(`Option ${name} must be true or false, not ${describe(value)}`)
  }
  const methods = ['debug', 'info', 'warn', 'error'] as const
  if (logger === null || typeof logger !== 'object' || methods.some((m) => typeof (logger as unknown as Record<string, unknown>)[m] !== 'function')) {
    throw new InvalidOptionError(
      `Option logger must be an object with debug, info, warn and error methods (console, pino and winston fit), not ${describe(logger)}`,
    )
  }
  const log = adaptLogger(logger)
  const unknownCaps = require.filter((c) => !isCapability(c))
  if (unknownCaps.length) {
    throw new InvalidOptionError(`Unknown capabilities in require: ${unknownCaps.map((c) => (typeof c === 'string' ? shorten(c) : describe(c))).join(', ')}`)
  }
  const missing = require.filter((c) => !definition.capabilities.includes(c))
  if (missing.length) throw new CapabilityMismatchError(missing, definition.name)

  const specs = { ...COMMON_OPTIONS, ...definition.options }
  if (client !== undefined) checkClient(definition, parsed, client, specs, rest)
  const resolved = resolveOptions(specs, parsed.query, rest, definition.name)
  const { watchIntervalMs, rejoin, ...driverOptions } = resolved
  const stopController = new AbortController()
  // Every lock wait and heartbeat listens on it for a while.
  keepListenedTo(stopController.signal)
  const secrets = [parsed.password, ...Object.entries(driverOptions).filter(([k]) => /password|token|secret/i.test(k)).map(([, v]) => v)]
    .filter((s): s is string => typeof s === 'string' && s !== '')

  return new Coordinator({
    definition,
    createDriver: (events) => definition.create({ url: parsed, options: driverOptions, memberId, signal: stopController.signal, log, events, client }),
    memberId,
    redactedUrl: parsed.redacted,
    secrets,
    heartbeat,
    autoWatch,
    rejoin: rejoin as boolean,
    watchIntervalMs: watchIntervalMs as number,
    logger: log,
    stopController,
  })
}

/**
 * Checks an application's own client before any I/O: the driver must take one, of its kind, and
 * neither the URL nor the options may configure the connection the client already decides (the
 * URL then names the scheme and the coordination settings only, e.g. `redis://?namespace=app`).
 */
function checkClient(definition: DriverDefinition<any>, url: BackendUrl, client: unknown, specs: OptionSpecs, code: Record<string, unknown>): void {
  const support = definition.client
  if (!support) {
    throw new InvalidOptionError(
      `The ${definition.name} driver does not take a client: remove the client option and put the connection settings in the URL `
        + `(a client is taken by the ${CLIENT_DRIVERS} drivers)`,
    )
  }
  const problem = support.check(client)
  if (problem) throw new InvalidOptionError(`Option client of the ${definition.name} driver must be ${support.expects}: ${problem}`)
  const parts = [
    url.hosts.length > 0 ? 'a host' : '',
    url.username !== undefined || url.password !== undefined ? 'credentials' : '',
    url.path !== '' && url.path !== '/' ? 'a path' : '',
  ].filter(Boolean)
  const urlProblem = parts.length > 0
    ? `names ${parts.join(' and ')}, which the client decides`
    : support.urlProblem?.(url)
  if (urlProblem) {
    throw new InvalidUrlError(
      `${url.redacted} ${urlProblem}: with a client, the URL names the scheme and the coordination options only, e.g. ${url.scheme}://?membership_timeout=10`,
    )
  }
  for (const name of support.connectionOptions) {
    const spec = specs[name]
    const given = code[name] !== undefined ? name : spec && url.query.has(spec.query) ? `${spec.query} (in the URL)` : undefined
    if (given) {
      throw new InvalidOptionError(
        `Option ${given} configures the ${definition.name} connection, which the client decides: set it on the client, or drop the client option`,
      )
    }
  }
}

/** The drivers that take a client, for messages. */
const CLIENT_DRIVERS = 'redis, postgresql and mysql'

/** A short description of a wrong value, for messages: its type, or the value when it is short. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return JSON.stringify(shorten(value, 40))
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return `${typeof value === 'object' ? 'an' : 'a'} ${typeof value}`
}
