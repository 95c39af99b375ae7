/**
 * Hubble's metrics (Cilium's --hubble-metrics handlers), with Hubble's names and labels, on the
 * agent's Prometheus registry: `hubble_flows_processed_total{type,subtype,verdict}` (flow),
 * `hubble_drop_total{reason,protocol}` (drop), `hubble_tcp_flags_total{flag,family}` (tcp, of
 * forwarded TCP flows) and `hubble_port_distribution_total{protocol,port}` (port-distribution,
 * forwarded flows that are not replies: the destination port).
 */
import { Counter, type Registry } from 'prom-client';
import { flowpb } from '../../hubble/index.js';
import type { HubbleMetric } from './config.js';
import type { LostEventCounts } from './observer.js';

/** Hubble's names of trace observation points by sub type (Cilium's monitor TraceObservationPoints). */
const TRACE_POINTS: Readonly<Record<number, string>> = {
  0: 'to-endpoint', 1: 'to-proxy', 2: 'to-host', 3: 'to-stack', 4: 'to-overlay', 5: 'from-endpoint', 6: 'from-proxy', 7: 'from-host', 8: 'from-stack', 9: 'from-overlay', 10: 'from-network', 11: 'to-network',
};

const TYPE_NAMES: Readonly<Record<number, string>> = { 1: 'Drop', 4: 'Trace', 5: 'PolicyVerdict' };

/** Hubble's protocol label of a flow (v1.FlowProtocol). */
export function flowProtocol(f: flowpb.Flow): string {
  const l4 = f.l4;
  if (l4?.TCP) return 'TCP';
  if (l4?.UDP) return 'UDP';
  if (l4?.SCTP) return 'SCTP';
  if (l4?.ICMPv4) return 'ICMPv4';
  if (l4?.ICMPv6) return 'ICMPv6';
  return 'Unknown flow';
}

/** Counts flows into the enabled Hubble metrics. */
export type FlowCounter = (f: flowpb.Flow) => void;

/** Registers the enabled metrics on `registry`; returns what counts a flow into them. */
export function registerHubbleMetrics(registry: Registry, enabled: readonly HubbleMetric[]): FlowCounter {
  const registers = [registry];
  const counters: FlowCounter[] = [];
  if (enabled.includes('flow')) {
    const c = new Counter({ name: 'hubble_flows_processed_total', help: 'Total number of flows processed', labelNames: ['type', 'subtype', 'verdict'], registers });
    counters.push((f) => {
      const type = f.eventType?.type ?? 0;
      c.inc({ type: TYPE_NAMES[type] ?? 'Unknown', subtype: type === 4 ? (TRACE_POINTS[f.eventType!.subType] ?? '') : '', verdict: flowpb.Verdict[f.verdict] ?? 'VERDICT_UNKNOWN' });
    });
  }
  if (enabled.includes('drop')) {
    const c = new Counter({ name: 'hubble_drop_total', help: 'Number of drops', labelNames: ['reason', 'protocol'], registers });
    counters.push((f) => {
      if (f.verdict === flowpb.Verdict.DROPPED) c.inc({ reason: flowpb.DropReason[f.dropReasonDesc] ?? 'DROP_REASON_UNKNOWN', protocol: flowProtocol(f) });
    });
  }
  if (enabled.includes('tcp')) {
    const c = new Counter({ name: 'hubble_tcp_flags_total', help: 'TCP flag occurrences', labelNames: ['flag', 'family'], registers });
    counters.push((f) => {
      const flags = f.l4?.TCP?.flags;
      if (f.verdict !== flowpb.Verdict.FORWARDED || !flags) return;
      const family = f.IP?.ipVersion === flowpb.IPVersion.IPv6 ? 'IPv6' : 'IPv4';
      if (flags.SYN) c.inc({ flag: flags.ACK ? 'SYN-ACK' : 'SYN', family });
      if (flags.FIN) c.inc({ flag: 'FIN', family });
      if (flags.RST) c.inc({ flag: 'RST', family });
    });
  }
  if (enabled.includes('port-distribution')) {
    const c = new Counter({ name: 'hubble_port_distribution_total', help: 'Numbers of packets distributed by destination port', labelNames: ['protocol', 'port'], registers });
    counters.push((f) => {
      if (f.verdict !== flowpb.Verdict.FORWARDED || f.isReply !== false) return;
      const ports = f.l4?.TCP ?? f.l4?.UDP ?? f.l4?.SCTP;
      if (ports) c.inc({ protocol: flowProtocol(f), port: String(ports.destinationPort) });
      else if (f.l4?.ICMPv4 || f.l4?.ICMPv6) c.inc({ protocol: flowProtocol(f), port: '0' });
    });
  }
  return (f) => {
    for (const count of counters) count(f);
  };
}

/**
 * `hubble_lost_events_total{source}` (Hubble's lost events counter): events the datapath's ring
 * buffer had no room for (`perf_event_ring_buffer`) and flows followers never got because the
 * observer's ring overwrote them first (`hubble_ring_buffer`), read from `lost` at each scrape.
 */
export function registerLostEvents(registry: Registry, lost: () => LostEventCounts): void {
  new Counter({
    name: 'hubble_lost_events_total', help: 'Number of lost events', labelNames: ['source'], registers: [registry],
    collect() {
      const n = lost();
      this.reset();
      this.inc({ source: 'perf_event_ring_buffer' }, n.perfEventRingBuffer);
      this.inc({ source: 'hubble_ring_buffer' }, n.hubbleRingBuffer);
    },
  });
}
