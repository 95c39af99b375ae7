import t from 'tap';
import { testHive } from '../../src/hive/index.js';
import { ipamCell, IPAMToken, IPAMError, NodeIPAM, IPAMConfigToken } from '../../src/cells/ipam/index.js';

const small = (range = '10.9.0.0/29') => new NodeIPAM({ ipv4Range: range, ipv6Range: '' });

t.test('defaults: 10.200.0.0/16, gateway .1 never allocated, no IPv6 pool', async (t) => {
  const h = await testHive(t, [ipamCell]);
  const ipam = h.get(IPAMToken);
  const a = ipam.allocateNext('ipv4', 'default/pod-a');
  t.equal(a.ip, '10.200.0.2');
  t.equal(a.gateway, '10.200.0.1');
  t.equal(a.cidr, '10.200.0.0/16');
  t.equal(a.owner, 'default/pod-a');
  const [pool] = ipam.status();
  t.equal(pool!.size, 65536 - 3);
  t.same(pool!.allocated, { '10.200.0.2': 'default/pod-a' });
  t.throws(() => ipam.allocateNext('ipv6', 'x'), { code: 'no-pool', message: /--ipv6-range/ });
});

t.test('round-robin from the last allocation; network, gateway and broadcast never handed out', async (t) => {
  const ipam = small(); // 10.9.0.0/29: .0 network, .1 gateway, .2-.6 usable, .7 broadcast
  const got = [1, 2, 3, 4, 5].map((i) => ipam.allocateNext('ipv4', `o${i}`).ip);
  t.same(got, ['10.9.0.2', '10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6']);
  const err = t.throws(() => ipam.allocateNext('ipv4', 'late')) as unknown as IPAMError;
  t.equal(err.code, 'exhausted');
  t.match(err.message, /10\.9\.0\.0\/29 is exhausted \(5 usable.*--ipv4-range/);
  t.equal(ipam.release('10.9.0.3'), true);
  t.equal(ipam.release('10.9.0.3'), false);
  t.equal(ipam.allocateNext('ipv4', 'again').ip, '10.9.0.3', 'the only free address');
  ipam.release('10.9.0.2');
  ipam.release('10.9.0.5');
  t.equal(ipam.allocateNext('ipv4', 'rr').ip, '10.9.0.5', 'continues after the last allocation (.3), not from the start');
  t.equal(ipam.allocateNext('ipv4', 'rr').ip, '10.9.0.2', 'wraps around');
});

t.test('specific IPs: outside the pool, reserved, already allocated (naming the owner), invalid', async (t) => {
  const ipam = small();
  t.equal(ipam.allocateIP('10.9.0.4', 'ns/a').ip, '10.9.0.4');
  t.throws(() => ipam.allocateIP('10.9.0.4', 'ns/b'), { code: 'in-use', message: /already allocated to owner "ns\/a"/ });
  t.throws(() => ipam.allocateIP('10.10.0.4', 'ns/b'), { code: 'outside-pool', message: /outside the ipv4 pool 10\.9\.0\.0\/29/ });
  t.throws(() => ipam.allocateIP('10.9.0.1', 'ns/b'), { code: 'reserved', message: /gateway/ });
  t.throws(() => ipam.allocateIP('10.9.0.0', 'ns/b'), { code: 'reserved', message: /network/ });
  t.throws(() => ipam.allocateIP('10.9.0.7', 'ns/b'), { code: 'reserved', message: /broadcast/ });
  t.throws(() => ipam.allocateIP('10.9.0.300', 'ns/b'), { code: 'invalid', message: /not an IP address/ });
  t.throws(() => ipam.allocateIP('10.9.0.5', ''), { code: 'invalid', message: /owner is required/ });
  t.throws(() => ipam.allocateIP('fd00::5', 'x'), { code: 'no-pool' });
  t.equal(ipam.ownerOf('10.9.0.4'), 'ns/a');
  t.equal(ipam.ownerOf('10.9.0.5'), undefined);
});

t.test('releaseOwner and restore', async (t) => {
  const ipam = small('10.9.0.0/24');
  ipam.allocateNext('ipv4', 'ns/a');
  ipam.allocateNext('ipv4', 'ns/b');
  ipam.allocateNext('ipv4', 'ns/a');
  t.same(ipam.releaseOwner('ns/a').sort(), ['10.9.0.2', '10.9.0.4']);
  t.same(ipam.releaseOwner('ns/a'), []);
  t.equal(ipam.restore('10.9.0.3', 'ns/b').ip, '10.9.0.3', 'restore by the same owner is allowed');
  t.throws(() => ipam.restore('10.9.0.3', 'ns/c'), { code: 'in-use', message: /"ns\/b"/ });
  t.equal(ipam.restore('10.9.0.9', 'ns/c').owner, 'ns/c', 'restore of a free IP claims it');
});

t.test('IPv6 pool: gateway ::1, last address usable, canonical forms', async (t) => {
  const h = await testHive(t, [ipamCell], { config: { 'ipv6-range': 'fd00:10:200::/125' } });
  const ipam = h.get(IPAMToken);
  const ips = [1, 2, 3, 4, 5, 6].map(() => ipam.allocateNext('ipv6', 'o').ip);
  t.same(ips, ['fd00:10:200::2', 'fd00:10:200::3', 'fd00:10:200::4', 'fd00:10:200::5', 'fd00:10:200::6', 'fd00:10:200::7']);
  t.throws(() => ipam.allocateNext('ipv6', 'o'), { code: 'exhausted' });
  t.equal(ipam.ownerOf('FD00:10:200:0::7'), 'o', 'lookups accept any spelling');
  t.equal(ipam.release('fd00:10:200:0:0:0:0:4'), true);
  const v6 = ipam.status().find((p) => p.family === 'ipv6')!;
  t.equal(v6.gateway, 'fd00:10:200::1');
});

t.test('bad ranges are configuration errors naming the flag', async (t) => {
  await t.rejects(testHive(t, [ipamCell], { config: { 'ipv4-range': '10.0.0.0/31' } }), /--ipv4-range.*too small/s);
  await t.rejects(testHive(t, [ipamCell], { config: { 'ipv4-range': 'fd00::/64' } }), /--ipv4-range.*expected an ipv4 CIDR/s);
  await t.rejects(testHive(t, [ipamCell], { config: { 'ipv4-range': 'nope' } }), /--ipv4-range.*not a CIDR/s);
  const h = await testHive(t, [ipamCell], { config: { 'ipv4-range': '10.1.2.3/24' } });
  t.equal(h.get(IPAMConfigToken).ipv4Range, '10.1.2.0/24', 'host bits are cleared');
});

t.test('1000 concurrent allocations get 1000 distinct addresses', async (t) => {
  const h = await testHive(t, [ipamCell]);
  const ipam = h.get(IPAMToken);
  const ips = await Promise.all(Array.from({ length: 1000 }, async (_, i) => {
    await new Promise((r) => setImmediate(r));
    return ipam.allocateNext('ipv4', `ns/pod-${i}`).ip;
  }));
  t.equal(new Set(ips).size, 1000);
  t.equal(Object.keys(ipam.status()[0]!.allocated).length, 1000);
});

t.test('unconfirmed allocations expire; confirmed and restored ones stay', async (t) => {
  let now = 1_000;
  const ipam = new NodeIPAM({ ipv4Range: '10.9.0.0/24', ipv6Range: '' }, undefined, () => now);
  const a = ipam.allocateNext('ipv4', 'cni-a', { expirationMs: 100 });
  const b = ipam.allocateNext('ipv4', 'cni-b', { expirationMs: 100 });
  const c = ipam.allocateNext('ipv4', 'cni-c', { expirationMs: 100 });
  t.type(a.expirationUUID, 'string');
  ipam.confirm(b.ip);
  ipam.restore(c.ip, 'cni-c');
  now += 99;
  t.same(ipam.releaseExpired(), []);
  now += 1;
  t.same(ipam.releaseExpired(), [a.ip]);
  t.equal(ipam.ownerOf(a.ip), undefined);
  t.equal(ipam.ownerOf(b.ip), 'cni-b');
  t.equal(ipam.ownerOf(c.ip), 'cni-c');
  t.throws(() => ipam.confirm(a.ip), { code: 'not-found' });
  t.throws(() => ipam.allocateNext('ipv4', 'x', { expirationMs: -1 }), { code: 'invalid' });
  t.equal(Object.keys(ipam.status()[0]!.allocated).length, 2, 'a rejected expiration allocates nothing');
});

t.test('the cell timer job releases expired allocations', async (t) => {
  const h = await testHive(t, [ipamCell], { config: { 'ipam-expiration-interval': '20ms' } });
  const ipam = h.get(IPAMToken);
  const a = ipam.allocateNext('ipv4', 'cni', { expirationMs: 10 });
  for (let i = 0; i < 100 && ipam.ownerOf(a.ip); i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(ipam.ownerOf(a.ip), undefined);
});
