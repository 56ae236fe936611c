/**
 * The JSON API, shaped like Nova's os-services (microversion 2.53+: services by id):
 *
 * - `GET /v1/services[?topic=&zone=&state=&host=&binary=]` → `{ "services": [row...] }`
 * - `GET /v1/services/{id}` → `{ "service": row }`
 * - `PUT /v1/services/{id}` with `{ "status": "enabled"|"disabled", "disabled_reason": "...",
 *   "forced_down": true|false }` (any non-empty subset; a reason only with `disabled`, as Nova
 *   answers 400 otherwise) → `{ "service": row }`
 * - `DELETE /v1/services/{id}` → 204: the driver forgets the service (so it reads down at once
 *   where the driver can tell), then the record is soft-deleted.
 * - `GET /v1/groups[?prefix=&empty=1&limit=&cursor=]` → `{ "groups": [group...], "next_cursor": ... }`
 *   (groups with members unless `empty=1`; a page of `limit`, the next from `cursor`), `GET
 *   /v1/groups/{group}` → `{ "group": group }` (members with capabilities, and the leader where
 *   the driver has getLeader).
 *
 * Reads here go to the backends (the page reads the views' last refresh); after a write the
 * views are refreshed before answering, so the page and the answer agree.
 */
import { InvalidArgumentError } from '../index.js'
import type { ServiceChanges } from '../servicegroup/index.js'
import { byCodeUnits, matchesGroupQuery, parseGroupQuery, type GroupListView, type GroupRow } from './groups.js'
import { HttpError } from './http.js'
import { parseServiceFilter, parseServiceId, type ServiceRow, type ServiceView } from './services.js'

/** Longest disabled_reason accepted (Nova's column is 255 characters). */
export const MAX_REASON_LENGTH = 255

const UPDATE_KEYS = ['status', 'disabled_reason', 'forced_down'] as const

/** The view a route shows, or a 404 NOT_CONFIGURED saying that the server shows none and `howTo` start one that does. */
function need<V>(view: V | undefined, what: string, howTo: string): V {
  if (!view) throw new HttpError(404, 'NOT_CONFIGURED', `This server shows no ${what}: start rollcall serve ${howTo}`)
  return view
}

function needServices(view: ServiceView | undefined): ServiceView {
  return need(view, 'services', 'with a service-group configuration (--config FILE or ROLLCALL_CONFIG)')
}

function needGroups(view: GroupListView | undefined): GroupListView {
  return need(view, 'coordination groups', 'with --url URL (or ROLLCALL_URL), or with the tooz service-group driver')
}

/** `GET /v1/services`. */
export async function listServices(view: ServiceView | undefined, query: URLSearchParams): Promise<{ services: ServiceRow[] }> {
  const v = needServices(view)
  return { services: await v.list(parseServiceFilter(query)) }
}

/** `GET /v1/services/{id}`. */
export async function getService(view: ServiceView | undefined, id: string): Promise<{ service: ServiceRow }> {
  const v = needServices(view)
  return { service: await v.get(parseServiceId(id)) }
}

/** Reads and checks a PUT body into catalog changes (InvalidArgumentError naming the field). */
export function parseServiceUpdate(body: unknown): ServiceChanges {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new InvalidArgumentError('The body must be a JSON object, e.g. {"status": "disabled", "disabled_reason": "maintenance"}')
  }
  const b = body as Record<string, unknown>
  const unknown = Object.keys(b).filter((k) => !(UPDATE_KEYS as readonly string[]).includes(k))
  if (unknown.length) {
    throw new InvalidArgumentError(
      `Unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}; a service update takes ${UPDATE_KEYS.join(', ')}`,
    )
  }
  if (Object.keys(b).length === 0) throw new InvalidArgumentError(`Nothing to change: send at least one of ${UPDATE_KEYS.join(', ')}`)
  const changes: ServiceChanges = {}
  if (b.status !== undefined) {
    if (b.status !== 'enabled' && b.status !== 'disabled') {
      throw new InvalidArgumentError(`status must be "enabled" or "disabled", not ${JSON.stringify(b.status)}`)
    }
    changes.disabled = b.status === 'disabled'
    if (!changes.disabled) changes.disabledReason = null
  }
  if (b.disabled_reason !== undefined) {
    if (b.status !== 'disabled') throw new InvalidArgumentError('disabled_reason can only be given with "status": "disabled"')
    if (b.disabled_reason !== null && typeof b.disabled_reason !== 'string') throw new InvalidArgumentError('disabled_reason must be a string or null')
    if (typeof b.disabled_reason === 'string' && (b.disabled_reason.length > MAX_REASON_LENGTH || /[\u0000-\u001f\u007f]/.test(b.disabled_reason))) {
      throw new InvalidArgumentError(`disabled_reason must be at most ${MAX_REASON_LENGTH} characters without control characters`)
    }
    changes.disabledReason = b.disabled_reason
  }
  if (b.forced_down !== undefined) {
    if (typeof b.forced_down !== 'boolean') throw new InvalidArgumentError(`forced_down must be true or false, not ${JSON.stringify(b.forced_down)}`)
    changes.forcedDown = b.forced_down
  }
  return changes
}

/** `PUT /v1/services/{id}`. */
export async function updateService(view: ServiceView | undefined, id: string, body: unknown): Promise<{ service: ServiceRow }> {
  const v = needServices(view)
  const serviceId = parseServiceId(id)
  const changes = parseServiceUpdate(body)
  await v.serviceGroup.catalog.update(serviceId, changes)
  await v.refresh()
  return { service: await v.get(serviceId) }
}

/** `DELETE /v1/services/{id}`: the driver forgets it first, so a failure leaves the record for a retry. */
export async function deleteService(view: ServiceView | undefined, id: string): Promise<void> {
  const v = needServices(view)
  const serviceId = parseServiceId(id)
  const record = await v.serviceGroup.catalog.get(serviceId)
  await v.serviceGroup.leave(record.host, record.topic)
  await v.serviceGroup.catalog.delete(serviceId)
  await v.refresh()
}

/** `GET /v1/groups`: one page of the groups that pass the filter, in name order (code units). */
export async function listGroups(view: GroupListView | undefined, query: URLSearchParams): Promise<{ groups: GroupRow[]; next_cursor: string | null }> {
  const v = needGroups(view)
  const q = parseGroupQuery(query)
  const names = (await v.coordinator.getGroups()).filter((g) => matchesGroupQuery(g, q)).sort(byCodeUnits)
  const out: GroupRow[] = []
  let i = 0
  // Groups the view last read empty are skipped unread (unless asked for); the rest are read now, a page at a time.
  while (i < names.length && out.length < q.limit) {
    const batch: string[] = []
    while (i < names.length && batch.length < q.limit - out.length) {
      const g = names[i++]!
      if (q.empty || v.isEmpty(g) !== true) batch.push(g)
    }
    const rows = await Promise.all(batch.map((g) => v.readOrReport(g)))
    for (const row of rows) if (row !== undefined && (q.empty || row.members.length > 0 || row.error !== undefined)) out.push(row)
  }
  return { groups: out, next_cursor: i < names.length && out.length > 0 ? out.at(-1)!.group : null }
}

/** `GET /v1/groups/{group}`. */
export async function getGroup(view: GroupListView | undefined, rawName: string): Promise<{ group: GroupRow }> {
  const v = needGroups(view)
  let name: string
  try {
    name = decodeURIComponent(rawName)
  } catch {
    throw new InvalidArgumentError('The group name in the path is not valid percent-encoding')
  }
  if (name === '' || name.length > 512) throw new InvalidArgumentError('A group name has 1 to 512 characters')
  return { group: await v.read(name) }
}
