/**
 * A flow as the page shows it: Hubble's fields with enum names instead of numbers and the L4 part
 * flattened (protocol, ports, flags), so the page's script needs no protobuf tables. Strings are
 * copied as they are (labels and pod names may be anyone's): the page escapes them.
 */
import { flowpb } from '../hubble/index.js';

/** One side of a flow on the page. */
export interface SideView {
  readonly name: string;
  readonly pod: string;
  readonly namespace: string;
  readonly identity: number;
  readonly endpointId: number;
  readonly labels: readonly string[];
  readonly ip: string;
  readonly port: number;
  readonly service: string;
  readonly workloads: readonly string[];
  readonly cluster: string;
}

/** A flow on the page. */
export interface FlowView {
  readonly uuid: string;
  readonly time: string;
  readonly verdict: string;
  readonly dropReason: string;
  readonly eventType: string;
  readonly observationPoint: string;
  readonly direction: string;
  readonly isReply: boolean | null;
  readonly policyMatch: string;
  readonly protocol: string;
  readonly tcpFlags: string;
  readonly icmpType: number | null;
  readonly node: string;
  readonly summary: string;
  readonly source: SideView;
  readonly destination: SideView;
}

const EVENT_TYPES: Readonly<Record<number, string>> = { 1: 'drop', 4: 'trace', 5: 'policy-verdict' };
const MATCH_TYPES = ['', 'L3-Only', 'L3-L4', 'L4-Only', 'all', 'none', 'L3-Proto', 'Proto-Only'];

/** A side's display name: `namespace/pod`, else its reserved label (world, host…), else its address. */
export function sideName(e: flowpb.Endpoint | undefined, ip: string): string {
  if (e?.podName) return e.namespace ? `${e.namespace}/${e.podName}` : e.podName;
  const reserved = e?.labels.find((l) => l.startsWith('reserved:'));
  if (reserved) return reserved;
  return ip || (e?.identity ? `identity ${e.identity}` : 'unknown');
}

function l4(f: flowpb.Flow): { protocol: string; sport: number; dport: number; flags: string; icmp: number | null } {
  const t = f.l4;
  const ports = t?.TCP ?? t?.UDP ?? t?.SCTP;
  const protocol = t?.TCP ? 'TCP' : t?.UDP ? 'UDP' : t?.SCTP ? 'SCTP' : t?.ICMPv4 ? 'ICMPv4' : t?.ICMPv6 ? 'ICMPv6' : '';
  const fl = t?.TCP?.flags;
  const flags = fl ? (['SYN', 'ACK', 'FIN', 'RST', 'PSH', 'URG', 'ECE', 'CWR'] as const).filter((k) => fl[k]).join(',') : '';
  const icmp = t?.ICMPv4?.type ?? t?.ICMPv6?.type;
  return { protocol, sport: ports?.sourcePort ?? 0, dport: ports?.destinationPort ?? 0, flags, icmp: icmp ?? null };
}

function side(e: flowpb.Endpoint | undefined, ip: string, port: number, svc: flowpb.Service | undefined): SideView {
  return {
    name: sideName(e, ip), pod: e?.podName ?? '', namespace: e?.namespace ?? '', identity: e?.identity ?? 0, endpointId: e?.ID ?? 0,
    labels: e?.labels ?? [], ip, port, service: svc ? `${svc.namespace}/${svc.name}` : '', workloads: (e?.workloads ?? []).map((w) => `${w.kind}/${w.name}`), cluster: e?.clusterName ?? '',
  };
}

/** The page's view of a flow. */
export function flowView(f: flowpb.Flow): FlowView {
  const l = l4(f);
  const t = f.time;
  const dropped = f.verdict === flowpb.Verdict.DROPPED;
  return {
    uuid: f.uuid,
    time: t ? new Date(t.seconds * 1000 + Math.floor(t.nanos / 1e6)).toISOString() : '',
    verdict: flowpb.Verdict[f.verdict] ?? String(f.verdict),
    dropReason: dropped ? (flowpb.DropReason[f.dropReasonDesc] ?? String(f.dropReasonDesc)) : '',
    eventType: EVENT_TYPES[f.eventType?.type ?? 0] ?? String(f.eventType?.type ?? ''),
    observationPoint: f.traceObservationPoint ? (flowpb.TraceObservationPoint[f.traceObservationPoint] ?? '') : '',
    direction: flowpb.TrafficDirection[f.trafficDirection] ?? '',
    isReply: f.isReply ?? null,
    policyMatch: MATCH_TYPES[f.policyMatchType] ?? String(f.policyMatchType || ''),
    protocol: l.protocol,
    tcpFlags: l.flags,
    icmpType: l.icmp,
    node: f.nodeName,
    summary: f.Summary,
    source: side(f.source, f.IP?.source ?? '', l.sport, f.sourceService),
    destination: side(f.destination, f.IP?.destination ?? '', l.dport, f.destinationService),
  };
}
