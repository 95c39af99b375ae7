/**
 * Drops no policy can fix, told with what the agent knows about them: a service without a backend
 * for the flow (the frontend and its backends), a packet from a forged source address (whose
 * address it is, which endpoint sent it).
 */
import type { EndpointManager, EndpointView } from '../endpoint/types.js';
import type { ServiceManager } from '../loadbalancer/types.js';
import type { DroppedFlow, DropReasonInfo, Explanation } from './types.js';

/** An endpoint by id (`12`, `ipv4:ADDR`); undefined when there is none or the id is malformed. */
export function endpointOf(endpoints: EndpointManager, id: string): EndpointView | undefined {
  try {
    return endpoints.lookup(id);
  } catch {
    return undefined;
  }
}

/** Why a non-policy drop gets no proposal. */
export function notPolicy(reason: DropReasonInfo): string {
  return `a policy cannot allow this flow: it was not dropped by policy but for ${reason.name} (${reason.code})${reason.fix ? `; fix: ${reason.fix}` : ''}`;
}

/** A load balancer drop: the frontend of the destination address and port, and its backends. */
export function serviceDrop(flow: DroppedFlow, reason: DropReasonInfo, services: ServiceManager): Explanation {
  const ip = flow.destination.ip;
  const proto = flow.protocol === 'UDP' ? 'udp' : 'tcp';
  const all = ip ? services.list().filter((st) => st.frontend.address.ip === ip) : [];
  const name = (key: string) => {
    const svc = services.service(key);
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

/** A source check drop: whose address the source is, and which endpoint sent it (by its interface index). */
export function sourceDrop(flow: DroppedFlow, reason: DropReasonInfo, endpoints: EndpointManager): Explanation {
  const details: string[] = [];
  const src = flow.source.ip;
  const owner = src ? endpointOf(endpoints, `${src.includes(':') ? 'ipv6' : 'ipv4'}:${src}`) : undefined;
  const sender = flow.interfaceIndex ? endpoints.getEndpoints().find((ep) => ep.toModel().status?.networking?.['interface-index'] === flow.interfaceIndex) : undefined;
  if (owner) details.push(`${src} is the address of endpoint ${owner.id}${owner.podName ? ` (${owner.podName})` : ''}`);
  else if (src) details.push(`${src} is the address of no endpoint of this node`);
  if (sender) {
    const addrs = [sender.ipv4, sender.ipv6].filter(Boolean).join(', ');
    details.push(`the packet came from the interface of endpoint ${sender.id}${sender.podName ? ` (${sender.podName})` : ''}, whose addresses are ${addrs || 'none'}`);
  }
  const who = sender && sender.id !== owner?.id ? `endpoint ${sender.id}${sender.podName ? ` (${sender.podName})` : ''}` : 'a pod';
  return {
    flow, reason, details, noProposal: notPolicy(reason),
    decision: `the source check dropped it: ${who} sent a packet from ${src ?? 'an address'} that is not its own${owner && owner.id !== sender?.id ? ` (it belongs to endpoint ${owner.id})` : ''}; a policy never sees such packets`,
  };
}
