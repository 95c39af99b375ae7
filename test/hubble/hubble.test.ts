// The Hubble library and observer (unprivileged): monitor events as Hubble flows (fields and
// Hubble's numbers), the flows' wire round trip, flow filters and label selectors with Hubble's
// semantics, the ring, GetFlows' selection of stored flows, the metrics, and bad flags.
import t from 'tap';
import { Registry } from 'prom-client';
import type { EnrichedEvent, MonitorEvent } from '../../src/monitor/index.js';
import { FlowRing, LabelSelectorError, FlowFilterError, bareName, compileFilters, flowpb, labelSelector, observerpb, timestamp, toFlow } from '../../src/hubble/index.js';
import { HubbleObserver, checkRequest, hubbleConfigSchema, registerHubbleMetrics, storedFlows, GetFlowsRequestError } from '../../src/cells/hubble/index.js';

const event = (o: Partial<MonitorEvent> = {}): MonitorEvent => ({
  type: 'drop', reason: 'policy', direction: 'ingress', endpointId: 7, protocol: 6, dport: 81, srcIdentity: 1000, dstIdentity: 2000, ifIndex: 9,
  src: '10.0.0.1', dst: '10.0.0.2', icmpType: 0, sport: 4123, tcpFlags: 0x02, ctStatus: 'new', match: 'none', action: 'deny', len: 60, ...o,
});

const enriched = (e: MonitorEvent): EnrichedEvent => ({
  event: e, time: '2026-11-27T10:00:00.000Z',
  source: { ID: 3, identity: 1000, labels: ['k8s:app=client', 'k8s:io.kubernetes.pod.namespace=default'], pod_name: 'default/client-1', namespace: 'default' },
  destination: { ID: 7, identity: 2000, labels: ['k8s:app=server', 'k8s:tier=web'], pod_name: 'server', namespace: 'prod' },
});

const ctx = { node: 'node-1', time: timestamp(1_795_000_000_123_456_789n), uuid: 'u-1' };
const noFilter = flowpb.FlowFilter.decode(new Uint8Array());
const filter = (o: Partial<flowpb.FlowFilter>): flowpb.FlowFilter => ({ ...noFilter, ...o });

t.test('a policy drop as a Hubble flow', async (t) => {
  const f = toFlow(enriched(event()), ctx);
  t.match(f, {
    verdict: flowpb.Verdict.DROPPED, dropReason: 133, dropReasonDesc: flowpb.DropReason.POLICY_DENIED, eventType: { type: 1, subType: 133 },
    IP: { source: '10.0.0.1', destination: '10.0.0.2', ipVersion: flowpb.IPVersion.IPv4 }, l4: { TCP: { sourcePort: 4123, destinationPort: 81, flags: { SYN: true, ACK: false } } },
    source: { ID: 3, identity: 1000, namespace: 'default', podName: 'client-1' }, destination: { podName: 'server', namespace: 'prod' },
    trafficDirection: flowpb.TrafficDirection.INGRESS, nodeName: 'node-1', uuid: 'u-1', Type: flowpb.FlowType.L3_L4, time: { seconds: 1_795_000_000, nanos: 123_456_789 },
  });
  t.equal(f.isReply, undefined, 'a drop carries no conntrack state: is_reply unknown');
  t.match(f.Summary, /^xx drop \(Policy denied\)/);
  const wire = flowpb.Flow.decode(flowpb.Flow.encode(f).finish());
  t.same(wire, f, 'the flow survives the wire');
  t.equal(toFlow(enriched(event({ reason: 'no-backend' })), ctx).dropReasonDesc, flowpb.DropReason.SERVICE_BACKEND_NOT_FOUND, "no backend: Cilium's SERVICE_BACKEND_NOT_FOUND (158)");
  t.equal(toFlow(enriched(event({ reason: 'policy-deny' })), ctx).dropReasonDesc, flowpb.DropReason.POLICY_DENY);
  t.equal(toFlow(enriched(event({ reason: 'invalid-source' })), ctx).dropReasonDesc, flowpb.DropReason.INVALID_SOURCE_IP);
  t.equal(bareName('default/x', 'default'), 'x');
  t.equal(bareName('x', 'default'), 'x');
});

t.test('traces and policy verdicts', async (t) => {
  const reply = toFlow(enriched(event({ type: 'trace', reason: '', direction: 'egress', ctStatus: 'reply', tcpFlags: 0x12 })), ctx);
  t.match(reply, { verdict: flowpb.Verdict.FORWARDED, isReply: true, reply: true, traceObservationPoint: flowpb.TraceObservationPoint.FROM_ENDPOINT, traceReason: flowpb.TraceReason.REPLY, eventType: { type: 4, subType: 5 }, dropReasonDesc: 0 });
  const toEp = toFlow(enriched(event({ type: 'trace', reason: '', ctStatus: 'new' })), ctx);
  t.match(toEp, { traceObservationPoint: flowpb.TraceObservationPoint.TO_ENDPOINT, traceReason: flowpb.TraceReason.NEW, isReply: false, eventType: { type: 4, subType: 0 } });
  const allow = toFlow(enriched(event({ type: 'policy-verdict', reason: '', action: 'allow', match: 'L3-L4' })), ctx);
  t.match(allow, { verdict: flowpb.Verdict.FORWARDED, policyMatchType: 2, eventType: { type: 5 }, traceObservationPoint: 0 });
  const udp = toFlow(enriched(event({ protocol: 17 })), ctx);
  t.same(udp.l4, { UDP: { sourcePort: 4123, destinationPort: 81 } });
  const v6 = toFlow(enriched(event({ protocol: 58, src: 'fd00::1', dst: 'fd00::2', icmpType: 128 })), ctx);
  t.match(v6, { IP: { ipVersion: flowpb.IPVersion.IPv6 }, l4: { ICMPv6: { type: 128 } } });
});

t.test('flow filters: every set field must match; whitelist minus blacklist', async (t) => {
  const drop = toFlow(enriched(event()), ctx);
  const trace = toFlow(enriched(event({ type: 'trace', reason: '', direction: 'egress', ctStatus: 'reply', dport: 80, tcpFlags: 0x12 })), ctx);
  const pass = (w: Partial<flowpb.FlowFilter>[], b: Partial<flowpb.FlowFilter>[] = []) => (f: flowpb.Flow) => compileFilters(w.map(filter), b.map(filter))(f);
  t.ok(pass([])(drop), 'no filter: everything');
  t.ok(pass([{ sourcePod: ['default/client'] }])(drop), 'pod name prefix in a namespace');
  t.ok(pass([{ sourcePod: ['client-1'] }])(drop), 'pod name in any namespace');
  t.ok(pass([{ destinationPod: ['prod/'] }])(drop), 'a whole namespace');
  t.notOk(pass([{ sourcePod: ['prod/client'] }])(drop), 'another namespace');
  t.ok(pass([{ sourcePod: ['x/'] }, { destinationPod: ['prod/server'] }])(drop), 'one of the whitelist filters');
  t.notOk(pass([{ sourcePod: ['default/'], destinationPod: ['default/'] }])(drop), 'every field of a filter');
  t.ok(pass([{ verdict: [flowpb.Verdict.DROPPED], dropReasonDesc: [flowpb.DropReason.POLICY_DENIED] }])(drop));
  t.notOk(pass([{ verdict: [flowpb.Verdict.FORWARDED] }])(drop));
  t.ok(pass([{ sourceIp: ['10.0.0.0/24'], destinationIp: ['10.0.0.2'] }])(drop), 'CIDRs and addresses');
  t.notOk(pass([{ sourceIp: ['fd00::/8'] }])(drop));
  t.ok(pass([{ protocol: ['TCP'], destinationPort: ['81'], sourceIdentity: [1000], destinationIdentity: [2000] }])(drop));
  t.notOk(pass([{ protocol: ['udp'] }])(drop));
  t.ok(pass([{ eventType: [{ type: 1, matchSubType: true, subType: 133 }] }])(drop));
  t.notOk(pass([{ eventType: [{ type: 4, matchSubType: false, subType: 0 }] }])(drop));
  t.ok(pass([{ reply: [true] }])(trace));
  t.notOk(pass([{ reply: [false] }])(drop), 'is_reply unknown: neither true nor false');
  t.ok(pass([{ tcpFlags: [{ ...flowpb.TCPFlags.decode(new Uint8Array()), SYN: true, ACK: true }] }])(trace), 'SYN-ACK');
  t.notOk(pass([{ tcpFlags: [{ ...flowpb.TCPFlags.decode(new Uint8Array()), SYN: true, ACK: true }] }])(drop));
  t.ok(pass([{ sourceLabel: ['app=client'] }])(drop), 'a label from any source');
  t.ok(pass([{ destinationLabel: ['k8s:app in (server, db), tier'] }])(drop), 'a selector with a source, a set and an existence');
  t.notOk(pass([{ destinationLabel: ['!tier'] }])(drop));
  t.ok(pass([{ nodeName: ['node-*'] }])(drop), 'node name patterns');
  t.ok(pass([{}], [{ verdict: [flowpb.Verdict.DROPPED] }])(trace), 'blacklist');
  t.notOk(pass([{}], [{ verdict: [flowpb.Verdict.DROPPED] }])(drop));
  t.notOk(pass([{ httpMethod: ['GET'] }])(drop), 'L7 fields match no L3/L4 flow');
  t.notOk(pass([{ sourceFqdn: ['example.com'] }])(drop));
  t.throws(() => pass([{ sourceIp: ['10.0.0.300'] }])(drop), FlowFilterError);
  t.throws(() => pass([{ destinationPort: ['http'] }])(drop), /destination_port "http": expected a port number/);
  t.throws(() => pass([{ protocol: ['http'] }])(drop), /protocol "http": use one of tcp/);
  t.throws(() => labelSelector('app in (a'), LabelSelectorError);
});

t.test('the ring and GetFlows selection', async (t) => {
  const ring = new FlowRing(3);
  const mk = (s: number): flowpb.Flow => toFlow(enriched(event({ sport: s })), { ...ctx, time: timestamp(BigInt(s) * 1_000_000_000n) });
  for (const s of [1, 2, 3, 4, 5]) ring.push(mk(s));
  t.equal(ring.size, 3);
  t.equal(ring.seen, 5);
  t.same(ring.snapshot().map((e) => e.seq), [3, 4, 5], 'the last 3, oldest first');
  const req = (o: Partial<observerpb.GetFlowsRequest>): observerpb.GetFlowsRequest => ({ ...observerpb.GetFlowsRequest.decode(new Uint8Array()), ...o });
  const all = () => true;
  const sel = (o: Partial<observerpb.GetFlowsRequest>) => storedFlows(req(o), ring.snapshot(), all).map((e) => e.seq);
  t.same(sel({ number: 2 }), [4, 5], 'the last number');
  t.same(sel({ number: 2, first: true }), [3, 4], 'the first number');
  t.same(sel({}), [3, 4, 5], 'all when no number');
  t.same(sel({ follow: true }), [], 'follow without number: only new flows');
  t.same(sel({ since: { seconds: 4, nanos: 0 } }), [4, 5], 'since');
  t.same(sel({ until: { seconds: 4, nanos: 0 } }), [3, 4], 'until');
  t.throws(() => checkRequest(req({ first: true, follow: true, number: 1 })), GetFlowsRequestError);
  t.throws(() => checkRequest(req({ since: { seconds: 5, nanos: 0 }, until: { seconds: 4, nanos: 0 } })), /since is after until/);
});

t.test('the observer: flows, followers, lost events, stats; the metrics', async (t) => {
  const svc = { name: 'web', namespace: 'prod' };
  const obs = new HubbleObserver(7, 'node-1', (ip, port) => (ip === '10.0.0.2' && port === 81 ? svc : undefined));
  const registry = new Registry();
  const count = registerHubbleMetrics(registry, ['flow', 'drop', 'tcp', 'port-distribution']);
  const seen: string[] = [];
  const sub = obs.items$.subscribe((i) => {
    seen.push(i.kind);
    if (i.kind === 'flow') count(i.entry.flow);
  });
  obs.onRecord({ kind: 'event', event: { ...enriched(event()), time: new Date().toISOString() } });
  obs.onRecord({ kind: 'event', event: { ...enriched(event({ type: 'trace', reason: '', ctStatus: 'new', dport: 80 })), time: new Date().toISOString() } });
  obs.onRecord({ kind: 'lost', count: 3, why: 'full' });
  sub.unsubscribe();
  t.same(seen, ['flow', 'flow', 'lost']);
  const [d] = obs.ring.snapshot();
  t.same(d!.flow.destinationService, svc, 'the destination service of its frontend address');
  t.equal(d!.flow.sourceService, undefined);
  t.match(obs.stats(), { numFlows: 2, maxFlows: 7, seenFlows: 2 });
  t.ok(obs.stats().flowsRate > 0);
  const text = await registry.metrics();
  t.match(text, /hubble_flows_processed_total\{type="Drop",subtype="",verdict="DROPPED"\} 1/);
  t.match(text, /hubble_flows_processed_total\{type="Trace",subtype="to-endpoint",verdict="FORWARDED"\} 1/);
  t.match(text, /hubble_drop_total\{reason="POLICY_DENIED",protocol="TCP"\} 1/);
  t.match(text, /hubble_tcp_flags_total\{flag="SYN",family="IPv4"\} 1/);
  t.match(text, /hubble_port_distribution_total\{protocol="TCP",port="80"\} 1/);
});

t.test("a large ring's observer makes the same flows as a small one's", async (t) => {
  const time = new Date().toISOString();
  const flows = (capacity: number) => {
    const o = new HubbleObserver(capacity, 'node-1');
    for (const e of [event(), event({ type: 'trace', reason: '', ctStatus: 'reply', sport: 80, dport: 4123 })]) o.onRecord({ kind: 'event', event: { ...enriched(e), time } });
    return o.ring.snapshot().map((x) => ({ ...x.flow, uuid: '' }));
  };
  const big = flows(131071);
  t.same(big, flows(7));
  t.match(big[0]!.Summary, /^xx drop \(Policy denied\)/);
});

t.test('bad flags name the flag and the fix', async (t) => {
  t.equal(hubbleConfigSchema.hubbleEventBufferCapacity.parse('65535'), 65535);
  t.throws(() => hubbleConfigSchema.hubbleEventBufferCapacity.parse('4096'), /--hubble-event-buffer-capacity "4096": expected 2\^n - 1/);
  t.throws(() => hubbleConfigSchema.hubbleMetrics.parse('drop,httpV2'), /--hubble-metrics "httpV2": not a Hubble metric Cellium serves/);
  t.same(hubbleConfigSchema.hubbleMetrics.parse('drop, tcp,drop'), ['drop', 'tcp']);
  t.throws(() => hubbleConfigSchema.hubbleSocketPath.parse(' '), /--hubble-socket-path/);
});
