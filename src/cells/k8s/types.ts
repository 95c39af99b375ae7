/**
 * The parts of the Kubernetes objects the agent reads (Pods, Namespaces, Nodes, Services,
 * EndpointSlices, NetworkPolicies, Cilium's policies), as the apiserver sends them in JSON.
 * Fields the agent does not read are left out; objects keep them at run time.
 */
import type { K8sObject } from './resource.js';

/** metadata with labels and annotations. */
export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** A labelled object. */
export interface LabelledObject extends K8sObject {
  readonly metadata?: ObjectMeta;
}

/** A core/v1 Pod. */
export interface Pod extends LabelledObject {
  readonly spec?: {
    readonly nodeName?: string;
    readonly serviceAccountName?: string;
    readonly hostNetwork?: boolean;
    readonly containers?: readonly PodContainer[];
  };
  readonly status?: { readonly phase?: string; readonly podIP?: string; readonly podIPs?: readonly { readonly ip: string }[] };
}

/** A container of a Pod, as far as policy reads it: its ports (named ones resolve NetworkPolicy named ports). */
export interface PodContainer {
  readonly name?: string;
  readonly ports?: readonly { readonly name?: string; readonly containerPort: number; readonly protocol?: string }[];
}

/** A core/v1 Namespace. */
export type Namespace = LabelledObject;

/** A core/v1 Node. */
export interface Node extends LabelledObject {
  readonly spec?: { readonly podCIDR?: string; readonly podCIDRs?: readonly string[] };
  readonly status?: { readonly addresses?: readonly { readonly type: string; readonly address: string }[] };
}

/** A core/v1 Service. */
export interface Service extends LabelledObject {
  readonly spec?: {
    readonly type?: string;
    readonly clusterIP?: string;
    readonly clusterIPs?: readonly string[];
    readonly selector?: Readonly<Record<string, string>>;
    readonly ports?: readonly { readonly name?: string; readonly protocol?: string; readonly port: number; readonly targetPort?: number | string; readonly nodePort?: number }[];
  };
}

/** A discovery.k8s.io/v1 EndpointSlice. */
export interface EndpointSlice extends LabelledObject {
  readonly addressType?: string;
  readonly endpoints?: readonly { readonly addresses: readonly string[]; readonly conditions?: { readonly ready?: boolean; readonly serving?: boolean; readonly terminating?: boolean }; readonly nodeName?: string }[];
  readonly ports?: readonly { readonly name?: string; readonly protocol?: string; readonly port?: number }[];
}

/** A networking.k8s.io/v1 NetworkPolicy (its spec is read by the policy translation). */
export interface NetworkPolicy extends LabelledObject {
  readonly spec?: Readonly<Record<string, unknown>>;
}

/** A cilium.io/v2 CiliumNetworkPolicy or CiliumClusterwideNetworkPolicy (`spec` or `specs`). */
export interface CiliumNetworkPolicy extends LabelledObject {
  readonly spec?: Readonly<Record<string, unknown>>;
  readonly specs?: readonly Readonly<Record<string, unknown>>[];
}

/**
 * A cilium.io/v2 CiliumEndpoint as the named-port map reads those of other nodes: the node that
 * owns it, its security identity and its named ports (its status is checked where it is read: other
 * agents write it).
 */
export interface CiliumEndpointObject extends LabelledObject {
  readonly status?: Readonly<Record<string, unknown>>;
}
