/**
 * The metrics cell (module `api-metrics`): a prom-client registry with the agent's metrics (Cilium's
 * names, `cellium_` prefix) and, when `--prometheus-serve-addr` is set, an HTTP server for /metrics.
 */
export * from './types.js';
export { registerAgentMetrics, identityType, type MetricSources } from './metrics.js';
export { PrometheusServer } from './server.js';
export * from './cell.js';
