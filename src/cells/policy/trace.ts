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
import type { TraceResult } from './types.js';

type DirVerdict = TraceResult['ingress'];

const NAMES: Record<number, string> = { 0: 'ANY', 1: 'ICMP', 6: 'TCP', 17: 'UDP', 132: 'SCTP' };

/** A protocol name (TCP, UDP, SCTP, ICMP, ANY) or number -> its number. */
export function protocolNumber(protocol: string | number): number {
  if (typeof protocol === 'number' && Number.isInteger(protocol) && protocol >= 0 && protocol <= 255) return protocol;
  const n = (Proto as Record<string, number>)[String(protocol).toUpperCase()];
  if (n === undefined) throw invalidField('/protocol', `unknown protocol ${JSON.stringify(protocol)}`, 'use TCP, UDP, SCTP, ICMP or ANY');
  return n;
}

/** Named ports never match here: a trace has identities, not endpoints with container ports. */
function portMatches(ports: readonly PortProto[], dport: number, proto: number): boolean {
  return ports.length === 0 || ports.some((p) => p.name === undefined && (p.protocol === 0 || p.protocol === proto) && (p.port === 0 || inRange(dport, rangeOf(p))));
}

function describePorts(ports: readonly PortProto[]): string {
  if (ports.length === 0) return 'any port';
  return ports.map((p) => `${p.name !== undefined ? `named port ${p.name} (resolved per endpoint)` : p.port === 0 ? 'any' : p.endPort ? `${p.port}-${p.endPort}` : p.port}/${NAMES[p.protocol] ?? p.protocol}`).join(', ');
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

function direction(dir: Direction, rules: readonly CompiledRule[], peer: Identity, dport: number, proto: number, log: string[], hint?: () => string | undefined): DirVerdict {
  const enforced = rules.some((r) => r.defaultDeny[dir]);
  const allows: string[] = [];
  const denies: string[] = [];
  for (const r of rules) {
    log.push(`  * Rule ${ruleName(r)}: selected`);
    for (const s of r.sections) {
      if (s.direction !== dir) continue;
      const peerHit = s.peers.find((p) => p.matches(peer));
      const portHit = portMatches(s.ports, dport, proto);
      const what = `${s.deny ? 'denies' : 'allows'} ${dir === 'ingress' ? 'from' : 'to'} [${s.peers.map((p) => p.key).join(' | ') || 'nothing'}] on ${describePorts(s.ports)}`;
      log.push(`      ${s.pointer}: ${what}: ${peerHit && portHit ? 'MATCH' : peerHit ? 'peer matches, port does not' : 'peer does not match'}`);
      if (peerHit && portHit) (s.deny ? denies : allows).push(ruleName(r));
    }
  }
  const uniq = (xs: string[]) => [...new Set(xs)];
  if (rules.length === 0) {
    log.push(`  No rule selects the ${dir === 'ingress' ? 'destination' : 'source'}`);
    const h = hint?.();
    if (h) log.push(h);
  }
  let v: DirVerdict;
  if (denies.length) v = { verdict: 'denied', enforced, rules: uniq(denies) };
  else if (allows.length) v = { verdict: 'allowed', enforced, rules: uniq(allows) };
  else v = { verdict: enforced ? 'denied' : 'allowed', enforced, rules: [] };
  const why = denies.length ? 'a deny rule matches' : allows.length ? 'an allow rule matches' : enforced ? 'default deny: no rule allows it' : `${dir} is not enforced`;
  log.push(`${dir === 'ingress' ? 'Ingress' : 'Egress'} verdict: ${v.verdict} (${why})`);
  return v;
}

/**
 * Traces src -> dst on dport/proto; `rulesFor` gives the rules selecting an identity, in order;
 * `all` (every rule) lets the log hint at a missing namespace label when no rule selects a side.
 */
export function tracePolicy(rulesFor: (id: Identity) => readonly CompiledRule[], src: Identity, dst: Identity, dport: number, protocol: string | number, all: readonly CompiledRule[] = []): TraceResult {
  if (!(Number.isInteger(dport) && dport >= 0 && dport <= 65535)) throw invalidField('/dport', `${dport} is not a port`, 'give 0-65535');
  const proto = protocolNumber(protocol);
  const log: string[] = [];
  const show = (i: Identity) => `${i.id > 0 ? `identity ${i.id} ` : ''}[${i.labels.join(', ')}]`;
  log.push(`Tracing From: ${show(src)} => To: ${show(dst)} Ports: [${dport}/${NAMES[proto] ?? proto}]`);
  log.push(`Egress from the source:`);
  const egress = direction('egress', rulesFor(src), dst, dport, proto, log, () => namespaceHint(all, src, '--src'));
  log.push(`Ingress to the destination:`);
  const ingress = direction('ingress', rulesFor(dst), src, dport, proto, log, () => namespaceHint(all, dst, '--dst'));
  const verdict = egress.verdict === 'allowed' && ingress.verdict === 'allowed' ? 'allowed' : 'denied';
  log.push(`Final verdict: ${verdict.toUpperCase()}`);
  return { verdict, ingress, egress, log };
}
