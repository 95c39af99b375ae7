/**
 * What the agent adds to a datapath event: for each side, the local endpoint (ID, labels, pod) when
 * the address is one of this node's endpoints, else the identity's labels.
 */
import type { EndpointManager, EndpointView } from '../endpoint/types.js';
import type { IdentityAllocator } from '../identity/types.js';
import type { EnrichedEvent, FlowEndpoint, MonitorEvent } from '../../monitor/index.js';

/** Builds the flow endpoints of events from the agent's endpoints and identities. */
export class Enricher {
  constructor(
    private readonly endpoints: EndpointManager,
    private readonly identities: IdentityAllocator,
  ) {}

  /** The event with both sides described; `time` is when it was read. */
  enrich(event: MonitorEvent, time: string): EnrichedEvent {
    return { event, time, source: this.side(event.src, event.srcIdentity), destination: this.side(event.dst, event.dstIdentity) };
  }

  private side(addr: string | undefined, identity: number): FlowEndpoint {
    const ep = addr ? this.localEndpoint(addr) : undefined;
    if (ep) {
      return {
        ID: ep.id, identity: ep.identity ?? identity, labels: ep.labels,
        ...(ep.podName ? { pod_name: ep.podName } : {}), ...(ep.namespace ? { namespace: ep.namespace } : {}),
      };
    }
    return { ID: 0, identity, labels: this.identities.lookup(identity)?.labels ?? [] };
  }

  private localEndpoint(addr: string): EndpointView | undefined {
    try {
      return this.endpoints.lookup(`${addr.includes(':') ? 'ipv6' : 'ipv4'}:${addr}`);
    } catch {
      return undefined;
    }
  }
}
