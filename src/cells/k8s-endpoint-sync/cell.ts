/** The k8s-endpoint-sync cell's wiring: its module, the synchronizer and the jobs feeding it (index.ts is its public face). */
import { config, invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { ControllerManagerToken } from '../../hive/controller/manager.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { abortable } from '../../lib/abortable.js';
import { detectNodeIP } from '../../lib/node-ip.js';
import { EndpointCreationHooksToken, EndpointManagerToken, EndpointRestorerToken, type EndpointCreationHook } from '../endpoint/index.js';
import { CiliumEndpointsToken, K8sClientToken, K8sConfigToken, LocalPodsToken } from '../k8s/index.js';
import { NamedPortMapToken } from '../policy/index.js';
import { KVStoreConfigToken } from '../kvstore/index.js';
import { CepApi } from './api.js';
import { EndpointSyncConfigToken, endpointSyncConfigSchema } from './config.js';
import { cepNamedPorts } from './remote-named-ports.js';
import { EndpointSynchronizer } from './synchronizer.js';

/** Token for the synchronizer (undefined without Kubernetes or with --disable-endpoint-crd). */
export const EndpointSynchronizerToken = token<EndpointSynchronizer | undefined>('EndpointSynchronizer');

const syncDeps = {
  client: K8sClientToken, k8s: K8sConfigToken, cfg: EndpointSyncConfigToken, kv: KVStoreConfigToken, pods: LocalPodsToken,
  manager: EndpointManagerToken, restorer: EndpointRestorerToken, controllers: ControllerManagerToken,
  lc: LifecycleToken, jobs: JobsToken, health: HealthToken, log: LoggerToken,
} as const;

/**
 * Builds the synchronizer and its jobs: endpoints created, restored and removed (observed as they
 * happen: restored ones during the start hooks, created ones before their ADD waits for the
 * CiliumEndpoint), and the stale sweep once the restore is done (retried while the apiserver
 * does not answer).
 */
function newSynchronizer(d: DepsValues<typeof syncDeps>): EndpointSynchronizer | undefined {
  if (!d.client.enabled || !d.pods || d.cfg.disableEndpointCrd) {
    d.health.ok(d.client.enabled ? 'disabled: --disable-endpoint-crd' : 'disabled: no --k8s-kubeconfig-path and not in a pod');
    return undefined;
  }
  const s = new EndpointSynchronizer({
    api: new CepApi(d.client), pods: d.pods, controllers: d.controllers, nodeIP: detectNodeIP(d.kv.nodeIp), nodeName: d.k8s.k8sNodeName,
    createTimeoutMs: d.cfg.k8sCepCreateTimeout, health: d.health, log: d.log,
  });
  const now = { immediate: true, sync: true } as const;
  d.jobs.observer('cep-endpoint-created', d.manager.created$, (ep) => s.add(ep), now);
  d.jobs.observer('cep-endpoint-restored', d.manager.restored$, (ep) => s.add(ep), now);
  d.jobs.observer('cep-endpoint-deleted', d.manager.deleted$, (ep) => s.remove(ep), now);
  d.jobs.oneShot('cep-stale-sweep', async ({ signal }) => {
    await abortable(d.restorer.done, signal);
    const removed = await s.removeStale(signal);
    d.log.info({ removed }, `stale CiliumEndpoints of this node removed: ${removed.length}`);
  }, { retries: Number.MAX_SAFE_INTEGER, backoff: { minMs: 500, maxMs: 30_000 } });
  d.lc.append({ name: 'k8s-endpoint-sync', onStop: () => s.stop() });
  return s;
}

/** The creation hook: waits for the CiliumEndpoint; without Kubernetes there is nothing to wait for. */
function creationHook(s: EndpointSynchronizer | undefined): EndpointCreationHook {
  return s ?? { name: 'CiliumEndpoint (disabled)', created: () => Promise.resolve() };
}

const remoteDeps = { ceps: CiliumEndpointsToken, namedPorts: NamedPortMapToken, kv: KVStoreConfigToken, jobs: JobsToken, log: LoggerToken } as const;

/**
 * Feeds the named-port map with the endpoints of other nodes, from the CiliumEndpoint watch
 * (remote-named-ports.ts): upserted as they come, removed when deleted or when they no longer
 * contribute. Until the first list synced the map is not complete (registered at construction, so
 * restored endpoints regenerate with it incomplete: an egress deny by name denies every port of its
 * protocol meanwhile). Without Kubernetes there is nothing to watch.
 */
function watchRemoteNamedPorts({ ceps, namedPorts, kv, jobs, log }: DepsValues<typeof remoteDeps>): void {
  if (!ceps) return;
  const localNode = detectNodeIP(kv.nodeIp);
  const reported = new Map<string, string>();
  const listed = namedPorts.pending('ciliumendpoints');
  jobs.observer('cep-named-ports', ceps.events(), (ev) => {
    if (ev.kind === 'sync') {
      listed();
      return;
    }
    const got = cepNamedPorts(ev.object, localNode);
    if (ev.kind === 'delete' || !got.contribution) {
      namedPorts.remove(got.owner);
      reported.delete(got.owner);
      return;
    }
    namedPorts.upsert(got.owner, got.contribution.identity, got.contribution.ports, got.contribution.addresses);
    const problems = got.problems.join('; ');
    if (problems && reported.get(got.owner) !== problems) log.warn({ ciliumEndpoint: got.owner.slice(4), problems: got.problems }, 'named ports of a CiliumEndpoint left out (they allow nothing)');
    if (problems) reported.set(got.owner, problems);
    else reported.delete(got.owner);
  });
}

/** The k8s-endpoint-sync cell. */
export const k8sEndpointSyncCell = module(
  'k8s-endpoint-sync',
  'CiliumEndpoint objects of this node\'s pod endpoints, kept current in Kubernetes',
  config(EndpointSyncConfigToken, endpointSyncConfigSchema),
  provide(EndpointSynchronizerToken, newSynchronizer, syncDeps),
  provideInto(EndpointCreationHooksToken, creationHook, EndpointSynchronizerToken),
  invoke('k8s-endpoint-sync', (_s: EndpointSynchronizer | undefined) => undefined, EndpointSynchronizerToken),
  invoke('cep-named-ports', watchRemoteNamedPorts, remoteDeps),
);
