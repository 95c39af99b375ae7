/**
 * The validated, immutable description of an endpoint (what the creator builds from a change
 * request and what the state directory stores), plus the endpoint options Cilium lets the API change.
 */

/** What an endpoint is attached to and addressed with; fixed for the endpoint's life. */
export interface EndpointSpec {
  /** An ID the request asked for (kept when free); the manager allocates one otherwise. */
  readonly requestedId?: number;
  readonly containerId?: string;
  readonly containerName?: string;
  /** Interface name inside the container (eth0). */
  readonly containerIfName?: string;
  /** Host-side interface name (lxc…). */
  readonly ifName: string;
  /** Host-side interface index. */
  readonly ifIndex: number;
  /** Container-side MAC ('' for L3 devices without one). */
  readonly mac: string;
  /** Host-side MAC ('' for L3 devices without one). */
  readonly hostMac: string;
  readonly ipv4?: string;
  readonly ipv6?: string;
  readonly ipv4ExpirationUUID?: string;
  readonly ipv6ExpirationUUID?: string;
  readonly ipv4PoolName?: string;
  readonly ipv6PoolName?: string;
  readonly podName?: string;
  readonly namespace?: string;
  readonly k8sUid?: string;
  readonly netnsCookie?: string;
  readonly datapathConfiguration?: Readonly<Record<string, unknown>>;
  readonly properties?: Readonly<Record<string, unknown>>;
  readonly disableLegacyIdentifiers?: boolean;
}

/**
 * The endpoint property recording where its addresses came from: absent (or `cluster-pool`) for the
 * node's IPAM pools, `delegated-plugin:<type>` for an IPAM plugin the CNI ran (--ipam=delegated-plugin).
 */
export const IPAM_SOURCE_PROPERTY = 'cellium.io/ipam-source';

/** The endpoint property naming the CNI network (the netconf's `name`) whose ADD made it: a GC of another network leaves it alone. */
export const CNI_NETWORK_PROPERTY = 'cellium.io/cni-network';

/** Whether the endpoint's addresses are the node pool's (so restore re-claims and removal releases them there). */
export function addressesFromNodePool(spec: Pick<EndpointSpec, 'properties'>): boolean {
  const source = spec.properties?.[IPAM_SOURCE_PROPERTY];
  return source === undefined || source === 'cluster-pool';
}

/**
 * Endpoint options the API may change, with their allowed values (Cilium's endpoint mutable
 * options). Conntrack (on by default) and ConntrackAccounting are honored by bpf_lxc and the memory
 * datapath (Disabled: stateless, replies judged by the policy; no per-entry counters);
 * ConntrackLocal is accepted but Cellium has only the global conntrack maps. No prototype: an
 * option named `toString`, `constructor` or `__proto__` by an API client is unknown, not a function.
 */
export const ENDPOINT_OPTIONS: Readonly<Record<string, readonly string[]>> = Object.assign(Object.create(null) as Record<string, readonly string[]>, {
  Conntrack: ['Enabled', 'Disabled'],
  ConntrackAccounting: ['Enabled', 'Disabled'],
  ConntrackLocal: ['Enabled', 'Disabled'],
  Debug: ['Enabled', 'Disabled'],
  DebugLB: ['Enabled', 'Disabled'],
  DebugPolicy: ['Enabled', 'Disabled'],
  DropNotification: ['Enabled', 'Disabled'],
  TraceNotification: ['Enabled', 'Disabled'],
  PolicyVerdictNotification: ['Enabled', 'Disabled'],
  PolicyAuditMode: ['Enabled', 'Disabled'],
  SourceIPVerification: ['Enabled', 'Disabled'],
  MonitorAggregationLevel: ['None', 'Lowest', 'Low', 'Medium', 'Maximum'],
});

/** Options every endpoint starts with. */
export const DEFAULT_OPTIONS: Readonly<Record<string, string>> = {
  Conntrack: 'Enabled',
  ConntrackAccounting: 'Enabled',
  ConntrackLocal: 'Disabled',
  Debug: 'Disabled',
  DebugLB: 'Disabled',
  DebugPolicy: 'Disabled',
  DropNotification: 'Enabled',
  TraceNotification: 'Enabled',
  PolicyVerdictNotification: 'Enabled',
  PolicyAuditMode: 'Disabled',
  SourceIPVerification: 'Enabled',
  MonitorAggregationLevel: 'Medium',
};

/** `ns/name` of the endpoint's pod, when both are known. */
export function podKey(spec: Pick<EndpointSpec, 'podName' | 'namespace'>): string | undefined {
  return spec.podName && spec.namespace ? `${spec.namespace}/${spec.podName}` : undefined;
}

/** `<container-id>:<container-ifname>`, Cilium's CNI attachment ID, when both are known. */
export function cniAttachmentId(spec: Pick<EndpointSpec, 'containerId' | 'containerIfName'>): string | undefined {
  return spec.containerId && spec.containerIfName ? `${spec.containerId}:${spec.containerIfName}` : undefined;
}
