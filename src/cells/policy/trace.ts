/**
 * Policy trace: the verdict for traffic from one identity (or label set) to another on a port,
 * evaluated rule by rule with the same semantics as the map state, plus the rules that decided it
 * and a readable log (like `cilium policy trace`).
 */
import { Proto, type Direction } from '../../datapath/types.js';
import { makeIdentity, type Identity } from '../identity/index.js';
import { POD_NAMESPACE_KEY } from './compile.js';
import { invalidField } from './errors.js';
import { inRange, rangeOf } from './ports.js';
import { ruleName, type CompiledRule, type PortProto } from './rule.js';
import type { TraceDirection, TraceResult, TraceSection } from './types.js';

const NAMES: Record<number, string> = { 0: 'ANY', 1: 'ICMP', 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

/** A protocol name (TCP, UDP, SCTP, ICMP, ANY) or number -> its number. */
export function protocolNumber(protocol: string | number): number {
  if (typeof protocol === 'number' && Number.isInteger(protocol) && protocol >= 0 && protocol <= 255) return protocol;
  const n = (Proto as Record<string, number>)[String(protocol).toUpperCase()];
  if (n === undefined) throw invalidField('/protocol', `unknown protocol ${JSON.stringify(protocol)}`, 'use TCP, UDP, SCTP, ICMP or ANY');
  return n;
}

/**
 * The numbers a named port stands for in this trace (see TraceOptions.destinationPorts); a trace
 * without the destination's named ports resolves no name, so a named port never matches there.
 */
export type TraceNamedPorts = (name: string, protocol: number, dir: Direction) => readonly number[];

const NO_NAMES: TraceNamedPorts = () => [];

function portMatches(ports: readonly PortProto[], dport: number, proto: number, dir: Direction, named: TraceNamedPorts): boolean {
  return ports.length === 0 || ports.some((p) => (p.protocol === 0 || p.protocol === proto) &&
    (p.name !== undefined ? named(p.name, p.protocol, dir).includes(dport) : p.port === 0 || inRange(dport, rangeOf(p))));
}

function describePorts(ports: readonly PortProto[], dir: Direction, named: TraceNamedPorts | undefined): string {
  if (ports.length === 0) return 'any port';
  const proto = (p: PortProto) => NAMES[p.protocol] ?? String(p.protocol);
  return ports.map((p) => {
    if (p.name === undefined) return `${p.port === 0 ? 'any' : p.endPort ? `${p.port}-${p.endPort}` : p.port}/${proto(p)}`;
    if (!named) return `named port ${p.name} (resolved per endpoint)/${proto(p)}`;
    const nums = named(p.name, p.protocol, dir);
    const whose = dir === 'ingress' ? 'the destination declares' : 'the destination identity\'s endpoints declare';
    return nums.length ? `named port ${p.name} = ${nums.join(', ')}/${proto(p)}` : `named port ${p.name}/${proto(p)} (${whose} no port of that name)`;
  }).join(', ');
}

/** The derived label a namespaced policy's rules carry (`k8s:io.cilium.k8s.policy.namespace=NS`). */
const RULE_NAMESPACE_KEY = 'io.cilium.k8s.policy.namespace';

/**
 * When no rule selects `subject` and it has no namespace label: the namespaced rules that would
 * select it with one, as a hint naming the label to add (`-d k8s:io.kubernetes.pod.namespace=NS`).
 */
export function namespaceHint(all: readonly CompiledRule[], subject: Identity, flag: '--src' | '--dst'): string | undefined {
  if (subject.labelSet.some((l) => l.key === POD_NAMESPACE_KEY)) return undefined;
  const found = new Map<string, string[]>();
  for (const r of all) {
    for (const ns of r.labels.filter((l) => l.startsWith(`k8s:${RULE_NAMESPACE_KEY}=`)).map((l) => l.slice(l.indexOf('=') + 1))) {
      const withNs = makeIdentity(subject.id, [...subject.labelSet, { source: 'k8s', key: POD_NAMESPACE_KEY, value: ns }], subject.reserved);
      const policy = r.labels.find((l) => l.startsWith('k8s:io.cilium.k8s.policy.name='))?.slice('k8s:io.cilium.k8s.policy.name='.length);
      if (r.subject.matches(withNs)) found.set(ns, [...new Set([...(found.get(ns) ?? []), policy ? `policy ${policy}` : ruleName(r)])]);
    }
  }
  if (found.size === 0) return undefined;
  const which = flag === '--dst' ? 'destination' : 'source';
  const [ns, rules] = [...found.entries()][0]!;
  return `  Hint: the ${which} has no namespace label, and ${rules.join(', ')} (namespace ${ns}) would select it: add ${flag} k8s:${POD_NAMESPACE_KEY}=${ns}` +
    (found.size > 1 ? ` (rules of namespaces ${[...found.keys()].slice(1).join(', ')} would too)` : '');
}

function direction(dir: Direction, rules: readonly CompiledRule[], peer: Identity, dport: number, proto: number, log: string[], named: TraceNamedPorts | undefined, hint?: () => string | undefined): TraceDirection {
  const enforced = rules.some((r) => r.defaultDeny[dir]);
  const allows: string[] = [];
  const denies: string[] = [];
  const sections: TraceSection[] = [];
  for (const r of rules) {
    log.push(`  * Rule ${ruleName(r)}: selected`);
    for (const s of r.sections) {
      if (s.direction !== dir) continue;
      const peerHit = s.peers.some((p) => p.matches(peer));
      const portHit = portMatches(s.ports, dport, proto, dir, named ?? NO_NAMES);
      const ports = describePorts(s.ports, dir, named);
      const peers = s.peers.map((p) => p.key);
      const what = `${s.deny ? 'denies' : 'allows'} ${dir === 'ingress' ? 'from' : 'to'} [${peers.join(' | ') || 'nothing'}] on ${ports}`;
      log.push(`      ${s.pointer}: ${what}: ${peerHit && portHit ? 'MATCH' : peerHit ? 'peer matches, port does not' : 'peer does not match'}`);
      sections.push({ rule: ruleName(r), pointer: s.pointer, deny: s.deny, peers, ports, peerMatches: peerHit, portMatches: portHit });
      if (peerHit && portHit) (s.deny ? denies : allows).push(ruleName(r));
    }
  }
  const uniq = (xs: string[]) => [...new Set(xs)];
  if (rules.length === 0) {
    log.push(`  No rule selects the ${dir === 'ingress' ? 'destination' : 'source'}`);
    const h = hint?.();
    if (h) log.push(h);
  }
  const verdict = denies.length ? 'denied' : allows.length ? 'allowed' : enforced ? 'denied' : 'allowed';
  const decided = denies.length ? uniq(denies) : uniq(allows);
  const why = denies.length ? 'a deny rule matches' : allows.length ? 'an allow rule matches' : enforced ? 'default deny: no rule allows it' : `${dir} is not enforced`;
  log.push(`${dir === 'ingress' ? 'Ingress' : 'Egress'} verdict: ${verdict} (${why})`);
  return { verdict, enforced, rules: decided, selecting: rules.map(ruleName), sections };
}

/**
 * Traces src -> dst on dport/proto; `rulesFor` gives the rules selecting an identity, in order;
 * `all` (every rule) lets the log hint at a missing namespace label when no rule selects a side;
 * `named` resolves named ports (without it a name never matches: a trace of identities alone).
 */
export function tracePolicy(rulesFor: (id: Identity) => readonly CompiledRule[], src: Identity, dst: Identity, dport: number, protocol: string | number, all: readonly CompiledRule[] = [], named?: TraceNamedPorts): TraceResult {
  if (!(Number.isInteger(dport) && dport >= 0 && dport <= 65535)) throw invalidField('/dport', `${dport} is not a port`, 'give 0-65535');
  const proto = protocolNumber(protocol);
  const log: string[] = [];
  const show = (i: Identity) => `${i.id > 0 ? `identity ${i.id} ` : ''}[${i.labels.join(', ')}]`;
  log.push(`Tracing From: ${show(src)} => To: ${show(dst)} Ports: [${dport}/${NAMES[proto] ?? proto}]`);
  log.push(`Egress from the source:`);
  const egress = direction('egress', rulesFor(src), dst, dport, proto, log, named, () => namespaceHint(all, src, '--src'));
  log.push(`Ingress to the destination:`);
  const ingress = direction('ingress', rulesFor(dst), src, dport, proto, log, named, () => namespaceHint(all, dst, '--dst'));
  const verdict = egress.verdict === 'allowed' && ingress.verdict === 'allowed' ? 'allowed' : 'denied';
  log.push(`Final verdict: ${verdict.toUpperCase()}`);
  return { verdict, ingress, egress, log };
}
