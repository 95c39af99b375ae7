// The flow response encoder (src/hubble/wire.ts) against the generated encoder it stands in for:
// the same bytes for flows of every kind the observer makes and for hand-made flows using every
// field (unfrozen messages, a negative enum, non-ASCII text, long strings), a flow's bytes kept
// intact while later flows fill new slabs, and every field of Flow written.
import t from 'tap';
import type { EnrichedEvent, FlowEndpoint, MonitorEvent } from '../../src/monitor/index.js';
import { FLOW_FIELDS, FlowResponseEncoder, flowpb, observerpb, timestamp, toFlow } from '../../src/hubble/index.js';

const event = (o: Partial<MonitorEvent> = {}): MonitorEvent => ({
  type: 'drop', reason: 'policy', direction: 'ingress', endpointId: 7, protocol: 6, dport: 81, srcIdentity: 1000, dstIdentity: 2000, ifIndex: 9,
  src: '10.0.0.1', dst: '10.0.0.2', icmpType: 0, sport: 4123, tcpFlags: 0x02, ctStatus: 'new', match: 'none', action: 'deny', len: 60, ...o,
});
const client: FlowEndpoint = Object.freeze({ ID: 3, identity: 1000, labels: ['k8s:app=client', 'k8s:io.cilium.k8s.policy.cluster=c1'], pod_name: 'default/client-1', namespace: 'default' });
const world: FlowEndpoint = Object.freeze({ ID: 0, identity: 2, labels: ['reserved:world'] });
const enriched = (e: MonitorEvent, source = client, destination = world): EnrichedEvent => ({ event: e, time: '2026-11-27T10:00:00.000Z', source, destination });
const time = Object.freeze(timestamp(1_795_000_000_123_456_789n));

const reference = (flow: flowpb.Flow, node: string): Buffer => Buffer.from(observerpb.GetFlowsResponse.encode({ flow, nodeName: node, time: flow.time }).finish());

t.test("the observer's flows: the generated encoder's bytes", async (t) => {
  const enc = new FlowResponseEncoder();
  const events: MonitorEvent[] = [
    event(),
    event({ reason: 'no-backend', protocol: 17 }),
    event({ type: 'trace', reason: '', direction: 'egress', ctStatus: 'reply', tcpFlags: 0x12 }),
    event({ type: 'trace', reason: '', ctStatus: 'new', tcpFlags: 0 }),
    event({ type: 'policy-verdict', reason: '', action: 'allow', match: 'L3-L4', protocol: 132 }),
    event({ protocol: 1, icmpType: 8 }),
    event({ protocol: 58, src: 'fd00::1', dst: 'fd00::2', icmpType: 128 }),
    event({ protocol: 47 }),
    event({ src: undefined, dst: undefined }),
    event({ ifIndex: 0, sport: 0, dport: 0 }),
  ];
  const svc = { name: 'web', namespace: 'prod' };
  const workloads = [{ name: 'client', kind: 'Deployment' }];
  let n = 0;
  for (const e of events) {
    for (const ctx of [
      { node: 'node-1', time, uuid: 'f5b6c0c4-6b8e-4a4f-9d65-0d1e3c9a1b77' },
      { node: '', time: timestamp(0n), uuid: '', destinationService: svc, sourceWorkloads: workloads },
    ]) {
      const flow = toFlow(enriched(e, client, e.type === 'trace' ? client : world), ctx);
      for (const node of ['node-1', '']) {
        t.same(enc.encode(flow, node), reference(flow, node), `${e.type} ${e.protocol} ${ctx.node || 'no node'} ${node || 'no node name'}`);
        n++;
      }
      t.same(enc.encode(flow, 'node-1'), reference(flow, 'node-1'), 'again, from the kept bytes of its shared messages');
    }
  }
  t.ok(n >= 40);
});

t.test('hand-made flows using every field', async (t) => {
  const enc = new FlowResponseEncoder();
  const base = flowpb.Flow.decode(new Uint8Array());
  const full: flowpb.Flow = {
    ...base,
    time: { seconds: 4_102_444_800, nanos: 999_999_999 }, uuid: 'ü-uuid', verdict: -1 as flowpb.Verdict, dropReason: 4_000_000_000, ethernet: { source: 'aa:bb', destination: 'cc:dd' },
    IP: { source: '10.0.0.1', sourceXlated: '10.96.0.1', destination: '10.0.0.2', ipVersion: flowpb.IPVersion.IPv4, encrypted: true },
    l4: { TCP: { sourcePort: 65535, destinationPort: 1, flags: { FIN: true, SYN: false, RST: true, PSH: false, ACK: true, URG: false, ECE: true, CWR: false, NS: true } } },
    source: { ID: 4_294_967_295, identity: 16_777_216, clusterName: 'c1', namespace: 'ns-ü', labels: ['k8s:a=b', 'k8s:ünï=cödé', 'x'.repeat(300)], podName: 'p', workloads: [{ name: 'w', kind: 'Deployment' }] },
    destination: { ID: 0, identity: 0, clusterName: '', namespace: '', labels: [], podName: '', workloads: [] },
    Type: flowpb.FlowType.L3_L4, nodeName: 'nöde', reply: true, eventType: { type: 1, subType: 133 }, sourceService: { name: 's', namespace: 'n' }, destinationService: { name: '', namespace: '' },
    trafficDirection: flowpb.TrafficDirection.EGRESS, policyMatchType: 3, traceObservationPoint: flowpb.TraceObservationPoint.FROM_ENDPOINT, traceReason: flowpb.TraceReason.REOPENED,
    dropReasonDesc: flowpb.DropReason.POLICY_DENIED, isReply: false, interface: { index: 300, name: 'lxc1' }, Summary: 's'.repeat(20_000),
  };
  for (const node of ['n', 'ñ', '']) t.same(enc.encode(full, node), reference(full, node), `every field, node ${JSON.stringify(node)}`);
  t.same(enc.encode(base, 'n'), reference(base, 'n'), 'no field set');
  const udp = { ...base, l4: { UDP: { sourcePort: 1, destinationPort: 0 } }, isReply: true };
  t.same(enc.encode(udp, 'n'), reference(udp, 'n'), 'udp, is_reply true');
  t.same(observerpb.GetFlowsResponse.decode(enc.encode(full, 'n')).flow, full, 'and it decodes to the flow');
});

t.test("a flow's bytes stay while later flows fill new slabs", async (t) => {
  const enc = new FlowResponseEncoder();
  const flows = Array.from({ length: 3000 }, (_, i) => toFlow(enriched(event({ sport: i })), { node: 'node-1', time, uuid: `u-${i}` }));
  const bytes = flows.map((f) => enc.encode(f, 'node-1'));
  t.ok(bytes.reduce((n, b) => n + b.length, 0) > 3 * 256 * 1024, 'more than three slabs');
  t.ok(flows.every((f, i) => bytes[i]!.equals(reference(f, 'node-1'))), 'every one intact');
});

t.test('every field of Flow is written', async (t) => {
  t.same([...FLOW_FIELDS].sort(), Object.keys(flowpb.Flow.decode(new Uint8Array())).sort(), 'FLOW_FIELDS lists what the generated Flow has: a new field needs writing in src/hubble/wire.ts');
});
