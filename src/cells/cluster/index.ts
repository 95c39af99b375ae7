/**
 * The cluster cell (module `cluster`): in kvstore mode, this node registered under
 * `cilium/state/nodes/v1/<cluster>/<name>` and every other node watched; local endpoints published
 * under `cilium/state/ip/v1/default/<ip>` and other nodes' endpoints and addresses written into the
 * datapath's ipcache. In Kubernetes mode without --kvstore (Cilium's CRD mode) the same from
 * CiliumNodes (this node's written by its agent, pod CIDRs given by the agent holding a Lease) and
 * other nodes' CiliumEndpoints. The API: GET /cluster/nodes, GET /ip, GET /node/ids. With neither
 * it knows only this node and its endpoints. Needs the kvstore, k8s, IPAM, endpoint and datapath cells.
 */
export * from './types.js';
export { KVNodeRegistry } from './nodes.js';
export { KVIPCache } from './ipcache.js';
export { CiliumNodeRegistry, type K8sNode } from './k8s-nodes.js';
export { CepIPCache, cepEntries } from './cep-ipcache.js';
export { CiliumNodeApi, nodeOf, podCIDRsOf, PREVIOUS_CIDR_ANNOTATION, type CiliumNode } from './ciliumnode.js';
export { ensureOwnCiliumNode, type OwnNodeSpec } from './own-ciliumnode.js';
export { K8sPodCIDR, type K8sPodCIDROptions } from './k8s-pod-cidr.js';
export { PodCIDRAllocator, type AllocationRound } from './pod-cidr-allocator.js';
export { nodeJson, parseNodeJson } from './node-json.js';
export { ipJson, parseIPJson, type IPRecord } from './ip-json.js';
export { detectNodeIP } from '../../lib/node-ip.js';
export { clusterRouter, nodeElement } from './api.js';
export { ClusterConfigToken, clusterConfigSchema, type ClusterConfig } from './config.js';
export { PodCIDRClaimer, PODCIDR_PREFIX, subnets, subnetOf, previousPodCIDR, recordPodCIDR } from './pod-cidr.js';
export { NodeRoutes, type RouteWriter } from './routes.js';
export { ClusterError, type ClusterErrorCode } from './errors.js';
export * from './cell.js';
