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

t.test('releaseOwner releases what no endpoint uses', async (t) => {
  const ipam = small('10.9.0.0/24');
  ipam.allocateNext('ipv4', 'ns/a');
  ipam.allocateNext('ipv4', 'ns/b');
  ipam.allocateNext('ipv4', 'ns/a');
  ipam.useForEndpoint('10.9.0.9', 7, 'ns/a');
  t.same(ipam.releaseOwner('ns/a').sort(), ['10.9.0.2', '10.9.0.4']);
  t.same(ipam.releaseOwner('ns/a'), []);
  t.equal(ipam.ownerOf('10.9.0.9'), 'ns/a', "the endpoint's address stays");
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

t.test('allocations nobody took over expire; those an endpoint took over stay', async (t) => {
  let now = 1_000;
  const ipam = new NodeIPAM({ ipv4Range: '10.9.0.0/24', ipv6Range: '' }, undefined, () => now);
  const a = ipam.allocateNext('ipv4', 'cni-a', { expirationMs: 100 });
  const b = ipam.allocateNext('ipv4', 'cni-b', { expirationMs: 100 });
  const c = ipam.allocateNext('ipv4', 'cni-c', { expirationMs: 100 });
  t.type(a.expirationUUID, 'string');
  t.match(ipam.allocations().find((x) => x.ip === a.ip), { expiring: true, expirationUUID: a.expirationUUID, expiresAt: 1_100 });
  ipam.useForEndpoint(b.ip, 2, 'ignored', { expirationUUID: b.expirationUUID });
  t.throws(() => ipam.useForEndpoint(c.ip, 3, 'default/thief'), { code: 'in-use', message: /"cni-c" and expires unless the endpoint it was allocated for takes it over: give its expiration UUID/ }, 'an allocation in flight cannot be taken without its UUID');
  ipam.useForEndpoint(c.ip, 3, 'ignored', { expirationUUID: c.expirationUUID });
  now += 99;
  t.same(ipam.releaseExpired(), []);
  now += 1;
  t.same(ipam.releaseExpired(), [a.ip]);
  t.equal(ipam.ownerOf(a.ip), undefined);
  t.equal(ipam.ownerOf(b.ip), 'cni-b', 'taken over with its expiration UUID: kept, owner unchanged');
  t.equal(ipam.ownerOf(c.ip), 'cni-c', 'taken over after a refused attempt: kept too');
  t.match(ipam.allocations().find((x) => x.ip === b.ip), { expiring: false, endpointId: 2 });
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

t.test('endpoint addresses in the pool: a free one is reserved for the endpoint and never handed out', async (t) => {
  const ipam = small(); // .2-.6 usable
  const r = ipam.useForEndpoint('10.9.0.3', 11, 'default/web');
  t.same(r, { ip: '10.9.0.3', family: 'ipv4', owner: 'default/web', reserved: true, outOfPool: false });
  t.same(ipam.useForEndpoint('10.9.0.3', 11, 'default/web'), r, 'the same endpoint again: nothing changes');
  t.same([1, 2, 3, 4].map(() => ipam.allocateNext('ipv4', 'api').ip), ['10.9.0.2', '10.9.0.4', '10.9.0.5', '10.9.0.6'], 'allocateNext skips it');
  t.throws(() => ipam.allocateNext('ipv4', 'api'), { code: 'exhausted' }, 'it counts as used');
  t.throws(() => ipam.allocateIP('10.9.0.3', 'api'), { code: 'in-use', message: /in use by endpoint 11 \(owner "default\/web"\).*delete that endpoint/ });
  t.throws(() => ipam.release('10.9.0.3'), { code: 'in-use', message: /endpoint 11/ }, 'cannot be released under the endpoint');
  t.same(ipam.status()[0]!, { family: 'ipv4', cidr: '10.9.0.0/29', gateway: '10.9.0.1', size: 5, used: 5, free: 0, allocated: { '10.9.0.2': 'api', '10.9.0.3': 'default/web', '10.9.0.4': 'api', '10.9.0.5': 'api', '10.9.0.6': 'api' } });
  t.match(ipam.allocations()[1], { ip: '10.9.0.3', owner: 'default/web', pool: '10.9.0.0/29', expiring: false, endpointId: 11 });
});

t.test('endpoint addresses: duplicates, reserved addresses and bad input are refused', async (t) => {
  const ipam = new NodeIPAM({ ipv4Range: '10.9.0.0/29', ipv6Range: 'fd00:9::/125' });
  ipam.useForEndpoint('10.9.0.4', 1, 'default/a');
  t.throws(() => ipam.useForEndpoint('10.9.0.4', 2, 'default/b'), { code: 'in-use', message: /in use by endpoint 1/ }, 'a second endpoint on the same address');
  t.throws(() => ipam.useForEndpoint('10.9.0.1', 2, 'default/b'), { code: 'reserved', message: /gateway address of pool 10\.9\.0\.0\/29/ });
  t.throws(() => ipam.useForEndpoint('10.9.0.0', 2, 'default/b'), { code: 'reserved', message: /network/ });
  t.throws(() => ipam.useForEndpoint('10.9.0.7', 2, 'default/b'), { code: 'reserved', message: /broadcast/ });
  t.throws(() => ipam.useForEndpoint('fd00:9::1', 2, 'default/b'), { code: 'reserved', message: /gateway/ });
  t.throws(() => ipam.useForEndpoint('10.9.0.999', 2, 'default/b'), { code: 'invalid', message: /not an IP address/ });
  t.throws(() => ipam.useForEndpoint('10.9.0.5', 2, ' '), { code: 'invalid', message: /owner is required/ });
  const out = ipam.useForEndpoint('192.0.2.10', 3, 'default/c');
  t.throws(() => ipam.useForEndpoint('192.0.2.10', 4, 'default/d'), { code: 'in-use', message: /endpoint 3/ }, 'out-of-pool duplicates too');
  t.equal(out.outOfPool, true);
  const held = ipam.allocateNext('ipv6', 'cni', { expirationMs: 60_000 });
  t.throws(() => ipam.useForEndpoint(held.ip, 5, 'x', { expirationUUID: 'not-the-uuid' }), { code: 'in-use', message: /another expiration UUID.*allocate a new address/ });
  t.equal(ipam.allocations().find((a) => a.ip === held.ip)?.expiring, true, 'a refused takeover changes nothing');
  t.same(ipam.allocations().map((a) => [a.ip, a.endpointId]), [['10.9.0.4', 1], ['192.0.2.10', 3], [held.ip, undefined]], 'only what was accepted is recorded');
});

t.test('endpoint addresses outside the pool (or with no pool of the family) are recorded, flagged and logged', async (t) => {
  const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const log = { warn: (obj: Record<string, unknown>, msg: string) => lines.push({ obj, msg }), debug: () => undefined, info: () => undefined } as unknown as ConstructorParameters<typeof NodeIPAM>[1];
  const ipam = new NodeIPAM({ ipv4Range: '10.9.0.0/29', ipv6Range: '' }, log);
  t.same(ipam.useForEndpoint('172.16.0.5', 9, 'default/x'), { ip: '172.16.0.5', family: 'ipv4', owner: 'default/x', reserved: true, outOfPool: true });
  t.same(ipam.useForEndpoint('FD00:0::7', 9, 'default/x'), { ip: 'fd00::7', family: 'ipv6', owner: 'default/x', reserved: true, outOfPool: true }, 'no IPv6 pool: out of pool, canonical spelling');
  t.match(lines, [
    { obj: { ip: '172.16.0.5', endpointID: 9, pool: '10.9.0.0/29' }, msg: /endpoint 9 uses 172\.16\.0\.5, outside the ipv4 pool 10\.9\.0\.0\/29: recorded as an out-of-pool address/ },
    { obj: { ip: 'fd00::7', endpointID: 9 }, msg: /with no ipv6 pool configured/ },
  ]);
  t.equal(ipam.ownerOf('172.16.0.5'), 'default/x');
  t.same(ipam.allocations().filter((a) => a.pool === undefined).map((a) => [a.ip, a.endpointId]), [['172.16.0.5', 9], ['fd00::7', 9]], 'flagged: no pool');
  t.same(ipam.status()[0]!.used, 0, 'the pool is not charged for it');
  t.throws(() => ipam.allocateIP('172.16.0.5', 'api'), { code: 'outside-pool' }, 'never handed out');
  t.throws(() => ipam.release('172.16.0.5'), { code: 'in-use', message: /endpoint 9/ });
  t.equal(ipam.releaseForEndpoint('172.16.0.5', 8), false, 'another endpoint cannot release it');
  t.equal(ipam.releaseForEndpoint('172.16.0.5', 9, { keepAdopted: true }), true, 'its own reservation goes with the endpoint, NoIPRelease or not');
  t.equal(ipam.ownerOf('172.16.0.5'), undefined);
});

t.test('endpoint release: reservations go; taken-over allocations go, or go back to their owner as they were (NoIPRelease)', async (t) => {
  let now = 0;
  const ipam = new NodeIPAM({ ipv4Range: '10.9.0.0/24', ipv6Range: '' }, undefined, () => now);
  ipam.useForEndpoint('10.9.0.50', 1, 'default/own');
  const cni = ipam.allocateNext('ipv4', 'default/cni', { expirationMs: 1_000 });
  t.same(ipam.useForEndpoint(cni.ip, 2, 'default/cni', { expirationUUID: cni.expirationUUID }), { ip: cni.ip, family: 'ipv4', owner: 'default/cni', reserved: false, outOfPool: false });
  const api = ipam.allocateNext('ipv4', 'api');
  ipam.useForEndpoint(api.ip, 3, 'default/api');
  t.equal(ipam.releaseForEndpoint('10.9.0.50', 2), false, 'not used by that endpoint: untouched');
  t.equal(ipam.releaseForEndpoint('10.9.0.50', 1, { keepAdopted: true }), true, 'a reservation is released even with NoIPRelease');
  t.equal(ipam.releaseForEndpoint(cni.ip, 2, { keepAdopted: true }), false, 'NoIPRelease keeps a taken-over allocation');
  t.match(ipam.allocations().find((a) => a.ip === cni.ip), { owner: 'default/cni', expiring: true, expirationUUID: cni.expirationUUID, expiresAt: 1_000 }, 'with its owner and expiration back');
  t.equal(ipam.allocations().find((a) => a.ip === cni.ip)?.endpointId, undefined, 'and no endpoint');
  t.equal(ipam.release(cni.ip), true, 'the CNI plugin can release it again');
  t.equal(ipam.releaseForEndpoint(api.ip, 3), true, 'without NoIPRelease a taken-over allocation is released');
  t.same(ipam.allocations(), []);
  now = 5_000;
  t.same(ipam.releaseExpired(), []);
});

t.test('restore: endpoints re-reserve their addresses in a fresh IPAM, out-of-pool ones included', async (t) => {
  const before = new NodeIPAM({ ipv4Range: '10.9.0.0/24', ipv6Range: 'fd00:9::/120' });
  const cni = before.allocateNext('ipv4', 'default/web', { expirationMs: 60_000 });
  before.useForEndpoint(cni.ip, 100, 'default/web', { expirationUUID: cni.expirationUUID });
  before.useForEndpoint('fd00:9::20', 100, 'default/web');
  before.useForEndpoint('198.51.100.7', 200, 'container-z');
  const after = new NodeIPAM({ ipv4Range: '10.9.0.0/24', ipv6Range: 'fd00:9::/120' });
  for (const a of before.allocations()) after.useForEndpoint(a.ip, a.endpointId!, a.owner);
  const shape = (i: NodeIPAM) => i.allocations().map((a) => [a.ip, a.owner, a.endpointId, a.pool ?? 'out of pool', a.expiring]);
  t.same(shape(after), shape(before), 'the same addresses, owners, endpoints and pools after the restart');
  t.throws(() => after.useForEndpoint('fd00:9::20', 300, 'default/other'), { code: 'in-use' }, 'a restored address is not handed to another endpoint');
  t.notOk([1, 2, 3].map(() => after.allocateNext('ipv4', 'api').ip).includes(cni.ip), 'nor by allocateNext');
});

t.test('a pool set after endpoints were restored takes their addresses: it never hands them out again', async (t) => {
  const ipam = small('10.200.0.0/16');
  // restored before the pool claimed from the cluster (CiliumNode, etcd) was set: out of the default pool
  t.equal(ipam.useForEndpoint('10.172.1.2', 7, 'demo/server').outOfPool, true);
  t.equal(ipam.useForEndpoint('10.172.1.0', 8, 'demo/odd').outOfPool, true, 'the network address of the pool to come');
  ipam.setPool('ipv4', '10.172.1.0/29');
  const handed = [0, 1, 2, 3].map((i) => ipam.allocateNext('ipv4', `demo/new-${i}`).ip);
  t.notOk(handed.includes('10.172.1.2'), `the restored endpoint's address is not handed out: ${handed.join(', ')}`);
  t.throws(() => ipam.release('10.172.1.2'), { code: 'in-use' }, 'it is held by its endpoint in the new pool');
  t.throws(() => ipam.allocateNext('ipv4', 'demo/one-too-many'), 'the /29 is full: 5 usable, 4 handed out and 1 restored');
});
