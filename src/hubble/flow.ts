/**
 * A datapath monitor event, with what the agent knows of both sides, as a Hubble Flow
 * (flow.Flow): verdict, drop reason (Hubble's numbers), L3/L4, both endpoints, services, the
 * event type, trace observation point and reason, policy match type, is_reply, the Summary line.
 */
import { formatLine, POLICY_MATCH_TYPES, type EnrichedEvent, type FlowEndpoint, type MonitorEvent } from '../monitor/index.js';
import {
  FlowType, IPVersion, TraceObservationPoint, TraceReason, TrafficDirection, Verdict,
  type CiliumEventType, type Endpoint, type Flow, type IP, type Layer4, type NetworkInterface, type Service, type TCPFlags, type Workload,
} from './gen/flow/flow.js';
import type { Timestamp } from './gen/google/protobuf/timestamp.js';
import { hubbleDropReason } from './drop-reasons.js';

/** Monitor message types (Cilium's pkg/monitor/api MessageType*): what event_type.type says. */
export const MESSAGE_TYPES = { drop: 1, trace: 4, 'policy-verdict': 5 } as const;

/** What the agent adds to an event besides both sides' endpoints: the services of both addresses. */
export interface FlowContext {
  readonly node: string;
  /** When the event was read (shared by the flows of one read: never changed). */
  readonly time: Timestamp;
  /** A per-node unique id (the flow's uuid). */
  readonly uuid: string;
  readonly sourceService?: Service;
  readonly destinationService?: Service;
  /** The workloads of each side's pod (from its owner references), when known. */
  readonly sourceWorkloads?: Workload[];
  readonly destinationWorkloads?: Workload[];
}

/** A protobuf Timestamp of ns since the epoch. */
export function timestamp(ns: bigint): Timestamp {
  return { seconds: Number(ns / 1_000_000_000n), nanos: Number(ns % 1_000_000_000n) };
}

/** ns since the epoch of a Timestamp. */
export function timestampNs(t: Timestamp): bigint {
  return BigInt(t.seconds) * 1_000_000_000n + BigInt(t.nanos);
}

function verdict(e: MonitorEvent): Verdict {
  if (e.type === 'drop') return Verdict.DROPPED;
  if (e.type === 'policy-verdict') return e.action === 'allow' ? Verdict.FORWARDED : Verdict.DROPPED;
  return Verdict.FORWARDED;
}

/** The TCPFlags of each flags byte, made once and shared by every flow (never changed). */
const TCP_FLAGS: readonly TCPFlags[] = Array.from({ length: 256 }, (_, f) => Object.freeze({
  FIN: !!(f & 0x01), SYN: !!(f & 0x02), RST: !!(f & 0x04), PSH: !!(f & 0x08), ACK: !!(f & 0x10), URG: !!(f & 0x20), ECE: !!(f & 0x40), CWR: !!(f & 0x80), NS: false,
}));

function layer4(e: MonitorEvent): Layer4 | undefined {
  switch (e.protocol) {
    case 6:
      return { TCP: { sourcePort: e.sport, destinationPort: e.dport, flags: TCP_FLAGS[e.tcpFlags & 0xff] } };
    case 17:
      return { UDP: { sourcePort: e.sport, destinationPort: e.dport } };
    case 132:
      return { SCTP: { sourcePort: e.sport, destinationPort: e.dport } };
    case 1:
      return { ICMPv4: { type: e.icmpType, code: 0 } };
    case 58:
      return { ICMPv6: { type: e.icmpType, code: 0 } };
    default:
      return undefined;
  }
}

/** The pod's own name: the endpoint model names pods `namespace/name`, Hubble's pod_name is the name alone. */
export function bareName(pod: string | undefined, namespace: string | undefined): string {
  if (!pod) return '';
  return namespace && pod.startsWith(`${namespace}/`) ? pod.slice(namespace.length + 1) : pod;
}

const NO_WORKLOADS: Workload[] = [];
/** Each side's Endpoint, by the enricher's side and its workloads: both are shared while they do not change. */
const endpoints = new WeakMap<FlowEndpoint, { readonly workloads: Workload[] | undefined; readonly endpoint: Endpoint }>();

/**
 * A side of the flow: made once per side the enricher describes (and its workloads), frozen, and
 * shared by every flow of that side (the enricher describes a side anew when it changes). The
 * labels array is the enricher's own (never changed by flows), not a copy.
 */
function endpoint(s: FlowEndpoint, workloads: Workload[] | undefined): Endpoint {
  const known = endpoints.get(s);
  if (known && known.workloads === workloads) return known.endpoint;
  const ep: Endpoint = Object.freeze({
    ID: s.ID, identity: s.identity, clusterName: clusterOf(s.labels), namespace: s.namespace ?? '', labels: s.labels as string[], podName: bareName(s.pod_name, s.namespace), workloads: workloads ?? NO_WORKLOADS,
  });
  endpoints.set(s, { workloads, endpoint: ep });
  return ep;
}

const CLUSTER_LABEL = 'k8s:io.cilium.k8s.policy.cluster=';

/** A side's cluster, as Hubble reads it: its `io.cilium.k8s.policy.cluster` label ('' without one). */
export function clusterOf(labels: readonly string[]): string {
  for (const l of labels) if (l.startsWith(CLUSTER_LABEL)) return l.slice(CLUSTER_LABEL.length);
  return '';
}

/** The event type of each (type, sub type), made once and shared (never changed). */
const eventTypes = new Map<number, CiliumEventType>();
function eventType(type: number, subType: number): CiliumEventType {
  const key = type * 65536 + subType;
  let t = eventTypes.get(key);
  if (!t) eventTypes.set(key, (t = Object.freeze({ type, subType })));
  return t;
}

/** The IP of each source and destination, made once and shared (never changed; bounded: it starts over when full). */
const ips = new Map<string, Map<string, IP>>();
const MAX_IP_SOURCES = 4096;
function ipOf(source: string, destination: string): IP {
  let bySource = ips.get(source);
  if (!bySource) {
    if (ips.size >= MAX_IP_SOURCES) ips.clear();
    ips.set(source, (bySource = new Map()));
  }
  let ip = bySource.get(destination);
  if (!ip) {
    if (bySource.size >= MAX_IP_SOURCES) bySource.clear();
    bySource.set(destination, (ip = Object.freeze({ source, sourceXlated: '', destination, ipVersion: source.includes(':') ? IPVersion.IPv6 : IPVersion.IPv4, encrypted: false })));
  }
  return ip;
}

/** The interface of each ifindex, made once and shared (never changed). */
const interfaces = new Map<number, NetworkInterface>();
function interfaceOf(index: number): NetworkInterface {
  let i = interfaces.get(index);
  if (!i) {
    if (interfaces.size >= MAX_IP_SOURCES) interfaces.clear();
    interfaces.set(index, (i = Object.freeze({ index, name: '' })));
  }
  return i;
}

const TRACE_REASONS: Readonly<Record<string, TraceReason>> = {
  new: TraceReason.NEW, established: TraceReason.ESTABLISHED, reply: TraceReason.REPLY, related: TraceReason.RELATED, reopened: TraceReason.REOPENED,
};

/** The flow of an enriched event. */
export function toFlow(x: EnrichedEvent, ctx: FlowContext): Flow {
  const e = x.event;
  const dropped = e.type === 'drop' || (e.type === 'policy-verdict' && e.action === 'deny');
  const reason = dropped ? hubbleDropReason(e.reason) : 0;
  const point = e.type !== 'trace' ? TraceObservationPoint.UNKNOWN_POINT : e.direction === 'ingress' ? TraceObservationPoint.TO_ENDPOINT : TraceObservationPoint.FROM_ENDPOINT;
  // drops carry no conntrack state: whether the packet was a reply is unknown
  const isReply = e.type === 'drop' ? undefined : e.ctStatus === 'reply';
  const match = POLICY_MATCH_TYPES.indexOf(e.match as (typeof POLICY_MATCH_TYPES)[number]);
  return {
    time: ctx.time,
    uuid: ctx.uuid,
    verdict: verdict(e),
    dropReason: reason,
    IP: e.src && e.dst ? ipOf(e.src, e.dst) : undefined,
    l4: layer4(e),
    source: endpoint(x.source, ctx.sourceWorkloads),
    destination: endpoint(x.destination, ctx.destinationWorkloads),
    Type: FlowType.L3_L4,
    nodeName: ctx.node,
    reply: isReply === true,
    eventType: eventType(MESSAGE_TYPES[e.type], e.type === 'drop' ? reason : e.type === 'trace' ? (e.direction === 'ingress' ? 0 : 5) : 0),
    sourceService: ctx.sourceService,
    destinationService: ctx.destinationService,
    trafficDirection: e.direction === 'ingress' ? TrafficDirection.INGRESS : TrafficDirection.EGRESS,
    policyMatchType: e.type === 'policy-verdict' && match > 0 ? match : 0,
    traceObservationPoint: point,
    traceReason: e.type === 'trace' ? (TRACE_REASONS[e.ctStatus] ?? TraceReason.TRACE_REASON_UNKNOWN) : TraceReason.TRACE_REASON_UNKNOWN,
    dropReasonDesc: reason,
    isReply,
    interface: interfaceOf(e.ifIndex),
    Summary: formatLine(x),
  };
}
