/** Errors of the cluster cell, each naming the flag or the condition and the fix. */

/** What went wrong. */
export type ClusterErrorCode = 'config' | 'pool-exhausted' | 'api' | 'pod-cidr';

/** A cluster error. */
export class ClusterError extends Error {
  override readonly name = 'ClusterError';
  constructor(
    readonly code: ClusterErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** --cluster-pool-ipv4-cidr is not an IPv4 CIDR. */
export function badClusterPool(value: string, why?: string, cause?: unknown): ClusterError {
  return new ClusterError('config', `--cluster-pool-ipv4-cidr=${JSON.stringify(value)}: ${why ? `${why}; ` : ''}give an IPv4 CIDR such as 10.0.0.0/8`, { cause });
}

/** The mask size is shorter than the pool's prefix. */
export function badMaskSize(mask: number, poolPrefix: number): ClusterError {
  return new ClusterError('config', `--cluster-pool-ipv4-mask-size=${mask} is shorter than the pool's /${poolPrefix}: give ${poolPrefix} or more`);
}

/** The cluster pool was asked for without a kvstore or Kubernetes to allocate in. */
export function clusterPoolNeedsKVStore(): ClusterError {
  return new ClusterError('config', '--cluster-pool-ipv4-cidr needs a kvstore or Kubernetes to allocate the node\'s pod CIDR in: add --kvstore=etcd --kvstore-opt=etcd.config=FILE or --k8s-kubeconfig-path=FILE, or use --ipv4-range for a fixed pool');
}

/** Reading this node's Kubernetes Node (the owner of its CiliumNode) got an error answer (or none). */
export function nodeGetFailed(name: string, status: number, message: string, cause?: unknown): ClusterError {
  const what = `kubernetes: get nodes ${name}`;
  if (status === 0) return new ClusterError('api', `${what}: no answer (${message}); check that the apiserver is reachable`, { cause });
  if (status === 403) return new ClusterError('api', `${what} is forbidden (${message}); the agent's ClusterRole needs verb "get" on nodes: kubectl apply -f deploy/rbac.yaml`);
  return new ClusterError('api', `${what} failed: ${status} ${message}; check that the apiserver is reachable`);
}

/** This node's Node was deleted while the agent runs: its CiliumNode is not written again. */
export function nodeRemoved(name: string): string {
  return `the Node ${name} was deleted and Kubernetes' garbage collector removed this node's CiliumNode with it: other nodes no longer route to this one; the agent does not write it again while the Node is missing. Fix: register the node again (restart kubelet), then restart the agent; or drain and remove the node`;
}

/** A CiliumNode request got an error answer (or none); a 403 names the verb and deploy/rbac.yaml. */
export function nodeRequestFailed(verb: string, name: string, status: number, message: string, cause?: unknown): ClusterError {
  const what = `kubernetes: ${verb} ciliumnodes.cilium.io${name ? ` ${name}` : ''}`;
  if (status === 0) return new ClusterError('api', `${what}: no answer (${message}); check that the apiserver is reachable`, { cause });
  if (status === 403) return new ClusterError('api', `${what} is forbidden (${message}); the agent's ClusterRole needs verb "${verb}" on ciliumnodes: kubectl apply -f deploy/rbac.yaml`);
  if (status === 404) return new ClusterError('api', `${what}: 404 ${message}; the CiliumNode CRD is not installed: let the agent register it (no --skip-crd-creation) or kubectl apply -f deploy/crds/`);
  return new ClusterError('api', `${what} failed: ${status} ${message}; check that the apiserver is reachable`);
}

/** No pod CIDR was written into this node's CiliumNode in time. */
export function podCIDRTimeout(node: string, waitMs: number, last?: Error): ClusterError {
  return new ClusterError('pod-cidr', `no pod CIDR in spec.ipam.podCIDRs of CiliumNode ${node} after ${Math.round(waitMs / 1000)} s${last ? ` (last error: ${last.message})` : ''}: the allocator is the agent holding the Lease kube-system/cellium-pod-cidr-allocator, started with the same --cluster-pool-ipv4-cidr; check its log (pool exhausted?) and kubectl get lease -n kube-system cellium-pod-cidr-allocator, or raise --cluster-pool-wait-timeout`);
}

/** This node's CiliumNode has a pod CIDR outside the pool. */
export function podCIDRNotInPool(node: string, cidr: string, pool: string, mask: number): ClusterError {
  return new ClusterError('pod-cidr', `CiliumNode ${node}: /spec/ipam/podCIDRs/0 ${cidr} is not a /${mask} of the cluster pool ${pool}: give every agent the same --cluster-pool-ipv4-cidr and --cluster-pool-ipv4-mask-size, or clear spec.ipam.podCIDRs so the allocator gives one`);
}

/** This node's pod CIDR is another node's too: the agent does not use it. */
export function podCIDRShared(node: string, cidr: string, others: readonly string[]): ClusterError {
  return new ClusterError('pod-cidr', `CiliumNode ${node}: pod CIDR ${cidr} is also in spec.ipam.podCIDRs of ${others.join(', ')}: two nodes must never share one; remove it from all but one CiliumNode (kubectl edit ciliumnode), then restart this agent`);
}

/** The IPAM in use cannot change its pool. */
export function ipamCannotSetPool(): ClusterError {
  return new ClusterError('config', 'the IPAM in use cannot take a pod CIDR from the cluster pool: use --ipv4-range');
}

/** Every subnet of the pool is claimed. */
export function poolExhausted(pool: string, mask: number): ClusterError {
  return new ClusterError('pool-exhausted', `the cluster pool ${pool} has no free /${mask} left: use a larger --cluster-pool-ipv4-cidr or a longer --cluster-pool-ipv4-mask-size, or remove nodes that are gone`);
}
