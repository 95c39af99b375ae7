// Monitor events (unprivileged): struct monitor_event decoded from crafted bytes as bpf/lib/common.h
// lays it out, and the cilium-dbg lines and Hubble-style JSON made of them; filters; bad --type.
import t from 'tap';
import {
  DROP_EVENT_SIZE, MONITOR_EVENT_SIZE, decodeDropEvent, decodeMonitorEvent, flowJson, formatLine, matchesFilter, parseEventTypes, tcpFlagNames,
  type EnrichedEvent, type MonitorEvent,
} from '../../src/monitor/index.js';

/** A record: type, reason, egress, proto, endpoint 42, ports, identities 1000 -> 4242, ifindex 9. */
function record(o: { type: number; reason?: number; egress?: number; proto?: number; family?: number; ct?: number; match?: number; action?: number; flags?: number }): Buffer {
  const b = Buffer.alloc(MONITOR_EVENT_SIZE);
  b[0] = o.type;
  b[1] = o.reason ?? 0;
  b[2] = o.egress ?? 0;
  b[3] = o.proto ?? 6;
  b.writeUInt16LE(42, 4);
  b.writeUInt16BE(8080, 6);
  b.writeUInt32LE(1000, 8);
  b.writeUInt32LE(4242, 12);
  b.writeUInt32LE(9, 16);
  b[20] = o.family ?? 4;
  b[22] = o.ct ?? 0;
  b[23] = o.match ?? 0;
  Buffer.from([10, 0, 0, 10]).copy(b, 24);
  Buffer.from([10, 0, 0, 2]).copy(b, 40);
  b.writeUInt16BE(41234, 56);
  b[58] = o.flags ?? 0x02;
  b[59] = o.action ?? 0;
  b.writeUInt32LE(74, 60);
  return b;
}

const side = (ID: number, identity: number, labels: string[]) => ({ ID, identity, labels });
const enriched = (event: MonitorEvent): EnrichedEvent => ({ event, time: '2026-11-24T05:00:00.000Z', source: side(0, 1000, ['k8s:app=client']), destination: side(42, 4242, ['k8s:app=server']) });

t.test('decoding: every field, both families, unknown and short records', async (t) => {
  const drop = decodeMonitorEvent(record({ type: 1, reason: 2 }))!;
  t.match(drop, {
    type: 'drop', reason: 'policy-deny', direction: 'ingress', endpointId: 42, protocol: 6, sport: 41234, dport: 8080, srcIdentity: 1000, dstIdentity: 4242,
    ifIndex: 9, src: '10.0.0.10', dst: '10.0.0.2', tcpFlags: 2, len: 74,
  });
  t.strictSame(decodeDropEvent(record({ type: 1, reason: 1 }))?.reason, 'policy');
  t.equal(decodeDropEvent(record({ type: 2 })), undefined, 'a trace is not a drop event');
  t.match(decodeMonitorEvent(record({ type: 2, egress: 1, ct: 2 })), { type: 'trace', direction: 'egress', ctStatus: 'reply', reason: '' });
  t.match(decodeMonitorEvent(record({ type: 3, match: 2, action: 1 })), { type: 'policy-verdict', match: 'L3-L4', action: 'allow' });
  t.match(decodeMonitorEvent(record({ type: 1, reason: 9 })), { reason: 'reason-9' }, 'an unknown reason keeps its number');
  const v6 = record({ type: 1, family: 6 });
  Buffer.from('fd000000000000000000000000000010', 'hex').copy(v6, 24);
  t.equal(decodeMonitorEvent(v6)?.src, 'fd00::10');
  t.equal(decodeMonitorEvent(record({ type: 1, family: 0 }))?.src, undefined, 'no addresses for an unparsed packet');
  t.equal(decodeMonitorEvent(record({ type: 7 })), undefined, 'an unknown type is skipped');
  t.equal(decodeMonitorEvent(Buffer.alloc(DROP_EVENT_SIZE)), undefined, 'too short');
});

t.test("lines as cilium-dbg monitor prints them", async (t) => {
  t.equal(
    formatLine(enriched(decodeMonitorEvent(record({ type: 1, reason: 1 }))!)),
    'xx drop (Policy denied) flow 0x0 to endpoint 42, ifindex 9, , identity 1000->4242: 10.0.0.10:41234 -> 10.0.0.2:8080 tcp SYN',
  );
  t.equal(
    formatLine(enriched(decodeMonitorEvent(record({ type: 2, ct: 0, flags: 0x12 }))!)),
    '-> endpoint 42 flow 0x0 , identity 1000->4242 state new ifindex 9: 10.0.0.10:41234 -> 10.0.0.2:8080 tcp SYN, ACK',
  );
  t.equal(
    formatLine(enriched(decodeMonitorEvent(record({ type: 3, match: 1, action: 1 }))!)),
    'Policy verdict log: flow 0x0 local EP ID 42, remote ID 1000, proto 6, ingress, action allow, auth: disabled, match L3-Only, 10.0.0.10:41234 -> 10.0.0.2:8080 tcp SYN',
  );
  const icmp = decodeMonitorEvent(record({ type: 1, reason: 1, proto: 1 }))!;
  t.equal(formatLine(enriched({ ...icmp, icmpType: 8 })), 'xx drop (Policy denied) flow 0x0 to endpoint 42, ifindex 9, , identity 1000->4242: 10.0.0.10 -> 10.0.0.2 icmp type 8');
  t.strictSame(tcpFlagNames(0x11), ['ACK', 'FIN']);
});

t.test('JSON with Hubble Flow field names', async (t) => {
  t.match(flowJson(enriched(decodeMonitorEvent(record({ type: 1, reason: 1 }))!)), {
    verdict: 'DROPPED', drop_reason_desc: 'POLICY_DENIED', event_type: { type: 1 }, IP: { source: '10.0.0.10', destination: '10.0.0.2', ipVersion: 'IPv4' },
    l4: { TCP: { source_port: 41234, destination_port: 8080, flags: { SYN: true } } }, source: { labels: ['k8s:app=client'] }, destination: { ID: 42 },
    traffic_direction: 'INGRESS', is_reply: false,
  });
  const reply = flowJson(enriched(decodeMonitorEvent(record({ type: 2, ct: 2, proto: 17 }))!));
  t.match(reply, { verdict: 'FORWARDED', is_reply: true, l4: { UDP: { destination_port: 8080 } }, trace_observation_point: 'TO_ENDPOINT' });
  t.notOk('drop_reason_desc' in reply);
  t.match(flowJson(enriched(decodeMonitorEvent(record({ type: 3, action: 0 }))!)), { verdict: 'DROPPED', event_type: { type: 5 }, policy_match_type: 'none' });
});

t.test('filters and --type values', async (t) => {
  const e = decodeMonitorEvent(record({ type: 1 }))!;
  t.ok(matchesFilter({ types: [], relatedTo: [] }, e));
  t.ok(matchesFilter({ types: ['drop'], relatedTo: [42] }, e));
  t.notOk(matchesFilter({ types: ['trace'], relatedTo: [] }, e));
  t.notOk(matchesFilter({ types: [], relatedTo: [7] }, e));
  t.strictSame(parseEventTypes(['drop', 'policy-verdict']), ['drop', 'policy-verdict']);
  t.throws(() => parseEventTypes(['Drop']), /--type "Drop" is not an event type: use one of drop, trace, policy-verdict/);
});
