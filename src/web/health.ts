/**
 * `GET /healthz`: 200 `{ "status": "ok", "checks": {...} }` when every backend the server reads
 * answers, 503 `{ "status": "unavailable", ... }` otherwise. Each check is a fresh round trip
 * (bounded by {@link HEALTH_TIMEOUT_MS}), except `services`, which is the last refresh of the
 * services (catalog plus liveness driver), stale after three refresh periods.
 */
import { redactUrl, type Coordinator } from '../index.js'
import type { ServiceGroup } from '../servicegroup/index.js'
import { withDeadline } from '../internal/deadline.js'
import type { ServiceView } from './services.js'

/** How long one check may take before it counts as failed. */
export const HEALTH_TIMEOUT_MS = 3000

/** One check's outcome. */
export interface HealthCheck {
  ok: boolean
  /** Round trip in ms, when the check made one. */
  ms?: number
  /** Why not, when not ok (credentials redacted). */
  error?: string
}

/** The /healthz body. */
export interface StatusHealth {
  status: 'ok' | 'unavailable'
  checks: Record<string, HealthCheck>
}

async function timed(fn: () => Promise<unknown>): Promise<HealthCheck> {
  const t0 = performance.now()
  try {
    await withDeadline(fn(), HEALTH_TIMEOUT_MS)
    return { ok: true, ms: Math.round((performance.now() - t0) * 10) / 10 }
  } catch (err) {
    return { ok: false, error: redactUrl((err as Error)?.message ?? String(err)) }
  }
}

/** Runs every check that applies. */
export async function checkHealth(
  parts: { serviceGroup?: ServiceGroup; services?: ServiceView; coordinator?: Coordinator; refreshMs: number },
): Promise<StatusHealth> {
  const checks: Record<string, HealthCheck> = {}
  const pending: Promise<void>[] = []
  if (parts.serviceGroup) {
    const sg = parts.serviceGroup
    // One indexed lookup that matches nothing: a round trip to the catalog's database.
    pending.push(timed(() => sg.catalog.find('', '')).then((c) => void (checks.catalog = c)))
  }
  if (parts.services) {
    const v = parts.services
    const staleMs = 3 * parts.refreshMs + HEALTH_TIMEOUT_MS
    checks.services = v.error
      ? { ok: false, error: redactUrl(v.error.message) }
      : v.lastOkAt && Date.now() - v.lastOkAt.getTime() <= staleMs
      ? { ok: true }
      : { ok: false, error: `no successful read of the services for ${staleMs} ms` }
  }
  if (parts.coordinator) {
    const c = parts.coordinator
    pending.push(
      timed(() => c.getGroups()).then((r) => {
        checks.coordination = c.connectionState === 'lost' && r.ok ? { ok: false, error: 'the connection to the coordination backend is lost' } : r
      }),
    )
  }
  await Promise.all(pending)
  return { status: Object.values(checks).every((c) => c.ok) ? 'ok' : 'unavailable', checks }
}
