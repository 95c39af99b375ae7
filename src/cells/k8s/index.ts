/**
 * The k8s cell (module `k8s`): the agent's Kubernetes client (`--k8s-kubeconfig-path`,
 * `--k8s-api-server`, or the in-cluster ServiceAccount) and Resource<T>, a listed and watched cache
 * of one kind of object with an rxjs event stream, shaped like Cilium's pkg/k8s/resource.
 */
export { K8sConfigToken, k8sConfigSchema, type K8sConfig } from './config.js';
export { newK8sClient, IN_CLUSTER_TOKEN, type K8sClient } from './client.js';
export { k8sLibLoaded } from './client-lib.js';
export { apiListWatcher, type ListWatchOptions } from './listwatch.js';
export {
  Resource, keyOf,
  type K8sObject, type ListWatcher, type ResourceEvent, type ResourceOptions, type Store, type WatchEvent, type WatchHandle,
} from './resource.js';
export { K8sError, type K8sErrorCode } from './errors.js';
export { apiRequest, type Answer, type RequestBounds } from './api-request.js';
export * from './cell.js';
export * from './types.js';
export * from './resources.js';
export { K8sStatusReporter, type K8sStatusModel } from './status.js';
export { k8sResourcesCell, K8sStatusToken, K8sCacheSyncToken, K8sCrdsToken } from './resources-cell.js';
export { CacheSyncGate, type GatedResource } from './cache-sync.js';
export { podEndpointLabels, identityRelevant, K8S_LABEL_KEYS } from './pod-labels.js';
export { podNamedPorts } from './pod-ports.js';
export { K8sPodLabels, type PodLabelChange } from './pod-label-source.js';
export { k8sPodLabelsCell, K8sPodLabelsToken, relabelEndpoints } from './pod-labels-cell.js';
export { ensureCrds, shippedCrds, SCHEMA_VERSION_ANNOTATION, type CrdOutcome, type EnsureCrdsOptions } from './crds.js';
export { registerCrds, type CrdRegistrarDeps, type CrdRegistration } from './crd-registrar.js';
export { warningEvent, createEvent, type EventSubject } from './events.js';
