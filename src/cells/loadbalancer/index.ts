/**
 * The loadbalancer cell (module `loadbalancer`): the ServiceManager (services, frontends with
 * their service IDs, backends; persisted in `<state-dir>/services.json`) and the `--bpf-lb-*`
 * configuration, and the reconciler that writes every frontend into the LB maps (kernel maps under
 * --bpf-root with the BPF datapath, in memory otherwise) in Cilium's order; with the BPF datapath
 * and --bpf-lb-sock, socket load balancing for the node's processes (bpf_sock's cgroup programs on
 * --cgroup-root). No frontend but NodePort takes one of the node's own addresses (listed and
 * watched over rtnetlink, with IPAM's pod gateways and --api-listen-address). Needs the statedir,
 * datapath, datapath-bpf (its --bpf-root), ipam and api-server (its config) cells.
 * docs/cells/loadbalancer.md describes it.
 */
export * from './types.js';
export { LBConfigToken, lbConfigSchema, MAGLEV_TABLE_SIZES, type LBConfig } from './config.js';
export { LBError, type LBErrorCode } from './errors.js';
export { formatL3n4, parseHostPort, parseProto, canonicalIP, isIPv6 } from './addr.js';
export { LBServiceManager, apiServiceKey, apiserverServiceKey } from './manager.js';
export { ServiceStore, serviceStoreFile, type StoredService } from './store.js';
export { specToUpsert, frontendToModel, DEFAULT_BACKEND_WEIGHT } from './api-model.js';
export { parseManifests, translateService, translateEndpointSlice, DEFAULT_AFFINITY_TIMEOUT_SEC, type K8sManifests, type K8sService, type K8sEndpointSlice } from './k8s.js';
export { applyManifests, type ImportResult } from './k8s-import.js';
export { LBOps, PROTO_NUMBER, serviceFlags, takesNewFlows, type LBOpsOptions } from './lb-ops.js';
export { BackendIds } from './backend-ids.js';
export { selectLBMaps, lazyLBMaps } from './lb-maps.js';
export { attachSockLB, detachSockLB, resolveCgroupRoot, sockLinkPath, sockLBProblems, SOCK_PROGRAMS, SOCK_HOOKS, type SockLBOptions, type SockLBAttachment } from './sock-lb.js';
export { rebindOnReplacedLBMaps, lbRebindCell } from './rebind.js';
export * from './cell.js';
