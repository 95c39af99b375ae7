/** One direction of a policy trace told for a flow: how it was decided and why each section did or did not match. */
import type { TraceDirection, TraceSection } from '../policy/types.js';
import { describeSide } from './flow.js';
import type { DirectionDecision, DroppedFlow, ExplainedDirection, ExplainedSection } from './types.js';

/** The flow's port and protocol as sentences say them (`81/TCP`, `ICMP`). */
export function flowPort(f: DroppedFlow): string {
  if (f.protocol === 'ICMP' || f.protocol === 'ICMPv6') return f.protocol;
  return `${f.port}/${f.protocol ?? 'ANY'}`;
}

function peerText(dir: 'ingress' | 'egress', f: DroppedFlow): string {
  const peer = dir === 'ingress' ? f.source : f.destination;
  const labels = peer.labels.length ? ` [${peer.labels.join(', ')}]` : '';
  return `the ${dir === 'ingress' ? 'source' : 'destination'} ${describeSide(peer)} (identity ${peer.identity}${labels})`;
}

function sectionWhy(s: TraceSection, dir: 'ingress' | 'egress', f: DroppedFlow): string {
  if (s.peerMatches && s.portMatches) return s.deny ? 'matches: denies the flow' : 'matches: allows the flow';
  if (!s.peers.length) return 'selects no peer (an empty peer list)';
  if (!s.peerMatches) return `${peerText(dir, f)} is not selected by ${s.peers.join(' | ')}`;
  return `the peer matches, but ${flowPort(f)} is not among ${s.ports}`;
}

/** The decision of a direction from its trace. */
export function decisionOf(d: TraceDirection): DirectionDecision {
  if (d.verdict === 'denied') return d.rules.length ? 'deny-rule' : 'default-deny';
  return d.enforced ? 'allow-rule' : 'not-enforced';
}

/** A traced direction with the reasons spelled out for the flow. */
export function explainDirection(dir: 'ingress' | 'egress', d: TraceDirection, f: DroppedFlow): ExplainedDirection {
  const decision = decisionOf(d);
  const selecting = [...(d.selecting ?? [])];
  const sections: ExplainedSection[] = (d.sections ?? []).map((s) => ({ ...s, peers: [...s.peers], why: sectionWhy(s, dir, f) }));
  const subject = dir === 'ingress' ? 'destination' : 'source';
  const n = selecting.length;
  let why: string;
  switch (decision) {
    case 'deny-rule':
      why = `deny rule ${d.rules.join(', ')} matches ${peerText(dir, f)} on ${flowPort(f)}, and a deny wins over every allow`;
      break;
    case 'default-deny': {
      const k = sections.filter((s) => !s.deny).length;
      why = `${n} rule${n === 1 ? '' : 's'} select${n === 1 ? 's' : ''} the ${subject} and enforce${n === 1 ? 's' : ''} ${dir} (default deny), but no ${dir} allow section (${k} considered) allows ${peerText(dir, f)} on ${flowPort(f)}`;
      break;
    }
    case 'allow-rule':
      why = `allowed by ${d.rules.join(', ')}`;
      break;
    case 'not-enforced':
      why = n ? `the rules selecting the ${subject} do not enforce ${dir}` : `no rule selects the ${subject} for ${dir}: ${dir} is not enforced`;
      break;
  }
  return { direction: dir, verdict: d.verdict, enforced: d.enforced, decision, rules: [...d.rules], selecting, sections, why };
}
