// The CNI server over the real control-plane cells (memory datapath) and a FakeNet: ADD, DEL,
// CHECK, STATUS, GC, chaining, the rollback of every step, and error codes naming the field.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostIfName } from '../../src/cells/cni-server/index.js';
import type { EndpointAPIManager } from '../../src/cells/endpoint/index.js';
import { encodeCniRequest } from '../../src/cni/protocol.js';
import { body, cniReq, rig, tempDir, type Rig } from './helpers.js';

const NS = '/run/netns/p1';

async function add(r: Rig, id = 'c1', version = '1.0.0', extra: Record<string, unknown> = {}) {
  const ns = `/run/netns/${id}`;
  if (!r.net.netnsExists(ns)) r.net.addNetns(ns);
  return r.server.handle(cniReq('ADD', { containerId: id, netns: ns, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${id}` }, extra, version));
}

function code(resp: { exitCode: number; body: string }): number {
  return resp.exitCode === 0 ? 0 : (body(resp).code as number);
}

t.test('ADD plumbs the pod, creates a ready endpoint and answers in the requested format', async (t) => {
  const r = await rig(t);
  r.net.addNetns(NS);
  const resp = await r.server.handle(cniReq('ADD'));
  t.equal(resp.exitCode, 0, resp.body);
  const res = body(resp) as { cniVersion: string; interfaces: Array<Record<string, unknown>>; ips: Array<Record<string, unknown>>; routes: unknown[]; dns: unknown };
  const lxc = hostIfName('c1', 'eth0');
  t.match(lxc, /^lxc[0-9a-f]{11}$/);
  t.equal(res.cniVersion, '1.0.0');
  t.same(res.interfaces.map((i) => [i.name, i.sandbox]), [[lxc, undefined], ['eth0', NS]]);
  const ip = String(res.ips[0]!.address).split('/')[0]!;
  t.same(res.ips, [{ address: `${ip}/32`, gateway: '10.200.0.1', interface: 1 }]);
  t.same(res.routes, [{ dst: '0.0.0.0/0', gw: '10.200.0.1' }]);
  t.same(res.dns, {});
  t.notOk('version' in res.ips[0]!, '1.0.0 IPs have no version');

  const ep = r.deps.manager.lookup('cni-attachment-id:c1:eth0')!;
  t.equal(ep.state, 'ready', 'sync-build-endpoint: ready when ADD answers');
  t.equal(ep.ipv4, ip);
  t.equal(ep.ifName, lxc);
  t.equal(ep.podName, 'default/p1');
  t.equal(r.deps.ipam.ownerOf(ip), 'default/p1', 'the pod owns the IP');

  const host = r.net.hostNs;
  const pod = r.net.namespaces.get(NS)!;
  const hostLink = host.links.get(lxc)!;
  t.ok(hostLink.up, 'host side up');
  t.equal(pod.links.get('eth0')!.mtu, 1500);
  t.same(pod.links.get('eth0')!.addrs, [`${ip}/32`]);
  t.ok(pod.links.get('lo')!.up, 'lo up');
  t.same(pod.routes, [{ dst: 'default', gateway: '10.200.0.1', dev: 'eth0', onlink: true }]);
  t.same(pod.neighbors, [{ dev: 'eth0', ip: '10.200.0.1', mac: hostLink.mac, permanent: true }]);
  t.same(host.routes, [{ dst: ip, dev: lxc, scope: 'link' }]);
  t.same(host.neighbors, [{ dev: lxc, ip, mac: res.interfaces[1]!.mac, permanent: true }], 'permanent host neighbour: the pod IP -> the pod MAC');
  t.equal(host.sysctls.get('net.ipv4.ip_forward'), '1');
  t.equal(host.sysctls.get(`net.ipv4.conf.${lxc}.rp_filter`), '0');
  t.notOk([...host.sysctls.keys(), ...pod.sysctls.keys()].some((k) => k.includes('ipv6')), 'no IPv6 sysctl without an IPv6 pool');
});

t.test('ADD results of every supported version; MTU from the netconf; IPv6 too', async (t) => {
  const r = await rig(t, { config: { 'ipv6-range': 'fd00:200::/112' } });
  const old = body(await add(r, 'a', '0.3.1', { mtu: 1400 })) as { cniVersion: string; ips: Array<Record<string, unknown>>; routes: unknown[] };
  t.equal(old.cniVersion, '0.3.1');
  t.same(old.ips.map((i) => i.version), ['4', '6']);
  t.match(old.ips[1], { address: /^fd00:200::[0-9a-f]+\/128$/, gateway: 'fd00:200::1', interface: 1 });
  t.same(old.routes, [{ dst: '0.0.0.0/0', gw: '10.200.0.1' }, { dst: '::/0', gw: 'fd00:200::1' }]);
  t.equal(r.net.namespaces.get('/run/netns/a')!.links.get('eth0')!.mtu, 1400);
  t.equal(r.net.hostNs.sysctls.get('net.ipv6.conf.all.forwarding'), '1');
  for (const v of ['0.4.0', '1.1.0']) t.equal(body(await add(r, `v${v}`, v)).cniVersion, v);
});

t.test('IPv6 ready at once: DAD off on both ends before any address, NODAD addresses, permanent neighbours both ways', async (t) => {
  const r = await rig(t, { config: { 'ipv6-range': 'fd00:200::/112' } });
  r.net.addNetns(NS);
  const res = body(await r.server.handle(cniReq('ADD'))) as { interfaces: Array<{ name: string; mac: string }>; ips: Array<{ address: string; gateway: string }> };
  const [v4, v6] = res.ips.map((i) => i.address.split('/')[0]!) as [string, string];
  const lxc = res.interfaces[0]!.name;
  const podMac = res.interfaces[1]!.mac;
  const pod = r.net.namespaces.get(NS)!;
  t.equal(pod.sysctls.get('net/ipv6/conf/eth0/accept_dad'), '0', 'pod: accept_dad=0');
  t.equal(r.net.hostNs.sysctls.get(`net/ipv6/conf/${lxc}/accept_dad`), '0', 'host side: accept_dad=0');
  const order = r.net.calls.filter((c) => c.endsWith('@pod'));
  t.ok(order.indexOf('writeSysctl@pod') < order.indexOf('addAddress@pod'), 'the pod sysctl is written before the addresses are added');
  const hostCalls = r.net.calls.filter((c) => c.endsWith('@host'));
  t.ok(hostCalls.indexOf('writeSysctl@host') < hostCalls.indexOf('setUp@host'), 'the host sysctl is written while the host side is still down');
  t.ok(hostCalls.indexOf('addNeighbor@host') < hostCalls.indexOf('addRoute@host'), 'host neighbours exist before the routes send traffic to the pod');
  t.same(pod.neighbors.map((n) => n.ip), ['10.200.0.1', 'fd00:200::1'], 'pod: permanent neighbours for both gateways');
  t.same(r.net.hostNs.neighbors, [{ dev: lxc, ip: v4, mac: podMac, permanent: true }, { dev: lxc, ip: v6, mac: podMac, permanent: true }], 'host: permanent neighbours for both pod IPs');
  t.same(r.net.stepsOf('addAddress'), [{ op: 'addAddress', dev: 'eth0', cidr: `${v4}/32`, noDad: false }, { op: 'addAddress', dev: 'eth0', cidr: `${v6}/128`, noDad: true }], 'IPv6 address with IFA_F_NODAD');
});

t.test('malformed calls get the spec codes, naming the field', async (t) => {
  const r = await rig(t);
  r.net.addNetns(NS);
  const cases: Array<[string, ReturnType<typeof cniReq>, number, RegExp]> = [
    ['no such netns', cniReq('ADD', { netns: '/run/netns/nope' }), 7, /CNI_NETNS/],
    ['CNI_NETNS unset', cniReq('ADD', { netns: '' }), 7, /CNI_NETNS/],
    ['relative netns', cniReq('ADD', { netns: 'netns/x' }), 7, /CNI_NETNS/],
    ['CNI_CONTAINERID unset', cniReq('ADD', { containerId: '' }), 7, /CNI_CONTAINERID/],
    ['bad ifname', cniReq('ADD', { ifName: 'a/b' }), 7, /CNI_IFNAME/],
    ['unknown CNI_ARGS key', cniReq('ADD', { args: 'K8S_POD_NAME=x;FOO=1' }), 7, /CNI_ARGS.*FOO.*IgnoreUnknown/],
    ['CNI_ARGS without =', cniReq('ADD', { args: 'IgnoreUnknown' }), 7, /CNI_ARGS|KEY=VALUE/],
    ['not JSON', cniReq('ADD', { stdin: '{' }), 6, /not JSON/],
    ['unknown version', cniReq('ADD', {}, {}, '0.2.0'), 1, /cniVersion/],
    ['bad mtu', cniReq('ADD', {}, { mtu: 'big' }), 7, /mtu/],
    ['no name', cniReq('ADD', { stdin: JSON.stringify({ cniVersion: '1.0.0', type: 'x' }) }), 7, /name/],
    ['bad prevResult', cniReq('ADD', {}, { prevResult: { ips: [{ address: 'nope' }] } }), 7, /prevResult.*ips\[0\]\.address/],
    ['CHECK without prevResult', cniReq('CHECK'), 7, /prevResult/],
    ['GC without valid-attachments', cniReq('GC', { containerId: '', ifName: '', netns: '' }, {}, '1.1.0'), 7, /valid-attachments/],
    ['bad valid-attachments', cniReq('GC', {}, { 'cni.dev/valid-attachments': [{ containerID: 'x' }] }, '1.1.0'), 7, /valid-attachments\[0\]\.ifname/],
  ];
  for (const [name, req, want, msg] of cases) {
    const resp = await r.server.handle(req);
    t.equal(resp.exitCode, 1, `${name}: exit 1`);
    const err = body(resp);
    t.equal(err.code, want, `${name}: code ${want}`);
    t.match(err.msg, msg, `${name}: message names the field`);
    t.ok(err.cniVersion, `${name}: has a cniVersion`);
  }
  t.equal(r.deps.manager.getEndpoints().length, 0, 'nothing was created');
  t.same(r.deps.ipam.status()[0]!.allocated, {}, 'no IP allocated');
});

t.test('rollback: every failing step leaves nothing behind', async (t) => {
  let failCreate = false;
  const r = await rig(t, {
    wrap: (api): EndpointAPIManager => ({
      ...api,
      createEndpoint: async (ctx, req) => {
        if (failCreate) throw Object.assign(new Error('first regeneration failed'), { code: 'failed' });
        return api.createEndpoint(ctx, req);
      },
      deleteEndpoint: (ctx, id) => api.deleteEndpoint(ctx, id),
    }),
  });
  const steps: Array<[string, () => void, number]> = [
    ['createVeth', () => r.net.fail('createVeth', 'host'), 5],
    ['host setUp', () => r.net.fail('setUp', 'host'), 5],
    ['pod address', () => r.net.fail('addAddress', 'pod'), 5],
    ['pod route', () => r.net.fail('addRoute', 'pod'), 5],
    ['pod neighbour', () => r.net.fail('addNeighbor', 'pod'), 5],
    ['host route', () => r.net.fail('addRoute', 'host'), 5],
    ['sysctl', () => r.net.fail('writeSysctl', 'host'), 5],
    ['endpoint creation', () => (failCreate = true), 102],
  ];
  for (const [name, inject, want] of steps) {
    r.net.clearFailures();
    failCreate = false;
    inject();
    const resp = await add(r, `rb-${name.replace(/\s/g, '-')}`);
    t.equal(code(resp), want, `${name}: fails with code ${want}`);
    t.same([...r.net.hostNs.links.keys()], ['lo'], `${name}: no host link left`);
    t.same(r.net.hostNs.routes, [], `${name}: no host route left`);
    t.same(r.deps.ipam.status()[0]!.allocated, {}, `${name}: IP released`);
    t.equal(r.deps.manager.getEndpoints().length, 0, `${name}: no endpoint`);
    t.same(r.deps.ledger.all(), [], `${name}: ledger empty`);
  }
  r.net.clearFailures();
  failCreate = false;
  t.equal(code(await add(r, 'after')), 0, 'a later ADD works');
});

t.test('IPAM exhaustion fails with code 101 and creates nothing', async (t) => {
  const r = await rig(t, { config: { 'ipv4-range': '10.9.0.0/30' } });
  t.equal(code(await add(r, 'one')), 0);
  const resp = await add(r, 'two');
  t.equal(code(resp), 101);
  t.match(body(resp).msg, /exhausted/);
  t.equal(r.net.hostNs.links.size, 2, 'only the first pod has a link');
});

t.test('DEL is idempotent and frees everything', async (t) => {
  const r = await rig(t);
  const res = body(await add(r, 'd1')) as { ips: Array<{ address: string }> };
  const ip = res.ips[0]!.address.split('/')[0]!;
  const del = cniReq('DEL', { containerId: 'd1', netns: '/run/netns/d1' }, { prevResult: res });
  t.same(await r.server.handle(del), { exitCode: 0, body: '' });
  t.equal(r.deps.manager.lookup('cni-attachment-id:d1:eth0'), undefined, 'endpoint gone');
  t.equal(r.deps.ipam.ownerOf(ip), undefined, 'IP released');
  t.notOk(r.net.hostNs.links.has(hostIfName('d1', 'eth0')), 'veth gone');
  t.same(await r.server.handle(del), { exitCode: 0, body: '' }, 'second DEL (containerd) succeeds');
  t.same(await r.server.handle(cniReq('DEL', { containerId: 'never-added', netns: '' })), { exitCode: 0, body: '' }, 'unknown container');
  await add(r, 'd2');
  r.net.namespaces.delete('/run/netns/d2');
  t.same(await r.server.handle(cniReq('DEL', { containerId: 'd2', netns: '/run/netns/d2' })), { exitCode: 0, body: '' }, 'netns gone');
  t.equal(r.deps.manager.getEndpoints().length, 0);
  await add(r, 'd3');
  const ep = r.deps.manager.lookup('cni-attachment-id:d3:eth0')!;
  await r.deps.endpoints.deleteEndpoint({}, String(ep.id));
  t.same(await r.server.handle(cniReq('DEL', { containerId: 'd3', netns: '/run/netns/d3' })), { exitCode: 0, body: '' }, 'endpoint already deleted');
  t.same([...r.net.hostNs.links.keys()], ['lo'], 'every veth gone');
  t.same(r.deps.ipam.status()[0]!.allocated, {}, 'every IP released');
});

t.test('CHECK compares the endpoint and the namespace with the prevResult', async (t) => {
  const r = await rig(t);
  const res = body(await add(r, 'k1'));
  const check = (over: Record<string, unknown> = {}) => r.server.handle(cniReq('CHECK', { containerId: 'k1', netns: '/run/netns/k1' }, { prevResult: { ...res, ...over } }));
  t.same(await check(), { exitCode: 0, body: '' }, 'matches');
  const ips = res.ips as Array<{ address: string }>;
  const other = await check({ ips: [{ ...ips[0], address: '10.200.9.9/32' }] });
  t.equal(code(other), 100);
  t.match(body(other).msg, /prevResult.ips\[0\].address 10.200.9.9\/32 is not on eth0/);
  const ifs = res.interfaces as Array<Record<string, unknown>>;
  const mac = await check({ interfaces: [ifs[0], { ...ifs[1], mac: '02:ff:ff:ff:ff:ff' }] });
  t.match(body(mac).msg, /MAC/);
  r.net.namespaces.get('/run/netns/k1')!.links.get('eth0')!.addrs.length = 0;
  t.match(body(await check()).msg, /is not on eth0/, 'an address removed in the netns is noticed');
  const none = await r.server.handle(cniReq('CHECK', { containerId: 'zz', netns: '/run/netns/k1' }, { prevResult: res }));
  t.equal(code(none), 100);
  t.match(body(none).msg, /has no endpoint/);
  r.net.hostNs.links.delete(hostIfName('k1', 'eth0'));
  t.match(body(await check()).msg, /host interface .* is gone/);
});

t.test('STATUS follows readiness', async (t) => {
  const r = await rig(t);
  const status = cniReq('STATUS', { containerId: '', netns: '', ifName: '' }, {}, '1.1.0');
  t.same(await r.server.handle(status), { exitCode: 0, body: '' });
  r.server.setReady(false);
  t.equal(code(await r.server.handle(status)), 50);
});

t.test('GC removes endpoints and IPs of attachments the runtime no longer has', async (t) => {
  const r = await rig(t);
  await add(r, 'g1');
  await add(r, 'g2');
  const gc = cniReq('GC', { containerId: '', netns: '', ifName: '' }, { 'cni.dev/valid-attachments': [{ containerID: 'g1', ifname: 'eth0' }] }, '1.1.0');
  t.same(await r.server.handle(gc), { exitCode: 0, body: '' });
  t.ok(r.deps.manager.lookup('cni-attachment-id:g1:eth0'), 'valid attachment kept');
  t.notOk(r.deps.manager.lookup('cni-attachment-id:g2:eth0'), 'stale attachment removed');
  t.notOk(r.net.hostNs.links.has(hostIfName('g2', 'eth0')), 'its veth deleted');
  t.same(Object.values(r.deps.ipam.status()[0]!.allocated), ['default/g1'], 'its IP released');
  // An IP an ADD allocated whose endpoint is gone without a DEL (e.g. removed by the endpoint GC).
  const ep = r.deps.manager.lookup('cni-attachment-id:g1:eth0')!;
  const ip = ep.ipv4!;
  r.deps.ledger.record({ ip: '10.200.0.77', owner: 'default/ghost', attachment: 'ghost:eth0' });
  r.deps.ipam.allocateIP('10.200.0.77', 'default/ghost');
  await r.server.handle(gc);
  t.equal(r.deps.ipam.ownerOf('10.200.0.77'), undefined, 'leaked IP released');
  t.equal(r.deps.ipam.ownerOf(ip), 'default/g1', 'valid IP kept');
});

t.test("GC of another network (its runtime lists only that network's attachments) leaves this network's endpoints alone", async (t) => {
  const r = await rig(t);
  await add(r, 'n1');
  t.equal(r.deps.manager.lookup('cni-attachment-id:n1:eth0')!.cniNetwork, 'cellium', 'the endpoint records its network');
  const other = cniReq('GC', { containerId: '', netns: '', ifName: '' }, { name: 'macvlan-net', 'cni.dev/valid-attachments': [] }, '1.1.0');
  t.same(await r.server.handle(other), { exitCode: 0, body: '' });
  t.ok(r.deps.manager.lookup('cni-attachment-id:n1:eth0'), 'kept');
  t.ok(r.net.hostNs.links.has(hostIfName('n1', 'eth0')), 'with its veth');
  const own = cniReq('GC', { containerId: '', netns: '', ifName: '' }, { 'cni.dev/valid-attachments': [] }, '1.1.0');
  t.same(await r.server.handle(own), { exitCode: 0, body: '' });
  t.notOk(r.deps.manager.lookup('cni-attachment-id:n1:eth0'), "its own network's GC removes it");
});

t.test('chaining: attaches to the interface of the previous plugin and returns its result enriched', async (t) => {
  const r = await rig(t);
  const ns = r.net.addNetns('/run/netns/ch');
  const host = await r.net.host().createVeth({ name: 'veth1234', peerName: 'eth0', peerNetns: '/run/netns/ch' });
  const podMac = ns.links.get('eth0')!.mac;
  ns.links.get('eth0')!.addrs.push('10.88.0.5/16');
  const prevResult = {
    cniVersion: '1.0.0',
    interfaces: [{ name: 'eth0', mac: podMac, sandbox: '/run/netns/ch' }],
    ips: [{ address: '10.88.0.5/16', gateway: '10.88.0.1', interface: 0 }],
    routes: [{ dst: '0.0.0.0/0' }],
    dns: { nameservers: ['10.88.0.1'] },
  };
  const resp = await r.server.handle(cniReq('ADD', { containerId: 'ch', netns: '/run/netns/ch' }, { prevResult }));
  t.equal(resp.exitCode, 0, resp.body);
  const res = body(resp) as typeof prevResult & { interfaces: Array<Record<string, unknown>> };
  t.same(res.ips, prevResult.ips, 'IPs of the previous plugin');
  t.same(res.dns, prevResult.dns);
  t.same(res.interfaces, [...prevResult.interfaces, { name: 'veth1234', mac: host.mac }], 'host side added');
  const ep = r.deps.manager.lookup('cni-attachment-id:ch:eth0')!;
  t.equal(ep.ifName, 'veth1234');
  t.equal(ep.ipv4, '10.88.0.5');
  t.same(r.deps.ipam.status()[0]!.allocated, {}, 'no IP from our pool');
  t.same(await r.server.handle(cniReq('CHECK', { containerId: 'ch', netns: '/run/netns/ch' }, { prevResult: res })), { exitCode: 0, body: '' });
  t.same(await r.server.handle(cniReq('DEL', { containerId: 'ch', netns: '/run/netns/ch' }, { prevResult: res })), { exitCode: 0, body: '' });
  t.ok(r.net.hostNs.links.has('veth1234'), "the previous plugin's interface is left alone");
  t.notOk(r.deps.manager.lookup('cni-attachment-id:ch:eth0'));
  const missing = await r.server.handle(cniReq('ADD', { containerId: 'ch2', netns: '/run/netns/ch', ifName: 'net1' }, { prevResult: { ...prevResult, interfaces: [{ name: 'net1', sandbox: '/run/netns/ch' }] } }));
  t.equal(code(missing), 7);
  t.match(body(missing).msg, /net1 .* does not exist/);
});

t.test('a repeated ADD replaces the attachment; concurrent ADDs get distinct IPs', async (t) => {
  const r = await rig(t);
  await add(r, 'rep');
  const again = await add(r, 'rep');
  t.equal(again.exitCode, 0, again.body);
  t.equal(r.deps.manager.getEndpoints().length, 1);
  const many = await Promise.all(Array.from({ length: 20 }, (_, i) => add(r, `par${i}`)));
  t.ok(many.every((m) => m.exitCode === 0), 'all succeed');
  const ips = many.map((m) => (body(m).ips as Array<{ address: string }>)[0]!.address);
  t.equal(new Set(ips).size, 20, 'distinct IPs');
  t.equal(r.deps.manager.getEndpoints().length, 21);
});

t.test('the DEL queue is replayed in order and emptied', async (t) => {
  const r = await rig(t);
  await add(r, 'q1');
  const dir = tempDir(t, 'queue');
  writeFileSync(join(dir, '0000000000000000001-10-q1.json'), encodeCniRequest(cniReq('DEL', { containerId: 'q1', netns: '' })));
  writeFileSync(join(dir, '0000000000000000002-11-q2.json'), encodeCniRequest(cniReq('DEL', { containerId: 'q2', netns: '' })));
  writeFileSync(join(dir, '0000000000000000003-12-bad.json'), '{"command":"DEL"}');
  writeFileSync(join(dir, '.0000000000000000004-13.tmp'), 'partial');
  const out = await r.server.replayDeleteQueue(dir);
  t.same(out.done, ['0000000000000000001-10-q1.json', '0000000000000000002-11-q2.json']);
  t.equal(out.dropped.length, 1);
  t.notOk(r.deps.manager.lookup('cni-attachment-id:q1:eth0'), 'queued DEL applied');
  const { readdirSync } = await import('node:fs');
  t.same(readdirSync(dir), ['.0000000000000000004-13.tmp'], 'queue emptied (temporary files untouched)');
  t.same(await r.server.replayDeleteQueue(join(dir, 'missing')), { done: [], dropped: [] }, 'a missing directory is an empty queue');
  writeFileSync(join(dir, 'not-a-dir'), '');
  const unreadable = await r.server.replayDeleteQueue(join(dir, 'not-a-dir'));
  t.match(unreadable, { done: [], dropped: [], unreadable: /ENOTDIR/ }, 'a directory that cannot be listed is reported, not thrown');
});
