/**
 * Endpoint models in Cilium's shape (field names as in Cilium's OpenAPI spec): the change request
 * a CNI plugin sends with PUT /endpoint/{id}, and the Endpoint the API returns.
 */

/** Cilium's endpoint states. `not-ready` is reported (never stored) for a ready endpoint whose health is not OK. */
export type EndpointState =
  | 'waiting-for-identity'
  | 'not-ready'
  | 'waiting-to-regenerate'
  | 'regenerating'
  | 'restoring'
  | 'ready'
  | 'disconnecting'
  | 'disconnected'
  | 'invalid';

/** Addressing of an endpoint. */
export interface AddressPair {
  readonly ipv4?: string;
  readonly 'ipv4-expiration-uuid'?: string;
  readonly 'ipv4-pool-name'?: string;
  readonly ipv6?: string;
  readonly 'ipv6-expiration-uuid'?: string;
  readonly 'ipv6-pool-name'?: string;
}

/** Cilium's EndpointChangeRequest. */
export interface EndpointChangeRequest {
  readonly id?: number;
  readonly 'container-id'?: string;
  readonly 'container-name'?: string;
  readonly 'container-interface-name'?: string;
  readonly 'interface-name'?: string;
  readonly 'interface-index'?: number;
  readonly mac?: string;
  readonly 'host-mac'?: string;
  readonly addressing?: AddressPair;
  readonly 'k8s-pod-name'?: string;
  readonly 'k8s-namespace'?: string;
  readonly 'k8s-uid'?: string;
  readonly labels?: readonly string[];
  readonly state?: EndpointState;
  readonly 'sync-build-endpoint'?: boolean;
  readonly 'netns-cookie'?: string;
  readonly 'datapath-configuration'?: Readonly<Record<string, unknown>>;
  readonly properties?: Readonly<Record<string, unknown>>;
  readonly 'policy-enabled'?: boolean;
  readonly 'datapath-map-id'?: number;
  readonly 'disable-legacy-identifiers'?: boolean;
}

/** Cilium's Endpoint model (the subset we fill; every field name is Cilium's). */
export interface EndpointModel {
  readonly id: number;
  readonly spec: {
    readonly 'label-configuration'?: { readonly user?: readonly string[] };
    readonly options?: Readonly<Record<string, string>>;
  };
  readonly status: {
    readonly state: EndpointState;
    readonly identity?: { readonly id: number; readonly labels: readonly string[]; readonly labelsSHA256?: string };
    readonly labels: {
      readonly realized?: { readonly user?: readonly string[] };
      readonly 'security-relevant'?: readonly string[];
      readonly derived?: readonly string[];
      readonly disabled?: readonly string[];
    };
    readonly networking: {
      readonly addressing: readonly AddressPair[];
      readonly 'interface-name'?: string;
      readonly 'interface-index'?: number;
      readonly mac?: string;
      readonly 'host-mac'?: string;
      readonly 'container-interface-name'?: string;
    };
    readonly policy?: {
      readonly realized?: Readonly<Record<string, unknown>>;
      readonly spec?: Readonly<Record<string, unknown>>;
      readonly 'proxy-statistics'?: readonly unknown[];
    };
    readonly controllers?: readonly unknown[];
    readonly log?: readonly EndpointLogEntry[];
    readonly health?: EndpointHealth;
    readonly 'external-identifiers'?: Readonly<Record<string, unknown>>;
    readonly 'namedPorts'?: readonly unknown[];
  };
}

/** One entry of an endpoint's status log (Cilium's EndpointStatusChange). */
export interface EndpointLogEntry {
  readonly timestamp: string;
  readonly code: 'ok' | 'failed';
  readonly message: string;
  readonly state: EndpointState;
}

/** Cilium's EndpointHealth. */
export interface EndpointHealth {
  readonly bpf: 'OK' | 'Warning' | 'Failure' | 'Disabled';
  readonly policy: 'OK' | 'Warning' | 'Failure' | 'Disabled';
  readonly connected: boolean;
  readonly overallHealth: 'OK' | 'Warning' | 'Failure' | 'Disabled';
}
