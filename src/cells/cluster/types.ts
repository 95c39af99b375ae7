/**
 * The cluster as one agent sees it (kvstore mode): the nodes registered in etcd and the ipcache
 * entries every agent publishes for its endpoints. Other cells use it through this file or index.ts.
 */
import type { Observable } from 'rxjs';
import { token } from '../../hive/token.js';

/** A node of the cluster, as registered under `cilium/state/nodes/v1/<cluster>/<name>`. */
export interface ClusterNode {
  readonly name: string;
  readonly cluster: string;
  /** The node's IPv4 address (InternalIP). */
  readonly ipv4: string;
  /** The node's pod CIDR (IPv4), when it has one. */
  readonly ipv4AllocCidr?: string;
  /** Whether this is the local node. */
  readonly local: boolean;
  /** Where another node was learnt from (Cilium's names; default kvstore). */
  readonly source?: 'kvstore' | 'custom-resource';
}

/** A node appearing, changing or going. */
export interface NodeEvent {
  readonly kind: 'upsert' | 'delete';
  readonly node: ClusterNode;
}

/** The nodes of the cluster. */
export interface NodeRegistry {
  /** This node. */
  self(): ClusterNode;
  /** Every known node (this one included), by name. */
  list(): ClusterNode[];
  /** Changes of other nodes. */
  readonly events$: Observable<NodeEvent>;
  /** The local node ID of a node (Cilium's node IDs: 1.. per agent, stable while it runs). */
  nodeIds(): { id: number; ips: string[] }[];
}

/** Token for the node registry. */
export const NodeRegistryToken = token<NodeRegistry>('NodeRegistry');

/** One ipcache entry as GET /ip lists it. */
export interface IPCacheListEntry {
  readonly cidr: string;
  readonly identity: number;
  readonly hostIP?: string;
  /** Where it comes from: this node, etcd, or CiliumEndpoints and CiliumNodes (Cilium's names). */
  readonly source: 'local' | 'kvstore' | 'custom-resource';
  readonly namespace?: string;
  readonly name?: string;
}

/** The ipcache of the whole cluster: local endpoints, other nodes' endpoints and nodes, CIDR identities. */
export interface ClusterIPCache {
  /** Every entry, sorted by prefix. */
  list(): IPCacheListEntry[];
}

/** Token for the cluster ipcache. */
export const ClusterIPCacheToken = token<ClusterIPCache>('ClusterIPCache');

/** This node's pod CIDR claimed from the cluster pool (--cluster-pool-ipv4-cidr), once claimed at start. */
export interface PodCIDR {
  current(): string | undefined;
}

/** Token for the pod CIDR claim (constructed before the endpoints, so the pool is set before restore). */
export const PodCIDRToken = token<PodCIDR>('PodCIDR');
