// The stateful verdict cases (test/fixtures/stateful-cases.ts) against the model, through the
// memory datapath with an injected clock (unprivileged); plus the model's own edges: the entry a
// connection leaves (flags, lifetimes, counters), keys in Cilium's orientation, LRU eviction,
// garbage collection, and a read-only verdict agreeing with a packet going through.
import t from 'tap';
import { MemoryDatapath } from '../../src/cells/datapath-memory/index.js';
import { Conntrack, ctPorts, forwardKey } from '../../src/datapath/model/conntrack.js';
import { CtFlags, TcpFlags, type CtTimeouts } from '../../src/datapath/conntrack.js';
import { MemoryCtStore } from '../../src/datapath/memory/ct-store.js';
import { statefulCases, type StatefulCase } from '../fixtures/verdict-cases.js';

const EP_IDENTITY = 4242;

/** A memory datapath for a case: endpoint 7 with the case's ipcache, policy and options, a clock starting at 1000 s. */
function setup(c: StatefulCase): { dp: MemoryDatapath; clock: { now: number } } {
  const clock = { now: 1000 };
  const dp = new MemoryDatapath({ ctTimeouts: c.timeouts, clock: () => clock.now });
  for (const e of c.ipcache) dp.maps.upsertIPCache(e);
  dp.maps.setPolicy(7, c.policy);
  void dp.loader.reloadEndpoint({ id: 7, identity: EP_IDENTITY, ipv4: '10.0.0.2', ipv6: 'fd00::2', ifName: 'lxc7', ifIndex: 7, mac: '', hostMac: '', ...(c.options ? { options: c.options } : {}) });
  return { dp, clock };
}

t.test('every stateful case through the memory datapath', async (t) => {
  t.ok(statefulCases.length >= 12, 'the table has its cases');
  t.equal(new Set(statefulCases.map((c) => c.name)).size, statefulCases.length, 'case names are unique');
  const seen = new Set<string>();
  for (const c of statefulCases) {
    const { dp, clock } = setup(c);
    for (const [i, s] of c.steps.entries()) {
      if (s.policy) dp.maps.setPolicy(7, s.policy);
      if (s.advance) clock.now += s.advance;
      const asked = await dp.verdict(7, s.direction, s.packet);
      const out = dp.process(7, s.direction, s.packet);
      const label = `${c.name} / ${i + 1}. ${s.name}`;
      t.same({ allowed: out.verdict.allowed, reason: out.verdict.reason, ct: out.ct }, { allowed: s.expect.allowed, reason: s.expect.reason, ct: s.expect.ct }, label);
      t.same(asked, out.verdict, `${label}: the read-only verdict agrees`);
      seen.add(out.ct);
    }
  }
  t.same([...seen].sort(), ['established', 'new', 'related', 'reopened', 'reply'], 'every conntrack status is exercised');
});

t.test('the entry a TCP connection leaves: flags, lifetimes, counters, source identity', async (t) => {
  const timeouts: CtTimeouts = { tcp: 100, any: 20, syn: 10, close: 5 };
  const clock = { now: 500.7 };
  const store = new MemoryCtStore();
  const ct = new Conntrack(store, timeouts, () => clock.now);
  const syn = { src: '10.0.0.2', dst: '10.0.0.10', protocol: 6, sport: 40000, dport: 80, tcpFlags: TcpFlags.SYN, length: 74 };
  t.same(ct.lookup('egress', syn), { status: 'new', track: true });
  t.ok(ct.create('egress', syn, 4242));
  const key = forwardKey('egress', syn);
  t.same(key, { family: 'ipv4', daddr: '10.0.0.2', saddr: '10.0.0.10', dport: 80, sport: 40000, nexthdr: 6, flags: 0 }, "Cilium's orientation: addresses of the reply, ports of the connection, TUPLE_F_OUT");
  let e = store.get(key)!;
  t.same([e.lifetime, e.flags, e.txPackets, e.txBytes, e.txFlagsSeen, e.srcSecId], [510, 0, 1, 74, TcpFlags.SYN, 4242], 'SYN lifetime from the whole second, the packet counted, opener identity');
  clock.now = 503.2;
  t.same(ct.lookup('ingress', { src: '10.0.0.10', dst: '10.0.0.2', protocol: 6, sport: 80, dport: 40000, tcpFlags: TcpFlags.SYN | TcpFlags.ACK, length: 74 }).status, 'reply');
  e = store.get(key)!;
  t.same([e.lifetime, e.flags, e.rxPackets, e.rxFlagsSeen], [513, 0, 1, TcpFlags.SYN | TcpFlags.ACK], 'the SYN-ACK keeps the SYN lifetime');
  t.equal(ct.lookup('egress', { ...syn, tcpFlags: TcpFlags.ACK }).status, 'established');
  e = store.get(key)!;
  t.same([e.lifetime, e.flags], [603, CtFlags.SeenNonSyn], 'a packet without SYN: the TCP lifetime');
  t.equal(ct.lookup('egress', { ...syn, tcpFlags: TcpFlags.FIN | TcpFlags.ACK }).status, 'established');
  t.same([store.get(key)!.lifetime, store.get(key)!.flags], [603, CtFlags.SeenNonSyn | CtFlags.TxClosing], 'FIN out: closing one way, still alive');
  clock.now = 504;
  t.equal(ct.lookup('ingress', { src: '10.0.0.10', dst: '10.0.0.2', protocol: 6, sport: 80, dport: 40000, tcpFlags: TcpFlags.FIN | TcpFlags.ACK }).status, 'reply');
  t.same([store.get(key)!.lifetime, store.get(key)!.flags], [509, CtFlags.SeenNonSyn | CtFlags.TxClosing | CtFlags.RxClosing], 'FIN back: the close lifetime');
  clock.now = 507;
  t.equal(ct.lookup('egress', { ...syn, tcpFlags: TcpFlags.ACK }).status, 'established');
  t.equal(store.get(key)!.lifetime, 509, 'a closed entry is not extended');
  clock.now = 510;
  t.equal(ct.lookup('egress', { ...syn, tcpFlags: TcpFlags.ACK }).status, 'new', 'expired once lifetime < now');
});

t.test('conntrack ports and keys: echo identifiers, other ICMP, IPv6', async (t) => {
  t.same(ctPorts({ protocol: 1, icmpType: 8, icmpId: 7 }), [7, 0], 'echo request: the identifier as the source port');
  t.same(ctPorts({ protocol: 1, icmpType: 0, icmpId: 7 }), [0, 7], 'echo reply: as the destination port');
  t.same(ctPorts({ protocol: 58, icmpId: 3 }), [3, 0], 'ICMPv6 defaults to an echo request');
  t.same(ctPorts({ protocol: 1, icmpType: 13, icmpId: 7 }), [0, 0], 'other ICMP: no ports');
  t.same(ctPorts({ protocol: 47, sport: 1, dport: 2 }), [0, 0], 'protocols without ports');
  t.same(forwardKey('ingress', { src: 'fd00::10', dst: 'fd00::2', protocol: 17, sport: 6000, dport: 53 }),
    { family: 'ipv6', daddr: 'fd00::10', saddr: 'fd00::2', dport: 53, sport: 6000, nexthdr: 17, flags: 1 }, 'opened towards the endpoint: TUPLE_F_IN');
});

t.test('the memory store evicts the least recently used entry per kind; GC removes the expired', async (t) => {
  const clock = { now: 100 };
  const store = new MemoryCtStore({ tcp: 2, any: 2 });
  const ct = new Conntrack(store, { tcp: 50, any: 10, syn: 10, close: 1 }, () => clock.now);
  const udp = (sport: number) => ({ src: '10.0.0.2', dst: '10.0.0.10', protocol: 17, sport, dport: 53 });
  ct.create('egress', udp(1), 1);
  ct.create('egress', udp(2), 1);
  t.equal(ct.lookup('egress', udp(1)).status, 'established', 'touch the first: the second is now least recently used');
  ct.create('egress', udp(3), 1);
  t.same([ct.lookup('egress', udp(1), false).status, ct.lookup('egress', udp(2), false).status, ct.lookup('egress', udp(3), false).status], ['established', 'new', 'established']);
  ct.create('egress', { src: '10.0.0.2', dst: '10.0.0.10', protocol: 6, sport: 9, dport: 80, tcpFlags: TcpFlags.SYN }, 1);
  t.equal(store.size, 3, 'TCP has its own budget');
  const dp = new MemoryDatapath({ clock: () => clock.now, ctTimeouts: { tcp: 50, any: 10, syn: 10, close: 1 } });
  dp.maps.setPolicy(1, [{ identity: 0, direction: 'egress', protocol: 0, port: 0, deny: false }]);
  dp.process(1, 'egress', udp(1));
  dp.process(1, 'egress', { ...udp(2), protocol: 6, tcpFlags: TcpFlags.SYN });
  clock.now += 10;
  t.equal(dp.conntrackGC(), 0, 'nothing expired at lifetime == now');
  clock.now += 1;
  t.equal(dp.conntrackGC(), 2, 'both expired one second later');
  t.equal(dp.conntrack.size, 0);
});
