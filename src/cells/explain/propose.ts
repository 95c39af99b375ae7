/**
 * The smallest policy that allows exactly one flow: per denied direction, one rule selecting the
 * direction's subject by its identity labels (the destination for ingress, the source for egress),
 * allowing the peer by its identity labels (or its entity, or its CIDR) on the flow's port and
 * protocol. As a CiliumNetworkPolicy (a CiliumClusterwideNetworkPolicy for a subject without a
 * namespace), or as a Kubernetes NetworkPolicy where one can say it. Nothing here decides whether
 * the proposal works: the explainer checks it with a trace.
 */
import { POD_NAMESPACE_KEY } from '../policy/index.js';
import { NAMESPACE_LABELS_PREFIX } from '../policy-k8s/index.js';
import type { DroppedFlow, FlowSide } from './types.js';

/** Policy objects for one flow, or why the format cannot say it. */
export type Proposed = { readonly objects: Record<string, unknown>[] } | { readonly unexpressible: string };

type Dir = 'ingress' | 'egress';

const NS_LABEL = `k8s:${POD_NAMESPACE_KEY}=`;

/** Reserved identity label → entity name (fromEntities/toEntities). */
const ENTITY_OF: Readonly<Record<string, string>> = {
  'reserved:host': 'host', 'reserved:world': 'world', 'reserved:world-ipv4': 'world-ipv4', 'reserved:world-ipv6': 'world-ipv6',
  'reserved:remote-node': 'remote-node', 'reserved:health': 'health', 'reserved:init': 'init', 'reserved:unmanaged': 'unmanaged',
  'reserved:kube-apiserver': 'kube-apiserver', 'reserved:ingress': 'ingress',
};

/** The namespace of a side: its pod namespace label, else what the flow said. */
export function sideNamespace(s: FlowSide): string | undefined {
  return s.labels.find((l) => l.startsWith(NS_LABEL))?.slice(NS_LABEL.length) ?? s.namespace;
}

function split(label: string): { source: string; key: string; value: string } {
  const colon = label.indexOf(':');
  const eq = label.indexOf('=', colon + 1);
  return { source: label.slice(0, colon), key: label.slice(colon + 1, eq < 0 ? undefined : eq), value: eq < 0 ? '' : label.slice(eq + 1) };
}

/**
 * matchLabels of a side's identity labels: Kubernetes labels by their key (as people write them),
 * others with their source (`container:x`); the pod namespace label and the namespace's own labels
 * left out (a namespaced policy restricts its subject to its namespace; a peer gets its namespace
 * added by the caller).
 */
function matchLabels(s: FlowSide): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of [...s.labels].sort()) {
    const { source, key, value } = split(l);
    if (key === POD_NAMESPACE_KEY || `${source}:${key}`.startsWith(NAMESPACE_LABELS_PREFIX)) continue;
    out[source === 'k8s' ? key : `${source}:${key}`] = value;
  }
  return out;
}

/** The peer as a Cilium rule entry: entity, CIDR or endpoints with its namespace. */
function ciliumPeer(peer: FlowSide, dir: Dir): Record<string, unknown> {
  const suffix = dir === 'ingress' ? 'from' : 'to';
  const entity = peer.labels.map((l) => ENTITY_OF[l]).find((e) => e !== undefined);
  const cidr = peer.labels.filter((l) => l.startsWith('cidr:')).map((l) => l.slice(5)).sort((a, b) => Number(b.split('/')[1]) - Number(a.split('/')[1]))[0];
  if (cidr) return { [`${suffix}CIDR`]: [cidr] };
  if (entity) return { [`${suffix}Entities`]: [entity] };
  const ns = sideNamespace(peer);
  return { [`${suffix}Endpoints`]: [{ matchLabels: { ...matchLabels(peer), ...(ns ? { [`k8s:${POD_NAMESPACE_KEY}`]: ns } : {}) } }] };
}

function portLabel(f: DroppedFlow): string {
  return f.protocol === 'ICMP' ? 'icmp' : `${f.port}-${(f.protocol ?? 'any').toLowerCase()}`;
}

/** A DNS-1123 name for the policy: `explain-allow-<src>-to-<dst>-<port>-<proto>[-egress]`, at most 63 characters. */
export function policyName(f: DroppedFlow, dir: Dir): string {
  const who = (s: FlowSide) => (s.pod?.split('/').pop() ?? (s.labels.map((l) => ENTITY_OF[l]).find(Boolean) ?? `id${s.identity}`));
  const raw = `explain-allow-${who(f.source)}-to-${who(f.destination)}-${portLabel(f)}${dir === 'egress' ? '-egress' : ''}`;
  const clean = raw.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-');
  return clean.length <= 63 ? clean.replace(/-$/, '') : `${clean.slice(0, 54).replace(/-$/, '')}-${hash(clean)}`;
}

function hash(s: string): string {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return h.toString(16).padStart(8, '0');
}

function flowText(f: DroppedFlow): string {
  const who = (s: FlowSide) => s.pod ?? s.ip ?? `identity ${s.identity}`;
  return `${who(f.source)} -> ${who(f.destination)} on ${f.protocol === 'ICMP' ? 'ICMP' : `${f.port}/${f.protocol}`}`;
}

/** Why a flow's L4 cannot be allowed by port, or undefined when it can. */
function l4Problem(f: DroppedFlow): string | undefined {
  if (f.protocol === undefined) return 'the flow has no L4 protocol the datapath decoded, so no port rule can name it';
  if (f.protocol === 'ICMPv6') return 'ICMPv6 cannot be named in toPorts (protocols TCP, UDP, SCTP, ICMP, ANY)';
  return undefined;
}

/** The CiliumNetworkPolicy (or clusterwide policy) objects allowing `f` in the `dirs` that denied it. */
export function ciliumProposal(f: DroppedFlow, dirs: readonly Dir[]): Proposed {
  const problem = l4Problem(f);
  if (problem) return { unexpressible: problem };
  const objects = dirs.map((dir) => {
    const subject = dir === 'ingress' ? f.destination : f.source;
    const peer = dir === 'ingress' ? f.source : f.destination;
    if (subject.labels.some((l) => l.startsWith('reserved:') || l.startsWith('cidr:'))) return undefined;
    const ns = sideNamespace(subject);
    const ports = [{ port: String(f.port), protocol: f.protocol }];
    const spec = {
      description: `allows ${flowText(f)} (cellium explain${f.uuid ? ` of flow ${f.uuid}` : ''})`,
      endpointSelector: { matchLabels: matchLabels(subject) },
      [dir]: [{ ...ciliumPeer(peer, dir), toPorts: [{ ports }] }],
    };
    return ns
      ? { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy', metadata: { name: policyName(f, dir), namespace: ns }, spec }
      : { apiVersion: 'cilium.io/v2', kind: 'CiliumClusterwideNetworkPolicy', metadata: { name: policyName(f, dir) }, spec };
  });
  if (objects.some((o) => o === undefined)) {
    return { unexpressible: 'the side whose policy denied it is not an endpoint (a reserved or CIDR identity such as the host or world): a policy selects endpoints only' };
  }
  return { objects: objects as Record<string, unknown>[] };
}

function k8sLabels(s: FlowSide, what: string): Record<string, string> | string {
  const m = matchLabels(s);
  const foreign = Object.keys(m).find((k) => k.includes(':'));
  return foreign ? `the ${what}'s label ${foreign}=${m[foreign]} is not a Kubernetes label, which a NetworkPolicy selector cannot name` : m;
}

/** The NetworkPolicy objects allowing `f` in the `dirs` that denied it, or why a NetworkPolicy cannot say it. */
export function k8sProposal(f: DroppedFlow, dirs: readonly Dir[]): Proposed {
  const problem = l4Problem(f) ?? (f.protocol === 'ICMP' ? 'a NetworkPolicy names TCP, UDP and SCTP ports only, not ICMP' : undefined);
  if (problem) return { unexpressible: problem };
  const objects: Record<string, unknown>[] = [];
  for (const dir of dirs) {
    const subject = dir === 'ingress' ? f.destination : f.source;
    const peer = dir === 'ingress' ? f.source : f.destination;
    const ns = sideNamespace(subject);
    if (!ns) return { unexpressible: `the ${dir === 'ingress' ? 'destination' : 'source'} has no namespace, and a NetworkPolicy is namespaced` };
    const sel = k8sLabels(subject, dir === 'ingress' ? 'destination' : 'source');
    if (typeof sel === 'string') return { unexpressible: sel };
    let peerEntry: Record<string, unknown>;
    const cidr = peer.labels.find((l) => l.startsWith('cidr:'));
    if (cidr) peerEntry = { ipBlock: { cidr: cidr.slice(5) } };
    else if (peer.labels.some((l) => l.startsWith('reserved:'))) {
      return { unexpressible: `the peer is the reserved identity ${peer.labels.find((l) => l.startsWith('reserved:'))}, which a NetworkPolicy cannot name (it has pods, namespaces and IP blocks only); use --format cilium (fromEntities/toEntities)` };
    } else {
      const pl = k8sLabels(peer, dir === 'ingress' ? 'source' : 'destination');
      if (typeof pl === 'string') return { unexpressible: pl };
      const peerNs = sideNamespace(peer);
      if (!peerNs) return { unexpressible: 'the peer has no namespace, and a NetworkPolicy selects pods by namespace' };
      peerEntry = { podSelector: { matchLabels: pl }, ...(peerNs === ns ? {} : { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': peerNs } } }) };
    }
    const type = dir === 'ingress' ? 'Ingress' : 'Egress';
    objects.push({
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: policyName(f, dir), namespace: ns },
      spec: { podSelector: { matchLabels: sel }, policyTypes: [type], [dir]: [{ [dir === 'ingress' ? 'from' : 'to']: [peerEntry], ports: [{ protocol: f.protocol, port: f.port }] }] },
    });
  }
  return { objects };
}
