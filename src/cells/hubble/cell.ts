/** The hubble cell's wiring: its module, providers and what they are built from (index.ts is its public face). */
import { config, invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { packageVersion } from '../../api/repo-files.js';
import { MetricsCollectorsToken, type MetricsCollector } from '../api-metrics/types.js';
import { KVStoreConfigToken } from '../kvstore/index.js';
import { LocalPodsToken } from '../k8s/index.js';
import { ServiceManagerToken } from '../loadbalancer/index.js';
import { MonitorAgentToken } from '../monitor/index.js';
import { HubbleConfigToken, hubbleConfigSchema, type HubbleMetric } from './config.js';
import { registerHubbleMetrics, registerLostEvents } from './metrics.js';
import { HubbleObserver } from './observer.js';
import { HubbleServer } from './server.js';
import { frontendServices } from './services.js';
import { podWorkloadLookup } from './workloads.js';
import { HubbleObserverToken, HubbleServerToken } from './types.js';

/** What the observer is built from: its ring's size, the node's name, the services, the local pods (their workloads). */
const observerDeps = { cfg: HubbleConfigToken, kv: KVStoreConfigToken, services: ServiceManagerToken, pods: LocalPodsToken } as const;

/** The observer (its ring is allocated only with --enable-hubble). */
function newObserver(d: DepsValues<typeof observerDeps>): HubbleObserver {
  return new HubbleObserver(d.cfg.enableHubble ? d.cfg.hubbleEventBufferCapacity : 1, d.kv.nodeName, frontendServices(d.services), podWorkloadLookup(d.pods));
}

/** What the server works with. */
const serverDeps = { cfg: HubbleConfigToken, observer: HubbleObserverToken, monitor: MonitorAgentToken, jobs: JobsToken, lc: LifecycleToken, health: HealthToken, log: LoggerToken } as const;

/**
 * With --enable-hubble: the server on its socket from start to stop, and the observer job
 * `hubble-flows` following the monitor's records (which keeps the monitor reading the datapath's
 * ring buffer while the agent runs). Health says where it serves (degraded when the monitor cannot
 * read the datapath) or that it is disabled.
 */
function newServer(d: DepsValues<typeof serverDeps>): HubbleServer | undefined {
  if (!d.cfg.enableHubble) {
    d.health.ok('disabled (--enable-hubble=false)');
    return undefined;
  }
  const server = new HubbleServer(d.observer, d.cfg.hubbleSocketPath, packageVersion(), d.log);
  if (d.monitor.unavailable) d.log.warn({ why: d.monitor.unavailable }, 'Hubble: no flows will be observed');
  d.jobs.observer('hubble-flows', d.monitor.records$, (rec) => d.observer.onRecord(rec), { sync: true });
  d.lc.append({
    name: 'hubble-server',
    onStart: async () => {
      await server.start();
      if (d.monitor.unavailable) d.health.degraded(`serving on ${d.cfg.hubbleSocketPath}, but no flows: ${d.monitor.unavailable}`);
      else d.health.ok(`serving on ${d.cfg.hubbleSocketPath}`);
    },
    onStop: async () => {
      d.observer.stop();
      await server.stop();
    },
  });
  return server;
}

/** What the metrics work with. */
const metricsDeps = { cfg: HubbleConfigToken, observer: HubbleObserverToken, jobs: JobsToken } as const;

/**
 * The enabled Hubble metrics (--hubble-metrics, with --enable-hubble), fed by the observer job
 * `hubble-metrics`: counted inside the observer's next (sync), from the metrics cell's start.
 */
function hubbleMetrics(d: DepsValues<typeof metricsDeps>): MetricsCollector {
  return (registry) => {
    if (!d.cfg.enableHubble || d.cfg.hubbleMetrics.length === 0) return { unsubscribe: () => undefined };
    registerLostEvents(registry, () => d.observer.lostEvents);
    const count = registerHubbleMetrics(registry, d.cfg.hubbleMetrics as readonly HubbleMetric[]);
    d.jobs.observer('hubble-metrics', d.observer.items$, (item) => {
      if (item.kind === 'flow') count(item.entry.flow);
    }, { immediate: true, sync: true });
    return { unsubscribe: () => undefined };
  };
}

/** The hubble cell. */
export const hubbleCell = module(
  'hubble',
  'Hubble Observer API: flows of the datapath on a unix socket for the hubble CLI, and Hubble metrics',
  config(HubbleConfigToken, hubbleConfigSchema),
  provide(HubbleObserverToken, newObserver, observerDeps),
  provide(HubbleServerToken, newServer, serverDeps),
  provideInto(MetricsCollectorsToken, hubbleMetrics, metricsDeps),
  invoke('hubble', (_s: HubbleServer | undefined) => undefined, HubbleServerToken),
);
