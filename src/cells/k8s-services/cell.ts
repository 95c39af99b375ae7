/**
 * The k8s-services cell (module `k8s-services`): in Kubernetes mode, Services and EndpointSlices
 * from the apiserver kept in the service manager (sync.ts), one observer job per kind
 * (`k8s-services-services`, `k8s-services-endpointslices`). Behind the k8s cache-sync gate: the
 * services restored from the state directory stay as stored until every watched resource has
 * synced; then the caches are applied in one turn and the stale apiserver services removed (job
 * `k8s-services-cache-sync`), and changes apply as they come. Problems are Kubernetes Events on
 * the object and keep the cell's health degraded, naming them. Without Kubernetes nothing runs.
 */
import { invoke, module, type DepsValues } from '../../hive/cell.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { abortable } from '../../lib/abortable.js';
import {
  EndpointSlicesToken, K8sCacheSyncToken, K8sClientToken, K8sConfigToken, ServicesToken, createEvent, warningEvent,
  type EndpointSlice, type K8sClient, type ResourceEvent, type Service,
} from '../k8s/index.js';
import { ServiceManagerToken } from '../loadbalancer/index.js';
import { K8sServiceSync, type ProblemReporter } from './sync.js';

/** How often the health says how many Services are applied and which are not. */
const STATUS_INTERVAL_MS = 2000;

/** The objects' API versions, for the Events' involvedObject. */
const API_VERSION = { Service: 'v1', EndpointSlice: 'discovery.k8s.io/v1' } as const;

/** Creates a Warning Event on the object; a failure is logged and rethrown (the sync reports it again at its next sighting). */
function eventReporter(client: K8sClient, node: string, log: Logger): ProblemReporter {
  return async (kind, object, reason, message) => {
    log.warn({ kind, object: `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`, reason, problem: message }, 'Kubernetes object not applied to the load balancer');
    try {
      await createEvent(client, warningEvent({ object, kind, apiVersion: API_VERSION[kind] }, reason, message, node));
    } catch (err) {
      log.warn({ err: (err as Error).message, kind, reason }, 'creating the Event about an object not applied failed; created at its next sighting');
      throw err;
    }
  };
}

/** Says in the health which objects are not applied, or how many Services are. */
function reportHealth(sync: K8sServiceSync, health: Health): void {
  const problems = [...sync.invalid.values(), ...sync.refused.values()];
  const what = `${sync.applied} Services from the apiserver in the load balancer`;
  if (!problems.length) health.ok(what);
  else health.degraded(`${what}; ${problems.length} not applied: ${problems.slice(0, 5).join('; ')}`);
}

const servicesDeps = {
  services: ServicesToken, slices: EndpointSlicesToken, mgr: ServiceManagerToken, gate: K8sCacheSyncToken, client: K8sClientToken, cfg: K8sConfigToken,
  jobs: JobsToken, log: LoggerToken, health: HealthToken,
} as const;

/** Wires the sync of Services and EndpointSlices behind the cache-sync gate (see the module comment). */
function watchServices(d: DepsValues<typeof servicesDeps>): void {
  if (!d.client.enabled || !d.services || !d.slices) {
    d.health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
    return;
  }
  const sync = new K8sServiceSync(d.mgr, eventReporter(d.client, d.cfg.k8sNodeName, d.log));
  const release = d.gate.hold('k8s-services');
  const status = (): void => {
    if (sync.open) reportHealth(sync, d.health);
    else d.health.ok(`waiting for the cache-sync gate (${d.gate.waitingFor().join(', ') || 'every resource synced'}): the restored services stay as stored`);
  };
  status();
  // sync: a relist's changes (after an apiserver outage) are applied in the turn they arrive
  d.jobs.observer('k8s-services-services', d.services.events(), (ev: ResourceEvent<Service>) => sync.onService(ev), { sync: true });
  d.jobs.observer('k8s-services-endpointslices', d.slices.events(), (ev: ResourceEvent<EndpointSlice>) => sync.onSlice(ev), { sync: true });
  // a refused Service (its address held by another service) is tried again when the services change
  d.jobs.observer('k8s-services-retry', d.mgr.changes$, () => {
    if (sync.refused.size) sync.retry();
  });
  d.jobs.timer('k8s-services-status', async () => status(), STATUS_INTERVAL_MS);
  d.jobs.oneShot('k8s-services-cache-sync', async ({ signal }) => {
    await abortable(d.gate.synced, signal);
    await abortable(sync.replayed, signal);
    const { applied, deleted } = sync.flush();
    d.log.info({ applied, deleted }, 'Kubernetes Services synced: applied over the restored services, stale ones removed');
    status();
    release();
  });
}

/** The k8s-services cell. */
export const k8sServicesCell = module(
  'k8s-services',
  'Services and EndpointSlices from Kubernetes into the load balancer',
  invoke('k8s-services', watchServices, servicesDeps),
);
