// The whole agent over its socket (memory datapath): IPAM knows every address in use. Endpoints
// created with explicit addresses reserve them (in the pool, out of the pool, taken over from an
// earlier allocation), a second endpoint on the same address gets 409, POST /ipam never hands one
// out, DELETE /ipam/{ip} refuses while an endpoint uses it, deletion releases them and a restarted
// agent reserves them again. GET /ipam's shape and bad input, every answer checked against the spec.
import t, { type Test } from 'tap';
import type { CelliumIPAM } from '../../src/api/models.js';
import { podRequest, startAgent, type TestAgent } from './agent.js';

/** A small pool: 10.216.0.0/29 has .2-.6 usable (.1 is the gateway, .7 the broadcast). */
const SMALL = { 'enable-api-rate-limit': false, 'ipv4-range': '10.216.0.0/29', 'ipv6-range': 'fd00:216::/125' };

async function view(t: Test, a: TestAgent, query: Record<string, string> = {}): Promise<CelliumIPAM> {
  const r = await a.call('GetIpam', 'GET', '/ipam', { query });
  t.equal(r.status, 200);
  t.same(r.problems, [], 'GET /ipam matches the spec');
  return r.body as CelliumIPAM;
}

async function put(a: TestAgent, n: number, ip: { ipv4?: string; ipv6?: string }, extra: Record<string, unknown> = {}) {
  return a.call('PutEndpointID', 'PUT', '/endpoint/cilium-local:0', { body: podRequest(n, ip, extra) });
}

t.test('GET /ipam: pools and addresses in use; family filter; bad input named', async (t) => {
  const a = await startAgent(t, SMALL);
  t.same(await view(t, a), {
    allocations: {},
    ipv4: ['10.216.0.0/29'],
    ipv6: ['fd00:216::/125'],
    status: '0/11 allocated',
    pools: [
      { name: 'default', family: 'ipv4', cidr: '10.216.0.0/29', gateway: '10.216.0.1', size: 5, used: 0, free: 5 },
      { name: 'default', family: 'ipv6', cidr: 'fd00:216::/125', gateway: 'fd00:216::1', size: 6, used: 0, free: 6 },
    ],
    addresses: [],
  });
  const alloc = await a.call('PostIpam', 'POST', '/ipam', { query: { owner: 'default/x' }, headers: { expiration: 'true' } });
  const got = (alloc.body as { address: Record<string, string> }).address;
  const v = await view(t, a);
  t.match(v.addresses, [
    { ip: got.ipv4, family: 'ipv4', owner: 'default/x', pool: 'default', 'out-of-pool': false, expiring: true, 'expiration-uuid': got['ipv4-expiration-uuid'], expires: /^\d{4}-\d\d-\d\dT/ },
    { ip: got.ipv6, family: 'ipv6', owner: 'default/x', expiring: true },
  ]);
  t.same(v.pools.map((p) => [p.used, p.free]), [[1, 4], [1, 5]]);
  const v6 = await view(t, a, { family: 'ipv6' });
  t.same([v6.pools.map((p) => p.family), v6.addresses.map((x) => x.ip), v6.ipv4], [['ipv6'], [got.ipv6], []], 'family=ipv6: only IPv6');
  for (const [query, field] of [[{ family: 'ipx' }, '/query/family'], [{ family: '' }, '/query/family'], [{ pool: 'other' }, '/query/pool']] as const) {
    const bad = await a.call('GetIpam', 'GET', '/ipam', { query });
    t.equal(bad.status, 400, JSON.stringify(query));
    t.same(bad.problems, []);
    t.equal((bad.body as { error: { field: string } }).error.field, field, `names ${field}`);
  }
  t.equal((await a.call('-', 'GET', '/ipam/10.216.0.2')).status, 405, 'GET /ipam/{ip} is not an operation');
});

t.test('explicit addresses are reserved; POST /ipam never hands them out; 409 for a second endpoint; deletion releases', async (t) => {
  const a = await startAgent(t, SMALL);
  const one = await put(a, 1, { ipv4: '10.216.0.3', ipv6: 'fd00:216::3' });
  t.equal(one.status, 201, JSON.stringify(one.body));
  const id = (one.body as { id: number }).id;
  t.match((await view(t, a)).addresses, [
    { ip: '10.216.0.3', owner: 'default/web-1', pool: 'default', 'out-of-pool': false, expiring: false, 'endpoint-id': id },
    { ip: 'fd00:216::3', owner: 'default/web-1', 'endpoint-id': id },
  ]);

  const handed: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await a.call('PostIpam', 'POST', '/ipam', { query: { family: 'ipv4', owner: `api-${i}` } });
    t.equal(r.status, 201);
    handed.push((r.body as { address: { ipv4: string } }).address.ipv4);
  }
  t.same(handed, ['10.216.0.2', '10.216.0.4', '10.216.0.5', '10.216.0.6'], 'every free address but the endpoint’s');
  const full = await a.call('PostIpam', 'POST', '/ipam', { query: { family: 'ipv4' } });
  t.equal(full.status, 502, 'then the pool is exhausted: the endpoint’s address counts as used');
  t.match(full.body, /exhausted/);
  t.equal((await a.call('PostIpamIP', 'POST', '/ipam/10.216.0.3')).status, 409, 'POST /ipam/{ip} refuses it');
  const del = await a.call('DeleteIpamIP', 'DELETE', '/ipam/10.216.0.3');
  t.equal(del.status, 409, 'DELETE /ipam/{ip} refuses while the endpoint uses it');
  t.same(del.problems, []);
  t.match(del.body, new RegExp(`in use by endpoint ${id}.*delete that endpoint`));

  const dup = await put(a, 2, { ipv6: 'fd00:216::3' });
  t.equal(dup.status, 409, 'a second endpoint on the same address');
  t.same(dup.problems, []);
  const gw = await put(a, 3, { ipv4: '10.216.0.1' });
  t.equal(gw.status, 400, 'the gateway address');
  t.same([(gw.body as { error: { field: string; message: string } }).error.field, gw.problems], ['/body/addressing/ipv4', []]);
  t.match((gw.body as { error: { message: string } }).error.message, /gateway address of pool 10\.216\.0\.0\/29/);
  const half = await put(a, 4, { ipv4: '10.216.0.7', ipv6: 'fd00:216::4' });
  t.equal(half.status, 400, 'the broadcast address');
  t.equal((await view(t, a)).addresses.filter((x) => x.ip === 'fd00:216::4').length, 0, 'a refused request reserves nothing');

  t.equal((await a.call('DeleteEndpointID', 'DELETE', `/endpoint/${id}`)).status, 200);
  t.same((await view(t, a)).addresses.filter((x) => x['endpoint-id'] !== undefined), [], 'deletion releases the endpoint’s addresses');
  t.equal((await a.call('PostIpamIP', 'POST', '/ipam/10.216.0.3', { query: { owner: 'me' } })).status, 200, 'and they can be allocated again');
});

t.test('out-of-pool addresses are allowed, flagged and still exclusive; taken-over allocations keep their owner', async (t) => {
  const a = await startAgent(t, SMALL);
  const out = await put(a, 1, { ipv4: '192.0.2.10' });
  t.equal(out.status, 201, JSON.stringify(out.body));
  const id = (out.body as { id: number }).id;
  const v = await view(t, a);
  t.same(v.addresses, [{ ip: '192.0.2.10', family: 'ipv4', owner: 'default/web-1', 'out-of-pool': true, expiring: false, 'endpoint-id': id }]);
  t.equal(v.status, '0/11 allocated, 1 out of pool');
  t.same(v.pools.map((p) => p.used), [0, 0], 'the pools are not charged');
  t.equal((await put(a, 2, { ipv4: '192.0.2.10' })).status, 409, 'an out-of-pool address is exclusive too');
  t.match((await a.client.status()).ipam, { allocations: { '192.0.2.10': 'default/web-1' }, status: '0/11 allocated, 1 out of pool' }, 'GET /healthz counts it too');

  const alloc = await a.call('PostIpam', 'POST', '/ipam', { query: { owner: 'default/web-3' }, headers: { expiration: 'true' } });
  const addr = (alloc.body as { address: Record<string, string> }).address;
  const wrong = await put(a, 3, { ipv4: addr.ipv4 }, { addressing: { ipv4: addr.ipv4, 'ipv4-expiration-uuid': '00000000-0000-4000-8000-000000000000' } });
  t.equal(wrong.status, 409, 'an expiration UUID naming another allocation is refused');
  t.match(wrong.body, /another expiration UUID/);
  const thief = await put(a, 4, { ipv4: addr.ipv4 });
  t.equal(thief.status, 409, 'an allocation in flight (expiring) is not taken without its UUID');
  t.match(thief.body, /give its expiration UUID/);
  const ok = await put(a, 3, { ipv4: addr.ipv4, ipv6: addr.ipv6 }, { addressing: { ...addr } });
  t.equal(ok.status, 201);
  t.match((await view(t, a)).addresses.filter((x) => x.ip === addr.ipv4 || x.ip === addr.ipv6), [
    { owner: 'default/web-3', expiring: false, 'endpoint-id': (ok.body as { id: number }).id },
    { owner: 'default/web-3', expiring: false },
  ], 'taken over: the owner stays, the expiration is gone');
  const given = await a.call('PostIpam', 'POST', '/ipam', { query: { family: 'ipv4' } });
  const plain = (given.body as { address: { ipv4: string } }).address.ipv4;
  t.equal((await put(a, 5, { ipv4: plain })).status, 201, 'a finished allocation (no expiration, no owner: cilium-docker\'s flow) is taken over without a UUID');
  t.match((await view(t, a)).addresses.find((x) => x.ip === plain), { owner: 'api', 'endpoint-id': /./ });
});

t.test('a restarted agent reserves its endpoints’ addresses again, out-of-pool ones included', async (t) => {
  const first = await startAgent(t, SMALL);
  const ids: number[] = [];
  for (const [n, ip] of [[1, { ipv4: '10.216.0.5' }], [2, { ipv4: '198.51.100.7', ipv6: 'fd00:216::6' }]] as const) {
    const r = await put(first, n, ip);
    t.equal(r.status, 201);
    ids.push((r.body as { id: number }).id);
  }
  const before = (await view(t, first)).addresses;
  await first.h.hive.stop();
  const second = await startAgent(t, { ...SMALL, 'state-dir': `${first.dir}/state` });
  t.same((await view(t, second)).addresses, before, 'the same addresses, owners and endpoints');
  t.equal((await put(second, 3, { ipv4: '198.51.100.7' })).status, 409, 'a restored out-of-pool address is not given to another endpoint');
  const handed: string[] = [];
  for (let i = 0; i < 4; i++) handed.push(((await second.client.ipamAllocate({ family: 'ipv4', owner: `api-${i}` })).address.ipv4)!);
  t.same(handed, ['10.216.0.2', '10.216.0.3', '10.216.0.4', '10.216.0.6'], 'POST /ipam skips the restored address');
  t.equal((await second.call('DeleteEndpointID', 'DELETE', `/endpoint/${ids[1]}`)).status, 200);
  t.same((await view(t, second)).addresses.map((x) => x.ip), ['10.216.0.2', '10.216.0.3', '10.216.0.4', '10.216.0.5', '10.216.0.6'], 'deleting the restored endpoint released its addresses');
});
