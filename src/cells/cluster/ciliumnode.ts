/**
 * CiliumNode objects (cilium.io/v2, cluster-scoped) as the cluster cell reads and writes them in
 * Kubernetes mode without --kvstore: `spec.addresses` (the node's InternalIP), `spec.ipam.podCIDRs`
 * (its pod CIDR, written by the elected pod CIDR allocator from the cluster pool, or by the agent
 * from its fixed --ipv4-range) and the annotation with the CIDR a node had before (a hint the
 * allocator honours when that CIDR is still free), and an owner reference to the node's Kubernetes
 * Node where one exists (as Cilium's agent sets it): Kubernetes' garbage collector deletes the
 * CiliumNode when its Node is deleted. The calls: get, list, create, update (at the object's
 * resourceVersion) of CiliumNodes and get of the Node, each with the verb deploy/rbac.yaml grants.
 */
import { isIP } from 'node:net';
import { apiRequest, type Answer, type K8sClient } from '../k8s/index.js';
import { nodeGetFailed, nodeRequestFailed } from './errors.js';
import type { ClusterNode } from './types.js';

/** Bound of every request (ms). */
export const CILIUMNODE_REQUEST_TIMEOUT_MS = 10_000;

/** The annotation with the pod CIDR a node had before its CiliumNode was (re)created. */
export const PREVIOUS_CIDR_ANNOTATION = 'cellium.io/previous-pod-cidr';

/** A cilium.io/v2 CiliumNode (the fields used; the rest is kept as it comes on update). */
export interface CiliumNode {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly resourceVersion?: string;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly ownerReferences?: readonly OwnerReference[];
    readonly [k: string]: unknown;
  };
  readonly spec?: {
    readonly addresses?: readonly { readonly type?: string; readonly ip?: string }[];
    readonly ipam?: { readonly podCIDRs?: readonly string[]; readonly [k: string]: unknown };
    readonly [k: string]: unknown;
  };
  readonly [k: string]: unknown;
}

/** A metadata.ownerReferences entry (the fields the agent writes and compares). */
export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly [k: string]: unknown;
}

/** The owner reference of a CiliumNode to its Kubernetes Node. */
export function nodeOwnerReference(name: string, uid: string): OwnerReference {
  return { apiVersion: 'v1', kind: 'Node', name, uid };
}

/** The Node owner reference of a CiliumNode, if it has one. */
export function nodeOwnerOf(cn: CiliumNode): OwnerReference | undefined {
  const refs = Array.isArray(cn.metadata.ownerReferences) ? cn.metadata.ownerReferences : [];
  return refs.find((r) => r?.kind === 'Node' && r.apiVersion === 'v1');
}

const PATH = '/apis/cilium.io/v2/ciliumnodes';

/** The IPv4 pod CIDRs of a CiliumNode (spec.ipam.podCIDRs), in order. */
export function podCIDRsOf(cn: CiliumNode): string[] {
  const list = cn.spec?.ipam?.podCIDRs;
  return Array.isArray(list) ? list.filter((c): c is string => typeof c === 'string' && isIP(c.split('/')[0] ?? '') === 4 && c.includes('/')) : [];
}

/** A CiliumNode as a cluster node; undefined (with why) when it has no IPv4 InternalIP. */
export function nodeOf(cn: CiliumNode, self: string, cluster: string): { node?: ClusterNode; problem?: string } {
  const addrs = Array.isArray(cn.spec?.addresses) ? cn.spec.addresses : [];
  const ip = addrs.find((a) => a?.type === 'InternalIP' && typeof a.ip === 'string' && isIP(a.ip) === 4)?.ip;
  if (!ip) return { problem: `CiliumNode ${cn.metadata.name}: /spec/addresses has no InternalIP with an IPv4 address; fix: that node's agent writes it (--node-ip), or add {type: InternalIP, ip: <IPv4>}` };
  const cidr = podCIDRsOf(cn)[0];
  return { node: { name: cn.metadata.name, cluster, ipv4: ip, ...(cidr ? { ipv4AllocCidr: cidr } : {}), local: cn.metadata.name === self, source: 'custom-resource' } };
}

function ok(a: Answer): boolean {
  return a.status >= 200 && a.status <= 299;
}

/** The CiliumNode calls of one client. */
export class CiliumNodeApi {
  constructor(private readonly client: Pick<K8sClient, 'kubeConfig'>) {}

  private async call(verb: string, name: string, method: string, path: string, body: unknown, signal?: AbortSignal): Promise<Answer> {
    try {
      return await apiRequest(this.client.kubeConfig(), method, path, body, { timeoutMs: CILIUMNODE_REQUEST_TIMEOUT_MS, ...(signal ? { signal } : {}) });
    } catch (err) {
      throw nodeRequestFailed(verb, name, 0, (err as Error).message, err);
    }
  }

  /** The CiliumNode, or undefined. */
  async get(name: string, signal?: AbortSignal): Promise<CiliumNode | undefined> {
    const a = await this.call('get', name, 'GET', `${PATH}/${encodeURIComponent(name)}`, undefined, signal);
    if (a.status === 404) return undefined;
    if (!ok(a)) throw nodeRequestFailed('get', name, a.status, a.message);
    return a.body as CiliumNode;
  }

  /** The uid of the Kubernetes Node of that name, or undefined when there is none (404). */
  async nodeUid(name: string, signal?: AbortSignal): Promise<string | undefined> {
    let a: Answer;
    try {
      a = await apiRequest(this.client.kubeConfig(), 'GET', `/api/v1/nodes/${encodeURIComponent(name)}`, undefined, { timeoutMs: CILIUMNODE_REQUEST_TIMEOUT_MS, ...(signal ? { signal } : {}) });
    } catch (err) {
      throw nodeGetFailed(name, 0, (err as Error).message, err);
    }
    if (a.status === 404) return undefined;
    const uid = (a.body as { metadata?: { uid?: unknown } } | undefined)?.metadata?.uid;
    if (!ok(a) || typeof uid !== 'string') throw nodeGetFailed(name, a.status, a.message);
    return uid;
  }

  /** Every CiliumNode (a consistent list straight from the apiserver). */
  async list(signal?: AbortSignal): Promise<CiliumNode[]> {
    const a = await this.call('list', '', 'GET', PATH, undefined, signal);
    if (!ok(a)) throw nodeRequestFailed('list', '', a.status, a.message);
    return ((a.body as { items?: CiliumNode[] }).items ?? []);
  }

  /** Creates it; undefined when one of the name exists (409). */
  async create(cn: CiliumNode, signal?: AbortSignal): Promise<CiliumNode | undefined> {
    const a = await this.call('create', cn.metadata.name, 'POST', PATH, { apiVersion: 'cilium.io/v2', kind: 'CiliumNode', ...cn }, signal);
    if (a.status === 409) return undefined;
    if (!ok(a)) throw nodeRequestFailed('create', cn.metadata.name, a.status, a.message);
    return a.body as CiliumNode;
  }

  /** Replaces it if it is still at its metadata.resourceVersion; undefined when it changed or is gone (409, 404). */
  async update(cn: CiliumNode, signal?: AbortSignal): Promise<CiliumNode | undefined> {
    const a = await this.call('update', cn.metadata.name, 'PUT', `${PATH}/${encodeURIComponent(cn.metadata.name)}`, cn, signal);
    if (a.status === 409 || a.status === 404) return undefined;
    if (!ok(a)) throw nodeRequestFailed('update', cn.metadata.name, a.status, a.message);
    return a.body as CiliumNode;
  }
}
