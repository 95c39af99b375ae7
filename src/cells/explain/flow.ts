/**
 * A Hubble Flow as explain reads it: the JSON `hubble observe -o json` prints (protobuf JSON with
 * the proto's field names, enums by name, one GetFlowsResponse a line) or the Observer API's Flow
 * as a JavaScript object (lower camel case, enums by number). Every field is checked and named.
 */
import { isIP } from 'node:net';
import { flowpb } from '../../hubble/index.js';
import { badFlowField, notADrop } from './errors.js';
import type { DroppedFlow, FlowProtocol, FlowSide } from './types.js';

const { DropReason, TrafficDirection, Verdict } = flowpb;

type Obj = Readonly<Record<string, unknown>>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `snake_case` → `snakeCase` (protobuf JSON's two spellings of a field). */
const camel = (k: string): string => k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());

/** A field under either spelling. */
function field(o: Obj, key: string): unknown {
  return o[key] !== undefined ? o[key] : o[camel(key)];
}

/** An enum value given by name or number; undefined when absent. */
function enumValue<E extends Record<string, string | number>>(e: E, v: unknown, pointer: string, what: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && typeof e[v] === 'string') return v;
  if (typeof v === 'string' && typeof e[v] === 'number') return e[v] as number;
  const names = Object.keys(e).filter((k) => Number.isNaN(Number(k)));
  throw badFlowField(pointer, `${JSON.stringify(v)} is not a ${what}`, `give one of ${names.join(', ')} (or its number)`);
}

function uint(v: unknown, pointer: string, max: number): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max) return v;
  throw badFlowField(pointer, `${JSON.stringify(v)} is not a whole number from 0 to ${max}`, `give a number from 0 to ${max}`);
}

function str(v: unknown, pointer: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string') return v;
  throw badFlowField(pointer, `${JSON.stringify(v)} is not a string`, 'give a string');
}

function side(o: unknown, ip: string | undefined, pointer: string): FlowSide {
  if (o === undefined || o === null) {
    throw badFlowField(pointer, 'missing: the flow does not say who this side is', 'give the flow as hubble observe -o json prints it (with source and destination)');
  }
  if (!isObj(o)) throw badFlowField(pointer, `${JSON.stringify(o)} is not an object`, 'give an Endpoint object ({identity, labels, namespace, pod_name})');
  const labels = field(o, 'labels') ?? [];
  if (!Array.isArray(labels) || labels.some((l) => typeof l !== 'string')) {
    throw badFlowField(`${pointer}/labels`, 'not a list of label strings', 'give labels as "source:key=value" strings');
  }
  const namespace = str(field(o, 'namespace'), `${pointer}/namespace`);
  const podName = str(field(o, 'pod_name'), `${pointer}/pod_name`);
  const endpointId = uint(field(o, 'ID'), `${pointer}/ID`, 65535);
  return {
    identity: uint(field(o, 'identity'), `${pointer}/identity`, 0xffffffff),
    labels: labels as string[],
    ...(namespace ? { namespace } : {}),
    ...(podName ? { pod: namespace ? `${namespace}/${podName}` : podName } : {}),
    ...(endpointId ? { endpointId } : {}),
    ...(ip ? { ip } : {}),
  };
}

function layer4(l4: unknown): { protocol?: FlowProtocol; port: number } {
  if (l4 === undefined || l4 === null) return { port: 0 };
  if (!isObj(l4)) throw badFlowField('/flow/l4', `${JSON.stringify(l4)} is not an object`, 'give {"TCP": {"destination_port": N}} or UDP, SCTP, ICMPv4, ICMPv6');
  for (const p of ['TCP', 'UDP', 'SCTP'] as const) {
    const v = l4[p];
    if (v === undefined || v === null) continue;
    if (!isObj(v)) throw badFlowField(`/flow/l4/${p}`, 'not an object', 'give {"destination_port": N}');
    return { protocol: p, port: uint(field(v, 'destination_port'), `/flow/l4/${p}/destination_port`, 65535) };
  }
  if (l4.ICMPv4 !== undefined && l4.ICMPv4 !== null) return { protocol: 'ICMP', port: 0 };
  if (l4.ICMPv6 !== undefined && l4.ICMPv6 !== null) return { protocol: 'ICMPv6', port: 0 };
  return { port: 0 };
}

function time(v: unknown): string | undefined {
  if (typeof v === 'string' && !Number.isNaN(Date.parse(v))) return new Date(v).toISOString();
  if (isObj(v) && typeof v.seconds === 'number') return new Date(v.seconds * 1000 + Math.floor(Number(v.nanos ?? 0) / 1e6)).toISOString();
  if (v === undefined || v === null) return undefined;
  throw badFlowField('/flow/time', `${JSON.stringify(v)} is not a time`, 'give an RFC 3339 time, as hubble observe -o json prints it');
}

function address(ipObj: unknown, key: 'source' | 'destination'): string | undefined {
  if (ipObj === undefined || ipObj === null) return undefined;
  if (!isObj(ipObj)) throw badFlowField('/flow/IP', `${JSON.stringify(ipObj)} is not an object`, 'give {"source": ADDRESS, "destination": ADDRESS}');
  const a = str(ipObj[key], `/flow/IP/${key}`);
  if (a !== undefined && !isIP(a)) throw badFlowField(`/flow/IP/${key}`, `${JSON.stringify(a)} is not an IP address`, 'give an IPv4 or IPv6 address');
  return a;
}

/**
 * The dropped flow in `input`: a Flow, or a GetFlowsResponse (`{"flow": {...}}`) as each line of
 * `hubble observe -o json` is. Throws ExplainError naming the field (`/flow/...`) and the fix.
 */
export function parseDroppedFlow(input: unknown): DroppedFlow {
  if (!isObj(input)) throw badFlowField('/flow', `${JSON.stringify(input)?.slice(0, 60)} is not a flow object`, 'give one line of hubble observe -o json (a JSON object)');
  const flow = isObj(input.flow) ? input.flow : input;
  const verdict = enumValue(Verdict, field(flow, 'verdict'), '/flow/verdict', 'verdict');
  if (verdict === undefined) throw badFlowField('/flow/verdict', 'missing', 'give a flow from hubble observe -o json (it has "verdict": "DROPPED")');
  if (verdict !== Verdict.DROPPED) throw notADrop(Verdict[verdict] ?? String(verdict));
  const desc = enumValue(DropReason, field(flow, 'drop_reason_desc'), '/flow/drop_reason_desc', 'Hubble drop reason');
  const dropReason = desc ?? uint(field(flow, 'drop_reason'), '/flow/drop_reason', 255);
  if (!dropReason) throw badFlowField('/flow/drop_reason_desc', 'missing: a dropped flow names its drop reason', 'give the flow as hubble observe -o json prints it (drop_reason_desc, e.g. POLICY_DENIED)');
  const ipObj = field(flow, 'IP');
  const { protocol, port } = layer4(field(flow, 'l4'));
  const dirNum = enumValue(TrafficDirection, field(flow, 'traffic_direction'), '/flow/traffic_direction', 'traffic direction');
  const svc = field(flow, 'destination_service');
  const service = isObj(svc) && typeof svc.name === 'string' && svc.name ? `${typeof svc.namespace === 'string' && svc.namespace ? `${svc.namespace}/` : ''}${svc.name}` : undefined;
  const uuid = str(field(flow, 'uuid'), '/flow/uuid');
  const when = time(field(flow, 'time'));
  const iface = field(flow, 'interface');
  const ifIndex = isObj(iface) ? uint(iface.index, '/flow/interface/index', 0xffffffff) : 0;
  return {
    ...(uuid ? { uuid } : {}),
    ...(when ? { time: when } : {}),
    source: side(field(flow, 'source'), address(ipObj, 'source'), '/flow/source'),
    destination: side(field(flow, 'destination'), address(ipObj, 'destination'), '/flow/destination'),
    ...(protocol ? { protocol } : {}),
    port,
    direction: dirNum === TrafficDirection.INGRESS ? 'ingress' : dirNum === TrafficDirection.EGRESS ? 'egress' : 'unknown',
    dropReason,
    ...(service ? { service } : {}),
    ...(ifIndex ? { interfaceIndex: ifIndex } : {}),
  };
}

/** `namespace/pod (ip:port)` or what is known of a side, for sentences. */
export function describeSide(s: FlowSide, port?: number): string {
  const where = s.ip ? (port ? (s.ip.includes(':') ? `[${s.ip}]:${port}` : `${s.ip}:${port}`) : s.ip) : '';
  const who = s.pod ?? (s.labels.find((l) => l.startsWith('reserved:')) ?? (s.identity ? `identity ${s.identity}` : ''));
  return who && where ? `${who} (${where})` : who || where || 'unknown';
}
