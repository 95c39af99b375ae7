/**
 * The explainer: which decision dropped a flow, and the smallest policy that would allow it. A
 * policy drop is traced against the repository (the same trace as `cellium policy trace`, with the
 * destination's named ports); the proposal is traced again with it added as candidate rules (the
 * repository is not changed) and offered only when that trace allows the flow. Other drops are
 * told with Cilium's reason name and the facts the agent has about them (a service's backends,
 * the endpoint a forged source address belongs to).
 */
import { stringify } from 'yaml';
import type { EndpointManager, EndpointView } from '../endpoint/types.js';
import type { IdentityAllocator } from '../identity/types.js';
import type { ServiceManager } from '../loadbalancer/types.js';
import { PolicyError, type NamedPort, type PolicyRepository, type TraceDirection, type TraceResult, type TraceSubject } from '../policy/types.js';
import { POD_NAMESPACE_KEY } from '../policy/index.js';
import { NAMESPACE_LABELS_PREFIX, translateNetworkPolicy } from '../policy-k8s/index.js';
import { badFlowField, unknownSide } from './errors.js';
import { describeSide, parseDroppedFlow } from './flow.js';
import { endpointOf, notPolicy, serviceDrop, sourceDrop } from './other-drops.js';
import { ciliumProposal, k8sProposal, sideNamespace } from './propose.js';
import { dropReasonInfo } from './reasons.js';
import { explainDirection, flowPort } from './sections.js';
import type { DroppedFlow, DropReasonInfo, Explanation, ExplainRequest, FlowExplainer, FlowSide, Proposal } from './types.js';

const PROTOCOL_NUMBERS: Readonly<Record<string, number>> = { TCP: 6, UDP: 17, SCTP: 132, ICMP: 1, ANY: 0 };

/** What the explainer reads. */
export interface ExplainerSources {
  readonly repo: PolicyRepository;
  readonly endpoints: EndpointManager;
  readonly identities: IdentityAllocator;
  readonly services: ServiceManager;
}

/** See the module comment. */
export class Explainer implements FlowExplainer {
  constructor(private readonly s: ExplainerSources) {}

  /** See FlowExplainer. */
  explain(req: ExplainRequest): Explanation {
    const format = req.format ?? 'cilium';
    if (format !== 'cilium' && format !== 'k8s') throw badFlowField('/format', `${JSON.stringify(format)} is not a format`, 'give cilium (CiliumNetworkPolicy) or k8s (NetworkPolicy)');
    const flow = this.known(parseDroppedFlow(req.flow));
    const reason = dropReasonInfo(flow.dropReason);
    switch (reason.kind) {
      case 'policy':
        return this.policyDrop(flow, reason, format);
      case 'service':
        return serviceDrop(flow, reason, this.s.services);
      case 'source':
        return sourceDrop(flow, reason, this.s.endpoints);
      default:
        return {
          flow, reason, details: [], noProposal: notPolicy(reason),
          decision: `the datapath dropped it for ${reason.name} (${reason.code}): ${reason.meaning}`,
        };
    }
  }

  /** The flow with each side's labels as the agent knows its identity, and its pod from its endpoint. */
  private known(f: DroppedFlow): DroppedFlow {
    return { ...f, source: this.side(f.source), destination: this.side(f.destination) };
  }

  private side(s: FlowSide): FlowSide {
    const id = s.identity ? this.s.identities.lookup(s.identity) : undefined;
    const ep = s.endpointId ? this.endpoint(String(s.endpointId)) : undefined;
    const ns = s.namespace ?? ep?.namespace;
    const pod = s.pod ?? (ep?.podName ? (ep.podName.includes('/') ? ep.podName : `${ns}/${ep.podName}`) : undefined);
    return { ...s, labels: id ? [...id.labels] : s.labels, ...(ns ? { namespace: ns } : {}), ...(pod ? { pod } : {}) };
  }

  private endpoint(id: string): EndpointView | undefined {
    return endpointOf(this.s.endpoints, id);
  }

  /** A side as a trace takes it: its identity when the agent knows it, else its labels. */
  private subject(s: FlowSide, pointer: string): TraceSubject {
    if (s.identity && this.s.identities.lookup(s.identity)) return { identity: s.identity };
    if (s.labels.length) return { labels: s.labels };
    throw unknownSide(`${pointer}/identity`, s.identity);
  }

  /** The destination endpoint's named ports (ingress names resolve against them). */
  private namedPorts(d: FlowSide): NamedPort[] {
    const ep = d.endpointId ? this.endpoint(String(d.endpointId)) : d.ip ? this.endpoint(`${d.ip.includes(':') ? 'ipv6' : 'ipv4'}:${d.ip}`) : undefined;
    const named = (ep?.toModel().status as { namedPorts?: readonly { name?: string; port?: number; protocol?: string }[] } | undefined)?.namedPorts ?? [];
    return named.flatMap((p) => (p.name && p.port ? [{ name: p.name, port: p.port, protocol: PROTOCOL_NUMBERS[String(p.protocol ?? 'TCP').toUpperCase()] ?? 6 }] : []));
  }

  private trace(f: DroppedFlow, candidates?: string): TraceResult {
    const protocol = f.protocol === undefined ? 'ANY' : f.protocol === 'ICMPv6' ? 'ICMPV6' : f.protocol;
    try {
      return this.s.repo.trace(this.subject(f.source, '/flow/source'), this.subject(f.destination, '/flow/destination'), f.port, protocol,
        { destinationPorts: this.namedPorts(f.destination), ...(candidates === undefined ? {} : { candidates }) });
    } catch (err) {
      if (err instanceof PolicyError && err.code === 'not-found') {
        const src = err.pointer.startsWith('/src');
        throw unknownSide(src ? '/flow/source/identity' : '/flow/destination/identity', (src ? f.source : f.destination).identity);
      }
      throw err;
    }
  }

  private policyDrop(flow: DroppedFlow, reason: DropReasonInfo, format: 'cilium' | 'k8s'): Explanation {
    const t = this.trace(flow);
    const egress = explainDirection('egress', t.egress, flow);
    const ingress = explainDirection('ingress', t.ingress, flow);
    const policy = { revision: this.s.repo.revision, verdict: t.verdict, egress, ingress, log: [...t.log] };
    const base = { flow, reason, policy, details: [] as string[] };
    if (t.verdict === 'allowed') {
      return {
        ...base,
        decision: `the policy as it is now (revision ${policy.revision}) allows this flow: it was dropped under an earlier policy (a rule deleted or changed since) or while the endpoint's policy was being updated`,
        noProposal: `the repository allows ${flowPort(flow)} from ${describeSide(flow.source)} to ${describeSide(flow.destination)} now (revision ${policy.revision})`,
      };
    }
    const denied = [egress, ingress].filter((d) => d.verdict === 'denied');
    const decision = denied.map((d) => `the ${d.direction === 'ingress' ? 'destination\'s ingress' : 'source\'s egress'} policy denied it: ${d.why}`).join('; and ');
    const dirs = denied.map((d) => d.direction);
    const built = format === 'k8s' ? k8sProposal(flow, dirs) : ciliumProposal(flow, dirs);
    if ('unexpressible' in built) {
      return { ...base, decision, noProposal: `${format === 'k8s' ? 'not expressible as a Kubernetes NetworkPolicy' : 'no CiliumNetworkPolicy can allow exactly this flow'}: ${built.unexpressible}${format === 'k8s' ? ' (--format cilium may)' : ''}` };
    }
    let candidates: string;
    try {
      candidates = format === 'k8s' ? JSON.stringify(built.objects.flatMap((o) => translateNetworkPolicy(o).rules)) : JSON.stringify({ apiVersion: 'v1', kind: 'List', items: built.objects });
    } catch (err) {
      if (!(err instanceof Error)) throw err;
      return { ...base, decision, noProposal: `the proposed policy does not compile (${err.message}); nothing is proposed` };
    }
    const check = this.trace(flow, candidates);
    const proposal: Proposal = {
      format, objects: built.objects, text: built.objects.map((o) => stringify(o)).join('---\n'),
      check: { verdict: check.verdict, log: [...check.log] },
    };
    if (check.verdict === 'allowed') return { ...base, details: broadSelectors(flow), decision, proposal };
    const hint = format === 'k8s' ? namespaceLabelsHint(flow, dirs) : '';
    return { ...base, decision, rejected: proposal, noProposal: `the trace with the proposed policy added still denies the flow (${stillDenied(check)})${hint}` };
  }

}

/**
 * Why a NetworkPolicy across namespaces may not select its peer: it selects namespaces by their
 * labels, which reach an identity only from Kubernetes (io.cilium.k8s.namespace.labels.*).
 */
function namespaceLabelsHint(f: DroppedFlow, dirs: readonly ('ingress' | 'egress')[]): string {
  const peers = dirs.map((d) => (d === 'ingress' ? f.source : f.destination));
  const bare = peers.find((p) => !p.labels.some((l) => l.startsWith(NAMESPACE_LABELS_PREFIX)) && sideNamespace(p) !== sideNamespace(p === f.source ? f.destination : f.source));
  return bare ? `; a NetworkPolicy selects another namespace by the namespace's labels, and the identity of ${describeSide(bare)} carries none (${NAMESPACE_LABELS_PREFIX}*): --format cilium names the namespace itself` : '';
}

/**
 * The sides the proposal names by their namespace alone (no identity label but the namespace's):
 * its selector then selects every pod of that namespace, which the details say.
 */
function broadSelectors(f: DroppedFlow): string[] {
  const nsOnly = (l: string) => l.startsWith(`k8s:${POD_NAMESPACE_KEY}=`) || l.startsWith(NAMESPACE_LABELS_PREFIX);
  return [f.source, f.destination].filter((s) => s.labels.length > 0 && s.labels.every(nsOnly))
    .map((s) => `${describeSide(s)} has no label besides its namespace: the proposal's selector for it selects every pod of namespace ${sideNamespace(s)}; give the pod a label to narrow it`);
}


/** Why the trace with a candidate still denies: the deny rules that win, or the direction's default. */
function stillDenied(t: TraceResult): string {
  const why = (dir: 'ingress' | 'egress', d: TraceDirection) => {
    if (d.verdict === 'allowed') return undefined;
    const side = dir === 'ingress' ? 'the destination\'s ingress' : 'the source\'s egress';
    return d.rules.length
      ? `deny rule ${d.rules.join(', ')} in ${side} matches it, and a deny wins over every allow: remove or narrow that rule (cellium policy get) if the flow must be allowed`
      : `${side} still denies it by default`;
  };
  return [why('egress', t.egress), why('ingress', t.ingress)].filter(Boolean).join('; ');
}
