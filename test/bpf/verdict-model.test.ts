// The shared verdict case table against the pure model (unprivileged), plus the model's own edges.
import t from 'tap';
import { IPCacheLpm, decideVerdict, modelVerdict, peerAddress } from '../../src/datapath/model/verdict.js';
import { PolicyLpm } from '../../src/datapath/model/policy-lpm.js';
import { verdictCases } from '../fixtures/verdict-cases.js';

t.test('verdict cases', async (t) => {
  t.ok(verdictCases.length >= 40, 'the table has its cases');
  const names = new Set(verdictCases.map((c) => c.name));
  t.equal(names.size, verdictCases.length, 'case names are unique');
  for (const c of verdictCases) {
    t.strictSame(modelVerdict(c.ipcache, c.policy, c.direction, c.packet), c.expect, c.name);
  }
});

t.test('ipcache longest prefix, families and world', async (t) => {
  const cache = new IPCacheLpm([
    { cidr: '10.0.0.0/8', identity: 100 },
    { cidr: '10.1.0.0/16', identity: 200 },
    { cidr: '10.1.2.3/32', identity: 300 },
    { cidr: 'fd00::/8', identity: 400 },
    { cidr: '0.0.0.0/0', identity: 9 },
  ]);
  t.equal(cache.resolve('10.1.2.3'), 300);
  t.equal(cache.resolve('10.1.2.4'), 200);
  t.equal(cache.resolve('10.2.0.1'), 100);
  t.equal(cache.resolve('192.0.2.1'), 9, '/0 matches every IPv4 address');
  t.equal(cache.resolve('fd12::1'), 400);
  t.equal(cache.resolve('2001:db8::1'), 2, 'no IPv6 match is world');
  t.equal(cache.resolve('not-an-ip'), 2);
  t.throws(() => new IPCacheLpm([{ cidr: '10.0.0.0/33', identity: 1 }]), /invalid prefix/);
});

t.test('peer address and reuse of prepared tables', async (t) => {
  const pkt = { src: '10.0.0.2', dst: '10.0.0.10', protocol: 6, dport: 80 };
  t.equal(peerAddress('egress', pkt), '10.0.0.10');
  t.equal(peerAddress('ingress', pkt), '10.0.0.2');
  const policy = PolicyLpm.fromPolicy([{ identity: 7, direction: 'egress', protocol: 6, port: 80, deny: false }]);
  const cache = new IPCacheLpm([{ cidr: '10.0.0.10/32', identity: 7 }]);
  t.strictSame(modelVerdict(cache, policy, 'egress', pkt), { allowed: true, peerIdentity: 7 });
  t.strictSame(decideVerdict(policy, 'egress', 7, { ...pkt, dport: 81 }), { allowed: false, reason: 'policy', peerIdentity: 7 });
  t.strictSame(decideVerdict(policy, 'egress', 7, { ...pkt, protocol: 1, dport: 80 }), { allowed: false, reason: 'policy', peerIdentity: 7 },
    'ICMP carries no port: a TCP-port field on an ICMP packet is ignored');
});
