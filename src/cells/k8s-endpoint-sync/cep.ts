/**
 * The CiliumEndpoint (cilium.io/v2, deploy/crds/ciliumendpoints.yaml) of a pod endpoint, as
 * Cilium's GetCiliumEndpointStatus fills it: the endpoint id, its security identity (id and
 * labels), its addresses and node, its named container ports (`named-ports`: other nodes resolve
 * named egress ports against them), the policy enforcement per direction, its state (compressed as
 * Cilium does: every state of a working endpoint is `ready`, so a regeneration writes nothing) and
 * its health. Named after the pod, in the pod's namespace, owner-referenced to the Pod (its uid),
 * and carrying the pod's labels (Cilium mirrors them for label selection of CiliumEndpoints).
 */
import type { EndpointModel, EndpointView } from '../endpoint/index.js';
import type { Pod } from '../k8s/index.js';

/** The API group/version and collection of CiliumEndpoints. */
export const CEP_API_VERSION = 'cilium.io/v2';

/** Cilium's EndpointPolicyDirection (the parts written). */
export interface CepPolicyDirection {
  readonly enforcing: boolean;
  /** `enforcing` or `non-enforcing` (Cilium's EndpointPolicyState). */
  readonly state: 'enforcing' | 'non-enforcing';
}

/** A named port as a CiliumEndpoint carries it (Cilium's models.Port: protocol TCP, UDP or SCTP). */
export interface CepNamedPort {
  readonly name: string;
  readonly port: number;
  readonly protocol: string;
}

/** Cilium's cilium.io/v2 EndpointStatus (the fields Cellium writes, Cilium's names). */
export interface CepStatus {
  readonly id: number;
  readonly identity?: { readonly id: number; readonly labels: readonly string[] };
  readonly networking: { readonly addressing: readonly { readonly ipv4?: string; readonly ipv6?: string }[]; readonly node: string };
  readonly 'external-identifiers': Readonly<Record<string, string>>;
  readonly 'named-ports'?: readonly CepNamedPort[];
  readonly policy: { readonly ingress: CepPolicyDirection; readonly egress: CepPolicyDirection };
  readonly state: string;
  readonly health?: Readonly<Record<string, unknown>>;
  readonly 'service-account'?: string;
}

/** An owner reference to a Pod. */
export interface PodOwnerReference {
  readonly apiVersion: 'v1';
  readonly kind: 'Pod';
  readonly name: string;
  readonly uid: string;
}

/** A CiliumEndpoint as read from the apiserver (the fields read). */
export interface CiliumEndpoint {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly resourceVersion?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly ownerReferences?: readonly { readonly kind?: string; readonly name?: string; readonly uid?: string }[];
  };
  readonly status?: Partial<CepStatus>;
}

/** The states Cilium reports as `ready` in a CiliumEndpoint (compressEndpointState). */
const READY_STATES = new Set(['restoring', 'waiting-to-regenerate', 'regenerating', 'ready', 'disconnecting', 'disconnected']);

function direction(enforcing: boolean): CepPolicyDirection {
  return { enforcing, state: enforcing ? 'enforcing' : 'non-enforcing' };
}

/** The status of `ep`'s CiliumEndpoint; `nodeIP` is this node's address, `pod` its Pod (service account). */
export function cepStatus(ep: EndpointView, nodeIP: string, pod?: Pod): CepStatus {
  const m: EndpointModel = ep.toModel();
  const s = m.status;
  const enabled = String(s.policy?.realized?.['policy-enabled'] ?? 'none');
  const ext = s['external-identifiers'] ?? {};
  const ids: Record<string, string> = {};
  for (const k of ['container-id', 'k8s-namespace', 'k8s-pod-name', 'pod-name'] as const) {
    const v = ext[k];
    if (typeof v === 'string' && v) ids[k] = v;
  }
  const addr = s.networking.addressing[0] ?? {};
  const sa = pod?.spec?.serviceAccountName;
  const named = (s.namedPorts ?? []) as readonly CepNamedPort[];
  return {
    id: m.id,
    ...(s.identity ? { identity: { id: s.identity.id, labels: [...s.identity.labels].sort() } } : {}),
    networking: { addressing: [{ ...(addr.ipv4 ? { ipv4: addr.ipv4 } : {}), ...(addr.ipv6 ? { ipv6: addr.ipv6 } : {}) }], node: nodeIP },
    'external-identifiers': ids,
    ...(named.length ? { 'named-ports': named.map((p) => ({ name: p.name, port: p.port, protocol: p.protocol })) } : {}),
    policy: { ingress: direction(enabled === 'both' || enabled === 'ingress'), egress: direction(enabled === 'both' || enabled === 'egress') },
    state: READY_STATES.has(s.state) ? 'ready' : s.state,
    ...(s.health ? { health: { ...s.health } } : {}),
    ...(sa ? { 'service-account': sa } : {}),
  };
}

/** The owner reference of a CiliumEndpoint to its Pod. */
export function podOwner(pod: Pod): PodOwnerReference | undefined {
  const name = pod.metadata?.name;
  const uid = pod.metadata?.uid;
  return name && uid ? { apiVersion: 'v1', kind: 'Pod', name, uid } : undefined;
}

/** The uid of the Pod a CiliumEndpoint is owned by (undefined when it names none). */
export function ownerPodUid(cep: CiliumEndpoint): string | undefined {
  return cep.metadata.ownerReferences?.find((o) => o.kind === 'Pod')?.uid;
}

/** A new CiliumEndpoint for `pod` with `status`. */
export function newCep(pod: Pod, owner: PodOwnerReference, status: CepStatus): CiliumEndpoint & { status: CepStatus } {
  return {
    apiVersion: CEP_API_VERSION,
    kind: 'CiliumEndpoint',
    metadata: { name: owner.name, namespace: pod.metadata?.namespace, labels: { ...pod.metadata?.labels }, ownerReferences: [owner] },
    status,
  };
}
