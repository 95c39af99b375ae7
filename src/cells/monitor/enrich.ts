/**
 * What the agent adds to a datapath event: for each side, the local endpoint (ID, labels, pod) when
 * the address is one of this node's endpoints, else the identity's labels.
 *
 * The monitor enriches a ring-buffer read at a time (enrichAll): within one read, which runs
 * synchronously, no endpoint or identity can change, so each address is looked up and each side
 * described once a read, however many events carry it. Across reads a side is checked again against
 * the endpoint or identity as it is now (its ID, identity, pod and every label) and its description
 * reused only when nothing changed: a relabelled pod's next event carries its new labels, and a side
 * that did not change is the same object, so what is built from it downstream (the flow's endpoint,
 * its encoding) can be kept with it.
 */
import type { EndpointManager, EndpointView } from '../endpoint/types.js';
import type { IdentityAllocator } from '../identity/types.js';
import type { EnrichedEvent, FlowEndpoint, MonitorEvent } from '../../monitor/index.js';

/** Remote identities whose description is kept between reads (beyond it the memory starts over). */
const MAX_REMOTE_SIDES = 65536;
const NO_LABELS: readonly string[] = Object.freeze([]);

/** The sides of one read: each address looked up once, each endpoint and identity described once. */
interface ReadMemo {
  readonly endpoints: Map<string, EndpointView | null>;
  readonly locals: Map<EndpointView, FlowEndpoint>;
  readonly remotes: Map<number, FlowEndpoint>;
}

/** Builds the flow endpoints of events from the agent's endpoints and identities. */
export class Enricher {
  /** The last description of each endpoint, reused while it is current. */
  private readonly locals = new WeakMap<EndpointView, FlowEndpoint>();
  /** The last description of each remote identity, reused while its labels are the same. */
  private readonly remotes = new Map<number, FlowEndpoint>();

  constructor(
    private readonly endpoints: EndpointManager,
    private readonly identities: IdentityAllocator,
  ) {}

  /** The event with both sides described; `time` is when it was read. */
  enrich(event: MonitorEvent, time: string): EnrichedEvent {
    return this.enrichOne(event, time, newMemo());
  }

  /** The events of one read, each with both sides described; `time` is when they were read. */
  enrichAll(events: readonly MonitorEvent[], time: string): EnrichedEvent[] {
    const memo = newMemo();
    const out = new Array<EnrichedEvent>(events.length);
    for (let i = 0; i < events.length; i++) out[i] = this.enrichOne(events[i]!, time, memo);
    return out;
  }

  private enrichOne(event: MonitorEvent, time: string, memo: ReadMemo): EnrichedEvent {
    return { event, time, source: this.side(event.src, event.srcIdentity, memo), destination: this.side(event.dst, event.dstIdentity, memo) };
  }

  private side(addr: string | undefined, identity: number, memo: ReadMemo): FlowEndpoint {
    const ep = addr === undefined ? undefined : this.endpointAt(addr, memo);
    if (ep) {
      // an endpoint without its identity yet is described by the event's
      if (ep.identity === undefined) return localSide(ep, identity);
      let s = memo.locals.get(ep);
      if (!s) memo.locals.set(ep, (s = this.currentLocal(ep)));
      return s;
    }
    let s = memo.remotes.get(identity);
    if (!s) memo.remotes.set(identity, (s = this.currentRemote(identity)));
    return s;
  }

  private endpointAt(addr: string, memo: ReadMemo): EndpointView | undefined {
    let ep = memo.endpoints.get(addr);
    if (ep === undefined) memo.endpoints.set(addr, (ep = this.localEndpoint(addr) ?? null));
    return ep ?? undefined;
  }

  /** The endpoint's description: the last one while its ID, identity, pod and labels are the same, else a new one. */
  private currentLocal(ep: EndpointView): FlowEndpoint {
    const last = this.locals.get(ep);
    const labels = ep.labels;
    if (last && last.ID === ep.id && last.identity === ep.identity && (last.pod_name ?? '') === (ep.podName ?? '') && (last.namespace ?? '') === (ep.namespace ?? '') && sameLabels(last.labels, labels)) return last;
    const s = localSide(ep, ep.identity!);
    this.locals.set(ep, s);
    return s;
  }

  /** The remote identity's description: the last one while its labels are the same, else a new one. */
  private currentRemote(identity: number): FlowEndpoint {
    const labels = this.identities.lookup(identity)?.labels ?? NO_LABELS;
    const last = this.remotes.get(identity);
    if (last && sameLabels(last.labels, labels)) return last;
    if (this.remotes.size >= MAX_REMOTE_SIDES) this.remotes.clear();
    const s: FlowEndpoint = Object.freeze({ ID: 0, identity, labels });
    this.remotes.set(identity, s);
    return s;
  }

  private localEndpoint(addr: string): EndpointView | undefined {
    try {
      return this.endpoints.lookup(`${addr.includes(':') ? 'ipv6' : 'ipv4'}:${addr}`);
    } catch {
      return undefined;
    }
  }
}

function newMemo(): ReadMemo {
  return { endpoints: new Map(), locals: new Map(), remotes: new Map() };
}

/** A local endpoint's side (frozen: it is shared by the flows of every read until the endpoint changes). */
function localSide(ep: EndpointView, identity: number): FlowEndpoint {
  return Object.freeze({
    ID: ep.id, identity, labels: ep.labels,
    ...(ep.podName ? { pod_name: ep.podName } : {}), ...(ep.namespace ? { namespace: ep.namespace } : {}),
  });
}

function sameLabels(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
