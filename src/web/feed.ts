/**
 * What rollcall's metrics learn from a coordinator directly (the views feed the rest): its
 * connection state, its failed heartbeats, and a heartbeat round trip measured every
 * `heartbeatProbeMs`. Shared by the status server and registerMetrics().
 */
import type { Coordinator } from '../index.js'
import type { WebMetrics } from './metrics.js'

/** Feeds `metrics` from `coordinator` until the returned function is called. */
export function feedCoordinatorMetrics(coordinator: Coordinator, metrics: WebMetrics, heartbeatProbeMs: number): () => void {
  metrics.connectionState(coordinator.connectionState)
  const onState = ({ state }: { state: Coordinator['connectionState'] }): void => metrics.connectionState(state)
  const onFailed = (f: { reason: 'error' | 'late' }): void => metrics.heartbeatFailed(f.reason)
  coordinator.on('connectionStateChanged', onState)
  coordinator.on('heartbeatFailed', onFailed)
  const probe = async (): Promise<void> => {
    const t0 = performance.now()
    try {
      await coordinator.heartbeat()
      metrics.heartbeat((performance.now() - t0) / 1000)
    } catch {
      // Counted by heartbeatFailed when the coordinator's own loop fails; healthz reports it.
    }
  }
  void probe()
  const timer = setInterval(() => void probe(), heartbeatProbeMs)
  timer.unref()
  return () => {
    clearInterval(timer)
    coordinator.off('connectionStateChanged', onState)
    coordinator.off('heartbeatFailed', onFailed)
  }
}
