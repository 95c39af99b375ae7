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
        return this.serviceDrop(flow, reason);
      case 'source':
        return this.sourceDrop(flow, reason);
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
    try {
      return this.s.endpoints.lookup(id);
    } catch {
      return undefined;
    }
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

  private serviceDrop(flow: DroppedFlow, reason: DropReasonInfo): Explanation {
    const ip = flow.destination.ip;
    const proto = flow.protocol === 'UDP' ? 'udp' : 'tcp';
    const all = ip ? this.s.services.list().filter((st) => st.frontend.address.ip === ip) : [];
    const name = (key: string) => {
      const svc = this.s.services.service(key);
      return svc ? `${svc.namespace ? `${svc.namespace}/` : ''}${svc.name}` : key;
    };
    const exact = all.find((st) => st.frontend.address.port === flow.port && (st.frontend.address.protocol === proto || st.frontend.address.protocol === 'any'));
    const details: string[] = [];
    let decision: string;
    const where = `${ip ?? '?'}:${flow.port}/${flow.protocol ?? 'ANY'}`;
    if (exact) {
      const bs = exact.frontend.backends;
      const active = bs.filter((b) => b.state === 'active');
      details.push(`service ${name(exact.frontend.serviceKey)}: frontend ${where} (${exact.frontend.type}, id ${exact.frontend.id}) has ${bs.length} backend${bs.length === 1 ? '' : 's'}, ${active.length} active${bs.length ? `: ${bs.map((b) => `${b.address.ip}:${b.address.port} (${b.state})`).join(', ')}` : ''}`);
      decision = active.length
        ? `the load balancer found no backend for ${where} when the packet came; service ${name(exact.frontend.serviceKey)} has ${active.length} active backend${active.length === 1 ? '' : 's'} now (it had none then)`
        : `the load balancer dropped it: service ${name(exact.frontend.serviceKey)} has no active backend for ${where}`;
    } else if (all.length) {
      details.push(`${ip} is a frontend of ${[...new Set(all.map((st) => name(st.frontend.serviceKey)))].join(', ')} on ${all.map((st) => `${st.frontend.address.port}/${st.frontend.address.protocol.toUpperCase()}`).join(', ')}, not on ${flow.port}/${flow.protocol ?? 'ANY'}`);
      decision = `the load balancer dropped it: the service address ${ip} has no port ${flow.port}/${flow.protocol ?? 'ANY'}`;
    } else {
      details.push(`no service frontend has the address ${ip ?? '(none in the flow)'} now${flow.service ? ` (the flow named service ${flow.service}: deleted or changed since)` : ''}`);
      decision = `the load balancer dropped it: ${flow.service ? `service ${flow.service}` : 'the service'} had no backend for ${where}`;
    }
    return { flow, reason, decision, details, noProposal: notPolicy(reason) };
  }

  private sourceDrop(flow: DroppedFlow, reason: DropReasonInfo): Explanation {
    const details: string[] = [];
    const src = flow.source.ip;
    const owner = src ? this.endpoint(`${src.includes(':') ? 'ipv6' : 'ipv4'}:${src}`) : undefined;
    const sender = flow.interfaceIndex ? this.s.endpoints.getEndpoints().find((ep) => ep.toModel().status?.networking?.['interface-index'] === flow.interfaceIndex) : undefined;
    if (owner) details.push(`${src} is the address of endpoint ${owner.id}${owner.podName ? ` (${owner.podName})` : ''}`);
    else if (src) details.push(`${src} is the address of no endpoint of this node`);
    if (sender) {
      const addrs = [sender.ipv4, sender.ipv6].filter(Boolean).join(', ');
      details.push(`the packet came from the interface of endpoint ${sender.id}${sender.podName ? ` (${sender.podName})` : ''}, whose addresses are ${addrs || 'none'}`);
    }
    const who = sender && sender !== owner ? `endpoint ${sender.id}${sender.podName ? ` (${sender.podName})` : ''}` : 'a pod';
    return {
      flow, reason, details, noProposal: notPolicy(reason),
      decision: `the source check dropped it: ${who} sent a packet from ${src ?? 'an address'} that is not its own${owner && owner !== sender ? ` (it belongs to endpoint ${owner.id})` : ''}; a policy never sees such packets`,
    };
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

/** Why a non-policy drop gets no proposal. */
function notPolicy(reason: DropReasonInfo): string {
  return `a policy cannot allow this flow: it was not dropped by policy but for ${reason.name} (${reason.code})${reason.fix ? `; fix: ${reason.fix}` : ''}`;
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
