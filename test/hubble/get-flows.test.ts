// GetFlows' follower (unprivileged, a fake call standing in for grpc-js's stream): new flows
// stream as they come, a client whose buffer is full lags behind in the ring and is told how many
// the ring overwrote (lost_events HUBBLE_RING_BUFFER), filters apply, `until` ends the stream, and
// the agent's stop ends it too.
import { EventEmitter } from 'node:events';
import t from 'tap';
import type { EnrichedEvent, MonitorEvent } from '../../src/monitor/index.js';
import { flowpb, observerpb } from '../../src/hubble/index.js';
import { Registry } from 'prom-client';
import { HubbleObserver, registerLostEvents, serveGetFlows, type GetFlowsCall } from '../../src/cells/hubble/index.js';

/** A stream that takes `room` messages before asking for a drain. */
class FakeCall extends EventEmitter {
  readonly sent: observerpb.GetFlowsResponse[] = [];
  ended = false;
  buffered = 0;
  constructor(readonly request: observerpb.GetFlowsRequest, private readonly room = Infinity) {
    super();
  }
  write(m: observerpb.GetFlowsResponse | Buffer): boolean {
    // flows come encoded once for every follower (flowResponseBytes)
    this.sent.push(Buffer.isBuffer(m) ? observerpb.GetFlowsResponse.decode(m) : m);
    return ++this.buffered < this.room;
  }
  get writableLength(): number {
    return this.buffered;
  }
  end(): void {
    this.ended = true;
  }
  drain(): void {
    this.buffered = 0;
    this.emit('drain');
  }
}

const ev = (sport: number): MonitorEvent => ({
  type: 'drop', reason: 'policy', direction: 'ingress', endpointId: 7, protocol: 6, dport: sport % 2 ? 81 : 80, srcIdentity: 1, dstIdentity: 2, ifIndex: 9,
  src: '10.0.0.1', dst: '10.0.0.2', icmpType: 0, sport, tcpFlags: 2, ctStatus: 'new', match: 'none', action: 'deny', len: 60,
});
const side = { ID: 1, identity: 1, labels: [] };
const feed = (o: HubbleObserver, sport: number, time = new Date().toISOString()): void =>
  o.onRecord({ kind: 'event', event: { event: ev(sport), time, source: side, destination: side } satisfies EnrichedEvent });
const req = (o: Partial<observerpb.GetFlowsRequest>): observerpb.GetFlowsRequest => ({ ...observerpb.GetFlowsRequest.decode(new Uint8Array()), ...o });
const serve = (o: HubbleObserver, call: FakeCall): void => serveGetFlows(call as unknown as GetFlowsCall, o, 1);
const ports = (c: FakeCall): number[] => c.sent.filter((m) => m.flow).map((m) => m.flow!.l4!.TCP!.sourcePort);

t.test('the last flows, then new ones; a filter applies to both', async (t) => {
  const o = new HubbleObserver(15, 'n');
  for (const p of [1, 2, 3, 4]) feed(o, p);
  const dport81 = { ...flowpb.FlowFilter.decode(new Uint8Array()), destinationPort: ['81'] };
  const call = new FakeCall(req({ number: 1, follow: true, whitelist: [dport81] }));
  serve(o, call);
  t.same(ports(call), [3], 'the last matching stored flow');
  feed(o, 5);
  feed(o, 6);
  t.same(ports(call), [3, 5], 'then each new matching one');
  t.notOk(call.ended);
  o.stop();
  t.ok(call.ended, "the agent's stop ends the stream");
});

t.test('a slow client lags, then learns how many the ring overwrote', async (t) => {
  const o = new HubbleObserver(7, 'n');
  const call = new FakeCall(req({ follow: true }), 2);
  serve(o, call);
  for (let p = 1; p <= 20; p++) feed(o, p);
  t.same(ports(call), [1, 2], 'two fit, then it waits for a drain');
  call.drain();
  const lost = call.sent.find((m) => m.lostEvents);
  t.match(lost?.lostEvents, { source: flowpb.LostEventSource.HUBBLE_RING_BUFFER, numEventsLost: 11 }, 'flows 3-13 were overwritten');
  for (let i = 0; i < 10; i++) call.drain();
  t.same(ports(call), [1, 2, 14, 15, 16, 17, 18, 19, 20], 'every flow it could still read, in order');
  t.same(o.lostEvents, { perfEventRingBuffer: 0, hubbleRingBuffer: 11 }, 'the observer counts them');
  o.onRecord({ kind: 'lost', count: 5, why: 'the datapath ring was full' });
  t.same(o.lostEvents, { perfEventRingBuffer: 5, hubbleRingBuffer: 11 }, "and the datapath's");
  const registry = new Registry();
  registerLostEvents(registry, () => o.lostEvents);
  const text = await registry.metrics();
  t.match(text, /hubble_lost_events_total\{source="perf_event_ring_buffer"\} 5/);
  t.match(text, /hubble_lost_events_total\{source="hubble_ring_buffer"\} 11/);
});

t.test('until ends a follower; without follow the call ends at once', async (t) => {
  const o = new HubbleObserver(15, 'n');
  const call = new FakeCall(req({ follow: true, until: { seconds: 2_000_000_000, nanos: 0 } }));
  serve(o, call);
  feed(o, 1);
  t.same(ports(call), [1]);
  feed(o, 2, new Date(2_000_000_001_000).toISOString());
  t.ok(call.ended, 'a flow after until ends it');
  t.same(ports(call), [1]);
  const once = new FakeCall(req({ number: 5 }));
  serve(o, once);
  t.ok(once.ended);
  t.same(ports(once), [1, 2]);
});
