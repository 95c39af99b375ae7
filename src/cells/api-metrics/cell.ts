/** The api-metrics cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Observable } from 'rxjs';
import { config, invoke, module, provide } from '../../hive/cell.js';
import { string, type ValuesOf } from '../../hive/config/fields.js';
import { LifecycleToken, type Lifecycle } from '../../hive/lifecycle.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { parseListenAddress } from '../api-server/index.js';
import { ApiLimiterSetToken, type ApiLimiterSet } from '../api-server/types.js';
import { ApiRouterToken, type ApiRouter } from '../api-server/types.js';
import { EndpointManagerToken, type EndpointManager } from '../endpoint/types.js';
import { IdentityAllocatorToken, type IdentityAllocator } from '../identity/types.js';
import { PolicyRepositoryToken, type PolicyRepository } from '../policy/types.js';
import { registerAgentMetrics } from './metrics.js';
import { PrometheusServer } from './server.js';
import { MetricsCollectorsToken, MetricsRegistryToken, MetricsServerToken, RegenerationEventsToken, type MetricsCollector, type MetricsServer, type RegenerationEvent } from './types.js';

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
interface Deps {
  readonly registry: Registry;
  readonly cfg: MetricsConfig;
  readonly endpoints: EndpointManager;
  readonly identities: IdentityAllocator;
  readonly policy: PolicyRepository;
  readonly limiters: ApiLimiterSet;
  readonly api: ApiRouter;
  readonly regenerations: readonly Observable<RegenerationEvent>[];
  readonly collectors: readonly MetricsCollector[];
  readonly lc: Lifecycle;
  readonly log: Logger;
}

function newMetricsServer(d: Deps): MetricsServer {
  const subs = registerAgentMetrics(d.registry, {
    endpoints: d.endpoints,
    identities: d.identities,
    policy: d.policy,
    limiterReports: d.limiters.reports$,
    requests: d.api.requests$,
    regenerations: d.regenerations,
  });
  const cellMetrics = d.collectors.map((collect) => collect(d.registry));
  const server = new PrometheusServer(d.registry, d.cfg.prometheusServeAddr, d.log);
  d.lc.append({
    name: 'prometheus-server',
    onStart: () => server.start(),
    onStop: async () => {
      subs.unsubscribe();
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
  provide(
    MetricsServerToken,
    (registry: Registry, cfg: MetricsConfig, endpoints: EndpointManager, identities: IdentityAllocator, policy: PolicyRepository, limiters: ApiLimiterSet, api: ApiRouter, regenerations: readonly Observable<RegenerationEvent>[], collectors: readonly MetricsCollector[], lc: Lifecycle, log: Logger) =>
      newMetricsServer({ registry, cfg, endpoints, identities, policy, limiters, api, regenerations, collectors, lc, log }),
    MetricsRegistryToken, MetricsConfigToken, EndpointManagerToken, IdentityAllocatorToken, PolicyRepositoryToken, ApiLimiterSetToken, ApiRouterToken, RegenerationEventsToken, MetricsCollectorsToken, LifecycleToken, LoggerToken,
  ),
  invoke('serve-metrics', (_m: MetricsServer) => undefined, MetricsServerToken),
);
