/** The api-metrics cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { config, invoke, module, provide, type DepsValues } from '../../hive/cell.js';
import { string, type ValuesOf } from '../../hive/config/fields.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { parseListenAddress } from '../api-server/index.js';
import { ApiLimiterSetToken } from '../api-server/types.js';
import { ApiRouterToken } from '../api-server/types.js';
import { EndpointManagerToken } from '../endpoint/types.js';
import { IdentityAllocatorToken } from '../identity/types.js';
import { PolicyRepositoryToken } from '../policy/types.js';
import { registerAgentMetrics } from './metrics.js';
import { PrometheusServer } from './server.js';
import { MetricsCollectorsToken, MetricsRegistryToken, MetricsServerToken, RegenerationEventsToken, type MetricsServer } from './types.js';

/** Schema of the metrics configuration. */
export const metricsConfigSchema = {
  prometheusServeAddr: {
    ...string('', 'Serve Prometheus metrics on HOST:PORT/metrics (e.g. :9962); empty: off'),
    parse(raw: unknown): string {
      const s = typeof raw === 'string' ? raw.trim() : typeof raw === 'number' ? `:${raw}` : undefined;
      if (s === undefined) throw new Error(`expected HOST:PORT, got ${JSON.stringify(raw)}`);
      if (s !== '') parseListenAddress('prometheus-serve-addr', s);
      return s;
    },
  },
};

/** The resolved metrics configuration. */
export type MetricsConfig = ValuesOf<typeof metricsConfigSchema>;

/** Token for the metrics configuration. */
export const MetricsConfigToken = token<MetricsConfig>('MetricsConfig');

/** Everything the metrics server is built from. */
const serverDeps = {
  registry: MetricsRegistryToken, cfg: MetricsConfigToken, endpoints: EndpointManagerToken, identities: IdentityAllocatorToken,
  policy: PolicyRepositoryToken, limiters: ApiLimiterSetToken, api: ApiRouterToken, regenerations: RegenerationEventsToken,
  collectors: MetricsCollectorsToken, lc: LifecycleToken, jobs: JobsToken, log: LoggerToken,
} as const;

/** Builds the metrics server: the counters fed by observer jobs of this module, served from start to stop. */
function newMetricsServer(d: DepsValues<typeof serverDeps>): MetricsServer {
  registerAgentMetrics(d.registry, {
    endpoints: d.endpoints,
    identities: d.identities,
    policy: d.policy,
    limiterReports: d.limiters.reports$,
    requests: d.api.requests$,
    regenerations: d.regenerations,
  }, d.jobs);
  const cellMetrics = d.collectors.map((collect) => collect(d.registry));
  const server = new PrometheusServer(d.registry, d.cfg.prometheusServeAddr, d.log);
  d.lc.append({
    name: 'prometheus-server',
    onStart: () => server.start(),
    onStop: async () => {
      for (const m of cellMetrics) m.unsubscribe();
      await server.stop();
    },
  });
  return server;
}

/** A new registry with the process metrics (process_*, nodejs_*). */
function newRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** The metrics cell. */
export const metricsCell = module(
  'api-metrics',
  'Prometheus metrics',
  config(MetricsConfigToken, metricsConfigSchema),
  provide(MetricsRegistryToken, newRegistry),
  provide(MetricsServerToken, newMetricsServer, serverDeps),
  invoke('serve-metrics', (_m: MetricsServer) => undefined, MetricsServerToken),
);
