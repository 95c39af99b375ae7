/**
 * The k8s-pod-labels cell (module `k8s-pod-labels`): in Kubernetes mode a pod endpoint's labels
 * come from its Pod and Namespace (pod-labels.ts): at CNI ADD (the endpoint cell asks the
 * PodLabelSources group, waiting for a pod not seen yet) and on every later change of the Pod or
 * the Namespace (`kubectl label pod|namespace`): the endpoint's orchestration labels are replaced
 * and it regenerates, getting its new identity and programs without a new ADD. Both behind the
 * k8s cache-sync gate (cache-sync.ts).
 */
import { invoke, module, provide, provideInto, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { JobsToken } from '../../hive/jobs.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { abortable } from '../../lib/abortable.js';
import { EndpointManagerImplToken, PodLabelSourcesToken, type EndpointManagerImpl, type PodLabelSource } from '../endpoint/index.js';
import { KVStoreConfigToken } from '../kvstore/index.js';
import { K8sConfigToken } from './config.js';
import { K8sPodLabels, type PodLabelChange } from './pod-label-source.js';
import { LocalPodsToken, NamespacesToken } from './resources.js';
import { K8sCacheSyncToken } from './resources-cell.js';

/** Token for the Kubernetes pod label source. */
export const K8sPodLabelsToken = token<K8sPodLabels>('K8sPodLabels');

/**
 * Replaces the labels and named ports of the endpoints `change` concerns with their pods' current
 * ones; regenerates those that changed.
 */
export async function relabelEndpoints(src: K8sPodLabels, manager: EndpointManagerImpl, change: PodLabelChange, log: Logger): Promise<void> {
  for (const ep of manager.list()) {
    const { namespace, podName } = ep.spec;
    if (!namespace || !podName || namespace !== change.namespace || (change.pod !== undefined && podName !== change.pod)) continue;
    const labels = src.current(namespace, podName);
    if (!labels) continue;
    const relabelled = ep.replaceOriginLabels(labels);
    const ported = ep.setNamedPorts(src.namedPorts(namespace, podName) ?? []);
    if (!relabelled && !ported) continue;
    log.info({ endpointID: ep.id, pod: `${namespace}/${podName}`, labels, namedPorts: ep.namedPorts }, relabelled ? 'pod labels changed in Kubernetes; regenerating' : 'pod named ports changed in Kubernetes; regenerating');
    await ep.regenerate(relabelled ? 'labels changed in Kubernetes' : 'named ports changed in Kubernetes').catch((err: Error) => log.warn({ endpointID: ep.id, err: err.message }, 'regeneration after a label change failed; retrying'));
  }
}

const sourceDeps = { pods: LocalPodsToken, nss: NamespacesToken, cfg: K8sConfigToken, kv: KVStoreConfigToken, gate: K8sCacheSyncToken } as const;

/** Builds the label source (its ADD waits pass the cache-sync gate in Kubernetes mode). */
function newSource(d: DepsValues<typeof sourceDeps>): K8sPodLabels {
  return new K8sPodLabels(d.pods, d.nss, d.kv.clusterName, d.cfg.k8sNodeName, d.cfg.k8sPodWaitTimeout, d.pods ? d.gate : undefined);
}

const relabelDeps = { src: K8sPodLabelsToken, manager: EndpointManagerImplToken, gate: K8sCacheSyncToken, jobs: JobsToken, log: LoggerToken, health: HealthToken } as const;

/**
 * Relabels endpoints on every Pod or Namespace change, behind the cache-sync gate: before it
 * opens (every resource synced, the policy caught up), restored endpoints keep their labels (a
 * new identity with policy not yet caught up could allow more); then every endpoint is relabelled
 * once (job `k8s-pod-relabel-catch-up`) and changes apply as they come.
 */
function relabelJobs(d: DepsValues<typeof relabelDeps>): void {
  if (!d.src.enabled) {
    d.health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
    return;
  }
  d.jobs.observer('k8s-pod-relabel', d.src.changes(), (change) => (d.gate.ready ? relabelEndpoints(d.src, d.manager, change, d.log) : undefined));
  d.jobs.oneShot('k8s-pod-relabel-catch-up', async ({ signal }) => {
    await abortable(d.gate.caughtUp, signal);
    const namespaces = new Set(d.manager.list().flatMap((ep) => (ep.spec.namespace ? [ep.spec.namespace] : [])));
    for (const namespace of namespaces) await relabelEndpoints(d.src, d.manager, { namespace }, d.log);
  });
}

/** The k8s-pod-labels cell. */
export const k8sPodLabelsCell = module(
  'k8s-pod-labels',
  'Pod endpoint labels from Kubernetes (Pods and Namespaces)',
  provide(K8sPodLabelsToken, newSource, sourceDeps),
  provideInto(PodLabelSourcesToken, (src: K8sPodLabels): PodLabelSource => src, K8sPodLabelsToken),
  invoke('k8s-pod-relabel', relabelJobs, relabelDeps),
);
