// The sync of Services and EndpointSlices from the apiserver into the service manager (a real
// LBServiceManager without store; the events scripted as a Resource sends them): nothing changes
// before the flush, the flush applies and prunes stale apiserver services, then events apply at
// once (ClusterIP, NodePort, dual stack, named target ports, ready/serving/terminating, slices
// following, delete); invalid objects and refused Services are reported once and keep the previous
// version; imported and API services and the apiserver's never clobber each other; the node's own
// addresses stay refused.
import t from 'tap';
import { LBServiceManager, applyManifests, parseManifests, specToUpsert, type FrontendDesired } from '../../src/cells/loadbalancer/index.js';
import { NodeAddresses } from '../../src/cells/loadbalancer/node-addrs.js';
import { K8sServiceSync, SERVICE_HEADLESS, SERVICE_PROXY_NAME, REASON_INVALID, REASON_NOT_APPLIED, type SyncKind } from '../../src/cells/k8s-services/index.js';
import type { EndpointSlice, LabelledObject, ResourceEvent, Service } from '../../src/cells/k8s/index.js';

type Cond = { ready?: boolean; serving?: boolean; terminating?: boolean };

function service(name: string, spec: Record<string, unknown>, ns = 'shop'): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns, uid: `uid-${name}` }, spec } as Service;
}

function slice(name: string, svc: string, ips: readonly (string | [string, Cond])[], ports: readonly { name?: string; port: number; protocol?: string }[], family = 'IPv4', ns = 'shop'): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': svc } },
    addressType: family, ports,
    endpoints: ips.map((e) => (typeof e === 'string' ? { addresses: [e], conditions: { ready: true } } : { addresses: [e[0]], conditions: e[1] })),
  } as EndpointSlice;
}

const up = <T extends LabelledObject>(o: T): ResourceEvent<T> => ({ kind: 'upsert', key: `${o.metadata!.namespace}/${o.metadata!.name}`, object: o });
const del = <T extends LabelledObject>(o: T): ResourceEvent<T> => ({ kind: 'delete', key: `${o.metadata!.namespace}/${o.metadata!.name}`, object: o });
const SYNC = { kind: 'sync' } as const;

function setup(opts: { nodeIPs?: string[] } = {}) {
  const addrs = new NodeAddresses({ interfaces: async () => (opts.nodeIPs ?? []).map((ip) => ({ ip, dev: 'eth0' })), gateways: () => [] });
  const mgr = new LBServiceManager(65535, undefined, [30000, 32767], { addrs });
  const reports: { kind: SyncKind; name: string; reason: string; message: string }[] = [];
  const sync = new K8sServiceSync(mgr, (kind, obj, reason, message) => {
    reports.push({ kind, name: obj.metadata?.name ?? '', reason, message });
  });
  return { addrs, mgr, sync, reports };
}

/** The frontends as address -> backends "ip:port/state". */
function table(mgr: LBServiceManager): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const s of mgr.list()) out[`${s.frontend.address.ip}:${s.frontend.address.port}/${s.frontend.address.protocol}`] = s.frontend.backends.map((b: FrontendDesired['backends'][number]) => `${b.address.ip}:${b.address.port}/${b.state}`);
  return out;
}

const WEB = service('web', {
  type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'],
  ports: [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353 }],
});

t.test('events before the flush change nothing; the flush applies the caches and removes stale apiserver services; then events apply at once', async (t) => {
  const { mgr, sync } = setup();
  // restored from the state directory: one apiserver service still in the apiserver, one deleted meanwhile, one import
  mgr.upsert({ service: { key: 'apiserver:shop/web', name: 'web', namespace: 'shop', source: 'apiserver', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] }, frontends: [{ address: { ip: '10.96.0.10', port: 80, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP', portName: 'http' }], backends: [{ address: { ip: '10.1.0.9', port: 8080, protocol: 'tcp', scope: 'external' }, state: 'active', weight: 100, portName: 'http' }] });
  mgr.upsert({ service: { key: 'apiserver:shop/gone', name: 'gone', namespace: 'shop', source: 'apiserver', sessionAffinity: false, sessionAffinityTimeoutSec: 0, extTrafficPolicy: 'Cluster', intTrafficPolicy: 'Cluster', sourceRanges: [] }, frontends: [{ address: { ip: '10.96.0.99', port: 80, protocol: 'tcp', scope: 'external' }, type: 'ClusterIP' }], backends: [] });
  applyManifests(mgr, parseManifests(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'imp', namespace: 'shop' }, spec: { clusterIP: '10.96.5.5', ports: [{ port: 80 }] } })));
  const before = table(mgr);

  sync.onService(up(WEB));
  sync.onSlice(up(slice('web-a', 'web', ['10.1.0.1', '10.1.0.2'], [{ name: 'http', port: 8080 }, { name: 'dns', port: 5353, protocol: 'UDP' }])));
  sync.onService(SYNC);
  t.same(table(mgr), before, 'before the flush: exactly what was restored');
  let replayed = false;
  void sync.replayed.then(() => (replayed = true));
  sync.onSlice(SYNC);
  await new Promise((r) => setImmediate(r));
  t.ok(replayed, 'both caches replayed');

  t.same(sync.flush(), { applied: 1, deleted: 1 }, 'one applied, one stale removed');
  t.same(table(mgr), {
    '10.96.0.10:80/tcp': ['10.1.0.1:8080/active', '10.1.0.2:8080/active'],
    '10.96.0.10:53/udp': ['10.1.0.1:5353/active', '10.1.0.2:5353/active'],
    '10.96.5.5:80/tcp': [],
  }, 'the named target port resolves by the slice\'s port name; the deleted Service is gone; the import stays');
  t.equal(mgr.service('apiserver:shop/web')?.source, 'apiserver');
  t.equal(mgr.service('shop/imp')?.source, 'k8s', 'the import keeps its own source');

  // the slice changes: backends follow; a second slice adds to them; ready/serving/terminating
  sync.onSlice(up(slice('web-a', 'web', ['10.1.0.3', ['10.1.0.4', { ready: false, serving: true, terminating: true }], ['10.1.0.5', { ready: false, serving: false, terminating: true }], ['10.1.0.6', { ready: false }]], [{ name: 'http', port: 8080 }])));
  sync.onSlice(up(slice('web-b', 'web', ['10.1.0.7'], [{ name: 'http', port: 8081 }])));
  t.same(table(mgr)['10.96.0.10:80/tcp'], ['10.1.0.3:8080/active', '10.1.0.4:8080/terminating', '10.1.0.7:8081/active'],
    'ready: active; serving and terminating: terminating (keeps its flows); not serving or not ready: no backend; both slices');
  t.same(table(mgr)['10.96.0.10:53/udp'], [], 'the dns port is in no slice any more');
  sync.onSlice(del(slice('web-a', 'web', [], [])));
  t.same(table(mgr)['10.96.0.10:80/tcp'], ['10.1.0.7:8081/active'], 'a slice deleted: its backends go');

  const other = service('web', { ...WEB.spec });
  sync.onService(up({ ...other, metadata: { ...other.metadata, labels: { [SERVICE_PROXY_NAME]: 'another-proxy' } } }));
  t.notOk(mgr.service('apiserver:shop/web'), 'labelled for another proxy: not this agent\'s, removed');
  sync.onService(up(WEB));
  t.ok(mgr.service('apiserver:shop/web'), 'the label gone: served again');
  sync.onService(up({ ...other, metadata: { ...other.metadata, labels: { [SERVICE_HEADLESS]: '' } } }));
  t.notOk(mgr.service('apiserver:shop/web'), 'labelled headless (an empty value too): no proxy serves its clusterIP, removed');
  t.notOk(Object.keys(table(mgr)).some((f) => f.startsWith('10.96.0.10:')), 'its frontends are gone although its slices remain');
  sync.onService(up(WEB));
  t.ok(mgr.service('apiserver:shop/web'), 'the headless label gone: served again');
  sync.onService(del(WEB));
  t.same(Object.keys(table(mgr)), ['10.96.5.5:80/tcp'], 'the Service deleted: its frontends are gone');
  t.notOk(mgr.service('apiserver:shop/web'));
});

t.test('a report that failed is made again at the next sighting of the same problem', async (t) => {
  const { mgr } = setup();
  const tries: string[] = [];
  let fail = true;
  const sync = new K8sServiceSync(mgr, async (_kind, obj) => {
    tries.push(obj.metadata?.name ?? '');
    if (fail) throw new Error('apiserver unreachable');
  });
  const bad = service('bad', { clusterIP: '10.96.0.50', ports: [{ port: 0 }] });
  sync.onService(up(bad));
  await new Promise((r) => setImmediate(r));
  t.same(tries, ['bad'], 'reported');
  fail = false;
  sync.onService(up(bad));
  await new Promise((r) => setImmediate(r));
  t.same(tries, ['bad', 'bad'], 'the failed report is made again');
  sync.onService(up(bad));
  await new Promise((r) => setImmediate(r));
  t.same(tries, ['bad', 'bad'], 'and not again once it succeeded');
});

t.test('NodePort, session affinity and dual stack', async (t) => {
  const { mgr, sync } = setup();
  sync.onService(SYNC);
  sync.onSlice(SYNC);
  sync.flush();
  sync.onSlice(up(slice('ds-v6', 'ds', ['fd00::1'], [{ name: 'http', port: 8080 }], 'IPv6')));
  sync.onService(up(service('ds', {
    type: 'NodePort', clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20', 'fd00:96::20'], ipFamilies: ['IPv4', 'IPv6'],
    sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
    ports: [{ name: 'http', port: 80, nodePort: 30080 }],
  })));
  sync.onSlice(up(slice('ds-v4', 'ds', ['10.1.0.1'], [{ name: 'http', port: 8080 }])));
  t.same(table(mgr), {
    '10.96.0.20:80/tcp': ['10.1.0.1:8080/active'],
    'fd00:96::20:80/tcp': ['fd00::1:8080/active'],
    '0.0.0.0:30080/tcp': ['10.1.0.1:8080/active'],
    ':::30080/tcp': ['fd00::1:8080/active'],
  }, 'each family\'s frontends get that family\'s slice; NodePort surrogates per family; the slice that came before its Service counts');
  t.ok(mgr.list().every((s) => s.frontend.affinityTimeoutSec === 60), 'ClientIP affinity with its timeout');
  t.same(mgr.list().filter((s) => s.frontend.type === 'NodePort').length, 2);
});

t.test('an invalid object keeps its previous version and is reported once; a refused Service is retried', async (t) => {
  const { mgr, sync, reports, addrs } = setup({ nodeIPs: ['192.0.2.10'] });
  await addrs.refresh();
  sync.onService(SYNC);
  sync.onSlice(SYNC);
  sync.flush();
  sync.onService(up(WEB));
  sync.onSlice(up(slice('web-a', 'web', ['10.1.0.1'], [{ name: 'http', port: 8080 }])));
  const good = table(mgr);

  const bad = service('web', { clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 70000 }, { name: 'dns', port: 53 }] });
  sync.onService(up(bad));
  sync.onService(up(bad));
  t.same(table(mgr), good, 'an invalid Service: the previous version stays');
  t.equal(reports.length, 1, 'reported once');
  t.match(reports[0], { kind: 'Service', name: 'web', reason: REASON_INVALID, message: /^Service shop\/web not applied \(its previous version, if any, stays in the LB maps\): \/spec\/ports\/0\/port: 70000 is not a port; fix: give a port between 1 and 65535$/ });
  t.ok(sync.invalid.has('Service shop/web'));
  sync.onSlice(up(slice('web-a', 'web', ['not-an-ip'], [{ name: 'http', port: 8080 }])));
  t.same(table(mgr), good, 'an invalid slice: its previous backends stay');
  t.match(reports[1], { kind: 'EndpointSlice', name: 'web-a', reason: REASON_INVALID, message: /^EndpointSlice shop\/web-a not applied .*: \/endpoints\/0\/addresses\/0: "not-an-ip" is not an IP address; fix: /u });
  sync.onService(up(WEB));
  t.notOk(sync.invalid.has('Service shop/web'), 'a valid version clears the problem');

  // the node's own address as ClusterIP: refused, named
  sync.onService(up(service('evil', { clusterIP: '192.0.2.10', ports: [{ port: 22 }] })));
  t.notOk(mgr.service('apiserver:shop/evil'), 'a Service never takes the node\'s own address');
  t.match(reports.at(-1), { name: 'evil', reason: REASON_NOT_APPLIED, message: /192\.0\.2\.10 cannot be a service frontend of type ClusterIP: it is an address of the node \(interface eth0\)/ });

  // an import holding the address first: the Service is refused with the holder named, then
  // applied once the import's service is deleted (retry on the manager's changes)
  applyManifests(mgr, parseManifests(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'imp', namespace: 'shop' }, spec: { clusterIP: '10.96.0.30', ports: [{ port: 80 }] } })));
  sync.onService(up(service('late', { clusterIP: '10.96.0.30', ports: [{ port: 80 }] })));
  t.match(reports.at(-1), { name: 'late', reason: REASON_NOT_APPLIED, message: /10\.96\.0\.30:80\/TCP is already a frontend of shop\/imp/ });
  t.equal(mgr.list().find((s) => s.frontend.address.ip === '10.96.0.30')?.frontend.serviceKey, 'shop/imp', 'the import keeps its address');
  const n = reports.length;
  sync.retry();
  t.equal(reports.length, n, 'a retry failing the same way reports nothing new');
  mgr.deleteService('shop/imp');
  sync.retry();
  t.equal(mgr.list().find((s) => s.frontend.address.ip === '10.96.0.30')?.frontend.serviceKey, 'apiserver:shop/late', 'retried: applied once the address is free');
  t.same([...sync.refused.keys()], ['shop/evil'], 'late is no longer refused; the one on the node\'s address still is');

  // the other way: an import or the API cannot take or change the apiserver's
  t.throws(() => applyManifests(mgr, parseManifests(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'imp2', namespace: 'shop' }, spec: { clusterIP: '10.96.0.30', ports: [{ port: 80 }] } }))),
    /10\.96\.0\.30:80\/TCP is already a frontend of the Kubernetes Service shop\/late \(watched from the apiserver\)/);
  const id = mgr.list().find((s) => s.frontend.serviceKey === 'apiserver:shop/late')!.frontend.id;
  t.throws(() => mgr.deleteById(id), /is a frontend of the Kubernetes Service shop\/late.*kubectl edit\|delete service -n shop late/);
  t.throws(() => mgr.upsertById(id, specToUpsert(id, { 'frontend-address': { ip: '10.96.0.31', port: 80 }, 'backend-addresses': [] })), /is a frontend of the Kubernetes Service shop\/late/);
  t.ok(mgr.service('apiserver:shop/late'), 'still there');
  // same name imported: its own service, no clobbering either way
  applyManifests(mgr, parseManifests(JSON.stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop' }, spec: { clusterIP: '10.96.0.40', ports: [{ port: 80 }] } })));
  t.ok(mgr.service('shop/web') && mgr.service('apiserver:shop/web'), 'an import of the same name is another service');
  sync.onService(del(WEB));
  t.ok(mgr.service('shop/web'), 'deleting the Service leaves the import of the same name');
});
