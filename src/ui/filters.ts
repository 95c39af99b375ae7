/**
 * The page's filters (query parameters, like `hubble observe`'s flags) as a GetFlows request:
 * `pod`, `namespace`, `label` and `port` match either side, as the CLI's `--pod`, `--namespace`,
 * `--label` and `--port` do (one whitelist filter for the source side, one for the destination);
 * `verdict`, `protocol` and `drop_reason` apply to both; `last` is how many stored flows to show
 * first. Every value is checked here, so a bad one is a 400 naming the parameter.
 */
import { compileFilters, flowpb, labelSelector, observerpb } from '../hubble/index.js';
import { UiFilterError } from './errors.js';

/** The query parameters the page understands. */
export const FILTER_PARAMS = ['pod', 'namespace', 'label', 'verdict', 'protocol', 'port', 'drop_reason', 'last'] as const;

/** How many stored flows are shown first by default, and at most. */
export const DEFAULT_LAST = 200;
export const MAX_LAST = 10_000;

const PROTOCOLS = ['tcp', 'udp', 'sctp', 'icmp', 'icmpv4', 'icmpv6'];

function enumNames(e: Record<string, string | number>): string[] {
  return Object.keys(e).filter((k) => Number.isNaN(Number(k)) && k !== 'UNRECOGNIZED');
}

/** Verdict names a filter accepts (Hubble's). */
export const VERDICTS = enumNames(flowpb.Verdict).filter((v) => v !== 'VERDICT_UNKNOWN');
/** Drop reason names a filter accepts (Hubble's DropReason). */
export const DROP_REASONS = enumNames(flowpb.DropReason).filter((v) => v !== 'DROP_REASON_UNKNOWN');

function values(q: URLSearchParams, param: string): string[] {
  return q.getAll(param).flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
}

function checkPod(v: string): void {
  if (!/^[a-z0-9.-]*(\/[a-z0-9.-]*)?$/i.test(v)) throw new UiFilterError('pod', v, 'expected NAMESPACE/POD-PREFIX, NAMESPACE/ or POD-PREFIX (letters, digits, dots and dashes)');
}

/** The GetFlows request of a page query (follow, the last flows first); throws UiFilterError. */
export function flowsRequest(q: URLSearchParams): observerpb.GetFlowsRequest {
  for (const k of q.keys()) {
    if (!(FILTER_PARAMS as readonly string[]).includes(k)) throw new UiFilterError(k, q.get(k) ?? '', `not a filter: use ${FILTER_PARAMS.join(', ')}`);
  }
  const namespaces = values(q, 'namespace');
  for (const ns of namespaces) if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(ns)) throw new UiFilterError('namespace', ns, 'expected a Kubernetes namespace name (lower-case letters, digits and dashes)');
  const pods = values(q, 'pod');
  pods.forEach(checkPod);
  // a pod without a namespace is looked for in each given namespace; a namespace alone is all its pods
  const podFilters = pods.length === 0 ? namespaces.map((ns) => `${ns}/`) : pods.flatMap((p) => (p.includes('/') || namespaces.length === 0 ? [p] : namespaces.map((ns) => `${ns}/${p}`)));
  const labels = values(q, 'label');
  for (const l of labels) {
    try {
      labelSelector(l);
    } catch (err) {
      throw new UiFilterError('label', l, (err as Error).message);
    }
  }
  const verdicts = values(q, 'verdict').map((v) => {
    const name = v.toUpperCase();
    if (!VERDICTS.includes(name)) throw new UiFilterError('verdict', v, `use one of ${VERDICTS.join(', ')}`);
    return flowpb.Verdict[name as keyof typeof flowpb.Verdict];
  });
  const protocols = values(q, 'protocol').map((v) => {
    if (!PROTOCOLS.includes(v.toLowerCase())) throw new UiFilterError('protocol', v, `use one of ${PROTOCOLS.join(', ')} (flows are L3/L4)`);
    return v.toLowerCase();
  });
  const ports = values(q, 'port').map((v) => {
    if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new UiFilterError('port', v, 'expected a port number 0-65535');
    return v;
  });
  const reasons = values(q, 'drop_reason').map((v) => {
    const name = v.toUpperCase();
    if (/^\d+$/.test(v) && flowpb.DropReason[Number(v)] !== undefined) return Number(v) as flowpb.DropReason;
    if (!DROP_REASONS.includes(name)) throw new UiFilterError('drop_reason', v, 'expected a Hubble drop reason name (e.g. POLICY_DENIED, SERVICE_BACKEND_NOT_FOUND) or its number');
    return flowpb.DropReason[name as keyof typeof flowpb.DropReason];
  });
  const lastRaw = q.get('last');
  const last = lastRaw === null || lastRaw.trim() === '' ? DEFAULT_LAST : /^\d+$/.test(lastRaw.trim()) ? Number(lastRaw) : NaN;
  if (!(last >= 0 && last <= MAX_LAST)) throw new UiFilterError('last', lastRaw ?? '', `expected a whole number of stored flows to show first, 0-${MAX_LAST}`);

  const base = (): flowpb.FlowFilter => ({ ...flowpb.FlowFilter.decode(new Uint8Array()), verdict: verdicts, protocol: protocols, dropReasonDesc: reasons });
  const sided = podFilters.length + labels.length + ports.length > 0;
  const whitelist = !sided
    ? verdicts.length + protocols.length + reasons.length > 0 ? [base()] : []
    : [
      { ...base(), sourcePod: podFilters, sourceLabel: labels, sourcePort: ports },
      { ...base(), destinationPod: podFilters, destinationLabel: labels, destinationPort: ports },
    ];
  // what the agent would refuse is refused here first (naming the page's parameter)
  compileFilters(whitelist, []);
  return { ...observerpb.GetFlowsRequest.decode(new Uint8Array()), follow: true, number: last, whitelist };
}
