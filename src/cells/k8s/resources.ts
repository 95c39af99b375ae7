/**
 * The agent's Kubernetes resources, one token each (Cilium's k8s.ResourcesCell): the Pods of this
 * node, Namespaces, Nodes, Services, EndpointSlices, NetworkPolicies, CiliumNetworkPolicies,
 * CiliumClusterwideNetworkPolicies and CiliumEndpoints (of every node: their named ports resolve
 * named egress ports). With Kubernetes disabled each token is `undefined` and nothing
 * is listed or watched. A resource whose API is missing (a CRD not installed: 404) stays unsynced
 * and degraded, retrying with backoff, like any other failure; the agent runs on.
 */
import { provide, type Cell, type DepsValues } from '../../hive/cell.js';
import { HealthToken } from '../../hive/health.js';
import { LifecycleToken } from '../../hive/lifecycle.js';
import { LoggerToken } from '../../hive/logger.js';
import { token, type Token } from '../../hive/token.js';
import { K8sClientToken, newResource } from './cell.js';
import { K8sConfigToken, type K8sConfig } from './config.js';
import type { K8sObject, Resource } from './resource.js';
import type { CiliumEndpointObject, CiliumNetworkPolicy, EndpointSlice, Namespace, NetworkPolicy, Node, Pod, Service } from './types.js';

/** A resource of the agent, or undefined when Kubernetes is disabled. */
export type AgentResource<T extends K8sObject> = Resource<T> | undefined;

/** One watched kind: its health/status name, API group/version, kind and collection path. */
export interface ResourceSpec<T extends K8sObject> {
  readonly name: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly token: Token<AgentResource<T>>;
  /** The collection path; the Pods one needs this node's name. */
  path(cfg: K8sConfig): string;
  fieldSelector?(cfg: K8sConfig): string;
}

/** Pods of this node (field selector spec.nodeName=--k8s-node-name). */
export const LocalPodsToken = token<AgentResource<Pod>>('K8sLocalPods');
/** Namespaces. */
export const NamespacesToken = token<AgentResource<Namespace>>('K8sNamespaces');
/** Nodes. */
export const NodesToken = token<AgentResource<Node>>('K8sNodes');
/** Services. */
export const ServicesToken = token<AgentResource<Service>>('K8sServices');
/** EndpointSlices. */
export const EndpointSlicesToken = token<AgentResource<EndpointSlice>>('K8sEndpointSlices');
/** NetworkPolicies. */
export const NetworkPoliciesToken = token<AgentResource<NetworkPolicy>>('K8sNetworkPolicies');
/** CiliumNetworkPolicies (cilium.io/v2 CRD). */
export const CiliumNetworkPoliciesToken = token<AgentResource<CiliumNetworkPolicy>>('K8sCiliumNetworkPolicies');
/** CiliumClusterwideNetworkPolicies (cilium.io/v2 CRD). */
export const CiliumClusterwideNetworkPoliciesToken = token<AgentResource<CiliumNetworkPolicy>>('K8sCiliumClusterwideNetworkPolicies');
/** CiliumEndpoints of every node (cilium.io/v2 CRD): other nodes' endpoints' identities and named ports. */
export const CiliumEndpointsToken = token<AgentResource<CiliumEndpointObject>>('K8sCiliumEndpoints');

/** Every resource the agent watches, in status order. */
export const AGENT_RESOURCES: readonly ResourceSpec<K8sObject>[] = [
  { name: 'pods', apiVersion: 'v1', kind: 'Pod', token: LocalPodsToken, path: () => '/api/v1/pods', fieldSelector: (c) => `spec.nodeName=${c.k8sNodeName}` },
  { name: 'namespaces', apiVersion: 'v1', kind: 'Namespace', token: NamespacesToken, path: () => '/api/v1/namespaces' },
  { name: 'nodes', apiVersion: 'v1', kind: 'Node', token: NodesToken, path: () => '/api/v1/nodes' },
  { name: 'services', apiVersion: 'v1', kind: 'Service', token: ServicesToken, path: () => '/api/v1/services' },
  { name: 'endpointslices', apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', token: EndpointSlicesToken, path: () => '/apis/discovery.k8s.io/v1/endpointslices' },
  { name: 'networkpolicies', apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', token: NetworkPoliciesToken, path: () => '/apis/networking.k8s.io/v1/networkpolicies' },
  { name: 'ciliumnetworkpolicies', apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', token: CiliumNetworkPoliciesToken, path: () => '/apis/cilium.io/v2/ciliumnetworkpolicies' },
  {
    name: 'ciliumclusterwidenetworkpolicies', apiVersion: 'cilium.io/v2', kind: 'CiliumClusterwideNetworkPolicy',
    token: CiliumClusterwideNetworkPoliciesToken, path: () => '/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies',
  },
  { name: 'ciliumendpoints', apiVersion: 'cilium.io/v2', kind: 'CiliumEndpoint', token: CiliumEndpointsToken, path: () => '/apis/cilium.io/v2/ciliumendpoints' },
] as readonly ResourceSpec<K8sObject>[];

/** Backoff of the agent's resources: quick at first (an apiserver starting), at most 30 s apart. */
const BACKOFF = { minBackoffMs: 500, maxBackoffMs: 30_000 };

const resourceDeps = { client: K8sClientToken, cfg: K8sConfigToken, lc: LifecycleToken, health: HealthToken, log: LoggerToken } as const;

/** The provider of one resource: undefined with Kubernetes disabled. */
function provideResource(spec: ResourceSpec<K8sObject>): Cell {
  return provide(spec.token, ({ client, cfg, lc, health, log }: DepsValues<typeof resourceDeps>): AgentResource<K8sObject> => {
    if (!client.enabled) return undefined;
    return newResource(client, lc, health, log, spec.name, { path: spec.path(cfg), fieldSelector: spec.fieldSelector?.(cfg), ...BACKOFF });
  }, resourceDeps);
}

/** The providers of every agent resource (part of the k8s cell). */
export const resourceProviders: readonly Cell[] = AGENT_RESOURCES.map(provideResource);
