/**
 * Monitor events as people and tools read them: the lines of `cilium-dbg monitor` (drop, trace,
 * policy verdict) and JSON objects with the field names of Hubble's Flow (verdict,
 * drop_reason_desc, IP, l4, source/destination endpoints, traffic_direction, is_reply).
 */
import type { MonitorEvent } from './events.js';

/** What the agent knows of one side of a flow. */
export interface FlowEndpoint {
  /** Local endpoint ID (0 for a remote peer). */
  readonly ID: number;
  readonly identity: number;
  readonly labels: readonly string[];
  readonly pod_name?: string;
  readonly namespace?: string;
}

/** A monitor event with what the agent knows of both sides (see the monitor cell's enrichment). */
export interface EnrichedEvent {
  readonly event: MonitorEvent;
  /** ISO time the agent read the event. */
  readonly time: string;
  readonly source: FlowEndpoint;
  readonly destination: FlowEndpoint;
}

/** Drop reasons: Cilium's text (monitor lines) and Hubble's enum name (drop_reason_desc). */
export const DROP_REASON_TEXT: Readonly<Record<string, readonly [string, string]>> = {
  policy: ['Policy denied', 'POLICY_DENIED'],
  'policy-deny': ['Policy denied by denylist', 'POLICY_DENY'],
  invalid: ['Invalid packet', 'INVALID_PACKET_DROPPED'],
  'unsupported-l3': ['Unsupported L3 protocol', 'UNSUPPORTED_L3_PROTOCOL'],
  'ct-insert-failed': ['CT: Map insertion failed', 'CT_MAP_INSERTION_FAILED'],
  'no-service': ['Service backend not found', 'SERVICE_BACKEND_NOT_FOUND'],
  'no-backend': ['No service backend', 'NO_SERVICE'],
  'invalid-source': ['Invalid source ip', 'INVALID_SOURCE_IP'],
};

const TCP_FLAGS: ReadonlyArray<readonly [number, string]> = [[0x02, 'SYN'], [0x10, 'ACK'], [0x01, 'FIN'], [0x04, 'RST'], [0x08, 'PSH'], [0x20, 'URG'], [0x40, 'ECE'], [0x80, 'CWR']];
const PROTOCOLS: Readonly<Record<number, string>> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'icmpv6', 132: 'sctp' };

/** TCP flag names set in `flags`, Cilium's order. */
export function tcpFlagNames(flags: number): string[] {
  return TCP_FLAGS.filter(([bit]) => flags & bit).map(([, n]) => n);
}

/** Each flags byte's names as a line shows them (`SYN, ACK`), made once. */
const TCP_FLAG_TEXT: readonly string[] = Array.from({ length: 256 }, (_, f) => tcpFlagNames(f).join(', '));

function hostPort(addr: string | undefined, port: number, withPort: boolean): string {
  const a = addr ?? '?';
  if (!withPort) return a;
  return a.includes(':') ? `[${a}]:${port}` : `${a}:${port}`;
}

/** The packet part of a line: `10.0.0.1:4123 -> 10.0.0.2:80 tcp SYN` (ICMP: `... icmp EchoRequest`-like type numbers). */
export function packetSummary(e: MonitorEvent): string {
  const ports = e.protocol === 6 || e.protocol === 17 || e.protocol === 132;
  const proto = PROTOCOLS[e.protocol] ?? `proto ${e.protocol}`;
  const flags = e.protocol === 6 ? TCP_FLAG_TEXT[e.tcpFlags & 0xff]! : '';
  const tail = flags !== '' ? ` ${flags}` : e.protocol === 1 || e.protocol === 58 ? ` type ${e.icmpType}` : '';
  return `${hostPort(e.src, e.sport, ports)} -> ${hostPort(e.dst, e.dport, ports)} ${proto}${tail}`;
}

function reasonText(reason: string): string {
  return DROP_REASON_TEXT[reason]?.[0] ?? reason;
}

/**
 * One event as `cilium-dbg monitor` prints it, flat: the template literals make a rope of ~20
 * pieces, and reading a character flattens it in place (V8, every engine with ropes), so the
 * pieces die young. Hubble keeps the line with each flow in its ring, where a rope's pieces would
 * stay alive (and be copied by each young-generation collection) until encoding flattened it:
 * flattened here, a flow nobody follows costs ~18% less at the default ring of 4,095 and the
 * same followed (docs/cells/hubble.md, Benchmark); printing and JSON flatten it anyway.
 */
export function formatLine(x: EnrichedEvent): string {
  const s = ropeLine(x);
  s.charCodeAt(0);
  return s;
}

function ropeLine(x: EnrichedEvent): string {
  const e = x.event;
  const ids = `identity ${e.srcIdentity}->${e.dstIdentity}`;
  switch (e.type) {
    case 'drop':
      return `xx drop (${reasonText(e.reason)}) flow 0x0 to endpoint ${e.endpointId}, ifindex ${e.ifIndex}, , ${ids}: ${packetSummary(e)}`;
    case 'trace':
      return `${e.direction === 'ingress' ? '->' : '<-'} endpoint ${e.endpointId} flow 0x0 , ${ids} state ${e.ctStatus} ifindex ${e.ifIndex}: ${packetSummary(e)}`;
    case 'policy-verdict': {
      const remote = e.direction === 'ingress' ? e.srcIdentity : e.dstIdentity;
      return `Policy verdict log: flow 0x0 local EP ID ${e.endpointId}, remote ID ${remote}, proto ${e.protocol}, ${e.direction}, action ${e.action}, auth: disabled, match ${e.match}, ${packetSummary(e)}`;
    }
  }
}

/** Hubble's verdict of an event. */
function verdict(e: MonitorEvent): 'FORWARDED' | 'DROPPED' {
  if (e.type === 'drop') return 'DROPPED';
  if (e.type === 'policy-verdict') return e.action === 'allow' ? 'FORWARDED' : 'DROPPED';
  return 'FORWARDED';
}

function l4(e: MonitorEvent): Record<string, unknown> | undefined {
  const ports = { source_port: e.sport, destination_port: e.dport };
  switch (e.protocol) {
    case 6:
      return { TCP: { ...ports, flags: Object.fromEntries(tcpFlagNames(e.tcpFlags).map((f) => [f, true])) } };
    case 17:
      return { UDP: ports };
    case 132:
      return { SCTP: ports };
    case 1:
      return { ICMPv4: { type: e.icmpType } };
    case 58:
      return { ICMPv6: { type: e.icmpType } };
    default:
      return undefined;
  }
}

/** Hubble's event_type.type: 1 drop, 4 trace, 5 policy verdict. */
const HUBBLE_TYPES = { drop: 1, trace: 4, 'policy-verdict': 5 } as const;

/** One event as a JSON object with Hubble Flow field names. */
export function flowJson(x: EnrichedEvent): Record<string, unknown> {
  const e = x.event;
  const L4 = l4(e);
  return {
    time: x.time,
    verdict: verdict(e),
    ...(e.type === 'drop' || (e.type === 'policy-verdict' && e.action === 'deny') ? { drop_reason_desc: DROP_REASON_TEXT[e.reason]?.[1] ?? e.reason.toUpperCase() } : {}),
    event_type: { type: HUBBLE_TYPES[e.type] },
    ...(e.src && e.dst ? { IP: { source: e.src, destination: e.dst, ipVersion: e.src.includes(':') ? 'IPv6' : 'IPv4' } } : {}),
    ...(L4 ? { l4: L4 } : {}),
    source: x.source,
    destination: x.destination,
    traffic_direction: e.direction === 'ingress' ? 'INGRESS' : 'EGRESS',
    is_reply: e.ctStatus === 'reply',
    ...(e.type === 'trace' ? { trace_observation_point: e.direction === 'ingress' ? 'TO_ENDPOINT' : 'FROM_ENDPOINT' } : {}),
    ...(e.type === 'policy-verdict' ? { policy_match_type: e.match } : {}),
    interface: { index: e.ifIndex },
    Summary: formatLine(x),
  };
}
