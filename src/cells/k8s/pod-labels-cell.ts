/**
 * The k8s-pod-labels cell (module `k8s-pod-labels`): in Kubernetes mode a pod endpoint's labels
 * come from its Pod and Namespace (pod-labels.ts): at CNI ADD (the endpoint cell asks the
 * PodLabelSources group, waiting for a pod not seen yet) and on every later change of the Pod or
 * the Namespace (`kubectl label pod|namespace`): the endpoint's orchestration labels are replaced
 * and it regenerates, getting its new identity and programs without a new ADD.
 */
import { invoke, module, provide, provideInto } from '../../hive/cell.js';
import { HealthToken, type Health } from '../../hive/health.js';
import { JobsToken, type Jobs } from '../../hive/jobs.js';
import { LoggerToken, type Logger } from '../../hive/logger.js';
import { token } from '../../hive/token.js';
import { EndpointManagerImplToken, PodLabelSourcesToken, type EndpointManagerImpl, type PodLabelSource } from '../endpoint/index.js';
import { KVStoreConfigToken, type KVStoreConfig } from '../kvstore/index.js';
import { K8sConfigToken, type K8sConfig } from './config.js';
import { K8sPodLabels, type PodLabelChange } from './pod-label-source.js';
import { LocalPodsToken, NamespacesToken, type AgentResource } from './resources.js';
import type { Namespace, Pod } from './types.js';

/** Token for the Kubernetes pod label source. */
export const K8sPodLabelsToken = token<K8sPodLabels>('K8sPodLabels');

/** Replaces the labels of the endpoints `change` concerns with their pods' current ones; regenerates those that changed. */
export async function relabelEndpoints(src: K8sPodLabels, manager: EndpointManagerImpl, change: PodLabelChange, log: Logger): Promise<void> {
  for (const ep of manager.list()) {
    const { namespace, podName } = ep.spec;
    if (!namespace || !podName || namespace !== change.namespace || (change.pod !== undefined && podName !== change.pod)) continue;
    const labels = src.current(namespace, podName);
    if (!labels || !ep.replaceOriginLabels(labels)) continue;
    log.info({ endpointID: ep.id, pod: `${namespace}/${podName}`, labels }, 'pod labels changed in Kubernetes; regenerating');
    await ep.regenerate('labels changed in Kubernetes').catch((err: Error) => log.warn({ endpointID: ep.id, err: err.message }, 'regeneration after a label change failed; retrying'));
  }
}

/** The k8s-pod-labels cell. */
export const k8sPodLabelsCell = module(
  'k8s-pod-labels',
  'Pod endpoint labels from Kubernetes (Pods and Namespaces)',
  provide(K8sPodLabelsToken, (pods: AgentResource<Pod>, nss: AgentResource<Namespace>, cfg: K8sConfig, kv: KVStoreConfig) =>
    new K8sPodLabels(pods, nss, kv.clusterName, cfg.k8sNodeName, cfg.k8sPodWaitTimeout), LocalPodsToken, NamespacesToken, K8sConfigToken, KVStoreConfigToken),
  provideInto(PodLabelSourcesToken, (src: K8sPodLabels): PodLabelSource => src, K8sPodLabelsToken),
  invoke('k8s-pod-relabel', (src: K8sPodLabels, manager: EndpointManagerImpl, jobs: Jobs, log: Logger, health: Health) => {
    if (src.enabled) jobs.observer('k8s-pod-relabel', src.changes(), (change) => relabelEndpoints(src, manager, change, log));
    else health.ok('disabled: no --k8s-kubeconfig-path and not in a pod');
  }, K8sPodLabelsToken, EndpointManagerImplToken, JobsToken, LoggerToken, HealthToken),
);
