/**
 * The agent's cells, grouped like Cilium's daemon/cmd/cells.go: infrastructure (what every other
 * cell runs on), the control plane (endpoints, identities, policy, IPAM, the API) and the datapath.
 */
import { invoke, module, type Cell, type ModuleCell } from './hive/index.js';
import { agentStatusCell } from './cells/agent-status/index.js';
import { apiHandlerCells } from './cells/api-handlers/index.js';
import { metricsCell } from './cells/api-metrics/index.js';
import { apiServerCell } from './cells/api-server/index.js';
import { cniServerCell } from './cells/cni-server/index.js';
import { clusterCell, PodCIDRToken } from './cells/cluster/index.js';
import { datapathCell } from './cells/datapath/index.js';
import { memoryDatapathCell } from './cells/datapath-memory/index.js';
import { bpfDatapathCell } from './cells/datapath-bpf/index.js';
import { endpointCell, EndpointManagerToken } from './cells/endpoint/index.js';
import { explainCell } from './cells/explain/index.js';
import { identityCell, IdentityAllocatorToken } from './cells/identity/index.js';
import { ipamCell, IPAMToken } from './cells/ipam/index.js';
import { k8sCell, k8sPodLabelsCell, k8sResourcesCell, K8sStatusToken, type K8sStatusReporter } from './cells/k8s/index.js';
import { k8sEndpointSyncCell } from './cells/k8s-endpoint-sync/index.js';
import { k8sIdentityCell } from './cells/k8s-identity/index.js';
import { k8sServicesCell } from './cells/k8s-services/index.js';
import { lbRebindCell, loadBalancerCell } from './cells/loadbalancer/index.js';
import { kvstoreCell } from './cells/kvstore/index.js';
import { monitorCell } from './cells/monitor/index.js';
import { hubbleCell } from './cells/hubble/index.js';
import { cidrIPCacheCell, policyCell, PolicyRepositoryToken } from './cells/policy/index.js';
import { policyK8sCell } from './cells/policy-k8s/index.js';
import { statedirCell } from './cells/statedir/index.js';

/**
 * Infrastructure (module `infra`): state directory, API server, metrics, status, the cluster's
 * kvstore (etcd, with --kvstore).
 */
export const infrastructure: ModuleCell = module('infra', 'Infrastructure', statedirCell, apiServerCell, metricsCell, agentStatusCell, kvstoreCell);

/**
 * Kubernetes (module `kubernetes`; with --k8s-kubeconfig-path or inside a pod): the client, and a
 * Resource per kind the agent watches (Pods of this node, Namespaces, Nodes, Services,
 * EndpointSlices, NetworkPolicies, CiliumNetworkPolicies, CiliumClusterwideNetworkPolicies) with the
 * `kubernetes` status line, pod endpoints' labels from their Pods and Namespaces (at CNI ADD and on
 * every change), policies from the apiserver, Services with their EndpointSlices into the load
 * balancer, and identities as CiliumIdentity objects (with their GC by one elected agent). Without
 * either, nothing is loaded or started and the status says Disabled.
 */
export const kubernetes: ModuleCell = module('kubernetes', 'Kubernetes', k8sCell, k8sResourcesCell, k8sPodLabelsCell, policyK8sCell, k8sEndpointSyncCell, k8sServicesCell, k8sIdentityCell);

/**
 * Control plane (module `controlplane`): identities, policy (with its CIDR identities in the
 * ipcache, without which a fromCIDR/toCIDR rule would match no packet), IPAM, endpoints, API
 * handlers, the CNI server (cellium-cni's agent side), services (the loadbalancer cell), the cluster
 * (nodes and their pod CIDRs), explain (`cellium explain`: which decision dropped a flow).
 */
export const controlPlane: ModuleCell = module('controlplane', 'Control plane', identityCell, policyCell, cidrIPCacheCell, ipamCell, endpointCell, loadBalancerCell, ...apiHandlerCells, explainCell, cniServerCell, clusterCell);

/**
 * Datapath (module `datapath-plane`): the selection (memory or BPF), the BPF datapath (pinned maps
 * and their reconcilers, the bpf_lxc loader), the memory datapath, the monitor (its events
 * streamed to `cellium monitor`), Hubble (the monitor's events as flows on the Hubble Observer API,
 * with --enable-hubble).
 */
export const datapath: ModuleCell = module('datapath-plane', 'Datapath', datapathCell, memoryDatapathCell, bpfDatapathCell, monitorCell, hubbleCell);

/**
 * What the agent runs besides what the API server pulls in: invoking these constructs them (and
 * everything they depend on), which appends their start/stop hooks and jobs.
 */
const agentInvokes: readonly Cell[] = [
  // the pod CIDR claim before the endpoints: its start hook sets the IPAM pool before restore
  invoke('control-plane', () => undefined, {
    identities: IdentityAllocatorToken, policy: PolicyRepositoryToken, ipam: IPAMToken, podCIDR: PodCIDRToken, endpoints: EndpointManagerToken,
  }),
  // after the endpoints' restore: LB maps a changed --bpf-lb-map-max replaced are rebound
  lbRebindCell,
  // every Kubernetes resource (the status reporter depends on them all)
  invoke('kubernetes', (_k: K8sStatusReporter) => undefined, K8sStatusToken),
];

/** Every cell of the agent. */
export const agentCells: readonly Cell[] = [infrastructure, kubernetes, controlPlane, datapath, ...agentInvokes];
