/**
 * Hubble's flow filters (flow.FlowFilter, GetFlowsRequest whitelist/blacklist) compiled into
 * predicates on flows, with Hubble's semantics: within one filter every field that is set must
 * match (a field matches when one of its values does); a flow passes when it matches one of the
 * whitelist filters (or there are none) and none of the blacklist filters. Fields about what
 * Cellium's flows never carry (L7, DNS names, tunnels, trace ids, node labels) match no
 * flow, as they match no L3/L4 flow in Hubble.
 */
import { cidrContainsAddr, parseAddr, parseCidr } from '../lib/addr.js';
import { IPVersion, type Endpoint, type Flow, type FlowFilter, type Service, type TCPFlags, type Workload } from './gen/flow/flow.js';
import { labelSelector } from './labels.js';

/** A filter that cannot be used: names the field, the value and the fix. */
export class FlowFilterError extends Error {
  constructor(field: string, value: string, fix: string) {
    super(`flow filter ${field} ${JSON.stringify(value)}: ${fix}`);
    this.name = 'FlowFilterError';
  }
}

type Pred = (f: Flow) => boolean;

/** `ns/prefix`, `ns/`, or a bare prefix (any namespace), matched against a name and namespace. */
function nameFilter(values: readonly string[], side: (f: Flow) => { name: string; namespace: string } | undefined): Pred {
  const parsed = values.map((v) => {
    const slash = v.indexOf('/');
    return slash < 0 ? { ns: undefined, prefix: v } : { ns: v.slice(0, slash), prefix: v.slice(slash + 1) };
  });
  return (f) => {
    const s = side(f);
    if (!s || (s.name === '' && s.namespace === '')) return false;
    return parsed.some((p) => (p.ns === undefined || p.ns === s.namespace) && (p.prefix === '' ? p.ns !== undefined : s.name !== '' && s.name.startsWith(p.prefix)));
  };
}

function ipFilter(field: string, values: readonly string[], addr: (f: Flow) => string | undefined): Pred {
  const cidrs = values.map((v) => {
    try {
      return parseCidr(v);
    } catch {
      throw new FlowFilterError(field, v, 'expected an IP address or a CIDR such as 10.0.0.0/8');
    }
  });
  return (f) => {
    const a = addr(f);
    const parsed = a ? parseAddr(a) : undefined;
    return parsed !== undefined && cidrs.some((c) => c.family === parsed.family && cidrContainsAddr(c, parsed));
  };
}

function portFilter(field: string, values: readonly string[], port: (f: Flow) => number | undefined): Pred {
  const ports = values.map((v) => {
    const n = /^\d{1,5}$/.test(v.trim()) ? Number(v) : NaN;
    if (!(n >= 0 && n <= 65535)) throw new FlowFilterError(field, v, 'expected a port number 0-65535');
    return n;
  });
  return (f) => {
    const p = port(f);
    return p !== undefined && ports.includes(p);
  };
}

const PROTOCOLS = ['tcp', 'udp', 'sctp', 'icmp', 'icmpv4', 'icmpv6'] as const;

function protocolOf(f: Flow): string | undefined {
  const l4 = f.l4;
  if (l4?.TCP) return 'tcp';
  if (l4?.UDP) return 'udp';
  if (l4?.SCTP) return 'sctp';
  if (l4?.ICMPv4) return 'icmpv4';
  if (l4?.ICMPv6) return 'icmpv6';
  return undefined;
}

function ports(f: Flow): { sourcePort: number; destinationPort: number } | undefined {
  return f.l4?.TCP ?? f.l4?.UDP ?? f.l4?.SCTP;
}

function flagsMatch(want: TCPFlags, have: TCPFlags): boolean {
  return (Object.keys(want) as (keyof TCPFlags)[]).every((k) => !want[k] || have[k]);
}

function serviceName(s: Service | undefined): { name: string; namespace: string } | undefined {
  return s && { name: s.name, namespace: s.namespace };
}

function podName(e: Endpoint | undefined): { name: string; namespace: string } | undefined {
  return e && { name: e.podName, namespace: e.namespace };
}

/** Whether one of a side's workloads is one of `want` (an empty kind or name matches any). */
function workloadsMatch(want: readonly Workload[], have: readonly Workload[] | undefined): boolean {
  return !!have && have.some((h) => want.some((w) => (w.kind === '' || w.kind === h.kind) && (w.name === '' || w.name === h.name)));
}

function glob(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
}

/** The predicate of one filter; throws FlowFilterError for a value it cannot read. */
export function compileFilter(ff: FlowFilter): Pred {
  const preds: Pred[] = [];
  const add = <T>(values: readonly T[], make: (vs: readonly T[]) => Pred): void => {
    if (values.length > 0) preds.push(make(values));
  };
  const never: Pred = () => false;
  add(ff.uuid, (vs) => (f) => vs.includes(f.uuid));
  add(ff.sourceIp, (vs) => ipFilter('source_ip', vs, (f) => f.IP?.source));
  add(ff.destinationIp, (vs) => ipFilter('destination_ip', vs, (f) => f.IP?.destination));
  add(ff.sourcePod, (vs) => nameFilter(vs, (f) => podName(f.source)));
  add(ff.destinationPod, (vs) => nameFilter(vs, (f) => podName(f.destination)));
  add(ff.sourceService, (vs) => nameFilter(vs, (f) => serviceName(f.sourceService)));
  add(ff.destinationService, (vs) => nameFilter(vs, (f) => serviceName(f.destinationService)));
  add(ff.sourceLabel, (vs) => {
    const sels = vs.map(labelSelector);
    return (f) => sels.some((s) => s(f.source?.labels ?? []));
  });
  add(ff.destinationLabel, (vs) => {
    const sels = vs.map(labelSelector);
    return (f) => sels.some((s) => s(f.destination?.labels ?? []));
  });
  add(ff.sourceIdentity, (vs) => (f) => vs.includes(f.source?.identity ?? 0));
  add(ff.destinationIdentity, (vs) => (f) => vs.includes(f.destination?.identity ?? 0));
  add(ff.trafficDirection, (vs) => (f) => vs.includes(f.trafficDirection));
  add(ff.verdict, (vs) => (f) => vs.includes(f.verdict));
  add(ff.dropReasonDesc, (vs) => (f) => vs.includes(f.dropReasonDesc));
  add(ff.eventType, (vs) => (f) => vs.some((t) => t.type === f.eventType?.type && (!t.matchSubType || t.subType === f.eventType.subType)));
  add(ff.protocol, (vs) => {
    const want = vs.map((v) => {
      const p = v.toLowerCase();
      if (!(PROTOCOLS as readonly string[]).includes(p)) throw new FlowFilterError('protocol', v, `use one of ${PROTOCOLS.join(', ')} (Cellium's flows are L3/L4 only)`);
      return p;
    });
    return (f) => {
      const p = protocolOf(f);
      return p !== undefined && want.some((w) => w === p || (w === 'icmp' && p.startsWith('icmp')));
    };
  });
  add(ff.sourcePort, (vs) => portFilter('source_port', vs, (f) => ports(f)?.sourcePort));
  add(ff.destinationPort, (vs) => portFilter('destination_port', vs, (f) => ports(f)?.destinationPort));
  add(ff.reply, (vs) => (f) => f.isReply !== undefined && vs.includes(f.isReply));
  add(ff.tcpFlags, (vs) => (f) => !!f.l4?.TCP?.flags && vs.some((w) => flagsMatch(w, f.l4!.TCP!.flags!)));
  add(ff.nodeName, (vs) => {
    const res = vs.map((v) => glob(v.includes('/') ? v.slice(v.indexOf('/') + 1) || '*' : v));
    return (f) => res.some((r) => r.test(f.nodeName));
  });
  add(ff.ipVersion, (vs) => (f) => vs.includes(f.IP?.ipVersion ?? IPVersion.IP_NOT_USED));
  add(ff.interface, (vs) => (f) => vs.some((i) => (i.index === 0 || i.index === f.interface?.index) && (i.name === '' || i.name === f.interface?.name)));
  add(ff.encrypted, (vs) => (f) => vs.includes(f.IP?.encrypted ?? false));
  // what Cellium's flows never carry: no flow matches (as no L3/L4 flow does in Hubble)
  for (const vs of [ff.sourceFqdn, ff.destinationFqdn, ff.httpStatusCode, ff.httpMethod, ff.httpPath, ff.httpUrl, ff.dnsQuery, ff.traceId, ff.sourceIpXlated, ff.nodeLabels] as readonly (readonly unknown[])[]) add(vs, () => never);
  add(ff.sourceClusterName, (vs) => {
    const res = vs.map(glob);
    return (f) => res.some((r) => r.test(f.source?.clusterName ?? ''));
  });
  add(ff.destinationClusterName, (vs) => {
    const res = vs.map(glob);
    return (f) => res.some((r) => r.test(f.destination?.clusterName ?? ''));
  });
  add(ff.sourceWorkload, (vs) => (f) => workloadsMatch(vs, f.source?.workloads));
  add(ff.destinationWorkload, (vs) => (f) => workloadsMatch(vs, f.destination?.workloads));
  add(ff.ipTraceId, () => never);
  return (f) => preds.every((p) => p(f));
}

/** The predicate of a request's whitelist and blacklist; throws FlowFilterError. */
export function compileFilters(whitelist: readonly FlowFilter[], blacklist: readonly FlowFilter[]): Pred {
  const white = whitelist.map(compileFilter);
  const black = blacklist.map(compileFilter);
  return (f) => (white.length === 0 || white.some((p) => p(f))) && !black.some((p) => p(f));
}
