/**
 * A datapath monitor event, with what the agent knows of both sides, as a Hubble Flow
 * (flow.Flow): verdict, drop reason (Hubble's numbers), L3/L4, both endpoints, services, the
 * event type, trace observation point and reason, policy match type, is_reply, the Summary line.
 */
import { formatLine, POLICY_MATCH_TYPES, type EnrichedEvent, type FlowEndpoint, type MonitorEvent } from '../monitor/index.js';
import {
  FlowType, IPVersion, TraceObservationPoint, TraceReason, TrafficDirection, Verdict,
  type Endpoint, type Flow, type Layer4, type Service,
} from './gen/flow/flow.js';
import type { Timestamp } from './gen/google/protobuf/timestamp.js';
import { hubbleDropReason } from './drop-reasons.js';

/** Monitor message types (Cilium's pkg/monitor/api MessageType*): what event_type.type says. */
export const MESSAGE_TYPES = { drop: 1, trace: 4, 'policy-verdict': 5 } as const;

/** What the agent adds to an event besides both sides' endpoints: the services of both addresses. */
export interface FlowContext {
  readonly node: string;
  /** ns since the epoch when the event was read. */
  readonly timeNs: bigint;
  /** A per-node unique id (the flow's uuid). */
  readonly uuid: string;
  readonly sourceService?: Service;
  readonly destinationService?: Service;
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

function layer4(e: MonitorEvent): Layer4 | undefined {
  const ports = { sourcePort: e.sport, destinationPort: e.dport };
  const f = e.tcpFlags;
  switch (e.protocol) {
    case 6:
      return {
        TCP: {
          ...ports,
          flags: { FIN: !!(f & 0x01), SYN: !!(f & 0x02), RST: !!(f & 0x04), PSH: !!(f & 0x08), ACK: !!(f & 0x10), URG: !!(f & 0x20), ECE: !!(f & 0x40), CWR: !!(f & 0x80), NS: false },
        },
      };
    case 17:
      return { UDP: ports };
    case 132:
      return { SCTP: ports };
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

function endpoint(s: FlowEndpoint): Endpoint {
  return { ID: s.ID, identity: s.identity, clusterName: '', namespace: s.namespace ?? '', labels: [...s.labels], podName: bareName(s.pod_name, s.namespace), workloads: [] };
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
    time: timestamp(ctx.timeNs),
    uuid: ctx.uuid,
    verdict: verdict(e),
    dropReason: reason,
    IP: e.src && e.dst ? { source: e.src, sourceXlated: '', destination: e.dst, ipVersion: e.src.includes(':') ? IPVersion.IPv6 : IPVersion.IPv4, encrypted: false } : undefined,
    l4: layer4(e),
    source: endpoint(x.source),
    destination: endpoint(x.destination),
    Type: FlowType.L3_L4,
    nodeName: ctx.node,
    reply: isReply === true,
    eventType: { type: MESSAGE_TYPES[e.type], subType: e.type === 'drop' ? reason : e.type === 'trace' ? (e.direction === 'ingress' ? 0 : 5) : 0 },
    sourceService: ctx.sourceService,
    destinationService: ctx.destinationService,
    trafficDirection: e.direction === 'ingress' ? TrafficDirection.INGRESS : TrafficDirection.EGRESS,
    policyMatchType: e.type === 'policy-verdict' && match > 0 ? match : 0,
    traceObservationPoint: point,
    traceReason: e.type === 'trace' ? (TRACE_REASONS[e.ctStatus] ?? TraceReason.TRACE_REASON_UNKNOWN) : TraceReason.TRACE_REASON_UNKNOWN,
    dropReasonDesc: reason,
    isReply,
    interface: { index: e.ifIndex, name: '' },
    Summary: formatLine(x),
  };
}
