/**
 * The k8s-endpoint-sync cell (module `k8s-endpoint-sync`): in Kubernetes mode, the CiliumEndpoint
 * (cilium.io/v2) of every pod endpoint of this node, written before the CNI ADD answers, kept
 * current by a controller per endpoint, deleted with the endpoint, and stale ones of this node
 * removed after a restart (Cilium's endpointsynchronizer); and the named ports of other nodes'
 * endpoints from their CiliumEndpoints into the node's named-port map. See docs/cells/k8s.md.
 */
export { cepStatus, newCep, ownerPodUid, podOwner, CEP_API_VERSION, type CepStatus, type CiliumEndpoint, type PodOwnerReference } from './cep.js';
export { CepApi, CEP_REQUEST_TIMEOUT_MS, type PatchOutcome } from './api.js';
export { CepSync, type CepSyncDeps } from './endpoint-sync.js';
export { EndpointSynchronizer, cepControllerName, CEP_SYNC_INTERVAL_MS, type SynchronizerDeps } from './synchronizer.js';
export { EndpointSyncConfigToken, endpointSyncConfigSchema, type EndpointSyncConfig } from './config.js';
export { k8sEndpointSyncCell, EndpointSynchronizerToken } from './cell.js';
export { cepNamedPorts, cepOwner, type CepPorts } from './remote-named-ports.js';
