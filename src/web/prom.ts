/**
 * prom-client, rollcall's optional peer for Prometheus metrics: imported on first use only, so
 * that an application without metrics never needs it installed.
 */
import { MetricsUnavailableError } from '../errors.js'

/** The prom-client module. */
export type PromClient = typeof import('prom-client')

let loading: Promise<PromClient> | undefined

/** prom-client, loaded once; MetricsUnavailableError (METRICS_UNAVAILABLE) when it is not installed. */
export function loadPromClient(): Promise<PromClient> {
  loading ??= import('prom-client').then(
    (mod) => ((mod as { default?: PromClient }).default?.Registry ? (mod as { default: PromClient }).default : mod),
    (err: unknown) => {
      loading = undefined
      throw new MetricsUnavailableError({ cause: err })
    },
  )
  return loading
}
