/**
 * Compiles validated rule specs: selectors (with the namespace of a CiliumNetworkPolicy added to
 * its endpointSelector and to peer selectors that name no namespace), Cilium's derived rule labels,
 * ports expanded to protocol/port keys, CIDRs checked. Errors name the field and the fix.
 */
import type { Direction } from '../../datapath/types.js';
import { cidrContains, formatCidr, parseCidr } from '../../lib/addr.js';
import { formatLabel, parseLabel, sortLabels, type Label } from '../../lib/labels.js';
import { ENTITIES } from './entities.js';
import { invalidField } from './errors.js';
import type { RuleInput, RuleSource } from './parse.js';
import { parsePorts } from './port-rules.js';
import type { CompiledRule, Section } from './rule.js';
import { cidrSelector, hasRequirementOn, ipBlockSelector, labelSelector, requirement, WILDCARD, type Operator, type Requirement, type Selector } from './selector.js';

/** The namespace label of pods (Cilium's `k8s:io.kubernetes.pod.namespace`). */
export const POD_NAMESPACE_KEY = 'io.kubernetes.pod.namespace';

interface RawSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: Operator; values?: string[] }[];
}

interface RawCIDRRule {
  cidr: string;
  except?: string[];
}

interface RawPeerRule {
  fromEndpoints?: RawSelector[];
  toEndpoints?: RawSelector[];
  fromEntities?: string[];
  toEntities?: string[];
  fromCIDR?: string[];
  toCIDR?: string[];
  fromCIDRSet?: RawCIDRRule[];
  toCIDRSet?: RawCIDRRule[];
  toPorts?: { ports?: { port: string | number; endPort?: number; protocol?: string }[] }[];
}

/** Cilium's derived labels of a policy resource (pkg/policy/utils GetPolicyLabels). */
export function resourceLabels(src: RuleSource): Label[] {
  const k8s = (key: string, value: string): Label => ({ source: 'k8s', key: `io.cilium.k8s.policy.${key}`, value });
  return [
    k8s('derived-from', src.kind),
    k8s('name', src.name),
    ...(src.namespace ? [k8s('namespace', src.namespace)] : []),
    ...(src.uid ? [k8s('uid', src.uid)] : []),
  ];
}

function ruleLabels(input: RuleInput): string[] {
  const raw = (input.spec.labels as (string | { key: string; value?: string; source?: string })[] | undefined) ?? [];
  const own = raw.map((l, i) => {
    if (typeof l !== 'string') return { source: l.source || 'unspec', key: l.key, value: l.value ?? '' };
    try {
      return parseLabel(l);
    } catch (err) {
      throw invalidField(`${input.pointer}/labels/${i}`, (err as Error).message, 'write labels as source:key=value (e.g. k8s:team=a)');
    }
  });
  const all = [...(input.resource ? resourceLabels(input.resource) : []), ...own];
  const byKey = new Map(all.map((l) => [`${l.source}:${l.key}`, l]));
  return sortLabels([...byKey.values()]).map(formatLabel);
}

function selectorRequirements(raw: RawSelector, pointer: string): Requirement[] {
  const reqs = Object.entries(raw.matchLabels ?? {}).map(([k, v]) => requirement(k, 'In', [v]));
  (raw.matchExpressions ?? []).forEach((e, i) => {
    const at = `${pointer}/matchExpressions/${i}`;
    const values = e.values ?? [];
    if ((e.operator === 'In' || e.operator === 'NotIn') && values.length === 0) {
      throw invalidField(`${at}/values`, `operator ${e.operator} needs at least one value`, 'add values, or use Exists/DoesNotExist');
    }
    if ((e.operator === 'Exists' || e.operator === 'DoesNotExist') && values.length > 0) {
      throw invalidField(`${at}/values`, `operator ${e.operator} takes no values`, 'remove values, or use In/NotIn');
    }
    reqs.push(requirement(e.key, e.operator, values));
  });
  return reqs;
}

function namespaceReq(ns: string): Requirement {
  return requirement(`k8s:${POD_NAMESPACE_KEY}`, 'In', [ns]);
}

/** Adds the namespace to a selector of our own copy of the spec, so stored rules show what they select. */
function pinNamespace(raw: RawSelector, ns: string): void {
  raw.matchLabels = { ...raw.matchLabels, [`k8s:${POD_NAMESPACE_KEY}`]: ns };
}

function subjectSelector(input: RuleInput, spec: Record<string, unknown>): Selector {
  const raw = spec.endpointSelector as RawSelector;
  const reqs = selectorRequirements(raw, `${input.pointer}/endpointSelector`);
  const ns = input.resource?.namespace;
  if (ns) pinNamespace(raw, ns);
  return labelSelector(ns ? [...reqs, namespaceReq(ns)] : reqs);
}

function peerEndpointSelector(raw: RawSelector, pointer: string, ns: string | undefined): Selector {
  const reqs = selectorRequirements(raw, pointer);
  const scoped = ns && !hasRequirementOn(reqs, POD_NAMESPACE_KEY) && !reqs.some((r) => r.source === 'reserved');
  if (!scoped) return labelSelector(reqs);
  pinNamespace(raw, ns);
  return labelSelector([...reqs, namespaceReq(ns)]);
}


/**
 * The label Cilium puts on the rules of a Kubernetes NetworkPolicy: their CIDR sets are ipBlocks,
 * which select pods by address too (ipBlockSelector), in allow sections (a NetworkPolicy has no deny).
 */
const FROM_NETWORK_POLICY = 'k8s:io.cilium.k8s.policy.derived-from=NetworkPolicy';

function compileSection(raw: RawPeerRule, pointer: string, direction: Direction, deny: boolean, ns: string | undefined, cidrs: Set<string>, ipBlocks: boolean): Section {
  const dir = direction === 'ingress' ? 'from' : 'to';
  const endpoints = raw[`${dir}Endpoints`];
  const entities = raw[`${dir}Entities`];
  const cidrList = raw[`${dir}CIDR`];
  const peers: Selector[] = [];
  endpoints?.forEach((s, i) => peers.push(peerEndpointSelector(s, `${pointer}/${dir}Endpoints/${i}`, ns)));
  entities?.forEach((e) => peers.push(ENTITIES[e]!));
  cidrList?.forEach((c, i) => peers.push(cidrSelector(checkCidr(c, `${pointer}/${dir}CIDR/${i}`, cidrs))));
  const cidrSet = raw[`${dir}CIDRSet`];
  cidrSet?.forEach((r, i) => peers.push(cidrRuleSelector(r, `${pointer}/${dir}CIDRSet/${i}`, cidrs, ipBlocks && !deny)));
  const ports = parsePorts(raw.toPorts, pointer);
  const noL3 = endpoints === undefined && entities === undefined && cidrList === undefined && cidrSet === undefined;
  // An entry with ports but no peer field allows those ports from/to everyone (an L4-only rule).
  if (noL3 && ports.length > 0) peers.push(WILDCARD);
  return { direction, deny, peers: dedupe(peers), ports, pointer };
}

/** A CIDR in canonical form, recorded in `cidrs` (it needs a CIDR identity) unless it is /0. */
function checkCidr(c: string, pointer: string, cidrs: Set<string>): string {
  let text: string;
  try {
    text = formatCidr(parseCidr(c));
  } catch (err) {
    throw invalidField(pointer, (err as Error).message, 'write a CIDR such as 10.0.0.0/8 or 2001:db8::/32');
  }
  if (!text.endsWith('/0')) cidrs.add(text);
  return text;
}

/** A CIDRSet entry: its except prefixes must lie inside its cidr, and get CIDR identities too. */
function cidrRuleSelector(r: RawCIDRRule, pointer: string, cidrs: Set<string>, ipBlock: boolean): Selector {
  const outer = checkCidr(r.cidr, `${pointer}/cidr`, cidrs);
  const except = (r.except ?? []).map((e, i) => {
    const at = `${pointer}/except/${i}`;
    const text = checkCidr(e, at, cidrs);
    if (!cidrContains(parseCidr(outer), parseCidr(text))) throw invalidField(at, `${text} is not inside ${outer}`, `give only prefixes inside ${outer}, or drop them`);
    return text;
  });
  return ipBlock ? ipBlockSelector(outer, except) : cidrSelector(outer, except);
}

function dedupe(sels: Selector[]): Selector[] {
  return [...new Map(sels.map((s) => [s.key, s])).values()];
}

/** Compiles one validated input into a rule with sequence number `seq`. */
export function compileRule(input: RuleInput, seq: number): CompiledRule {
  // our own copy: namespaces are pinned into its selectors, and it is what `get` returns
  const spec = structuredClone(input.spec) as Record<string, unknown>;
  const ns = input.resource?.namespace;
  const cidrs = new Set<string>();
  const sections: Section[] = [];
  const labels = ruleLabels(input);
  const ipBlocks = labels.includes(FROM_NETWORK_POLICY);
  const parts: [keyof typeof spec, Direction, boolean][] = [['ingress', 'ingress', false], ['ingressDeny', 'ingress', true], ['egress', 'egress', false], ['egressDeny', 'egress', true]];
  for (const [field, direction, deny] of parts) {
    ((spec[field] as RawPeerRule[] | undefined) ?? []).forEach((r, i) => sections.push(compileSection(r, `${input.pointer}/${String(field)}/${i}`, direction, deny, ns, cidrs, ipBlocks)));
  }
  const dd = (spec.enableDefaultDeny as { ingress?: boolean; egress?: boolean } | undefined) ?? {};
  const has = (f: string) => ((spec[f] as unknown[] | undefined)?.length ?? 0) > 0;
  return {
    seq,
    labels,
    subject: subjectSelector(input, spec),
    sections,
    defaultDeny: { ingress: dd.ingress ?? (has('ingress') || has('ingressDeny')), egress: dd.egress ?? (has('egress') || has('egressDeny')) },
    namedPorts: sections.some((s) => s.direction === 'ingress' && s.ports.some((p) => p.name !== undefined)),
    egressPortNames: [...new Set(sections.filter((s) => s.direction === 'egress').flatMap((s) => s.ports.flatMap((p) => (p.name === undefined ? [] : [p.name]))))].sort(),
    cidrs: [...cidrs],
    raw: Object.freeze({ ...spec, labels }),
  };
}
