/**
 * NetworkPolicy (networking.k8s.io/v1) -> one Cellium rule, with Kubernetes semantics as Cilium's
 * ParseNetworkPolicy gives them: the rule selects `spec.podSelector` in the policy's namespace;
 * a peer's podSelector alone selects pods of that namespace, a namespaceSelector (empty: every
 * namespace) selects pods by their namespace's labels, both in one peer must both hold; ipBlock is
 * a CIDR set with except; `from`/`to` absent or empty allow every peer, `ports` absent or empty
 * every port; a port's protocol defaults to TCP, no port means every port of the protocol, endPort
 * makes a range; policyTypes decide which directions the selected pods default-deny (absent:
 * Ingress, plus Egress when there are egress rules). A named port stays a name: on ingress the
 * policy cell resolves it per selected pod from its container ports, on egress per peer identity
 * from the node's named-port map (the destination pods' container ports).
 */
import { formatLabel } from '../../lib/labels.js';
import { cidrContains, formatCidr, parseCidr } from '../../lib/addr.js';
import { compileRule, isPortName, parsePolicyText, resourceLabels, validateSchema, type PolicyRule } from '../policy/index.js';
import { invalidObject, wrongKind } from './errors.js';
import { networkPolicySchema } from './schema.js';
import { ANY_POD, inNamespace, merged, NAMESPACE_LABELS_PREFIX, POD_PREFIX, prefixed, type RuleSelector } from './selectors.js';
import type { K8sLabelSelector, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicyRule, Translation } from './types.js';

type Dir = 'from' | 'to';
type Entry = Record<string, unknown>;

/** The origin labels of a policy object, as rule label strings. */
export function originLabels(kind: 'NetworkPolicy' | 'CiliumNetworkPolicy' | 'CiliumClusterwideNetworkPolicy', meta: { name: string; namespace?: string; uid?: string }): string[] {
  return resourceLabels({ kind, name: meta.name, ...(meta.namespace ? { namespace: meta.namespace } : {}), ...(meta.uid ? { uid: meta.uid } : {}) }).map(formatLabel);
}

/**
 * Translates a NetworkPolicy. Throws PolicyError naming the field (a JSON pointer into the object)
 * on anything invalid; the result's rules always import (they are compiled here once).
 */
export function translateNetworkPolicy(np: unknown): Translation {
  if (np === null || typeof np !== 'object') throw invalidObject('', `expected an object, got ${JSON.stringify(np)}`, 'give a NetworkPolicy object');
  if ((np as { kind?: unknown }).kind !== 'NetworkPolicy') throw wrongKind((np as { kind?: unknown }).kind, 'NetworkPolicy');
  validateSchema(networkPolicySchema, np);
  const { metadata, spec } = np as NetworkPolicy;
  checkSelectors(spec);
  const namespace = metadata.namespace ?? 'default';
  const origin = originLabels('NetworkPolicy', { ...metadata, namespace });
  const warnings: string[] = [];
  const given = spec.policyTypes?.length ? spec.policyTypes : undefined;
  const types = new Set(given ?? ['Ingress', ...(spec.egress?.length ? ['Egress' as const] : [])]);
  const rule: Entry = { endpointSelector: merged(prefixed(spec.podSelector, POD_PREFIX), inNamespace(namespace)) };
  for (const [field, dir, type] of [['ingress', 'from', 'Ingress'], ['egress', 'to', 'Egress']] as const) {
    const list = spec[field] ?? [];
    if (!types.has(type)) {
      if (list.length) warnings.push(`/spec/${field}: ignored, policyTypes does not list ${type}`);
      continue;
    }
    const entries = list.flatMap((r, i) => ruleEntries(r, dir, `/spec/${field}/${i}`, namespace));
    if (entries.length) rule[field] = entries;
  }
  rule.enableDefaultDeny = { ingress: types.has('Ingress'), egress: types.has('Egress') };
  rule.labels = origin;
  // compiled once here: what is returned always imports
  parsePolicyText(JSON.stringify([rule])).forEach((input, i) => compileRule(input, i + 1));
  return { rules: [rule as PolicyRule], origin, warnings };
}

/** Label selector expressions the schema cannot check: In/NotIn need values, Exists/DoesNotExist take none. */
function checkSelectors(spec: NetworkPolicy['spec']): void {
  const check = (sel: K8sLabelSelector | undefined, pointer: string) =>
    sel?.matchExpressions?.forEach((e, i) => {
      const n = e.values?.length ?? 0;
      const at = `${pointer}/matchExpressions/${i}/values`;
      if ((e.operator === 'In' || e.operator === 'NotIn') && n === 0) throw invalidObject(at, `operator ${e.operator} needs at least one value`, 'add values, or use Exists/DoesNotExist');
      if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && n > 0) throw invalidObject(at, `operator ${e.operator} takes no values`, 'remove values, or use In/NotIn');
    });
  check(spec.podSelector, '/spec/podSelector');
  for (const [field, dir] of [['ingress', 'from'], ['egress', 'to']] as const) {
    spec[field]?.forEach((r, i) =>
      r[dir]?.forEach((p, j) => {
        check(p.podSelector, `/spec/${field}/${i}/${dir}/${j}/podSelector`);
        check(p.namespaceSelector, `/spec/${field}/${i}/${dir}/${j}/namespaceSelector`);
      }),
    );
  }
}

/** The rule entries of one NetworkPolicy rule: one per peer (all sharing its ports). */
function ruleEntries(r: NetworkPolicyRule, dir: Dir, pointer: string, namespace: string): Entry[] {
  const toPorts = ports(r.ports ?? [], pointer);
  const peers = r[dir] ?? [];
  const l3: Entry[] = peers.length ? peers.map((p, j) => peerEntry(p, dir, `${pointer}/${dir}/${j}`, namespace)) : [{ [`${dir}Entities`]: ['all'] }];
  return l3.map((e) => (toPorts ? { ...e, toPorts } : e));
}

function peerEntry(p: NetworkPolicyPeer, dir: Dir, pointer: string, namespace: string): Entry {
  const selects = p.podSelector !== undefined || p.namespaceSelector !== undefined;
  if (p.ipBlock && selects) throw invalidObject(`${pointer}/ipBlock`, 'ipBlock together with podSelector or namespaceSelector', 'put the ipBlock in a peer of its own');
  if (p.ipBlock) return { [`${dir}CIDRSet`]: [ipBlock(p.ipBlock, `${pointer}/ipBlock`)] };
  if (!selects) throw invalidObject(pointer, 'a peer with neither podSelector, namespaceSelector nor ipBlock', 'give one of them ({} podSelector: every pod of the namespace)');
  const pods = prefixed(p.podSelector, POD_PREFIX);
  // a namespaceSelector selects pods only (ANY_POD): its NotIn/DoesNotExist must not reach world or host
  const sel: RuleSelector = p.namespaceSelector ? merged(merged(pods, prefixed(p.namespaceSelector, NAMESPACE_LABELS_PREFIX)), ANY_POD) : merged(pods, inNamespace(namespace));
  return { [`${dir}Endpoints`]: [sel] };
}

function ipBlock(b: NonNullable<NetworkPolicyPeer['ipBlock']>, pointer: string): { cidr: string; except?: string[] } {
  const cidr = checkedCidr(b.cidr, `${pointer}/cidr`);
  const except = (b.except ?? []).map((e, i) => {
    const text = checkedCidr(e, `${pointer}/except/${i}`);
    if (!cidrContains(parseCidr(cidr), parseCidr(text))) throw invalidObject(`${pointer}/except/${i}`, `${text} is not inside ${cidr}`, `give only prefixes inside ${cidr}`);
    return text;
  });
  return except.length ? { cidr, except } : { cidr };
}

function checkedCidr(text: string, pointer: string): string {
  try {
    return formatCidr(parseCidr(text));
  } catch (err) {
    throw invalidObject(pointer, (err as Error).message, 'write a CIDR such as 10.0.0.0/8 or 2001:db8::/32');
  }
}

/**
 * toPorts of a rule: undefined = every port. A named port stays a name (the policy cell resolves
 * it: per selected pod on ingress, per peer identity on egress).
 */
function ports(list: readonly NetworkPolicyPort[], pointer: string): Entry[] | undefined {
  if (list.length === 0) return undefined;
  const out: Entry[] = [];
  list.forEach((p, j) => {
    const at = `${pointer}/ports/${j}`;
    if (typeof p.port === 'string') {
      if (!isPortName(p.port)) throw invalidObject(`${at}/port`, `${JSON.stringify(p.port)} is not a port name`, 'give a number, or a name of at most 15 lowercase letters, digits and inner single dashes, with a letter (e.g. http)');
      if (p.endPort !== undefined) throw invalidObject(`${at}/endPort`, 'endPort with a named port', 'give port as a number, or drop endPort');
      out.push({ port: p.port, protocol: p.protocol ?? 'TCP' });
      return;
    }
    if (p.endPort !== undefined && p.port === undefined) throw invalidObject(`${at}/endPort`, 'endPort without port', 'set port to the first port of the range');
    if (p.endPort !== undefined && p.endPort < p.port!) throw invalidObject(`${at}/endPort`, `endPort ${p.endPort} is below port ${p.port}`, `set endPort >= ${p.port}`);
    out.push({ port: String(p.port ?? 0), protocol: p.protocol ?? 'TCP', ...(p.endPort !== undefined && p.endPort > p.port! ? { endPort: p.endPort } : {}) });
  });
  return [{ ports: out }];
}
