// The node's own addresses in the service manager (issue 22, point 1), with NodeAddresses over
// interface lists the test gives (the privileged node-addresses.test.ts lists a real namespace's):
// why an address is the node's, the agent's API as a backend, and the manager refusing new input
// that collides, disabling a frontend that collides later (an address added, a restored service)
// and enabling it again.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LBServiceManager, ServiceStore, type Frontend, type FrontendParams, type ServiceType } from '../../src/cells/loadbalancer/index.js';
import { NodeAddresses, unmapped, type InterfaceAddress, type NodeAddressSources } from '../../src/cells/loadbalancer/node-addrs.js';
import { be, svc, upsert } from './helpers.js';

/** NodeAddresses over `ifaces` (the test changes it), a pod pool 10.200.0.0/24 and `api`. */
function addrs(ifaces: InterfaceAddress[], api?: string): NodeAddresses {
  const listen = api ? { raw: api, host: api.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''), port: Number(/(\d+)$/.exec(api)![1]) } : undefined;
  const src: NodeAddressSources = { interfaces: async () => [...ifaces], gateways: () => [{ gateway: '10.200.0.1', cidr: '10.200.0.0/24' }], ...(listen ? { api: listen } : {}) };
  return new NodeAddresses(src);
}

const typed = (ip: string, port: number, type: ServiceType): FrontendParams => ({ address: { ip, port, protocol: 'tcp', scope: 'external' }, type });

t.test('why an address is the node\'s: interfaces, pod gateways, the API\'s listen address; IPv4-mapped too', async (t) => {
  const ifaces = [{ ip: '192.0.2.10', dev: 'eth0' }, { ip: '2001:db8::10', dev: 'eth0' }, { ip: 'fe80::1', dev: 'eth0' }];
  const a = addrs(ifaces, '198.51.100.7:9234');
  t.equal(a.frontend('192.0.2.10'), undefined, 'nothing is known before the first listing');
  t.equal(await a.refresh(), true, 'the first listing is a change');
  t.equal(a.frontend('192.0.2.10'), 'it is an address of the node (interface eth0)');
  t.equal(a.frontend('2001:db8::10'), 'it is an address of the node (interface eth0)');
  t.equal(a.frontend('fe80::1'), 'it is an address of the node (interface eth0)', 'link-local ones too');
  t.equal(a.frontend('::ffff:c000:20a'), 'it is an address of the node (interface eth0)', 'an IPv4-mapped IPv6 address stands for its IPv4 one');
  t.equal(unmapped('::ffff:c000:20a'), '192.0.2.10');
  t.equal(unmapped('2001:db8::ffff:1'), '2001:db8::ffff:1');
  t.equal(a.frontend('10.200.0.1'), "it is the pods' gateway address (pool 10.200.0.0/24)");
  t.equal(a.frontend('198.51.100.7'), "it is the address the agent's API listens on (--api-listen-address 198.51.100.7:9234)");
  t.equal(a.frontend('10.96.0.10'), undefined, 'a cluster IP is none of them');
  t.equal(await a.refresh(), false, 'the same listing again is no change');
  let changes = 0;
  a.changes$.subscribe(() => changes++);
  ifaces.push({ ip: '192.0.2.11', dev: 'eth1' });
  t.equal(await a.refresh(), true);
  t.equal(changes, 1, 'a new address is a change, emitted');
  t.equal(a.frontend('192.0.2.11'), 'it is an address of the node (interface eth1)');
});

t.test('a pod pool set after the listing (a pod CIDR claimed at start): its gateway counts at once, and the next listing is a change', async (t) => {
  const pools = [{ gateway: '10.200.0.1', cidr: '10.200.0.0/24' }];
  const a = new NodeAddresses({ interfaces: async () => [], gateways: () => [...pools] });
  await a.refresh();
  t.equal(a.frontend('10.200.0.1'), "it is the pods' gateway address (pool 10.200.0.0/24)");
  pools[0] = { gateway: '10.201.5.1', cidr: '10.201.5.0/24' };
  await new Promise((r) => setImmediate(r));
  t.equal(a.frontend('10.201.5.1'), "it is the pods' gateway address (pool 10.201.5.0/24)", 'the new pool\'s gateway, without a listing');
  t.equal(a.frontend('10.200.0.1'), undefined, 'the old one no longer');
  t.equal(await a.refresh(), true, 'the listing after it is a change (the frontends are checked again)');
});

t.test('a local route wider than one address makes every address in it the node\'s (AnyIP)', async (t) => {
  const routes = [{ cidr: '10.5.0.0/16', dev: 'lo' }, { cidr: '192.0.2.10/32', dev: 'eth0' }, { cidr: 'fd00:5::/64', dev: 'lo' }];
  const a = new NodeAddresses({ interfaces: async () => [], localRoutes: async () => [...routes], gateways: () => [], api: { raw: ':9234', host: '', port: 9234 } });
  t.equal(await a.refresh(), true);
  t.equal(a.frontend('10.5.7.9'), 'it is in a local route of the node (local 10.5.0.0/16 dev lo)');
  t.equal(a.frontend('fd00:5::77'), 'it is in a local route of the node (local fd00:5::/64 dev lo)');
  t.equal(a.frontend('10.6.0.1'), undefined, 'outside every local route');
  t.ok(a.backend('10.5.0.1', 9234), 'the API listening on every address is reached there too');
  routes.shift();
  t.equal(await a.refresh(), true, 'a local route gone is a change');
  t.equal(a.frontend('10.5.7.9'), undefined);
});

t.test('the agent\'s API is no backend: a listener on one address there, on every address (or a name) through loopback and the node\'s', async (t) => {
  const ifaces = [{ ip: '192.0.2.10', dev: 'eth0' }];
  const specific = addrs(ifaces, '192.0.2.10:9234');
  await specific.refresh();
  t.match(specific.backend('192.0.2.10', 9234), /it is the agent's own API \(--api-listen-address 192\.0\.2\.10:9234\)/);
  t.equal(specific.backend('127.0.0.1', 9234), undefined, 'loopback does not reach a listener on 192.0.2.10');
  t.equal(specific.backend('192.0.2.10', 9235), undefined, 'another port');
  for (const api of [':9234', '0.0.0.0:9234', '[::]:9234', 'localhost:9234']) {
    const any = addrs(ifaces, api);
    await any.refresh();
    for (const ip of ['127.0.0.1', '127.0.0.53', '::1', '192.0.2.10', '10.200.0.1', '0.0.0.0']) t.ok(any.backend(ip, 9234), `--api-listen-address ${api}: ${ip}:9234 is the agent`);
    t.equal(any.backend('10.0.1.5', 9234), undefined, `--api-listen-address ${api}: another host's port is not`);
    t.equal(any.frontend('0.0.0.0'), undefined, 'an unspecified listen address is no frontend reason of its own');
  }
  const none = addrs(ifaces);
  await none.refresh();
  t.equal(none.backend('127.0.0.1', 9234), undefined, 'no TCP listener: nothing to refuse');
});

t.test('the manager refuses every type but NodePort on a node address (460), HostPort always, the API as backend (461)', async (t) => {
  const a = addrs([{ ip: '192.0.2.10', dev: 'eth0' }, { ip: '2001:db8::10', dev: 'eth0' }], '0.0.0.0:9234');
  await a.refresh();
  const m = new LBServiceManager(65535, undefined, undefined, { addrs: a });
  for (const type of ['ClusterIP', 'ExternalIPs', 'LoadBalancer', 'LocalRedirect'] as const) {
    for (const ip of ['192.0.2.10', '2001:db8::10', '10.200.0.1']) {
      t.throws(() => m.upsert({ service: svc('default/x'), frontends: [typed(ip, 22, type)], backends: [] }), { code: 'invalid-frontend', field: '/frontends/0/address/ip', message: new RegExp(`cannot be a service frontend of type ${type}: it is `) }, `${type} on ${ip}`);
    }
  }
  t.throws(() => m.upsert({ service: svc('default/x'), frontends: [typed('10.96.0.10', 80, 'HostPort')], backends: [] }), { code: 'invalid-frontend', field: '/frontends/0/type', message: /type HostPort is refused/ });
  t.throws(() => m.upsert({ service: svc('default/x'), frontends: [typed('192.0.2.10', 22, 'NodePort')], backends: [] }), { code: 'invalid-frontend', field: '/frontends/0/address/port', message: /node port 22 is outside --node-port-range/ }, 'a node port on a node address stays in the range');
  t.equal(m.upsert({ service: svc('default/np'), frontends: [typed('192.0.2.10', 30022, 'NodePort')], backends: [] }).length, 1, 'NodePort on a node address in the range');
  t.throws(() => m.upsert(upsert('default/x', '10.96.0.10', 80, [be('10.0.1.1', 80), be('127.0.0.1', 9234)])), { code: 'invalid-backend', field: '/backends/1/address', message: /127\.0\.0\.1:9234 cannot be a backend: it is the agent's own API/ });
  t.throws(() => m.setBackends('default/np', [be('192.0.2.10', 9234)]), { code: 'invalid-backend' }, 'an EndpointSlice naming the API too');
  t.throws(() => m.setBackends('default/later', [be('127.0.0.1', 9234)]), { code: 'invalid-backend' }, 'also before its service exists');
  t.same(m.list().map((s) => s.frontend.serviceKey), ['default/np'], 'nothing else was applied');
});

t.test('a frontend that collides later is disabled (out of the desired table, state disabled with why) and enabled when the address goes', async (t) => {
  const ifaces: InterfaceAddress[] = [{ ip: '192.0.2.10', dev: 'eth0' }];
  const a = addrs(ifaces);
  await a.refresh();
  const told: [string, string | undefined][] = [];
  const m = new LBServiceManager(65535, undefined, undefined, { addrs: a, onDisabled: (f: Frontend, why) => told.push([`${f.address.ip}:${f.address.port}`, why]) });
  a.changes$.subscribe(() => m.recheck());
  m.upsert(upsert('default/web', '10.96.0.10', 80, [be('10.0.1.1', 8080)]));
  m.upsert(upsert('default/db', '10.96.0.11', 5432, [be('10.0.1.2', 5432)]));
  t.ok(m.frontends.get('10.96.0.10:80/TCP'), 'desired');
  ifaces.push({ ip: '10.96.0.10', dev: 'eth1' });
  await a.refresh();
  t.notOk(m.frontends.get('10.96.0.10:80/TCP'), 'the colliding frontend leaves the desired table (the reconciler deletes it from the LB maps)');
  t.ok(m.frontends.get('10.96.0.11:5432/TCP'), 'the other one stays');
  t.match(m.get(1), { state: 'disabled', message: 'frontend 10.96.0.10: it is an address of the node (interface eth1)' });
  t.same(m.disabled(), [{ frontend: '10.96.0.10:80/TCP', why: 'frontend 10.96.0.10: it is an address of the node (interface eth1)' }]);
  t.same(told, [['10.96.0.10:80', 'frontend 10.96.0.10: it is an address of the node (interface eth1)']], 'told once');
  m.setBackends('default/web', [be('10.0.1.3', 8080)]);
  t.notOk(m.frontends.get('10.96.0.10:80/TCP'), 'a backend update keeps it out');
  t.same(m.get(1)!.frontend.backends.map((b) => b.address.ip), ['10.0.1.3'], 'with its new backends');
  ifaces.pop();
  await a.refresh();
  t.same(m.frontends.get('10.96.0.10:80/TCP')?.value.backends.map((b) => b.address.ip), ['10.0.1.3'], 'written again, with the backends it has now');
  t.equal(m.get(1)!.state, 'pending');
  t.same(m.disabled(), []);
  t.same(told.at(-1), ['10.96.0.10:80', undefined], 'told it is enabled');
  m.deleteService('default/web');
  ifaces.push({ ip: '10.96.0.10', dev: 'eth1' });
  await a.refresh();
  t.same(m.disabled(), [], 'a deleted service is not disabled later');
});

t.test('restore: a stored service that collides now comes back disabled, neither dropped nor applied; HostPort too', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-lb-na-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'services.json');
  const before = new LBServiceManager(65535, new ServiceStore(file));
  await before.restore();
  before.upsert(upsert('default/web', '10.96.0.10', 80, [be('10.0.1.1', 8080)]));
  before.upsert(upsert('default/db', '10.96.0.11', 5432, []));
  await before.flushStore();
  // a HostPort service stored by an agent that still took them
  const stored = JSON.parse(readFileSync(file, 'utf8')) as { services: { service: { key: string }; frontends: { id: number; type: string; serviceKey: string }[] }[] };
  const hostPort = structuredClone(stored.services[1]!);
  hostPort.service.key = 'default/hp';
  hostPort.frontends = hostPort.frontends.map((f) => ({ ...f, id: 9, type: 'HostPort', serviceKey: 'default/hp', address: { ip: '10.96.0.12', port: 8080, protocol: 'tcp', scope: 'external' } }));
  stored.services.push(hostPort);
  writeFileSync(file, JSON.stringify(stored));
  const ifaces = [{ ip: '10.96.0.10', dev: 'eth1' }];
  const a = addrs(ifaces);
  await a.refresh();
  const after = new LBServiceManager(65535, new ServiceStore(file), undefined, { addrs: a });
  a.changes$.subscribe(() => after.recheck());
  t.equal(await after.restore(), 3, 'every service comes back');
  t.match(after.get(9), { state: 'disabled', message: /type HostPort is derived from pods only/ }, 'the stored HostPort one disabled');
  t.match(after.get(1), { state: 'disabled', message: /it is an address of the node \(interface eth1\)/ }, 'the colliding one disabled');
  t.notOk(after.frontends.get('10.96.0.10:80/TCP'), 'not in the desired table');
  t.ok(after.frontends.get('10.96.0.11:5432/TCP'), 'the other one applied');
  await after.flushStore();
  ifaces.pop();
  await a.refresh();
  t.ok(after.frontends.get('10.96.0.10:80/TCP'), 'enabled once the address is gone (it was kept)');
});
